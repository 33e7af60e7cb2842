"""Every analysis returns a frozen TableRecord whose to_frame() and to_dict() agree."""

import json
import math

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe.analyses.compare import compare_systems, paired_comparison
from lidframe.analyses.longitudinal import longitudinal
from lidframe.analyses.nsweep import nsweep
from lidframe.analyses.per_speaker import per_speaker
from lidframe.analyses.sensitivity import sensitivity
from lidframe.core.evaluation import evaluate
from lidframe.data.records import TableRecord
from lidframe.data.simulate import simulate_system
from lidframe.privacy.audit import dp_audit, simulated_splits
from lidframe.stats.bootstrap import Bootstrap
from lidframe.stats.interval import Interval


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
        "nsweep": nsweep(dev, ev, sizes=[2, 12], repeats=3),
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
    ["nsweep", "sensitivity", "longitudinal", "paired_comparison", "compare_systems", "dp_audit", "per_speaker"],
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
    assert list(results["nsweep"].to_dict()) == ["level", "n_enrolled", "calibrator", "rows"]
    assert list(results["sensitivity"].to_dict()) == ["rows", "spread", "worst_case"]
    assert list(results["longitudinal"].to_dict()) == ["fusion", "rows", "resample"]  # resample: issue 41
    assert list(results["dp_audit"].to_dict()) == ["rows"]
    assert list(results["compare_systems"].to_dict()) == ["rows"]
    paired = results["paired_comparison"]
    assert paired["alid"]["diff"] == pytest.approx(paired["alid"]["a"] - paired["alid"]["b"])
    with pytest.raises(KeyError, match="no metric"):
        paired["eer"]


# ------------------------------------------------------- rows are typed records, read as the dicts they replaced
def test_per_speaker_json_and_frame_are_the_hand_written_ones():
    # A's trials: e^scores (3, 1) -> p(A) = 3/4, LID = log2(2 * 3/4); (1, 1) -> LID 0 (ranked first: ties count
    # for the attacker).  B is enrolled without trials: NaN metrics (None in the JSON), last.
    import pandas as pd

    from lidframe import ScoreSet

    lid = math.log2(1.5)
    ev = ScoreSet([[math.log(3), 0.0], [0.0, 0.0]], ["A", "B"], ["A", "A"], ["t1", "t2"])
    table = per_speaker(evaluate(ev, ev, calibrator="identity"))
    want = {
        "rows": [
            {"speaker": "A", "n_trials": 2, "alid": lid / 2, "lid_max": lid, "pdr": 0.5, "rank1_rate": 1.0,
             "lid_ceiling": 1.0},
            {"speaker": "B", "n_trials": 0, "alid": None, "lid_max": None, "pdr": None, "rank1_rate": None,
             "lid_ceiling": 1.0},
        ],
        "n_enrolled": 2,
        "n_enrolled_trials": 2,
        "n_outsider_trials": 0,
        "n_speakers_without_trials": 1,
        "alid": lid / 2,
        "log2_n": 1.0,
        "calibrator": "identity",
        "prior": "uniform",
        "bootstrap": None,
    }  # fmt: skip
    got = table.to_dict()
    assert list(got) == list(want) and [list(r) for r in got["rows"]] == [list(r) for r in want["rows"]]
    assert {k: v for k, v in got.items() if k != "rows"} == pytest.approx(
        {k: v for k, v in want.items() if k != "rows"}
    )
    for have, expected in zip(got["rows"], want["rows"], strict=True):
        assert have == pytest.approx(expected, abs=1e-12)
    nan = float("nan")
    frame = pd.DataFrame(
        {
            "speaker": ["A", "B"],
            "n_trials": [2, 0],
            "alid": [lid / 2, nan],
            "lid_max": [lid, nan],
            "pdr": [0.5, nan],
            "rank1_rate": [1.0, nan],
            "lid_ceiling": [1.0, 1.0],
        }
    )
    pd.testing.assert_frame_equal(table.to_frame(), frame, check_exact=False, atol=1e-12)
    # attribute access and the mapping view agree
    first = table.rows[0]
    assert (first.speaker, first.n_trials, first.alid_low) == ("A", 2, None)
    assert first["alid"] == first.alid and "alid_low" not in first and first.get("alid_low") is None


def _longitudinal_rows():
    from lidframe.analyses.longitudinal import ComposedBounds, LongitudinalRow

    aggregates = {"alid": 0.5, "pdr": 0.75, "ndr": 0.25, "lid_pos": 1.0, "lid_neg": -1.0, "lid_max": 2.0,
                  "lid_min": -1.5, "lid_q50": 0.25, "lid_q90": 1.5, "lid_q99": 1.9}  # fmt: skip
    with_all = LongitudinalRow(
        k=2, n_groups=8, n_speakers_skipped=1, temperature=1.0, n_enrolled=4, log2_n=2.0, **aggregates,
        intervals={"alid": Interval(0.5, 0.25, 0.75, 0.95, "bca")}, dp=ComposedBounds(mu_k=1.5, eer_bound=0.25, mi_bound_bits=1.5),
    )  # fmt: skip
    bare = LongitudinalRow(
        k="all", n_groups=4, n_speakers_skipped=0, temperature=0.5, n_enrolled=4, log2_n=2.0,
        **(aggregates | {"lid_neg": float("nan")}),
    )  # fmt: skip
    return with_all, bare


def test_longitudinal_rows_keep_their_keys_optional_keys_and_nested_bounds():
    from lidframe.analyses.longitudinal import LongitudinalResult

    with_all, bare = _longitudinal_rows()
    record = LongitudinalResult(fusion="sum", rows=[with_all, bare], resample="dev+eval")
    common = ["k", "n_groups", "n_speakers_skipped", "temperature", "n_enrolled", "log2_n", "alid", "pdr", "ndr",
              "lid_pos", "lid_neg", "lid_max", "lid_min", "lid_q50", "lid_q90", "lid_q99"]  # fmt: skip
    assert list(with_all) == [*common, "intervals", "dp_mu_k", "dp_eer_bound", "dp_mi_bound_bits"]
    assert list(bare) == common and len(bare) == 16
    assert with_all["intervals"] == {"alid": [0.25, 0.75]} and with_all.intervals["alid"].bounds == (0.25, 0.75)
    assert record.to_dict()["rows"][0]["intervals"] == {"alid": [0.25, 0.75]}  # the JSON form: the ends
    assert with_all["dp_mi_bound_bits"] == with_all.dp.mi_bound_bits == 1.5
    assert "intervals" not in bare and "dp_mu_k" not in bare and bare.get("intervals", {}) == {}
    for missing in ("intervals", "dp_mu_k", "dp", "nope"):
        with pytest.raises(KeyError):
            bare[missing]
    assert record.to_dict() == {
        "fusion": "sum",
        "rows": [
            {"k": 2, "n_groups": 8, "n_speakers_skipped": 1, "temperature": 1.0, "n_enrolled": 4, "log2_n": 2.0,
             "alid": 0.5, "pdr": 0.75, "ndr": 0.25, "lid_pos": 1.0, "lid_neg": -1.0, "lid_max": 2.0, "lid_min": -1.5,
             "lid_q50": 0.25, "lid_q90": 1.5, "lid_q99": 1.9, "intervals": {"alid": [0.25, 0.75]}, "dp_mu_k": 1.5,
             "dp_eer_bound": 0.25, "dp_mi_bound_bits": 1.5},
            {"k": "all", "n_groups": 4, "n_speakers_skipped": 0, "temperature": 0.5, "n_enrolled": 4, "log2_n": 2.0,
             "alid": 0.5, "pdr": 0.75, "ndr": 0.25, "lid_pos": 1.0, "lid_neg": None, "lid_max": 2.0, "lid_min": -1.5,
             "lid_q50": 0.25, "lid_q90": 1.5, "lid_q99": 1.9},
        ],
        "resample": "dev+eval",
    }  # fmt: skip
    frame = record.to_frame()
    assert list(frame.columns) == [*common, "intervals", "dp_mu_k", "dp_eer_bound", "dp_mi_bound_bits"]
    assert frame["intervals"].iloc[0] == {"alid": [0.25, 0.75]} and math.isnan(frame["intervals"].iloc[1])
    assert frame["dp_mu_k"].iloc[0] == 1.5 and math.isnan(frame["dp_mu_k"].iloc[1])


def test_rows_are_read_only_mappings_equal_to_their_dicts():
    from lidframe.analyses.compare import PairedComparisonResult, PairedComparisonRow

    row = PairedComparisonRow(metric="alid", a=1.0, b=0.25, diff=0.75, low=0.5, high=1.0, p_value=0.01)
    plain = {"metric": "alid", "a": 1.0, "b": 0.25, "diff": 0.75, "low": 0.5, "high": 1.0, "p_value": 0.01}
    assert row == plain and plain == row and dict(row) == plain and row.to_dict() == plain
    assert row != dict(plain, p_value=0.02)
    with pytest.raises(TypeError):
        row["diff"] = 0.0
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        row.diff = 0.0
    with pytest.raises(TypeError):
        PairedComparisonRow("alid", 1.0, 0.25, 0.75, 0.5, 1.0, 0.01)  # keyword-only
    result = PairedComparisonResult([row])
    assert result["alid"] is row and result["alid"]["diff"] == result["alid"].diff == 0.75


def test_dp_audit_row_reads_its_attackers_as_prefixed_keys():
    from lidframe.privacy.audit import AttackerMeasurement, DPAuditResult, DPAuditRow

    def attacker(eer, eer_ci):
        return AttackerMeasurement(
            eer=eer, eer_low=eer_ci[0], eer_high=eer_ci[1], alid=0.5, alid_low=0.25, alid_high=0.75, lid_max=2.0,
            lid_q99=1.5,
        )  # fmt: skip

    row = DPAuditRow(
        mu=1.0, sigma=2.0, eer_bound=0.3, mi_bound_bits=0.7, mu_held=1.0, mu_reason="diameter",
        max_clipped_norm=1.0, clipped_diameter=1.5, n_enrolled=8, log2_n=3.0, eer_bound_applies=True,
        alid_bound_applies=True, bounds_reason="balanced", trial_prior_kl_bits=0.0,
        bayes=attacker(0.25, (0.125, 0.375)), cosine=attacker(0.375, (0.25, 0.5)),
        violations=("bayes EER below the bound",),
    )  # fmt: skip
    want = {
        "mu": 1.0, "sigma": 2.0, "eer_bound": 0.3, "mi_bound_bits": 0.7, "mu_held": 1.0, "mu_reason": "diameter",
        "max_clipped_norm": 1.0, "clipped_diameter": 1.5, "n_enrolled": 8, "log2_n": 3.0,
        "eer_bound_applies": True, "alid_bound_applies": True, "bounds_reason": "balanced",
        "trial_prior_kl_bits": 0.0,
        "bayes_eer": 0.25, "bayes_eer_low": 0.125, "bayes_eer_high": 0.375, "bayes_alid": 0.5, "bayes_alid_low": 0.25,
        "bayes_alid_high": 0.75,
        "bayes_lid_max": 2.0, "bayes_lid_q99": 1.5,
        "cosine_eer": 0.375, "cosine_eer_low": 0.25, "cosine_eer_high": 0.5, "cosine_alid": 0.5, "cosine_alid_low": 0.25,
        "cosine_alid_high": 0.75,
        "cosine_lid_max": 2.0, "cosine_lid_q99": 1.5,
        "violations": ["bayes EER below the bound"],
    }  # fmt: skip
    assert list(row) == list(want)
    assert DPAuditResult([row]).to_dict() == {"rows": [want]}
    assert row["cosine_eer"] == row.cosine.eer and "bayes" not in row and "eer" not in row
    assert DPAuditResult([row]).violated and not DPAuditResult([attrs.evolve(row, violations=())]).violated
    assert row.bayes.interval("eer", level=0.9) == Interval(0.25, 0.125, 0.375, 0.9, "")
    with pytest.warns(FutureWarning, match="removed in lidframe 0.4.0"):
        assert row.bayes.eer_ci == (0.125, 0.375)  # the old name, for one release


@given(
    metrics=st.lists(st.floats(allow_infinity=False), min_size=5, max_size=5),
    intervals=st.one_of(st.none(), st.lists(st.floats(allow_infinity=False), min_size=6, max_size=6)),
    n_trials=st.integers(0, 50),
)
def test_per_speaker_row_keys_follow_the_table_with_and_without_intervals(metrics, intervals, n_trials):
    from lidframe.analyses.per_speaker import PerSpeakerRow

    alid, lid_max, pdr, rank1, ceiling = metrics
    bounds = {}
    if intervals is not None:
        bounds = dict(zip(["alid_low", "alid_high", "lid_max_low", "lid_max_high", "pdr_low", "pdr_high"], intervals))
    row = PerSpeakerRow(speaker="s", n_trials=n_trials, alid=alid, lid_max=lid_max, pdr=pdr, rank1_rate=rank1,
                        lid_ceiling=ceiling, **bounds)  # fmt: skip
    # the dict per_speaker built before rows were records, written out
    want = {"speaker": "s", "n_trials": n_trials, "alid": alid}
    if intervals is not None:
        want.update(alid_low=intervals[0], alid_high=intervals[1])
    want["lid_max"] = lid_max
    if intervals is not None:
        want.update(lid_max_low=intervals[2], lid_max_high=intervals[3])
    want["pdr"] = pdr
    if intervals is not None:
        want.update(pdr_low=intervals[4], pdr_high=intervals[5])
    want.update(rank1_rate=rank1, lid_ceiling=ceiling)
    assert list(row) == list(want) and len(row) == len(want)
    assert row.to_dict() == {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in want.items()}
