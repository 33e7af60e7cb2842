"""Each kind of report.html in a real browser: headless Chromium driven by selenium.

For a report of one evaluate Result, of several systems with sensitivity and
per-speaker tables, of a DP audit and of a grid -- and for the pages the command line
writes (``lidframe evaluate --report``, ``lidframe report`` on a small grid,
``lidframe dp-audit --report``, opened where they were written): the page loads with no console error
and no request other than ``file:`` and ``data:``; every figure is drawn with a size;
clicking a column header sorts the rows (checked against a sort done here, and back the
other way); the page prints to PDF; and a screenshot is saved in the test's folder.

Skipped, with the reason, where selenium, Chromium or chromedriver is missing (``.ci/run``
installs Debian's ``chromium`` and ``chromium-driver`` when it can).
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import tempfile

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: Flags that keep Chromium from reaching any network of its own (updates, sync, QUIC probes).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1024",
)


def _find(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser():
    # where the browser is known to be installed (.ci/run sets LIDFRAME_REQUIRE_BROWSER=1 once it
    # installed Chromium and its driver), not running the page tests is a failure, not a skip:
    # a green CI then means they ran and passed
    skip = pytest.fail if os.environ.get("LIDFRAME_REQUIRE_BROWSER") == "1" else pytest.skip
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        skip("selenium is not installed (pip install selenium)")
    chromium = os.environ.get("LIDFRAME_CHROMIUM") or _find("chromium", "chromium-browser", "google-chrome")
    driver_path = os.environ.get("LIDFRAME_CHROMEDRIVER") or _find("chromedriver")
    if chromium is None:
        skip("no Chromium browser found (apt-get install chromium)")
    if driver_path is None:
        skip("no chromedriver found (apt-get install chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="lidframe-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(driver_path), options=options)
    except Exception as exc:  # a browser that cannot start here (no shared memory, ...) is a skip, not a failure
        shutil.rmtree(profile, ignore_errors=True)
        skip(f"Chromium did not start: {str(exc).splitlines()[0]}")
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def _requests(driver) -> list[tuple[str, str]]:
    """(URL, document that asked) of every request since the last call (Network domain events).

    The browser's own pages (``chrome://`` resources of its start page) show up too; they
    are the browser's, not the report's.
    """
    found = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            params = message["params"]
            found.append((params["request"]["url"], params.get("documentURL", "")))
    return found


def _open(driver, path, *, appendices: bool = True):
    """Load *path*; with *appendices*, open every appendix (closed on screen) as a reader clicking its title does."""
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get_log("performance")
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(path.as_uri())
    # get() normally returns once the page has loaded, but a large page can still be parsing
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.readyState") == "complete")
    if appendices:
        open_appendices(driver)


def open_appendices(driver) -> None:
    """Open every appendix of the page (a ``<details>``, closed on screen), as clicking each title does."""
    driver.execute_script("document.querySelectorAll('details').forEach(d => { d.open = true; });")


def _column_values(driver, table_id: str, column: int) -> list[str]:
    script = (
        "return Array.from(document.getElementById(arguments[0]).tBodies[0].rows)"
        ".map(r => [r.cells[0].textContent.trim(), r.cells[arguments[1]].getAttribute('data-sort')]);"
    )
    return driver.execute_script(script, table_id, column)


def _natural(text: str) -> list:
    """Text order with runs of digits compared as numbers ("mu 2" before "mu 10"), case ignored."""
    return [
        (0, int(part), "") if part.isdigit() else (1, 0, part.casefold()) for part in re.split(r"(\d+)", text) if part
    ]


def _python_sort(rows: list[list[str]], direction: str, numeric: bool) -> list[str]:
    """Row labels in the order the page must show: by value, empty values last, ties in their earlier order."""
    present = [r for r in rows if r[1] != ""]
    missing = [r for r in rows if r[1] == ""]
    key = (lambda r: float(r[1])) if numeric else (lambda r: _natural(r[1]))
    # sorted() is stable, with reverse=True too: equal values keep their order, as in the page
    ordered = sorted(present, key=key, reverse=direction == "descending")
    return [r[0] for r in ordered] + [r[0] for r in missing]


def _click_header(driver, table_id: str, title: str) -> str:
    from selenium.webdriver.common.by import By

    table = driver.find_element(By.ID, table_id)
    headers = table.find_elements(By.CSS_SELECTOR, "thead th")
    (header,) = [h for h in headers if h.text.replace("↕", "").replace("↑", "").replace("↓", "").strip() == title]
    header.find_element(By.TAG_NAME, "button").click()
    return header.get_attribute("aria-sort")


@pytest.mark.parametrize("kind", ["evaluate", "systems", "dp-audit", "grid"])
def test_report_in_headless_chromium(browser, rendered, kind, tmp_path):
    built, page = rendered[kind]
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    check_page(browser, path, kind, tmp_path)
    assert built.report.kind == ("evaluate" if kind == "systems" else kind)


@pytest.mark.parametrize("kind", ["evaluate", "grid", "dp-audit"])
def test_page_written_by_the_command_line_in_headless_chromium(browser, cli_runs, kind, tmp_path):
    """The report.html of ``evaluate --report``, ``lidframe report`` and ``dp-audit --report``, opened where it was written."""
    check_page(browser, cli_runs[kind].page, kind, tmp_path)


def check_page(browser, path, kind: str, tmp_path) -> None:
    """Open *path* and run every check of this module's docstring on it; keep a PDF and a screenshot in *tmp_path*."""
    from selenium.webdriver.common.by import By

    page = path.read_text(encoding="utf-8")
    _open(browser, path)

    # no console error (a blocked request, a CSP refusal or a script error would be one)
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    # no request but the page itself and data: URLs
    requests = _requests(browser)
    page_uri = path.as_uri()
    asked_by_page = [url for url, document in requests if document == page_uri]
    assert page_uri in asked_by_page  # the log works: it saw the page itself
    assert all(url.startswith(("file:", "data:")) for url in asked_by_page), asked_by_page
    assert not [url for url, _ in requests if url.startswith(("http:", "https:", "ws:", "wss:", "ftp:"))]

    # every figure drawn, with a size
    sizes = browser.execute_script(
        "return Array.from(document.querySelectorAll('figure')).map(f => {"
        " const s = f.querySelector('svg'); const i = f.querySelector('img');"
        " if (s) { const b = s.getBoundingClientRect(); return [b.width, b.height, s.childElementCount]; }"
        " if (i) { return [i.naturalWidth, i.naturalHeight, 1]; } return [0, 0, 0]; });"
    )
    assert len(sizes) == page.count("<figure ")
    assert sizes and all(w > 100 and h > 100 and n > 0 for w, h, n in sizes), sizes

    # sorting a numeric column and a text column reorders the rows as a sort here does
    headers = [
        h.text.replace("↕", "").strip() for h in browser.find_elements(By.CSS_SELECTOR, "#comparison-table thead th")
    ]
    for title, numeric in (("ALID", True), ("LIDmax", True), ("system", False)):
        column = headers.index(title)
        before = _column_values(browser, "comparison-table", column)
        for direction in ("ascending", "descending"):
            assert _click_header(browser, "comparison-table", title) == direction
            rows = _column_values(browser, "comparison-table", column)
            assert sorted(rows) == sorted(before)  # the same rows, reordered
            assert [r[0] for r in rows] == _python_sort(before, direction, numeric), (title, direction)
            values = [float(r[1]) for r in rows if r[1] != ""] if numeric else None
            if numeric:
                assert values == sorted(values, reverse=direction == "descending")
            before = rows
    # a column with values not computed: they stay last both ways (systems: plain has no LID-)
    if kind == "systems":
        column = headers.index("LID−")
        for direction in ("ascending", "descending"):
            assert _click_header(browser, "comparison-table", "LID−") == direction
            rows = _column_values(browser, "comparison-table", column)
            assert rows[-1][1] == "" and all(r[1] != "" for r in rows[:-1])
            assert not any(math.isnan(float(r[1])) for r in rows[:-1])
    assert browser.get_log("browser") == []  # clicking raised nothing either

    # it prints
    pdf = base64.b64decode(browser.execute_cdp_cmd("Page.printToPDF", {"printBackground": True})["data"])
    assert pdf.startswith(b"%PDF") and len(pdf) > 10_000
    (tmp_path / "report.pdf").write_bytes(pdf)
    # and a screenshot is kept beside it
    shot = tmp_path / f"{kind}-report.png"
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_checks_see_a_request_and_a_console_error(browser, tmp_path):
    """The control: a page that asks for an http: image and logs an error fails both checks above."""
    path = tmp_path / "bad.html"
    path.write_text(
        "<!doctype html><title>bad</title><img src='http://127.0.0.1:9/x.png'>"
        "<script>console.error('deliberate')</script>",
        encoding="utf-8",
    )
    _open(browser, path)
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert any("deliberate" in m for m in errors)
    asked = [url for url, document in _requests(browser) if document == path.as_uri()]
    assert "http://127.0.0.1:9/x.png" in asked
