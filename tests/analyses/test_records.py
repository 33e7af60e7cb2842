"""Every analysis returns a frozen TableRecord whose to_frame() and to_dict() agree."""

import json
import math

import attrs
import numpy as np
import pytest

from lidframe.analyses.compare import compare_systems, paired_comparison
from lidframe.analyses.longitudinal import longitudinal
from lidframe.analyses.nsweep import n_sweep
from lidframe.analyses.per_speaker import per_speaker
from lidframe.analyses.sensitivity import sensitivity
from lidframe.core.evaluation import evaluate
from lidframe.data.records import TableRecord
from lidframe.data.simulate import simulate_system
from lidframe.privacy.audit import dp_audit, simulated_splits
from lidframe.stats.bootstrap import Bootstrap


def _same(frame_value, dict_value):
    if dict_value is None:
        return frame_value is None or (isinstance(frame_value, float) and math.isnan(frame_value))
    if isinstance(dict_value, (list, dict)):
        return json.loads(json.dumps(frame_value, default=float)) == dict_value
    return frame_value == dict_value


def _results():
    dev, ev = simulate_system(n_enrolled=12, trials_per_speaker=4, leakage=0.5, seed=0)
    rng = np.random.default_rng(0)
    ids = np.array([f"t{i}" for i in range(40)])
    spk = np.repeat([f"s{i}" for i in range(8)], 5)
    a, b = rng.normal(0.5, 1, 40), rng.normal(0.2, 1, 40)
    dev_split, eval_split = simulated_splits(n_enrolled=8, trials_per_speaker=4, dim=16, seed=0)
    return {
        "n_sweep": n_sweep(dev, ev, sizes=[2, 12], repeats=3),
        "sensitivity": sensitivity(dev, ev, ["logistic", "isotonic"]),
        "longitudinal": longitudinal(dev, ev, [1, 2], bootstrap=None),
        "paired_comparison": paired_comparison(a, b, speakers=spk, n_perm=200),
        "compare_systems": compare_systems({"x": (ids, spk, a), "y": (ids, spk, b)}, n_perm=200),
        "dp_audit": dp_audit(dev_split, eval_split, [1.0], bootstrap=Bootstrap(n_boot=100)),
        "per_speaker": per_speaker(evaluate(dev, ev), bootstrap=Bootstrap(n_boot=100)),
    }


@pytest.fixture(scope="module")
def results():
    return _results()


@pytest.mark.parametrize(
    "name",
    ["n_sweep", "sensitivity", "longitudinal", "paired_comparison", "compare_systems", "dp_audit", "per_speaker"],
)
def test_analysis_record_frame_equals_dict(results, name):
    result = results[name]
    assert isinstance(result, TableRecord) and attrs.has(type(result))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        result.rows = ()
    record = result.to_dict()
    json.dumps(record, allow_nan=False)
    rows = record["rows"]
    assert rows and len(rows) == len(result.rows)
    frame = result.to_frame()
    assert len(frame) == len(rows)
    for i, row in enumerate(rows):
        assert set(row) <= set(frame.columns)
        for key, value in row.items():
            assert _same(frame[key].iloc[i], value), (name, i, key)


def test_records_keep_their_json_layout(results):
    assert list(results["n_sweep"].to_dict()) == ["level", "n_enrolled", "calibrator", "rows"]
    assert list(results["sensitivity"].to_dict()) == ["rows", "spread", "worst_case"]
    assert list(results["longitudinal"].to_dict()) == ["fusion", "rows"]
    assert list(results["dp_audit"].to_dict()) == ["rows"]
    assert list(results["compare_systems"].to_dict()) == ["rows"]
    paired = results["paired_comparison"]
    assert paired["alid"]["diff"] == pytest.approx(paired["alid"]["a"] - paired["alid"]["b"])
    with pytest.raises(KeyError, match="no metric"):
        paired["eer"]
