"""The privacy-utility chart on a phone: legible in the page's narrow layout, a window 420 CSS px wide.

The page shows a figure as inline SVG scaled to its box (``max-width: 100%``): at 420 px
the box is 378 px wide (the body's margins, 1.4 rem of 15 px on each side), so a figure
wider than that shrinks, and its text with it.  Measured here from the matplotlib Figure
(its renderer's text boxes): every text of the chart is at least 9 CSS px tall at that
width, no two texts overlap, nothing is cut off at the figure's edge, and no legend
covers an axes (where the points are).  In headless Chromium (marker ``browser``) the
chart's SVG is measured on the page itself at 420 px.  Before the chart was drawn for
that width (two panels side by side, 9.6 in wide, 7 pt type) its text was under 4 px.
"""

from __future__ import annotations

import itertools

import pytest

from lidframe.report import render_html
from lidframe.stats.interval import Interval
from tests.grid.test_report import drawn_texts
from tests.report.test_browser import (
    _open,
    browser,  # noqa: F401 (a fixture)
)
from tests.report.test_screenshots import _emulate, _restore
from tests.report.test_utility_section import ladder_run  # noqa: F401 (a fixture)

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

#: The page's content width (CSS px) in a window 420 px wide: 420 less the body's two 21 px margins.
NARROW_BOX = 378.0
#: The smallest text a reader is asked to read on a phone (CSS px).
SMALLEST_PX = 9.0


def _px_per_point(fig, box: float = NARROW_BOX) -> float:
    """CSS px per point of the figure's text once shown in a box *box* px wide (shrunk to it, never enlarged)."""
    natural = fig.get_figwidth() * 96.0  # CSS px: 96 per inch
    return min(1.0, box / natural) * 96.0 / 72.0


def _texts(fig):
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _check_legible(fig) -> None:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    scale = _px_per_point(fig)
    small = sorted({(t.get_fontsize() * scale, t.get_text()) for t in _texts(fig)})[:3]
    assert small[0][0] >= SMALLEST_PX, f"text under {SMALLEST_PX} px at 420 px: {small}"
    boxes = drawn_texts(fig)
    overlapping = [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2) if box_a.overlaps(box_b)]
    assert not overlapping, overlapping
    for text, box in boxes:  # nothing cut off at the figure's edges
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= fig.bbox.x1 + 0.5 and box.y1 <= fig.bbox.y1 + 0.5, text
    axes = [ax.get_window_extent(renderer) for ax in fig.axes]
    assert fig.legends
    for legend in fig.legends:
        box = legend.get_window_extent(renderer)
        assert not any(box.overlaps(ax) for ax in axes), "a legend covers the points"
        assert box.x0 >= 0 and box.x1 <= fig.bbox.x1 + 0.5


def test_the_demo_layouts_chart_is_legible_at_420_px(ladder_run):  # noqa: F811 (the fixture)
    """Three systems, five attacker-and-rung markers, intervals on both axes: the real-voice demo's chart."""
    from lidframe.report.figures import FigureMaker

    report, _, _ = ladder_run
    fig, _ = FigureMaker(report).utility_figure()
    try:
        _check_legible(fig)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_a_crowded_chart_is_legible_at_420_px():
    """Long system names, close ceilings (N = 24 and 26), a WER over 100 %, six variants, a long title."""
    from lidframe.report.sections.utility_chart import UtilityPoint, privacy_utility_figure

    points = []
    for s, (system, wer, log2_n) in enumerate(
        [
            ("anonymiser B5 with the long name of a grid [gaussian?mu=2.0]", 0.31, 4.585),
            ("mcadams-per-speaker", 0.92, 4.700),
            ("pitch shift, ratio per utterance", 1.35, 4.585),
        ]
    ):
        for v in range(6):
            alid = 0.3 + 0.6 * v + 0.1 * s
            points.append(
                UtilityPoint(
                    label=f"{system} · row {v}",
                    system=system,
                    variant=f"attacker{v % 3} · calibrator isotonic?increasing=auto · prior {v // 3}",
                    wer=wer,
                    wer_interval=Interval(wer, wer - 0.05, wer + 0.07, 0.95),
                    alid=alid,
                    alid_interval=Interval(alid, alid - 0.2, alid + 0.3, 0.95),
                    lid_max=min(log2_n, alid + 1.5),
                    lid_max_interval=None,
                    log2_n=log2_n,
                )
            )
    fig = privacy_utility_figure(
        points,
        variant_title="attacker · calibrator · prior",
        title="Privacy against utility (calibrators logistic, isotonic?increasing=auto, priors uniform, 0, 1)",
    )
    try:
        _check_legible(fig)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


_SVG_WIDTH = """
const svg = document.querySelector('section#utility figure svg');
const box = svg.getBoundingClientRect();
return {width: box.width, left: box.left, right: box.right, viewBox: svg.viewBox.baseVal.width,
        client: document.documentElement.clientWidth};
"""


@pytest.mark.browser
@pytest.mark.slow
def test_on_the_page_at_420_px_the_chart_text_is_at_least_9_px(ladder_run, browser, tmp_path):  # noqa: F811 (fixtures)
    """The chart's SVG as Chromium lays it out in a 420 px window: its scale times its smallest type, and no overflow."""
    from lidframe.report.figures import FigureMaker

    report, _, _ = ladder_run
    fig, _ = FigureMaker(report).utility_figure()
    smallest_pt = min(t.get_fontsize() for t in _texts(fig))  # an SVG unit is a point (matplotlib: 72 per inch)
    import matplotlib.pyplot as plt

    plt.close(fig)
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    _emulate(browser, 420)
    try:
        _open(browser, page)
        from selenium.webdriver.support.ui import WebDriverWait

        measured = WebDriverWait(browser, 10).until(lambda d: d.execute_script(_SVG_WIDTH))
        assert measured["client"] == 420
        px_per_unit = measured["width"] / measured["viewBox"]
        assert smallest_pt * px_per_unit >= SMALLEST_PX, measured
        assert measured["left"] >= 0 and measured["right"] <= measured["client"], measured
    finally:
        _restore(browser)
