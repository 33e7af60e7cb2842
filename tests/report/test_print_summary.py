"""The summary prints on at most two A4 pages, and the appendices, closed on screen, print in full.

Each page -- ``lidframe evaluate --report --policy``'s, the simulated demo's (five systems),
the real-voice demo's layout (several attackers, the ladder, the utility) and a grid's
with a policy -- is printed to PDF by headless Chromium (``Page.printToPDF``, A4 from the
print stylesheet) and read back with pypdf: the page on which "Appendix A." first appears
is at most the third (the appendices start on a page of their own, so the summary takes
the pages before it), the summary's end marker lies before it, and the text of the last
appendix (the provenance's input files) is in the PDF although the appendix is closed on
screen (its table is not visible there).

Marked like the other browser tests; skipped, saying why, without selenium, Chromium,
chromedriver or pypdf.
"""

from __future__ import annotations

import base64
import io
import unicodedata

import pytest

from tests.report.conftest import run_cli
from tests.report.test_browser import _open, browser  # noqa: F401 (a fixture)
from tests.report.test_verdict_section import POLICY

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: The most A4 pages the summary may take.
SUMMARY_PAGES = 2


def _pdf_pages(driver) -> list[str]:
    """The text of each page of the current page's print, A4 as its stylesheet asks."""
    pypdf = pytest.importorskip("pypdf", reason="reading the printed PDF needs pypdf (pip install pypdf)")
    data = driver.execute_cdp_cmd("Page.printToPDF", {"printBackground": True, "preferCSSPageSize": True})["data"]
    reader = pypdf.PdfReader(io.BytesIO(base64.b64decode(data)))
    box = reader.pages[0].mediabox
    assert (round(float(box.width) / 72 * 25.4), round(float(box.height) / 72 * 25.4)) == (210, 297)  # A4, mm
    # NFKC: the PDF sets "fi" as one ligature glyph
    return [unicodedata.normalize("NFKC", page.extract_text() or "") for page in reader.pages]


def summary_pages(driver, path) -> int:
    """How many A4 pages the summary of the page at *path* takes in print; checks that the appendices print in full."""
    _open(driver, path, appendices=False)
    hidden = driver.execute_script(
        "const d = document.querySelector('#provenance > details');"
        "return [d.open, document.getElementById('inputs-table').checkVisibility()];"
    )
    assert hidden == [False, False]  # closed on screen
    texts = _pdf_pages(driver)
    first = next(k for k, text in enumerate(texts) if "Appendix A." in text)
    end = next(k for k, text in enumerate(texts) if "End of the summary" in text)
    assert end < first
    assert any("Input files and their SHA-256 digests" in t for t in texts[first:])  # the last appendix, in full
    assert driver.execute_script("return document.querySelector('#provenance > details').open") is False
    return first


@pytest.mark.parametrize("kind", ["simulated demo", "demo", "systems"])
def test_the_summary_of_a_page_of_several_systems_prints_on_two_pages(browser, pages, kind, record_property):  # noqa: F811
    n = summary_pages(browser, pages[kind])
    record_property("summary_pages", n)
    assert n <= SUMMARY_PAGES, f"the summary of the {kind} page takes {n} A4 pages"


def test_the_summary_of_an_evaluate_page_with_a_verdict_prints_on_two_pages(browser, tmp_path, record_property):  # noqa: F811
    from lidframe.data.simulate import simulate_system

    dev, ev = simulate_system(leakage=0.4, seed=8, n_enrolled=29, trials_per_speaker=20)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    (tmp_path / "policy.toml").write_text(POLICY)
    code, _ = run_cli(
        ["evaluate", "--dev", tmp_path / "dev.npz", "--eval", tmp_path / "eval.npz", "--n-boot", "200",
         "--policy", tmp_path / "policy.toml", "--report", tmp_path / "audit"]
    )  # fmt: skip
    assert code in (0, 3)
    n = summary_pages(browser, tmp_path / "audit" / "report.html")
    record_property("summary_pages", n)
    assert n <= SUMMARY_PAGES, f"the summary of the evaluate page takes {n} A4 pages"
