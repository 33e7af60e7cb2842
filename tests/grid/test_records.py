"""The grid passes records, and writes what every earlier lidframe wrote.

In memory a component a cell does not have is None; the store, the cell ids, the inputs
and ``grid.json`` keep their formats (``-``, the ``setting ci`` key), checked here against
expectations computed without the grid's code, so that no stored cell is recomputed
because of the records.  ``[grid.ci]`` is read for one release as ``[grid.bootstrap]``,
planning the same cells.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe.core.summary import Summary
from lidframe.data.digests import DigestCache
from lidframe.errors import InputError
from lidframe.grid import store
from lidframe.grid.execute import select_todo
from lidframe.grid.plan import plan_grid
from lidframe.grid.records import NONE, FinishedCell, GridPlan, GridRun, from_stored, stored_name
from lidframe.grid.report import load_results
from lidframe.grid.runner import run_grid
from lidframe.grid.spec import load_grid_spec
from tests.grid.test_grid import make_spec  # 3 systems x 2 calibrators x 2 priors x 1 seed: 12 cells

BOOTSTRAP = "n_boot = 100\nlevel = 0.9\n"


def independent_cell_id(system, calibrator, prior, seed) -> str:
    """The cell id as every store since layout 1 holds it: sha256 of the JSON of its six components, "-" for none."""
    return hashlib.sha256(json.dumps(["cell", system, "-", "-", calibrator, prior, seed]).encode()).hexdigest()[:32]


def independent_inputs_digest(inputs: dict) -> str:
    """The inputs digest as stored: sha256 over the JSON of the sorted (key, digest) pairs, then NUL."""
    pairs = sorted((key, value[1]) for key, value in inputs.items())
    return hashlib.sha256(json.dumps(pairs, sort_keys=True).encode() + b"\0").hexdigest()[:32]


def raw_rows(out) -> list[dict]:
    connection = sqlite3.connect(out / "results.sqlite")
    connection.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in connection.execute("SELECT * FROM cells")]
    finally:
        connection.close()


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished 12-cell grid with [grid.bootstrap] intervals: (spec path, out folder, its GridRun)."""
    folder = tmp_path_factory.mktemp("records")
    spec = make_spec(folder / "spec", ci=f"[grid.bootstrap]\n{BOOTSTRAP}")
    out = folder / "out"
    return spec, out, run_grid(spec, out)


def test_the_store_keeps_its_layout_ids_and_digests(finished):
    spec, out, _ = finished
    found = raw_rows(out)
    assert len(found) == 12
    for row in found:
        assert row["attacker"] == "-" and row["mechanism"] == "-"  # on disk as before, None in memory
        assert row["cell_id"] == independent_cell_id(row["system"], row["calibrator"], row["prior"], row["seed"])
        inputs = json.loads(row["inputs"])
        assert row["inputs_digest"] == independent_inputs_digest(inputs)
        # "resample" since issue 41: a store of intervals that held the calibrator fixed is stale
        setting = {"level": 0.9, "method": "bca", "n_boot": 100, "unit": "speaker", "resample": "dev+eval"}
        assert json.loads(inputs["setting ci"][1]) == setting
    record = json.loads((out / "grid.json").read_text())
    assert list(record["last_run"]) == ["cells", "skipped", "ok", "error", "fits", "scored", "recomputed"]


def test_a_finished_store_is_fresh_and_plans_nothing_to_do(finished):
    spec, out, _ = finished
    plan = plan_grid(load_grid_spec(spec, fit_calibrators=False), out, digests=DigestCache())
    assert isinstance(plan, GridPlan) and plan.n_cells == 12
    assert all(cell.attacker is None and cell.mechanism is None for cell in plan.cells)
    connection, _ = store.open_store(out)
    try:
        todo = select_todo(plan, store.stored_cells(connection), out, force=False, digests=DigestCache())
    finally:
        connection.close()
    assert todo.tasks == () and todo.stale == 0 and not todo.reasons


def test_stored_labels_do_not_identify_a_cell(finished, tmp_path):
    """A store whose inputs carry the labels an earlier lidframe wrote ([grid.ci]) is still fresh."""
    import shutil

    spec, out, _ = finished
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    connection = sqlite3.connect(copy / "results.sqlite")
    with connection:
        for key, inputs in connection.execute("SELECT cell_id, inputs FROM cells").fetchall():
            relabelled = json.loads(inputs)
            relabelled["setting ci"][0] = "[grid.ci]"
            connection.execute("UPDATE cells SET inputs = ? WHERE cell_id = ?", (json.dumps(relabelled), key))
    connection.close()
    again = run_grid(spec, copy)
    assert again.skipped == 12 and again.ok == 0 and again.recomputed == 0


def test_run_grid_returns_a_record_that_still_reads_as_counts(finished):
    spec, out, first = finished
    assert isinstance(first, GridRun) and first.out_dir == out and first.spec.path == spec
    assert (first.cells, first.ok, first.skipped, first.fits) == (12, 12, 0, 6)
    assert {key: first[key] for key in first.counts()} == first.counts()
    assert first["ok"] == 12
    with pytest.raises(KeyError):
        first["spec"]
    # the dict run_grid returned before, written out: the record reads, iterates and compares as it
    before = {"cells": 12, "skipped": 0, "ok": 12, "error": 0, "fits": 6, "scored": first.scored, "recomputed": 0}
    assert first == before and dict(first) == before and list(first) == list(before) and len(first) == 7
    assert "ok" in first and "spec" not in first and first.get("spec") is None
    again = run_grid(load_grid_spec(spec), out)  # a spec object runs as its file does
    assert again.counts() == {**first.counts(), "skipped": 12, "ok": 0, "fits": 0}
    assert json.loads((out / "grid.json").read_text())["last_run"] == again.counts()


def test_finished_cells_are_records_with_the_stored_row_as_a_read_only_view(finished):
    _, out, _ = finished
    cells = load_results(out)
    assert len(cells) == 12 and all(isinstance(c, FinishedCell) for c in cells)
    rows = {r["cell_id"]: r for r in raw_rows(out)}
    for cell in cells:
        row = rows[cell.cell_id]
        assert cell.attacker is None and cell.mechanism is None
        assert cell["attacker"] == "-" == row["attacker"] and dict(cell)["mechanism"] == "-"
        # the summary is a Summary record, the entries stored beside it attributes of their own; the
        # mapping view is the stored JSON, key for key and byte for byte
        stored = json.loads(row["summary"])
        assert isinstance(cell.summary, Summary) and cell["summary"] == stored
        assert json.dumps(cell["summary"]) == row["summary"]
        assert cell.summary.to_dict() == {
            k: v for k, v in stored.items() if k not in ("calibrator_fit", "longitudinal", "legal")
        }
        assert cell.calibrator_fit == stored["calibrator_fit"] and cell.longitudinal is None
        assert cell.legal is not None and cell.legal.to_dict() == stored["legal"]
        assert cell["summary"] == cell.stored_summary() and cell["per_trial"] == row["per_trial"] == cell.per_trial
        assert cell.name == "/".join(str(row[k]) for k in store.KEYS)
        assert set(cell) == {*store.KEYS, "scenario", "summary", "per_trial", "cell_id", "per_trial_sha256"}
        assert cell.scenario is None and cell["scenario"] == "-" == row["scenario"]  # a grid without scenarios
        with pytest.raises(TypeError):
            cell["summary"] = {}  # read-only


def plan_cells(spec_path):
    plan = plan_grid(load_grid_spec(spec_path, fit_calibrators=False), spec_path.parent / "out")
    return [(cell.cell_id, cell.inputs_digest) for cell in plan.cells]


def test_grid_ci_is_read_as_grid_bootstrap_with_a_warning_and_plans_the_same_cells(tmp_path):
    new = make_spec(tmp_path / "new", ci=f"[grid.bootstrap]\n{BOOTSTRAP}")
    old = make_spec(tmp_path / "old", ci=f"[grid.ci]\n{BOOTSTRAP}")
    other = make_spec(tmp_path / "other", ci="[grid.bootstrap]\nn_boot = 101\nlevel = 0.9\n")
    # same data in each folder, and no file path in a score-file system's cell inputs but its digest
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the new name warns about nothing
        planned = plan_cells(new)
    with pytest.warns(FutureWarning, match=r"\[grid\.ci\] is now called \[grid\.bootstrap\]") as caught:
        assert plan_cells(old) == planned
    assert str(old) in str(caught[0].message) and caught[0].filename == __file__
    assert [d for _, d in plan_cells(other)] != [d for _, d in planned]  # its settings do identify the cells
    with pytest.warns(FutureWarning):
        read_old = load_grid_spec(old, fit_calibrators=False)
    assert read_old.bootstrap == load_grid_spec(new, fit_calibrators=False).bootstrap


def test_grid_ci_beside_grid_bootstrap_is_refused(tmp_path):
    both = make_spec(tmp_path / "both", ci=f"[grid.bootstrap]\n{BOOTSTRAP}\n[grid.ci]\n{BOOTSTRAP}")
    with pytest.raises(InputError, match=r"\[grid\.ci\] is the old name of \[grid\.bootstrap\]"):
        load_grid_spec(both, fit_calibrators=False)


@given(st.one_of(st.none(), st.text(min_size=1).filter(lambda t: t != NONE)))
def test_a_missing_component_is_written_as_a_dash_and_read_back_as_none(component):
    assert stored_name(component) == (NONE if component is None else component)
    assert from_stored(stored_name(component)) == component
    expected = hashlib.sha256(json.dumps(["cell", "s", stored_name(component), "-", "c", "p", 0]).encode())
    assert store.cell_id("s", component, None, "c", "p", 0) == expected.hexdigest()[:32]


def test_the_report_of_a_grid_ci_grid_does_not_repeat_the_warning(tmp_path):
    from lidframe.grid.freshness import check_freshness

    old = make_spec(tmp_path / "old", ci=f"[grid.ci]\n{BOOTSTRAP}")
    with pytest.warns(FutureWarning, match=r"\[grid\.bootstrap\]"):
        run_grid(old, tmp_path / "out")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # said when the grid ran, not again
        assert check_freshness(tmp_path / "out").stale == {}
        assert check_freshness(tmp_path / "out", spec_path=old).stale == {}
