"""A grid's per-speaker intervals refit the calibrator where the cell's own intervals refitted it (issue 41).

``lidframe report`` computes each shown cell's evaluation again from the grid's score
sets (:mod:`lidframe.grid.report.refits`) and, where it is the stored one bit for bit,
refits the calibrator on the cell's dev resamples: the page's intervals are then those of
:func:`lidframe.analyses.per_speaker.per_speaker` of :func:`lidframe.evaluate` run here on
the same sets with the same bootstrap (``resample="dev+eval"``).  A grid with
``resample = "eval"`` holds it fixed as before; a stale cell, and one whose evaluation
computed again is not the stored one, hold it fixed and say why on the page.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from pathlib import Path

import attrs
import numpy as np
import pytest

import lidframe
from lidframe import ScoreSet
from lidframe.analyses.per_speaker import per_speaker
from lidframe.data.simulate import simulate_system
from lidframe.grid.freshness import check_freshness
from lidframe.grid.report import cell_per_speaker, load_results, with_per_speaker, write_report
from lidframe.grid.runner import run_grid
from lidframe.stats.bootstrap import Bootstrap
from tests.report.htmltree import parse

pytest.importorskip("matplotlib")

#: The interval fields compared row for row.
INTERVALS = ("alid_low", "alid_high", "lid_max_low", "lid_max_high", "pdr_low", "pdr_high")
PRIORS = ["uniform", "uniform?outside=0.2"]


def _outsiders(data: ScoreSet, n_dropped: int) -> ScoreSet:
    """*data* with its last *n_dropped* enrolled speakers removed: their trials become outsider trials."""
    return ScoreSet(data.scores[:, :-n_dropped], data.enrolled[:-n_dropped], data.trial_speakers, data.trial_ids)


def _small_grid(folder: Path, *, resample: str = "dev+eval") -> tuple[Path, Path]:
    """A grid of one system whose calibrator is fitted on 6 dev speakers (2 of them outsiders); its spec folder and out."""
    spec = folder / "spec"
    spec.mkdir(parents=True)
    dev, ev = simulate_system(seed=3, n_enrolled=10, trials_per_speaker=5, leakage=0.3)
    keep = np.isin(dev.trial_speakers, np.unique(dev.trial_speakers)[4:])  # 6 of the 10 dev speakers
    dev = ScoreSet(dev.scores[keep], dev.enrolled, dev.trial_speakers[keep], dev.trial_ids[keep])
    _outsiders(dev, 2).save(spec / "small_dev.npz")
    _outsiders(ev, 2).save(spec / "small_eval.npz")
    (spec / "grid.toml").write_text(
        f'[grid]\ncalibrators = ["logistic"]\npriors = {json.dumps(PRIORS)}\nseeds = [4]\n\n'
        f'[grid.bootstrap]\nn_boot = 100\nresample = "{resample}"\n\n'
        '[systems.small]\ndev = "small_dev.npz"\neval = "small_eval.npz"\n'
    )
    run_grid(spec / "grid.toml", folder / "out")
    return spec, folder / "out"


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    return _small_grid(tmp_path_factory.mktemp("refit-grid"))


def _reference(spec: Path, cell, resample: str = "dev+eval"):
    """per_speaker of lidframe.evaluate on the cell's score sets, with the grid's bootstrap and the cell's seed."""
    boot = Bootstrap(n_boot=100, seed=cell.seed, resample=resample)
    result = lidframe.evaluate(
        spec / "small_dev.npz", spec / "small_eval.npz", calibrator=cell.calibrator, prior=cell.prior, bootstrap=boot
    )
    return per_speaker(result, bootstrap=boot)


def _assert_same_intervals(table, want):
    expected = {row.speaker: row for row in want.rows}
    assert [r.speaker for r in table.rows] == [r.speaker for r in want.rows if r.n_trials > 0]
    for row in table.rows:
        for key in INTERVALS:
            assert row[key] == pytest.approx(expected[row.speaker][key], rel=1e-12, abs=1e-12, nan_ok=True), key
    assert table.bootstrap == want.bootstrap and table.interval_methods == want.interval_methods


@pytest.mark.parametrize("prior", PRIORS)
def test_a_fresh_cells_table_refits_as_evaluate_does(grid, prior):
    spec, out = grid
    (cell,) = [c for c in load_results(out) if c.prior == prior]
    task = check_freshness(out).tasks[cell.cell_id]
    table = cell_per_speaker(cell, out, task=task)
    want = _reference(spec, cell)
    assert want.bootstrap["resample"] == "dev+eval" and table.bootstrap["resample"] == "dev+eval"
    _assert_same_intervals(table, want)
    assert "refitted" in table.interval_note
    # held fixed, the intervals are another thing: the refit is not a no-op on 6 dev speakers
    fixed = cell_per_speaker(cell, out)
    assert fixed.bootstrap["resample"] == "eval" and "task=" in fixed.interval_note
    widths = [(r.alid_high - r.alid_low) / (f.alid_high - f.alid_low) for r, f in zip(table.rows, fixed.rows)]
    assert np.mean(widths) > 1.05


def _page_intervals(out: Path) -> dict[str, tuple[float, ...]]:
    """speaker -> the ALID and PDR interval ends of the page's per-speaker table (as printed)."""
    page = parse((out / "report" / "report.html").read_text(encoding="utf-8"))
    (table,) = [t for t in page.find_all("table") if t.attrs.get("id", "").startswith("per-speaker-")]
    found = {}
    for tr in table.find("tbody").find_all("tr"):
        cells = tr.find_all("td")
        ends = [float(x) for i in (2, 4) for x in re.findall(r"-?\d+\.\d+", cells[i].find("span").text())[:2]]
        found[cells[0].text()] = tuple(ends)
    return found


def test_the_pages_per_speaker_intervals_are_those_refitted(grid):
    """lidframe report: the shown cell's table as per_speaker(evaluate(dev, eval, bootstrap=...)), to the digits printed."""
    spec, out = grid
    write_report(out)
    shown = next(c for c in load_results(out) if c.prior == "uniform")  # the system's first cell
    want = {r.speaker: r for r in _reference(spec, shown).rows if r.n_trials > 0}
    printed = _page_intervals(out)
    assert set(printed) == set(want)
    for speaker, ends in printed.items():
        row = want[speaker]
        # ALID printed to 0.01 bit, PDR to 0.1 %
        assert ends[:2] == pytest.approx((row.alid_low, row.alid_high), abs=0.0051), speaker
        assert ends[2:] == pytest.approx((100 * row.pdr_low, 100 * row.pdr_high), abs=0.051), speaker
    html = (out / "report" / "report.html").read_text(encoding="utf-8")
    assert "hold the calibrator fixed" not in html


def test_a_grid_that_resamples_eval_only_holds_it_fixed(tmp_path):
    spec, out = _small_grid(tmp_path, resample="eval")
    freshness = check_freshness(out)
    for cell in load_results(out):
        table = cell_per_speaker(cell, out, task=freshness.tasks[cell.cell_id])
        want = _reference(spec, cell, resample="eval")
        assert table.bootstrap["resample"] == "eval"
        _assert_same_intervals(table, want)
        assert table.interval_note == want.interval_note  # as the cell held it: nothing to explain


def _system_note(report) -> list[str]:
    return [n for n in report.notes if "hold the calibrator fixed" in n]


def test_a_stale_cell_holds_it_fixed_and_says_why(tmp_path):
    from lidframe.report import report_from_grid

    spec, out = _small_grid(tmp_path)
    cells = load_results(out)
    dev, ev = ScoreSet.load(spec / "small_dev.npz"), ScoreSet.load(spec / "small_eval.npz")
    ScoreSet(ev.scores + 0.5, ev.enrolled, ev.trial_speakers, ev.trial_ids).save(spec / "small_eval.npz")
    report = with_per_speaker(report_from_grid(cells, out_dir=out), cells, out)
    (shown,) = [s for s in report.systems if s.per_speaker is not None]
    assert shown.per_speaker.bootstrap["resample"] == "eval"
    assert "its inputs changed since it was computed (eval file" in shown.per_speaker.interval_note
    (note,) = _system_note(report)
    assert "its inputs changed" in note and shown.label in note
    # its intervals are those held fixed, on the LIDs it stored
    fixed = cell_per_speaker(next(c for c in cells if c.prior == "uniform"), out)
    assert [r.alid_low for r in shown.per_speaker.rows] == [r.alid_low for r in fixed.rows]
    assert dev.n_trials  # the dev set was not touched


def test_an_evaluation_that_is_not_the_stored_one_is_not_used(tmp_path):
    """A fresh cell whose stored summary differs from its evaluation computed again (an earlier lidframe's, say)."""
    from lidframe.report import report_from_grid

    _, out = _small_grid(tmp_path)
    with sqlite3.connect(out / "results.sqlite") as connection:
        for key, text in connection.execute("SELECT cell_id, summary FROM cells").fetchall():
            summary = json.loads(text)
            summary["alid"] += 1e-12
            connection.execute("UPDATE cells SET summary = ? WHERE cell_id = ?", (json.dumps(summary), key))
    connection.close()
    cells = load_results(out)
    freshness = check_freshness(out)
    assert not freshness.stale and len(freshness.tasks) == 2  # its inputs are those planned now
    report = with_per_speaker(report_from_grid(cells, out_dir=out), cells, out, freshness=freshness)
    (shown,) = [s for s in report.systems if s.per_speaker is not None]
    assert shown.per_speaker.bootstrap["resample"] == "eval"
    (note,) = _system_note(report)
    assert "is not the stored one" in note


def test_a_cell_stored_before_the_refit_reads_held_fixed(grid):
    """A summary of lidframe 0.2 (no resample key: its intervals held the calibrator fixed) is not refitted, and reports."""
    _, out = grid
    cell = next(c for c in load_results(out) if c.prior == "uniform")
    stored = cell.to_dict()
    settings = dict(stored["summary"]["bootstrap"])
    del settings["resample"]
    old = {**stored, "summary": {**stored["summary"], "bootstrap": settings}}
    table = cell_per_speaker(old, out, task=check_freshness(out).tasks[cell.cell_id])
    assert table.bootstrap["resample"] == "eval" and "although" not in table.interval_note
    assert all(math.isfinite(r.alid_low) for r in table.rows if r.n_trials > 1)
    assert attrs.has(type(table))


def test_another_cells_task_is_not_used(grid):
    _, out = grid
    first, second = load_results(out)
    table = cell_per_speaker(first, out, task=check_freshness(out).tasks[second.cell_id])
    assert table.bootstrap["resample"] == "eval" and "the task given does not plan this cell" in table.interval_note
