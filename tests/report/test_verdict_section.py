"""The page's section "Verdict": a verdict policy judged on the page, interval-aware, with the policy's digest.

Every outcome the page shows is re-derived here from the numbers the same run wrote
elsewhere -- the ``verdict`` block of ``lidframe evaluate --json`` (its estimate, interval
and threshold), a grid's ``table.csv`` (each cell's ``<key>_low`` / ``<key>_high``) -- by
the rule of docs/verdict.md: a limit ``value <= x`` passes where the interval's upper
bound is at most x, fails where its lower bound is above x, else is undecided.  The policy
file's digest on the page is ``hashlib``'s; a page without a policy says how to give one.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil

import pandas as pd
import pytest

from lidframe.analyses.verdict import EXIT_NOT_MET
from lidframe.data.simulate import simulate_system
from tests.report.conftest import run_cli
from tests.report.htmltree import parse

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

POLICY = """name = "Test policy"

[[limit]]
metric = "alid"
at_most = 0.5

[[limit]]
metric = "lid_q99"
at_most = 1.0

[[limit]]
metric = "pi_link"
n_prime = 2
at_most_times_chance = 1.2

[[limit]]
metric = "eer"
at_least = 0.4
"""
#: A policy every leaky cell fails and none can pass without intervals: ALID <= 0 bits.
STRICT = '[[limit]]\nmetric = "alid"\nat_most = 0.0\n'
#: A policy every cell with intervals passes: ALID at most more than any LID can be.
LENIENT = '[[limit]]\nmetric = "alid"\nat_most = 1000.0\n\n[[limit]]\nmetric = "lid_max"\nat_most = 1000.0\n'


def expected_outcome(low: float | None, high: float | None, threshold: float, bound: str, *, interval: bool) -> str:
    """The outcome of one limit by docs/verdict.md's rule, from its interval and threshold."""
    if low is None or high is None or (isinstance(low, float) and math.isnan(low)):
        return "undecided" if interval else "judged on the estimate"
    if bound == "at_least":
        low, high, threshold = -high, -low, -threshold  # a floor is a ceiling of the negated value
    if high <= threshold:
        return "pass"
    if low > threshold:
        return "fail"
    return "undecided"


def _section(page_path):
    return parse(page_path.read_text(encoding="utf-8")).find("section", id="verdict")


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """``lidframe evaluate --policy --json --report`` of a leaky system: (exit status, its JSON, its page, the policy)."""
    folder = tmp_path_factory.mktemp("verdict-evaluate")
    dev, ev = simulate_system(leakage=0.3, seed=11, n_enrolled=12, trials_per_speaker=6)
    dev.save(folder / "dev.npz")
    ev.save(folder / "eval.npz")
    policy = folder / "policy.toml"
    policy.write_text(POLICY)
    code, out = run_cli(
        ["evaluate", "--dev", folder / "dev.npz", "--eval", folder / "eval.npz", "--n-boot", "150",
         "--policy", policy, "--json", folder / "s.json", "--report", folder / "audit"]
    )  # fmt: skip
    record = json.loads((folder / "s.json").read_text())
    return code, record, folder / "audit" / "report.html", policy


def test_the_page_judges_each_limit_as_the_rule_does_from_the_json(evaluated):
    code, record, page, _ = evaluated
    block = record["verdict"]
    section = _section(page)
    rows = section.find("table", id="verdict-table").find("tbody").find_all("tr")
    assert len(rows) == len(block["limits"]) == 4
    outcomes = []
    for row, limit in zip(rows, block["limits"], strict=True):
        cells = row.find_all("td")
        want = expected_outcome(limit["low"], limit["high"], limit["threshold"], limit["bound"], interval=True)
        assert row.attrs["data-outcome"] == want == limit["outcome"], limit
        assert cells[4].text() == want.upper()
        assert row.attrs["data-metric-key"] == limit["metric"]
        # the numbers are the JSON's: estimate and threshold at full precision, the interval's upper bound
        assert float(cells[1].attrs["data-sort"]) == limit["estimate"]
        assert float(cells[3].attrs["data-sort"]) == pytest.approx(limit["threshold"], rel=0, abs=1e-15)
        assert float(cells[2].attrs["data-sort"]) == limit["high"]
        assert cells[5].text() == limit["reason"]
        outcomes.append(want)
    overall = "fail" if "fail" in outcomes else "undecided" if "undecided" in outcomes else "pass"
    assert section.find("p").attrs["data-outcome"] == overall == block["outcome"]
    assert (code == 0) == (overall == "pass") and code in (0, EXIT_NOT_MET)


def test_the_policy_file_and_its_digest_are_on_the_page(evaluated):
    _, record, page, policy = evaluated
    digest = hashlib.sha256(policy.read_bytes()).hexdigest()
    section = _section(page)
    assert section.find("span", data_policy_sha256=digest).text() == digest
    assert "Test policy" in section.text()
    tree = parse(page.read_text(encoding="utf-8"))
    assert _policy_row(tree) == ["verdict policy", str(policy), f"{policy.stat().st_size:,}", digest]
    assert record["verdict"]["policy_sha256"] == digest


def test_a_page_without_a_policy_says_how_to_give_one(cli_runs):
    section = _section(cli_runs["evaluate"].page)
    (reason,) = section.find_all("p")
    assert "not-applicable" in reason.attrs["class"]
    text = reason.text()
    assert text.count(". ") == 0 and text.endswith(").")  # one sentence
    assert "--policy P.toml" in text and "docs/verdict.md" in text
    assert not section.find_all("table")


@pytest.fixture(scope="module")
def grid_out(cli_runs, tmp_path_factory):
    """A copy of the command-line grid's output folder (its own report/ is left as the other tests read it)."""
    folder = tmp_path_factory.mktemp("verdict-grid") / "out"
    shutil.copytree(cli_runs["grid"].files["out"], folder)
    return folder


@pytest.mark.slow
def test_lidframe_report_judges_every_cell_of_the_grid(grid_out, tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    code, out = run_cli(["report", grid_out, "--policy", policy])
    table = pd.read_csv(grid_out / "report" / "table.csv")
    page = parse((grid_out / "report" / "report.html").read_text(encoding="utf-8"))
    section = page.find("section", id="verdict")
    matrix = section.find("table", id="verdict-table")
    heads = [th.text().replace("↕", "").strip() for th in matrix.find("thead").find_all("th")]
    assert heads[:2] == ["system", "verdict"] and len(heads) == 2 + 4  # one column per limit
    assert [th.attrs.get("data-metric-key") for th in matrix.find("thead").find_all("th")][2:] == [
        "alid",
        "lid_q99",
        "pi_link",
        "eer",
    ]
    rows = matrix.find("tbody").find_all("tr")
    assert len(rows) == len(table)  # one row per cell
    # the ALID, LID q99 and EER limits re-derived from each cell's interval in table.csv (sorted as the page is)
    labels = [r.find_all("td")[0].text() for r in rows]
    overall = []
    for row in rows:
        cells = row.find_all("td")
        outcomes = [c.attrs["data-sort"] for c in cells[2:]]
        overall.append(cells[1].text().lower())
        assert cells[1].text().lower() == (
            "fail" if "fail" in outcomes else "undecided" if "undecided" in outcomes else "pass"
        )
    assert len(set(labels)) == len(labels)
    for (_, cell), row in zip(table.iterrows(), _matching(rows, table), strict=True):
        outcomes = [c.attrs["data-sort"] for c in row.find_all("td")[2:]]
        for key, threshold, bound, got in (
            ("alid", 0.5, "at_most", outcomes[0]),
            ("lid_q99", 1.0, "at_most", outcomes[1]),
            ("eer", 0.4, "at_least", outcomes[3]),
        ):
            assert got == expected_outcome(cell[f"{key}_low"], cell[f"{key}_high"], threshold, bound, interval=True)
    # printed too, and the exit status says whether every cell passed
    assert "verdict of policy 'Test policy'" in out
    assert code == (0 if set(overall) == {"pass"} else EXIT_NOT_MET)
    digest = hashlib.sha256(policy.read_bytes()).hexdigest()
    assert _policy_row(page) == ["verdict policy", str(policy), f"{policy.stat().st_size:,}", digest]


def _policy_row(tree) -> list[str]:
    """The cells of the policy's row of the page's input files."""
    rows = tree.find("table", id="inputs-table").find("tbody").find_all("tr")
    (row,) = [r for r in rows if r.find_all("td")[0].text() == "verdict policy"]
    return [td.text() for td in row.find_all("td")]


def _matching(rows, table):
    """The page's row of each row of table.csv: the one whose label names its system, calibrator and prior."""
    found = []
    for _, cell in table.iterrows():
        (row,) = [
            r
            for r in rows
            if r.find_all("td")[0].text().startswith(f"{cell['system']} ")
            and f"· {cell['calibrator']} · {cell['prior']}" in r.find_all("td")[0].text()
        ]
        found.append(row)
    return found


@pytest.mark.slow
def test_the_exit_status_of_lidframe_report_follows_the_grid_verdict(grid_out, tmp_path):
    """All cells pass a lenient policy (exit 0); a strict one fails them (exit 3); a bad policy is exit 2, unwritten."""
    lenient, strict = tmp_path / "lenient.toml", tmp_path / "strict.toml"
    lenient.write_text(LENIENT)
    strict.write_text(STRICT)
    assert run_cli(["report", grid_out, "--policy", lenient])[0] == 0
    code, out = run_cli(["report", grid_out, "--policy", strict])
    assert code == EXIT_NOT_MET and ": FAIL" in out
    bad = tmp_path / "bad.toml"
    bad.write_text('[[limit]]\nmetric = "n_enrolled"\nat_most = 3\n')
    before = (grid_out / "report" / "report.html").stat().st_mtime_ns
    assert run_cli(["report", grid_out, "--policy", bad])[0] == 2
    assert (grid_out / "report" / "report.html").stat().st_mtime_ns == before  # nothing written


def test_a_policy_changed_after_it_was_read_is_refused(tmp_path):
    """The page names the policy with the digest the verdict was judged from: a file changed since is one line."""
    from lidframe.analyses.verdict import read_policy
    from lidframe.errors import InputError
    from lidframe.report.sections.verdict import policy_input

    path = tmp_path / "policy.toml"
    path.write_text(STRICT)
    policy = read_policy(path)
    (found,) = policy_input(policy)
    assert found.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() == policy.sha256
    path.write_text(LENIENT)
    with pytest.raises(InputError, match="changed while the run ran") as caught:
        policy_input(policy)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)
