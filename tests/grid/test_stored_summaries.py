"""The grid store keeps Summary records: what a cell's summary JSON is read back as, and what is refused.

A finished cell is a :class:`~lidframe.grid.records.FinishedCell` whose ``summary`` is a
:class:`~lidframe.core.summary.Summary` and whose ``calibrator_fit`` and ``longitudinal`` (the
entries the store keeps beside the summary) are attributes of their own.  Drawn cells are written
with the grid's own writer (:class:`lidframe.grid.execute.CellWriter`, which the runner uses) and
read back with :func:`lidframe.grid.store.read_finished`.  A store of lidframe 0.2.0 is tested on a
real grid in tests/grid/test_report.py.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lidframe.core.summary import Summary
from lidframe.data.fileio import json_clean
from lidframe.errors import InputError
from lidframe.grid import store
from lidframe.grid.execute import CellWriter
from lidframe.grid.records import NONE, Cell, CellOutcome, FinishedCell
from lidframe.grid.stored import as_finished_cell
from tests.strategies import summaries

_names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=10)
_components = st.none() | _names.filter(lambda name: name != NONE)
_json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | _names
#: A fitted calibrator's record (``Result.to_dict()``'s ``calibrator_fit``), JSON as it is stored.
_calibrator_fits = st.none() | st.dictionaries(
    _names, _json_scalars | st.lists(_json_scalars, max_size=3) | st.dictionaries(_names, _json_scalars, max_size=3)
)
#: ``fusion -> rows`` of the k-utterance attacker, as grid/work.py stores it.
_rows = st.fixed_dictionaries(
    {"k": st.integers(1, 64) | st.just("all")}, optional={m: st.floats() for m in ("alid", "pdr", "lid_q99", "lid_max")}
)
_longitudinal = st.none() | st.dictionaries(
    st.sampled_from(["sum", "mean", "temperature"]), st.lists(_rows, max_size=3)
)


@st.composite
def finished_cells(draw) -> tuple[Cell, FinishedCell]:
    """A planned cell and the finished cell it becomes: drawn components, summary and the entries beside it."""
    system, calibrator, prior = draw(_names), draw(_names), draw(_names)
    attacker, mechanism, scenario = draw(_components), draw(_components), draw(_components)
    seed = draw(st.integers(0, 2**31))
    key = store.cell_id(system, attacker, mechanism, calibrator, prior, seed, scenario)
    components = {"system": system, "attacker": attacker, "mechanism": mechanism, "calibrator": calibrator}
    components.update(prior=prior, seed=seed, scenario=scenario)
    cell = Cell(cell_id=key, **components, inputs={}, inputs_digest="0" * 32)
    finished = FinishedCell(
        cell_id=key,
        **components,
        summary=draw(summaries()),
        per_trial="",  # where the writer puts it: filled in after writing
        calibrator_fit=json_clean(draw(_calibrator_fits)),
        longitudinal=json_clean(draw(_longitudinal)),
    )
    return cell, finished


def write_cells(out: Path, drawn: list[tuple[Cell, FinishedCell]]) -> None:
    """Store each drawn cell as the grid does: a CellOutcome whose summary is its JSON (as grid/work.py makes it)."""
    connection, _ = store.open_store(out)
    try:
        writer = CellWriter(connection, out, "spec", {})
        for cell, finished in drawn:
            trials = np.array(["t0", "t1"])
            outcome = CellOutcome(
                cell=cell,
                status="ok",
                summary=finished.stored_summary(),
                trial_ids=trials,
                trial_speakers=trials,
                lid=np.array([0.5, np.nan]),
                posterior_true=np.array([0.7, np.nan]),
            )
            writer.write(outcome)
    finally:
        connection.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(finished_cells(), min_size=1, max_size=3, unique_by=lambda drawn: drawn[0].cell_id))
def test_a_finished_cell_of_drawn_summaries_survives_the_store(drawn):
    """Written by the grid's writer and read back: the same record, its stored JSON byte for byte."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        write_cells(out, drawn)
        read = {cell.cell_id: cell for cell in store.read_finished(out)}
        with sqlite3.connect(out / "results.sqlite") as connection:
            texts = dict(connection.execute("SELECT cell_id, summary FROM cells").fetchall())
        connection.close()
    assert sorted(read) == sorted(cell.cell_id for cell, _ in drawn)
    for cell, finished in drawn:
        again = read[cell.cell_id]
        assert isinstance(again.summary, Summary)
        want = {**finished.to_dict(), "per_trial": again.per_trial, "per_trial_sha256": again.per_trial_sha256}
        assert again.to_dict() == want
        assert (again.system, again.attacker, again.mechanism, again.scenario) == (
            finished.system,
            finished.attacker,
            finished.mechanism,
            finished.scenario,
        )
        assert again.calibrator_fit == finished.calibrator_fit and again.longitudinal == finished.longitudinal
        assert json.dumps(again.stored_summary()) == texts[cell.cell_id]  # the stored JSON, byte for byte
        assert as_finished_cell(again.to_dict()).to_dict() == again.to_dict()  # a mapping reads as the record


def _one_stored_cell(tmp_path: Path) -> tuple[Path, str]:
    """A store holding one finished cell of a real summary; (out folder, cell id)."""
    import lidframe
    from lidframe.data.simulate import simulate_system

    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=4, trials_per_speaker=3)
    result = lidframe.evaluate(dev, ev)
    key = store.cell_id("alpha", None, None, "logistic", "uniform", 0)
    cell = Cell(
        cell_id=key,
        system="alpha",
        attacker=None,
        mechanism=None,
        calibrator="logistic",
        prior="uniform",
        seed=0,
        inputs={},
        inputs_digest="0" * 32,
    )
    fit = json_clean(result.to_dict()["calibrator_fit"])
    components = {k: getattr(cell, k) for k in store.KEYS}
    finished = FinishedCell(cell_id=key, **components, summary=result.summary, per_trial="", calibrator_fit=fit)
    write_cells(tmp_path, [(cell, finished)])
    return tmp_path, key


@pytest.mark.parametrize(
    ("stored", "expect"),
    [
        ("[1, 2]", "not a JSON object"),
        ('{"alid": 1.0, "bootstrap": {"resamples": 100}}', "cannot read"),
        ("{not json", "unreadable summary"),
    ],
    ids=["a list", "a value not of its kind", "not JSON"],
)
def test_a_summary_no_lidframe_wrote_is_refused_naming_the_store_and_the_cell(stored, expect, tmp_path):
    out, key = _one_stored_cell(tmp_path)
    with sqlite3.connect(out / "results.sqlite") as connection:
        connection.execute("UPDATE cells SET summary = ?", (stored,))
    connection.close()
    with pytest.raises(InputError, match=expect) as raised:
        store.read_finished(out)
    message = str(raised.value)
    assert "results.sqlite" in message and key in message and "alpha" in message and "--force" in message


def test_a_mapping_of_a_finished_cell_reads_as_the_record(tmp_path):
    """The grid report's functions take mappings too: a '-' is None, the summary a Summary, the fit beside it."""
    out, _ = _one_stored_cell(tmp_path)
    (cell,) = store.read_finished(out)
    row = dict(cell)
    assert row["attacker"] == NONE and isinstance(row["summary"], dict)
    again = as_finished_cell(row)
    assert again.attacker is None and again.mechanism is None and again.scenario is None
    assert isinstance(again.summary, Summary) and again.summary.alid == cell.summary.alid
    assert again.calibrator_fit == cell.calibrator_fit is not None
    assert as_finished_cell(cell) is cell
    with pytest.raises(InputError, match="not a finished cell record"):
        as_finished_cell({"system": "alpha"})


def test_a_summary_of_lidframe_0_2_0_reads_with_its_detection_costs_missing():
    """Old keys, no min_dcf, act_dcf, binary_operating_point: read (``earlier``), where from_dict alone refuses it."""
    import math

    import lidframe
    from lidframe.data.simulate import simulate_system
    from lidframe.grid.stored import stored_summary
    from lidframe.metrics.detection import OperatingPoint

    dev, ev = simulate_system(leakage=0.5, seed=2, n_enrolled=5, trials_per_speaker=4)
    result = lidframe.evaluate(dev, ev, bootstrap=lidframe.Bootstrap(n_boot=100))
    now = json_clean(result.to_dict())
    old_names = {"n_enrolled_trials": "n_trials", "n_outsider_trials": "n_impostor_trials", "intervals": "ci"}
    old_names |= {"bootstrap": "ci_settings", "n_dev_enrolled_trials": "n_dev_trials"}
    old_names |= {"n_dev_outsider_trials": "n_dev_impostor_trials"}
    added = ("min_dcf", "act_dcf", "binary_operating_point")
    old = {old_names.get(k, k): v for k, v in now.items() if k not in added}
    with pytest.raises(InputError, match="min_dcf"):
        Summary.from_dict(old)
    summary, fit, longitudinal = stored_summary(old, where="a store")
    assert fit == now["calibrator_fit"] and longitudinal is None
    assert math.isnan(summary.binary.min_dcf) and math.isnan(summary.binary.act_dcf)
    assert summary.binary.operating_point == OperatingPoint()  # where 0.2.0 measured nothing: the default
    assert (
        summary.binary.eer == result.summary.binary.eer and summary.intervals.keys() == result.summary.intervals.keys()
    )
    stored = summary.to_dict()
    assert stored["min_dcf"] is None and stored["act_dcf"] is None
    assert {k: v for k, v in stored.items() if k not in added} == {
        k: v for k, v in now.items() if k not in (*added, "calibrator_fit")
    }


def test_a_store_row_with_few_keys_reads_them_and_the_rest_as_missing():
    """A summary of the grid's first layouts (or one made by hand) is read, not refused: what it lacks is missing."""
    from lidframe.grid.stored import stored_summary

    summary, fit, _ = stored_summary({"alid": 1.5, "eer": 0.1, "n_enrolled": 12}, where="a store")
    assert (summary.alid, summary.n_enrolled, fit) == (1.5, 12, None)
    assert summary.binary is not None and summary.binary.method == "exact" and summary.binary.eer == 0.1
    assert summary.n_enrolled_trials is None and summary.calibrator is None and summary.bootstrap is None
    assert summary.to_dict()["lid_max"] is None
    no_binary, _, _ = stored_summary({"alid": 1.5, "n_enrolled": 12}, where="a store")
    assert no_binary.binary is None
