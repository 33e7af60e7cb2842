"""The figures a reader uses (lidframe.report.plotting, lid_figures): styles, labelled references, small multiples, inline SVG."""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("matplotlib")

from lidframe.errors import InputError
from lidframe.report import lid_figures, plotting


def _same_dash(a, b) -> bool:
    return str(a) == str(b)


@given(st.integers(1, 60), st.integers(1, 8))
def test_systems_differ_in_colour_or_marker_and_variants_in_line_style(n_systems, n_variants):
    labels, groups, variants = [], {}, {}
    for s, v in itertools.product(range(n_systems), range(n_variants)):
        label = f"sys{s}/cal{v}"
        labels.append(label)
        groups[label], variants[label] = f"sys{s}", f"cal{v}"
    styles = plotting.curve_styles(labels, groups=groups, variants=variants)
    by_system = {}
    for label in labels:
        by_system.setdefault(groups[label], []).append(styles[label])
    # one colour and one marker per system; the (colour, marker) pair tells systems apart
    marks = [{(st_["color"], st_["marker"]) for st_ in group} for group in by_system.values()]
    assert all(len(m) == 1 for m in marks)
    assert len({next(iter(m)) for m in marks}) == n_systems
    # within a system, each calibrator has its own line style, the same one in every system
    for group in by_system.values():
        assert len({str(st_["linestyle"]) for st_ in group}) == n_variants
    for v in range(n_variants):
        assert len({str(styles[f"sys{s}/cal{v}"]["linestyle"]) for s in range(n_systems)}) == 1


@given(st.integers(2, 8))
def test_single_curve_systems_differ_in_colour_and_line_style(n_systems):
    labels = [f"s{k}" for k in range(n_systems)]
    styles = plotting.curve_styles(labels)
    assert len({styles[x]["color"] for x in labels}) == n_systems
    assert len({str(styles[x]["linestyle"]) for x in labels}) == n_systems


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text() for t in fig.texts]


def _label_boxes(fig):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [(t.get_text(), t.get_window_extent(renderer)) for ax in fig.axes for t in ax.texts]


def _overlapping(boxes) -> list[tuple[str, str]]:
    return [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2) if box_a.overlaps(box_b)]


def test_ccdf_reference_lines_are_labelled_and_labels_do_not_overlap():
    rng = np.random.default_rng(0)
    lids = {"a": rng.normal(1.0, 1.0, 200), "b": rng.normal(0.2, 0.5, 200)}
    fig = lid_figures.lid_ccdf_figure(lids, title="t", log2_n=1.05)  # log2 N right beside the 1 bit line
    texts = _texts(fig)
    assert {"0 bit", "1 bit", "log2 N = 1.05"} <= set(texts)
    assert not _overlapping(_label_boxes(fig))
    # the legend names every curve; the curves differ in colour and line style
    ax = fig.axes[0]
    (legend,) = fig.legends  # below the axes (test_the_ccdf_legend_lies_outside_every_axes)
    assert [t.get_text() for t in legend.get_texts()] == ["a", "b"]
    lines = [line for line in ax.get_lines() if line.get_label() in lids]
    assert lines[0].get_color() != lines[1].get_color()
    assert lines[0].get_linestyle() != lines[1].get_linestyle()
    plotting.pyplot().close(fig)


def test_ccdf_steps_are_the_share_of_trials_above():
    lid = np.array([0.5, -1.0, 2.0, 2.0, 3.0])
    fig = lid_figures.lid_ccdf_figure({"x": lid}, title="t")
    (line,) = [line for line in fig.axes[0].get_lines() if line.get_label() == "x"]
    x, y = (np.asarray(v, dtype=float) for v in line.get_data())
    assert list(x) == [-1.0, 0.5, 2.0, 3.0]  # each distinct value once, up to the largest
    for value, share in zip(x[:-1], y[:-1]):  # from each step on, the share of trials strictly above it
        assert share == pytest.approx(np.mean(lid > value))
    assert y[-1] == y[-2]  # the last step runs on to the largest LID
    plotting.pyplot().close(fig)


def test_histogram_counts_every_trial_and_marks_q99():
    rng = np.random.default_rng(1)
    lid = rng.normal(0.5, 1.0, 333)
    fig = lid_figures.lid_histogram_figure(lid, title="t", log2_n=3.0)
    ax = fig.axes[0]
    assert sum(p.get_height() for p in ax.patches) == lid.size
    q99 = np.sort(lid)[328] + 0.68 * (np.sort(lid)[329] - np.sort(lid)[328])  # h = 0.99 * 332 = 328.68
    assert f"q99 = {q99:.2f}" in _texts(fig)
    assert not _overlapping(_label_boxes(fig))
    plotting.pyplot().close(fig)
    with pytest.raises(InputError, match="no NaN"):
        lid_figures.lid_histogram_figure([0.1, np.nan], title="t")


def test_scatter_names_systems_in_a_legend_not_on_the_points():
    points = {f"system {k}": (0.40 + 0.001 * k, 0.1, 0.5) for k in range(6)}  # all but on top of each other
    fig = lid_figures.eer_alid_figure(points, title="EER against LID (calibrator logistic, prior uniform)", log2_n=3.0)
    assert not any(t.startswith("system") for t in _texts(fig))  # no point labels that could collide
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == list(points)
    assert fig.axes[0].get_title() == "EER against LID (calibrator logistic, prior uniform)"
    assert {"0 bit", "log2 N = 3.00", "EER 50 % (chance)"} <= set(_texts(fig))
    plotting.pyplot().close(fig)


@pytest.mark.slow
def test_small_multiples_cover_every_calibrator_and_prior_and_every_curve():
    rng = np.random.default_rng(2)
    panels = {
        (cal, prior): {"weak": rng.normal(1.0, 1.0, 50), "strong": rng.normal(0.0, 0.5, 50)}
        for cal in ("logistic", "isotonic", "beta")
        for prior in ("uniform", "watchlist?ids=a,b&weight=4")
    }
    panels[("beta", "uniform")]["weak"] = np.r_[panels[("beta", "uniform")]["weak"], 7.5]  # one far-right tail
    fig = lid_figures.lid_ccdf_panels_figure(panels, title="t", log2_n=3.0)
    assert len(fig.axes) == 6
    titles = [ax.get_title() for ax in fig.axes]
    for cal, prior in panels:
        assert any(f"calibrator {cal}" in t and f"prior {prior}" in t for t in titles)
    # shared axes that cut no curve: the far tail of one panel is inside every panel's x range
    for ax in fig.axes:
        assert ax.get_xlim()[1] >= 7.5 - 1e-9
    # one legend with each system once, in the same style in every panel
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["weak", "strong"]
    colours = {
        (line.get_label(), line.get_color())
        for ax in fig.axes
        for line in ax.get_lines()
        if line.get_label() in ("weak", "strong")
    }
    assert len(colours) == 2
    plotting.pyplot().close(fig)
    fig = lid_figures.eer_alid_panels_figure(
        {k: {"weak": (0.1, 2.0, 2.9), "strong": (0.4, 0.2, 0.9)} for k in panels}, title="t", log2_n=3.0
    )
    assert len(fig.axes) == 6
    plotting.pyplot().close(fig)


def test_save_lid_ccdf_keeps_its_callers_signature(tmp_path):
    target = tmp_path / "ccdf.svg"
    lid_figures.save_lid_ccdf({"a": [0.1, 0.5, 1.0], "b": [-0.2, 0.3]}, target, title="t", log2_n=2.0, guides=True)
    ET.fromstring(target.read_text())
    lid_figures.save_lid_ccdf(
        {"x/logistic": [0.1, 0.5], "x/isotonic": [0.2, 0.9]},
        tmp_path / "ccdf.png",
        title="t",
        groups={"x/logistic": "x", "x/isotonic": "x"},
        variants={"x/logistic": "logistic", "x/isotonic": "isotonic"},
    )
    assert (tmp_path / "ccdf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_figure_svg_is_inline_and_self_contained():
    fig = lid_figures.lid_ccdf_figure({"x --> <b>": [0.1, 0.5, 1.0]}, title="a & b", log2_n=2.0)
    svg = plotting.figure_svg(fig, id_prefix="fig7", description='LID "tail" <x>')
    assert svg.startswith("<svg ") and svg.endswith("</svg>")
    assert "<?xml" not in svg and "<!DOCTYPE" not in svg and "<!--" not in svg and "<metadata" not in svg
    root = ET.fromstring(svg)
    assert root.get("aria-label") == 'LID "tail" <x>' and root.get("role") == "img"
    ids = re.findall(r'\bid="([^"]+)"', svg)
    assert ids and all(i.startswith("fig7-") for i in ids)
    refs = re.findall(r'href="#([^"]+)"', svg) + re.findall(r"url\(#([^)]+)\)", svg)
    assert refs and set(refs) <= set(ids)  # every reference resolves inside the figure
    assert not re.search(r'(href|src)="(?!#)', svg)  # nothing outside it
    assert "<text" not in svg  # glyphs as paths: no font needed
    with pytest.raises(InputError, match="id_prefix"):
        plotting.inline_svg(svg, id_prefix="1 bad")


def test_labels_with_dollar_signs_print_as_written():
    """A system named like a mathtext formula is drawn as its name, and does not break the figure."""
    name = r"cost $\frac{a}{$ [v2]"
    fig = lid_figures.lid_ccdf_figure({name: [0.1, 0.5, 1.0]}, title=f"{name} tail", log2_n=2.0)
    svg = plotting.figure_svg(fig, id_prefix="f")
    assert svg.startswith("<svg")
    fig = lid_figures.eer_alid_figure({name: (0.3, 0.5, 1.0)}, title=name)
    (legend,) = fig.legends
    assert legend.get_texts()[0].get_text() == name.replace("$", r"\$")
    plotting.figure_svg(fig, id_prefix="g")


def _visible_polyline(ax, xs, ys) -> list[tuple[float, float, float, float]]:
    """The segments of a line (display pixels) that lie in the axes' box, grown by 2 px (a line on an edge shows)."""
    box = ax.bbox
    points = ax.transData.transform(np.column_stack([xs, ys]))
    inside = []
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if all(box.x0 - 2 <= x <= box.x1 + 2 for x in (x0, x1)) and all(
            box.y0 - 2 <= y <= box.y1 + 2 for y in (y0, y1)
        ):
            inside.append((x0, y0, x1, y1))
    return inside


@pytest.mark.parametrize("value", [0.0, -0.7, 2.5])
@pytest.mark.parametrize("panels", [False, True])
def test_a_curve_of_one_value_is_drawn_not_only_listed(value, panels):
    """Every trial with the same LID (the random attacker: all 0 bit): P(LID > x) is 1 below it and 0 from it on.

    Nothing of that lies on a log-scale step curve; the figure draws it anyway -- share 1 to
    the value, then along the bottom edge (share 0) -- across the panel, in the system's colour.
    """
    rng = np.random.default_rng(7)
    flat = np.full(120, value)
    lids = {"weak": rng.normal(1.0, 1.0, 200), "random": flat}
    if panels:
        fig = lid_figures.lid_ccdf_panels_figure(
            {("logistic", "uniform"): lids, ("isotonic", "uniform"): lids}, title="t", log2_n=3.0
        )
    else:
        fig = lid_figures.lid_ccdf_figure(lids, title="t", log2_n=3.0)
    fig.canvas.draw()
    colour = plotting.curve_styles(list(lids))["random"]["color"]
    for ax in fig.axes:
        lines = [line for line in ax.get_lines() if line.get_color() == colour and len(line.get_xdata()) > 1]
        assert lines, "the one-value curve draws no line"
        segments = [s for line in lines for s in _visible_polyline(ax, *line.get_data())]
        length = sum(math.hypot(x1 - x0, y1 - y0) for x0, y0, x1, y1 in segments)
        assert length > ax.bbox.width  # across the panel, not a dot
        # what it shows, against the share counted here: 1 left of the value, the bottom edge (0) right of it
        floor = ax.get_ylim()[0]
        low, high = ax.get_xlim()
        for x in (value - 0.3, value + 0.3, high - 0.01):
            assert low < x < high
            share = np.mean(flat > x)
            drawn = {
                float(y0)
                for line in lines
                for (x0, y0), (x1, y1) in itertools.pairwise(zip(line.get_xdata(), line.get_ydata()))
                if y0 == y1 and min(x0, x1) <= x <= max(x0, x1)
            }
            assert drawn == ({1.0} if share == 1.0 else {floor}), (x, share, drawn)
        # and it says so in words beside its mark
        assert f"random: share 0 from {value:.2f} bit" in [t.get_text() for t in ax.texts]
    plotting.pyplot().close(fig)


def test_the_ladder_figure_says_what_its_codes_mean():
    """Its rungs are labelled with their codes (o-a, a-a); the axis says a code is enrolment then trial speech."""
    import lidframe
    from lidframe.data.simulate import simulate_system
    from lidframe.report import LadderEntry, ladder_from_results
    from lidframe.report.sections.ladder import ladder_figure

    rows = [
        ("anon/enc/ignorant", "ignorant", "original"),
        ("anon/enc/lazy-informed", "lazy-informed", "anonymised"),
    ]
    results, entries = {}, []
    for seed, (label, scenario, enrolment) in enumerate(rows):
        dev, ev = simulate_system(leakage=0.3, seed=seed, n_enrolled=6, trials_per_speaker=3)
        results[label] = lidframe.evaluate(dev, ev)
        entries.append(LadderEntry(label, "anon", "enc", scenario, enrolment, "anonymised", "clear speech"))
    fig = ladder_figure(ladder_from_results(entries, results))
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert any("(a-a)" in t for t in ticks) and any("(o-a)" in t for t in ticks)
    label = ax.get_xlabel()
    assert "enrolment, then trial speech" in label and "o original, a anonymised" in label
    assert "a-a: both anonymised" in label
    plotting.pyplot().close(fig)


# ------------------------------------------------------------------ the LID CCDF's x range and legend (issue 41)
#: The rule of docs/report.md, restated here: the data and 0, a curve of one value with 0.5 bit either side,
#: then 5 % of that span (at least 0.05 bit) more on each side.
CCDF_MARGIN_SHARE, CCDF_MARGIN_MIN, CCDF_FLAT_ROOM = 0.05, 0.05, 0.5


def _ccdf_rule(curves) -> tuple[float, float]:
    """The x range the rule gives for *curves* (arrays of LID, bits), computed here from its words."""
    values = [float(v) for curve in curves for v in np.ravel(curve)]
    low, high = min([0.0, *values]), max([0.0, *values])
    for curve in curves:
        if len(set(np.ravel(curve).tolist())) == 1:  # a curve of one value: room for its drop
            value = float(np.ravel(curve)[0])
            low, high = min(low, value - CCDF_FLAT_ROOM), max(high, value + CCDF_FLAT_ROOM)
    margin = max(CCDF_MARGIN_SHARE * (high - low), CCDF_MARGIN_MIN)
    return low - margin, high + margin


lid_values = st.floats(-12.0, 12.0, allow_nan=False, allow_subnormal=False)
curve_lists = st.lists(
    st.one_of(
        st.lists(lid_values, min_size=1, max_size=30),
        st.tuples(lid_values, st.integers(1, 5)).map(lambda vn: [vn[0]] * vn[1]),  # one value: a flat curve
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=15, deadline=None)
@given(curve_lists, st.floats(0.0, 14.0), st.booleans())
def test_the_ccdf_x_range_is_the_data_with_zero_and_a_margin_and_log2_n_is_marked_where_in_it(curves, log2_n, panels):
    """The x limits hold every LID drawn and 0, and are no wider than the rule; log2 N: a line in range, else said."""
    lids = {f"s{k}": np.asarray(curve) for k, curve in enumerate(curves)}
    if panels:
        half = dict(list(lids.items())[: max(1, len(lids) // 2)])
        fig = lid_figures.lid_ccdf_panels_figure(
            {("logistic", "uniform"): half, ("isotonic", "uniform"): lids}, title="t", log2_n=log2_n
        )
    else:
        fig = lid_figures.lid_ccdf_figure(lids, title="t", log2_n=log2_n)
    plotting.pyplot().close(fig)  # read below, closed now: a failing example leaves no figure open
    low, high = _ccdf_rule(list(lids.values()))
    for ax in fig.axes:
        x_low, x_high = ax.get_xlim()
        assert x_low == pytest.approx(low, abs=1e-9) and x_high == pytest.approx(high, abs=1e-9)
        assert x_low < min(0.0, *(float(np.min(v)) for v in lids.values()))
        assert x_high > max(0.0, *(float(np.max(v)) for v in lids.values()))
    label = f"log2 N = {log2_n:.2f}"
    labelled = label in _texts(fig)
    bottom = fig.axes[-1].get_xlabel()
    if low <= log2_n <= high:
        assert labelled and "right of the axis" not in bottom
    else:
        assert not labelled and f"{label} lies right of the axis" in bottom


def _legend_boxes(fig):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]
    assert legends, "no legend"
    return [legend.get_window_extent(renderer) for legend in legends], [
        ax.get_window_extent(renderer) for ax in fig.axes
    ]


@pytest.mark.parametrize("kind", ["one panel", "panels", "open set", "long labels"])
def test_the_ccdf_legend_lies_outside_every_axes(kind):
    """Beside or below the axes, never over a curve: no legend box meets an axes' data area (the renderer's boxes)."""
    from lidframe.report.sections.open_set import open_set_figure

    rng = np.random.default_rng(5)
    lids = {f"system {k}": rng.normal(0.5 * k, 1.0, 200) for k in range(5)}
    if kind == "one panel":
        fig = lid_figures.lid_ccdf_figure(lids, title="t", log2_n=4.0)
    elif kind == "long labels":
        fig = lid_figures.lid_ccdf_figure(
            {
                f"anon (semi-informed) / adaptable · logistic · uniform · seed {k}": v
                for k, v in enumerate(lids.values())
            },
            title="t",
            log2_n=4.0,
        )
    elif kind == "panels":
        fig = lid_figures.lid_ccdf_panels_figure(
            {(c, p): lids for c in ("logistic", "isotonic") for p in ("uniform", "open?outside=0.2")}, title="t"
        )
    else:
        outsider = rng.random(300) < 0.3
        fig = open_set_figure(rng.normal(0.5, 1.0, 300), outsider, rng.random(300), threshold=0.6, title="t")
    legends, axes = _legend_boxes(fig)
    for legend in legends:
        for ax in axes:
            assert not legend.overlaps(ax), (legend, ax)
        assert legend.x0 >= 0 and legend.y0 >= 0  # inside the figure: nothing cut off
        assert legend.x1 <= fig.bbox.x1 and legend.y1 <= fig.bbox.y1
    plotting.pyplot().close(fig)
