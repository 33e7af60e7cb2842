"""The real-voice demo's legal criteria, piece by piece (its synthesis is too slow for a test).

Score files stand in for the attackers' (the demo's rows, simulated scores, 5 trials per
speaker as the demo's eval sets have): each row's legal block must be
:func:`lidframe.analyses.legal_criteria.legal_criteria` of its own evaluation, called here
with the demo's speaker bootstrap and seed; rows that share an eval score file share its
singling out; ``summary.json`` carries each row's block and the page the section
"Singling out, linkability, inference".
"""

from __future__ import annotations

import json

import pytest

import lidframe
from lidframe.analyses.legal_criteria import legal_criteria
from lidframe.data.scoreset import ScoreSet
from lidframe.data.simulate import simulate_system
from lidframe.demo.voice import CALIBRATOR, demo_rows
from lidframe.demo.voice.plan import _DemoRun
from lidframe.demo.voice.run import _evaluate_rows, _legal_rows
from lidframe.stats.bootstrap import Bootstrap

ROWS = [row for row in demo_rows() if row.label in ("plain/ge2e", "mcadams/ge2e/ignorant", "pitch/ge2e/ignorant")]
N_BOOT, SEED = 100, 3


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """row label -> split -> score file; the last two rows share one pair of files (as rows of one eval set do)."""
    folder = tmp_path_factory.mktemp("scores")
    found = {}
    for k, row in enumerate(ROWS[:2]):
        dev, ev = simulate_system(leakage=0.6 - 0.3 * k, seed=k, n_enrolled=8, trials_per_speaker=5, n_outsiders=2)
        found[row.label] = {}
        for split, data in (("dev", dev), ("eval", ev)):
            found[row.label][split] = folder / f"{k}_{split}.npz"
            data.save(found[row.label][split])
    found[ROWS[2].label] = dict(found[ROWS[1].label])
    return found


@pytest.fixture(scope="module")
def computed(scored, tmp_path_factory):
    lines: list[str] = []
    run = _DemoRun(tmp_path_factory.mktemp("out"), seed=SEED, epochs=1, jobs=1, progress=False, log=lines.append)
    results = _evaluate_rows(run, ROWS, scored, n_boot=N_BOOT)
    return run, results, _legal_rows(run, ROWS, scored, results, n_boot=N_BOOT), lines


def test_each_rows_legal_criteria_are_those_of_lidframe_evaluate(scored, computed):
    _, _, legal, lines = computed
    assert list(legal) == [row.label for row in ROWS]
    for row in ROWS:
        dev, ev = (ScoreSet.load(scored[row.label][split]) for split in ("dev", "eval"))
        bootstrap = Bootstrap(n_boot=N_BOOT, unit="speaker", seed=SEED)
        result = lidframe.evaluate(dev, ev, calibrator=CALIBRATOR, bootstrap=bootstrap)
        want = legal_criteria(result, ev, bootstrap=bootstrap, seed=SEED).to_dict()
        got = legal[row.label].to_dict()
        assert got == want, row.label
        assert not got["absent"] and got["level"] == 0.95 and got["singling_out"]["n"] == 8
        assert got["linkability"]["points"][-1]["n_prime"] == 8
    assert f"[legal] 3 rows: linkability and singling out on eval, {N_BOOT} speaker resamples" in lines


def test_rows_of_one_eval_set_share_its_singling_out(computed):
    _, _, legal, _ = computed
    assert legal[ROWS[1].label].singling_out is legal[ROWS[2].label].singling_out  # computed once
    assert legal[ROWS[0].label].singling_out != legal[ROWS[1].label].singling_out


def test_summary_json_and_the_page_carry_each_rows_legal_block(computed, tmp_path):
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from lidframe.demo import write_demo_outputs
    from tests.report.htmltree import parse

    _, results, legal, _ = computed
    page = write_demo_outputs(
        tmp_path, results, table="t", record={}, inputs={}, title="demo", notes=[], settings={},
        systems={row.label: row.system for row in ROWS}, log=lambda _: None, legal=legal,
    )  # fmt: skip
    summary = json.loads((tmp_path / "summary.json").read_text())
    for label, block in legal.items():
        assert summary["systems"][label]["legal"] == json.loads(json.dumps(block.to_dict()))
        assert summary["systems"][label]["alid"] == results[label].summary.alid
    assert page is not None
    section = parse(page.read_text(encoding="utf-8")).find("section", id="legal")
    assert "Not computed" not in section.text()
    # three systems: one compact table of their headline rows
    assert [r.attrs["data-system"] for r in section.find("table", id="legal-table").find("tbody").find_all("tr")] == [
        row.label for row in ROWS
    ]
