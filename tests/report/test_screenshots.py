"""Every kind of report page at 1,400 CSS px and on a 420 px phone, in headless Chromium: no table overflows its box.

For the pages of :mod:`tests.report.test_sections` (the demos', ``evaluate --report``'s,
the grid's, ``dp-audit --report``'s, and one built from Python), at each width: the page
does not scroll sideways; every table sits in its ``.table-wrap`` and no wrap is wider
inside than its box (``scrollWidth`` against ``clientWidth``); a table too wide for its
box is shown stacked (one block per row, each value under its column's name) and still
sorts; and the full-page screenshot, saved in the test's folder, has the window's width
with nothing drawn in the right margin (nothing cut off at the edge).  Before the
stylesheet and script of the page kept wide tables in their boxes, the comparison table of
every page overflowed its box at 420 px, and the grid's and ``evaluate --report``'s at
1,400 px too.

Marked like the other browser tests: skipped, saying why, without selenium, Chromium or
chromedriver.  No test sleeps a fixed time for the layout: each polls the page until the
layout it checks is there (up to :data:`LAYOUT_DEADLINE_S`), so a loaded machine only makes
them slower (a fixed 0.3 s wait failed on a fresh clone under load, issue 41).
"""

from __future__ import annotations

import io

import pytest

from tests.report.test_browser import (
    _click_header,
    _column_values,
    _open,
    _python_sort,
    browser,  # noqa: F401 (a fixture)
)
from tests.report.test_sections import KINDS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = (1400, 420)
#: The tallest full-page screenshot taken (CSS px): the longest page is cut there.
MAX_HEIGHT = 16_000
#: How long a test waits for the page to lay its tables out (s): generous, for a loaded machine.
LAYOUT_DEADLINE_S = 60.0

_BOXES = """
return Array.from(document.querySelectorAll('table')).map(t => {
  const w = t.closest('.table-wrap');
  const box = w ? w.getBoundingClientRect() : t.getBoundingClientRect();
  return {id: t.id, wrapped: w !== null, stacked: w !== null && w.classList.contains('stacked'),
          scroll: w ? w.scrollWidth : t.scrollWidth, client: w ? w.clientWidth : t.clientWidth,
          left: box.left, right: box.right,
          unlabelled: Array.from(t.tBodies).flatMap(b => Array.from(b.rows)).flatMap(r => Array.from(r.cells).slice(1))
            .filter(c => !(c.getAttribute('data-title') || '').trim() && c.textContent.trim()).length};
});
"""


def _laid_out(driver, condition) -> bool:
    """Whether the page reaches *condition* (a callable of the driver) before :data:`LAYOUT_DEADLINE_S`.

    Polls rather than sleeping a fixed time; returns False at the deadline, so that the caller's
    assertions then say what is wrong.
    """
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(driver, LAYOUT_DEADLINE_S, poll_frequency=0.05).until(condition)
    except TimeoutException:
        return False
    return True


def _fits(driver, width: int) -> bool:
    """The window is *width* px wide and every table lies inside its box (what the report's script aims at)."""
    if driver.execute_script("return window.innerWidth") != width:
        return False
    client = driver.execute_script("return document.documentElement.clientWidth")
    boxes = driver.execute_script(_BOXES)
    return (
        driver.execute_script("return document.documentElement.scrollWidth") <= client
        and bool(boxes)
        and all(b["wrapped"] and b["scroll"] <= b["client"] for b in boxes)
    )


def _emulate(driver, width: int, height: int = 900) -> None:
    """A window *width* CSS px wide with no scroll bar (the page's width is the window's, in a screenshot too)."""
    driver.execute_cdp_cmd("Emulation.setScrollbarsHidden", {"hidden": True})
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )


def _restore(driver) -> None:
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    driver.execute_cdp_cmd("Emulation.setScrollbarsHidden", {"hidden": False})


def _screenshot(driver, path) -> tuple[int, int, int]:
    """A full-page screenshot into *path*: (its width, its height, the rightmost column drawn in)."""
    import base64

    from PIL import Image, ImageChops

    width = driver.execute_script("return document.documentElement.clientWidth")
    height = min(driver.execute_script("return document.documentElement.scrollHeight"), MAX_HEIGHT)
    clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    path.write_bytes(base64.b64decode(shot["data"]))
    image = Image.open(io.BytesIO(path.read_bytes())).convert("RGB")
    background = Image.new("RGB", image.size, (255, 255, 255))
    box = ImageChops.difference(image, background).getbbox()
    return image.width, image.height, 0 if box is None else box[2]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("kind", KINDS)
def test_no_table_overflows_its_box(browser, pages, kind, width, tmp_path):  # noqa: F811 (the fixtures)
    _emulate(browser, width)
    try:
        _open(browser, pages[kind])
        _laid_out(browser, lambda d: _fits(d, width))  # the assertions below say what is wrong if it never is
        assert browser.execute_script("return window.innerWidth") == width
        client = browser.execute_script("return document.documentElement.clientWidth")
        assert browser.execute_script("return document.documentElement.scrollWidth") <= client, (
            "the page scrolls sideways"
        )
        boxes = browser.execute_script(_BOXES)
        assert boxes, "no table"
        for box in boxes:
            assert box["wrapped"], box  # every table in its box
            assert box["scroll"] <= box["client"], (kind, width, box)  # nothing wider inside than the box
            assert box["left"] >= 0 and box["right"] <= client + 0.5, (kind, width, box)
            if box["stacked"]:  # each value under the name of its column
                assert box["unlabelled"] == 0, (kind, width, box)
        if width == 420:  # a phone's comparison table does not fit as a table: it is stacked, and still sorts
            (comparison,) = [b for b in boxes if b["id"] == "comparison-table"]
            assert comparison["stacked"]
            before = _column_values(browser, "comparison-table", 0)
            assert _click_header(browser, "comparison-table", "system") == "ascending"
            assert [r[0] for r in _column_values(browser, "comparison-table", 0)] == _python_sort(
                before, "ascending", False
            )
        shot = tmp_path / f"{kind.replace(' ', '-')}-{width}.png"
        shot_width, shot_height, drawn_to = _screenshot(browser, shot)
        assert shot_width == client == width and shot_height >= 900
        assert drawn_to <= client - 8, f"drawn up to column {drawn_to} of {client}: cut off at the right edge"
        assert browser.get_log("browser") == []
    finally:
        _restore(browser)


def test_a_table_is_laid_out_again_when_the_window_narrows(browser, pages):  # noqa: F811 (the fixtures)
    """Opened at 1,400 px, then narrowed to 420 px without reloading: the comparison table is stacked, and back.

    The DP audit's comparison table (few metrics) fits 1,400 px as a table.
    """
    try:
        _emulate(browser, 1400)
        _open(browser, pages["dp-audit"])
        state = "return document.getElementById('comparison-table').closest('.table-wrap').className"
        assert "stacked" not in browser.execute_script(state)
        _emulate(browser, 420)
        assert _laid_out(browser, lambda d: "stacked" in d.execute_script(state)), "not stacked at 420 px"
        _emulate(browser, 1400)
        assert _laid_out(browser, lambda d: "stacked" not in d.execute_script(state)), "still stacked at 1,400 px"
    finally:
        _restore(browser)
