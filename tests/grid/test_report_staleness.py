"""A grid report says which of its cells are stale: computed from inputs that have changed since (lidframe report).

The stale cells expected are worked out here from the spec (every cell of the system whose
score file was rewritten), not from the store's digests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lidframe.cli import main
from lidframe.data.simulate import simulate_system
from lidframe.grid.report import write_report
from lidframe.grid.runner import check_freshness, run_grid

SPEC = """
[grid]
calibrators = ["logistic", "isotonic"]
priors = ["uniform"]
seeds = [0, 1]

[systems.weak]
dev = "weak_dev.npz"
eval = "weak_eval.npz"

[systems.strong]
dev = "strong_dev.npz"
eval = "strong_eval.npz"
"""
#: weak's cells: calibrators x priors x seeds of SPEC.
WEAK_CELLS = {("weak", c, "uniform", s) for c in ("logistic", "isotonic") for s in (0, 1)}


def save_system(folder, name, seed):
    dev, ev = simulate_system(leakage=0.4, seed=seed, n_enrolled=6, trials_per_speaker=4)
    dev.save(folder / f"{name}_dev.npz")
    ev.save(folder / f"{name}_eval.npz")


@pytest.fixture()
def grid(tmp_path):
    """A finished 2 systems x 2 calibrators x 2 seeds grid: (spec path, output folder)."""
    for seed, name in enumerate(("weak", "strong")):
        save_system(tmp_path, name, seed)
    spec = tmp_path / "grid.toml"
    spec.write_text(SPEC)
    run_grid(spec, tmp_path / "out")
    return spec, tmp_path / "out"


def reported(capsys, out, *extra):
    assert main(["report", str(out), "--no-figures", *extra]) == 0
    err = capsys.readouterr().err
    return err, (out / "report" / "summary.md").read_text(), (out / "report" / "table.tex").read_text()


def test_a_current_grid_is_reported_without_a_warning(grid, capsys):
    spec, out = grid
    freshness = check_freshness(out)
    assert freshness.unchecked is None and freshness.stale == {} and freshness.spec == str(spec)
    err, summary, tex = reported(capsys, out)
    assert "warning" not in err.lower() and "Warning" not in summary and "Warning" not in tex


@pytest.mark.slow
def test_cells_whose_score_file_changed_are_named_stale_until_the_grid_reruns(grid, capsys):
    spec, out = grid
    save_system(spec.parent, "weak", 99)  # new weak scores: its four cells are no longer current
    freshness = check_freshness(out)
    from lidframe.grid.report import load_results

    by_id = {r["cell_id"]: (r["system"], r["calibrator"], r["prior"], r["seed"]) for r in load_results(out)}
    assert {by_id[key] for key in freshness.stale} == WEAK_CELLS
    assert all("weak_eval.npz changed" in why or "weak_dev.npz changed" in why for why in freshness.stale.values())
    err, summary, tex = reported(capsys, out)
    assert err.count("\n") == 1 and err.startswith("lidframe: warning: STALE: 4 of 8 cells")
    assert f"Rerun lidframe grid {spec} --out {out}" in err
    assert summary.splitlines()[2].startswith("> **Warning.** STALE: 4 of 8 cells") and "weak / -" in summary
    assert "strong / " not in summary.split("\n\n")[1]  # the warning names only weak's cells
    assert tex.startswith("% Warning. STALE: 4 of 8 cells")
    write_report(out)  # the page too (matplotlib and jinja2 are test dependencies)
    page = (out / "report" / "report.html").read_text()
    assert '<p class="note">STALE: 4 of 8 cells' in page
    run_grid(spec, out)  # recomputes the four cells
    err, summary, _ = reported(capsys, out)
    assert check_freshness(out).stale == {} and "Warning" not in summary and "warning" not in err.lower()


def test_a_report_whose_spec_moved_says_it_was_not_checked_and_checks_with_spec(grid, tmp_path, capsys):
    spec, out = grid
    moved = tmp_path / "moved"
    moved.mkdir()
    for path in spec.parent.glob("*.npz"):
        shutil.copy(path, moved / path.name)
    spec.rename(moved / "grid.toml")
    err, summary, _ = reported(capsys, out)
    assert "were not checked against the current inputs" in err and f"the grid spec {spec} is not there" in err
    assert "> **Warning.** These numbers were not checked" in summary
    err, summary, _ = reported(capsys, out, "--spec", str(moved / "grid.toml"))
    assert "warning" not in err.lower() and "Warning" not in summary


def test_cells_the_spec_no_longer_plans_are_flagged(grid, capsys):
    spec, out = grid
    spec.write_text(SPEC.replace('calibrators = ["logistic", "isotonic"]', 'calibrators = ["logistic"]'))
    freshness = check_freshness(out)
    assert len(freshness.stale) == 4 and set(freshness.stale.values()) == {"not in the spec any more"}
    err, _, _ = reported(capsys, out)
    assert "STALE: 4 of 8 cells" in err and "isotonic" in err and "not in the spec any more (4)" in err


def snapshot(folder):
    """Every file below *folder* but report/, with its bytes and mtime: what a report must leave alone."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "report" not in p.relative_to(folder).parts[:1]
    }


def test_a_report_of_stale_cells_writes_nothing_outside_report(grid, capsys):
    spec, out = grid
    save_system(spec.parent, "weak", 98)
    before = snapshot(out)
    assert (out / "cache" / "digests.sqlite").is_file()  # the digest cache the check reads
    err, _, _ = reported(capsys, out)
    assert "STALE" in err and snapshot(out) == before


def test_a_report_from_another_folder_than_the_grid_ran_in_is_not_checked(grid, tmp_path, capsys, monkeypatch):
    _, out = grid
    ran_in = Path.cwd()  # where the fixture ran the grid
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    err, summary, _ = reported(capsys, out)
    assert f"the grid ran in {ran_in};" in err
    assert "were not checked against the current inputs" in err and "run lidframe report from there" in err
    assert "> **Warning.** These numbers were not checked" in summary


def test_a_grid_that_ran_in_a_folder_now_a_symlink_loop_is_reported_as_not_checked(grid, tmp_path, capsys):
    """grid.json names the folder the grid ran in; if that name is now a symlink loop, the report says it
    could not check the cells (Path.resolve raised RuntimeError on a loop before Python 3.13)."""
    import json
    import os

    _, out = grid
    loop = tmp_path / "links" / "ran-here"
    loop.parent.mkdir()
    os.symlink("ran-here.other", loop)
    os.symlink("ran-here", loop.parent / "ran-here.other")
    record = json.loads((out / "grid.json").read_text())
    (out / "grid.json").write_text(json.dumps({**record, "cwd": str(loop)}))
    err, summary, _ = reported(capsys, out)
    assert f"the grid ran in {loop};" in err and "Traceback" not in err
    assert "> **Warning.** These numbers were not checked" in summary
