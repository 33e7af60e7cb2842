"""Planning a large grid: it says so on stderr, shows bars with --progress, and the report does not refit calibrators."""

from __future__ import annotations

import pytest

from lidframe.cli import main
from lidframe.grid.runner import check_freshness, run_grid
from lidframe.grid.spec import loading as grid_spec
from tests.grid.test_grid import make_spec  # 3 systems x 2 calibrators x 2 priors x 1 seed: 12 cells


def test_a_large_grid_says_on_stderr_what_it_checks_and_plans(tmp_path, capsys, monkeypatch):
    spec = make_spec(tmp_path / "spec")
    monkeypatch.setattr(grid_spec, "NOTE_CELLS", 12)  # 12 cells count as large
    assert main(["grid", str(spec), "--out", str(tmp_path / "out")]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("lidframe: ") and "12 cells" in lines[0] and "planning" in lines[0]
    assert "3 systems x 2 calibrators x 2 priors x 1 seed" in lines[0]
    monkeypatch.setattr(grid_spec, "NOTE_CELLS", 13)  # now small: silent as before
    assert main(["grid", str(spec), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err == ""


def test_progress_shows_bars_while_checking_and_planning(tmp_path, capsys):
    pytest.importorskip("tqdm")
    spec = make_spec(tmp_path / "spec")
    assert main(["grid", str(spec), "--out", str(tmp_path / "out"), "--progress"]) == 0
    err = capsys.readouterr().err
    assert "12 cells" in err.splitlines()[0]  # the note, then the bars
    for bar in ("checking calibrators", "planning cells", "grid cells"):
        assert f"{bar}: 100%" in err, (bar, err)


def test_checking_a_finished_grid_does_not_fit_its_calibrators_again(tmp_path, monkeypatch):
    """The report plans the spec to compare digests; fitting each calibrator (the slow part of a check) is not needed."""
    spec = make_spec(tmp_path / "spec")
    run_grid(spec, tmp_path / "out")
    from lidframe.core import evaluation

    fitted = []
    original = evaluation.fit_calibrator
    monkeypatch.setattr(evaluation, "fit_calibrator", lambda *a, **k: fitted.append(a) or original(*a, **k))
    freshness = check_freshness(tmp_path / "out")
    assert freshness.unchecked is None and freshness.stale == {}
    assert fitted == []
