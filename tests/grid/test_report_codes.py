"""A grid report with scenarios says what their codes mean wherever it prints them (``a-a``, ``o-a``).

The comparison headings of ``summary.md`` / ``summary.html`` and the page's notes name each
scenario with its VoicePrivacy code; each of those files also says, once, that a code is the
enrolment speech then the trial speech -- ``a-a``: anonymised enrolment, anonymised trials.
"""

from __future__ import annotations

import html

import pytest

from lidframe.grid.report import SCENARIO_CODES, write_report
from lidframe.grid.runner import run_grid
from tests.grid.test_scenario_grid import ladder  # noqa: F401 (a fixture)


@pytest.mark.slow
def test_every_file_that_prints_a_code_says_what_it_means(ladder):  # noqa: F811 (the fixture)
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    folder, _ = ladder
    out = folder.parent / "out"
    run_grid(folder / "grid.toml", out)
    write_report(out)
    assert "a-a is anonymised enrolment, anonymised trials" in SCENARIO_CODES
    assert "o-a is original enrolment, anonymised trials" in SCENARIO_CODES
    for name in ("summary.md", "summary.html", "report.html"):
        text = html.unescape((out / "report" / name).read_text(encoding="utf-8"))
        assert "(a-a)" in text and "(o-a)" in text, name  # the codes are printed ...
        assert text.count(SCENARIO_CODES) == 1, name  # ... and said once what they mean
