"""[grid.evaluate]: a grid sets the operating point, the misattribution threshold and the binary view of its cells."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lidframe import EvaluateOptions, evaluate
from lidframe.data.simulate import simulate_system
from lidframe.errors import InputError
from lidframe.grid.inputs import settings_inputs
from lidframe.grid.runner import run_grid
from lidframe.grid.spec import load_grid_spec
from lidframe.metrics.detection import OperatingPoint

SPEC = """
[grid]
calibrators = ["logistic"]
priors = ["uniform?outside=0.2"]
{evaluate}
[systems.weak]
dev = "weak_dev.npz"
eval = "weak_eval.npz"
"""
EVALUATE = """
[grid.evaluate]
misattribution_threshold = 0.75
[grid.evaluate.operating_point]
p_target = 0.2
c_miss = 2.0
"""


def make_spec(folder: Path, evaluate_table: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=10, trials_per_speaker=6, n_outsiders=3)
    dev.save(folder / "weak_dev.npz")
    ev.save(folder / "weak_eval.npz")
    (folder / "grid.toml").write_text(SPEC.format(evaluate=evaluate_table))
    return folder / "grid.toml"


def stored_summaries(out: Path) -> list[dict]:
    connection = sqlite3.connect(out / "results.sqlite")
    try:
        return [json.loads(s) for (s,) in connection.execute("SELECT summary FROM cells WHERE status = 'ok'")]
    finally:
        connection.close()


def test_the_cells_are_evaluated_with_the_tables_options(tmp_path):
    spec = make_spec(tmp_path / "spec", EVALUATE)
    run_grid(spec, tmp_path / "out")
    (got,) = stored_summaries(tmp_path / "out")
    point = OperatingPoint(p_target=0.2, c_miss=2.0)
    want = evaluate(
        spec.parent / "weak_dev.npz",
        spec.parent / "weak_eval.npz",
        prior="uniform?outside=0.2",
        options=EvaluateOptions(misattribution_threshold=0.75, operating_point=point),
    ).summary
    assert got["binary_operating_point"] == {"p_target": 0.2, "c_miss": 2.0, "c_fa": 1.0}
    assert got["open_set"]["misattribution_threshold"] == 0.75
    for key in ("min_dcf", "act_dcf", "alid"):
        assert got[key] == pytest.approx(want[key], abs=1e-12), key
    rate = got["open_set"]["misattribution_rate_at_threshold"]
    assert rate == pytest.approx(want.open_set.misattribution_rate_at_threshold, abs=1e-12)
    # and the defaults measure elsewhere: the table did change the numbers
    default = evaluate(spec.parent / "weak_dev.npz", spec.parent / "weak_eval.npz", prior="uniform?outside=0.2")
    assert default.summary.binary.min_dcf != pytest.approx(got["min_dcf"])


def test_a_changed_table_recomputes_the_cells_and_the_defaults_keep_earlier_keys(tmp_path):
    spec = make_spec(tmp_path / "spec", "")
    assert "setting evaluate" not in settings_inputs(load_grid_spec(spec, fit_calibrators=False), "v")
    assert run_grid(spec, tmp_path / "out").ok == 1
    spec.write_text(SPEC.format(evaluate="[grid.evaluate]\nmisattribution_threshold = 0.9\n"))  # the default
    assert run_grid(spec, tmp_path / "out").skipped == 1
    spec.write_text(SPEC.format(evaluate=EVALUATE))
    again = run_grid(spec, tmp_path / "out")
    assert (again.skipped, again.ok) == (0, 1)
    assert stored_summaries(tmp_path / "out")[0]["open_set"]["misattribution_threshold"] == 0.75


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ("[grid.evaluate]\nbinary_metrics = 'yes'\n", "grid.evaluate.binary_metrics"),
        ("[grid.evaluate]\nmisattribution_threshold = 0.2\n", "grid.evaluate.misattribution_threshold"),
        ("[grid.evaluate]\nthreshold = 0.9\n", "grid.evaluate"),
        ("[grid.evaluate.operating_point]\np_target = 1.5\n", "grid.evaluate.operating_point.p_target"),
        ("[grid.evaluate.operating_point]\nc_fa = 'one'\n", "grid.evaluate.operating_point.c_fa"),
        ("[grid.evaluate.operating_point]\nc_hit = 1.0\n", "grid.evaluate.operating_point"),
    ],
)
def test_a_bad_value_names_its_key(tmp_path, table, key):
    spec = make_spec(tmp_path / "spec", table)
    with pytest.raises(InputError, match=rf"\[{key}\]"):
        load_grid_spec(spec, fit_calibrators=False)
