"""minDCF and actDCF (NIST SRE / SpeechBrain convention) against independent computations.

* a brute force over every threshold, written here from the definition
  DCF(t) = [C_miss P_target P_miss(t) + C_fa (1 - P_target) P_fa(t)] / min(C_miss P_target, C_fa (1 - P_target)),
  P_miss(t) = share of mated scores <= t, P_fa(t) = share of non-mated scores > t;
* the closed form of calibrated Gaussian LLRs, where the Bayes threshold is the best one;
* SpeechBrain 1.1.2's ``speechbrain.utils.metric_stats.minDCF`` on fixed score sets, stored in
  tests/fixtures/speechbrain_min_dcf.json by tests/fixtures/make_speechbrain_min_dcf.py (its
  value is not normalised, and its thresholds leave out "accept every pair");
* the binary view, the binned view (within its stated bounds) and ``evaluate``'s records.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.stats import norm

from lidframe import InputError, evaluate
from lidframe.data.simulate import simulate_system
from lidframe.metrics.binary_view import binary_summary
from lidframe.metrics.binned import BinnedPairs, binned_summary
from lidframe.metrics.binned_grid import BinGrid
from lidframe.metrics.detection import OperatingPoint, act_dcf, min_dcf

# scores on a 1/4 grid (ties between and within classes) or continuous
scores = st.one_of(st.integers(-20, 20).map(lambda k: k / 4), st.floats(-6.0, 6.0, width=64))
score_arrays = st.integers(1, 40).flatmap(lambda n: arrays(np.float64, n, elements=scores))
operating_points = st.builds(
    OperatingPoint,
    p_target=st.floats(0.001, 0.999),
    c_miss=st.floats(0.1, 10.0),
    c_fa=st.floats(0.1, 10.0),
)


def brute_force_costs(mated, non_mated, p_target, c_miss, c_fa):
    """Normalised DCF at every threshold: below all scores, and at each distinct score."""
    thresholds = [-math.inf, *sorted(set(mated.tolist()) | set(non_mated.tolist()))]
    normaliser = min(c_miss * p_target, c_fa * (1 - p_target))
    costs = []
    for t in thresholds:
        p_miss = sum(1 for m in mated if m <= t) / len(mated)
        p_fa = sum(1 for n in non_mated if n > t) / len(non_mated)
        costs.append((c_miss * p_target * p_miss + c_fa * (1 - p_target) * p_fa) / normaliser)
    return costs


@pytest.mark.slow
@settings(max_examples=200)
@given(score_arrays, score_arrays, operating_points)
def test_min_dcf_is_the_brute_force_minimum_over_every_threshold(mated, non_mated, point):
    want = min(brute_force_costs(mated, non_mated, point.p_target, point.c_miss, point.c_fa))
    got = min_dcf(mated, non_mated, p_target=point.p_target, c_miss=point.c_miss, c_fa=point.c_fa)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert 0.0 <= got <= 1.0 + 1e-12  # rejecting (or accepting) every pair costs 1


@pytest.mark.slow
@settings(max_examples=200)
@given(score_arrays, score_arrays, operating_points)
def test_act_dcf_is_the_cost_at_the_bayes_threshold(mated, non_mated, point):
    p, c_miss, c_fa = point.p_target, point.c_miss, point.c_fa
    threshold = -math.log(c_miss * p / (c_fa * (1 - p)))
    p_miss = np.mean(mated <= threshold)
    p_fa = np.mean(non_mated > threshold)
    want = (c_miss * p * p_miss + c_fa * (1 - p) * p_fa) / min(c_miss * p, c_fa * (1 - p))
    got = act_dcf(mated, non_mated, p_target=p, c_miss=c_miss, c_fa=c_fa)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert got >= min_dcf(mated, non_mated, p_target=p, c_miss=c_miss, c_fa=c_fa) - 1e-12


LN_99 = math.log(99.0)
"""The Bayes threshold at P_target = 0.01, C_miss = C_fa = 1: ln(0.99 / 0.01)."""


def act_dcf_by_definition(mated, non_mated, p_target=0.01, c_miss=1.0, c_fa=1.0, threshold=LN_99):
    """Accept a pair when its LLR is above the threshold, strictly; count and weigh the errors."""
    p_miss = sum(1 for m in mated if not m > threshold) / len(mated)
    p_fa = sum(1 for n in non_mated if n > threshold) / len(non_mated)
    return (c_miss * p_target * p_miss + c_fa * (1 - p_target) * p_fa) / min(c_miss * p_target, c_fa * (1 - p_target))


# three of four mated LLRs and one of four non-mated ones exactly at ln 99
AT_LN_99 = (np.array([LN_99, LN_99, LN_99, 6.0]), np.array([LN_99, -1.0, -2.0, -3.0]))


def test_llrs_exactly_at_the_bayes_threshold_are_rejected():
    # issue 39: a mutant accepting at LLR >= threshold survived every test (no LLR sat on it)
    assert OperatingPoint().threshold == LN_99  # the tie is exact in float64
    mated, non_mated = AT_LN_99
    # P_miss = 3/4, P_fa = 0: 0.01 * 3/4 / 0.01; accepting at >= would give P_fa = 1/4: 0.99 / 4 / 0.01
    assert act_dcf_by_definition(mated, non_mated) == pytest.approx(0.75, rel=1e-15)
    assert act_dcf(mated, non_mated) == pytest.approx(0.75, rel=1e-15)
    assert binary_summary(mated, non_mated)["act_dcf"] == pytest.approx(0.75, rel=1e-15)


@pytest.mark.parametrize(
    "grid",
    [
        BinGrid.uniform(-3.0, 6.0, 8),  # ln 99 in a bin of its own values, 6 in the last
        BinGrid.uniform(-3.0, 6.0, 4096),
        BinGrid(np.array([-4.0, 0.0, LN_99, 5.0, 7.0])),  # ln 99 on a bin edge: the bin above holds it
        BinGrid(np.array([-4.0, 0.0, LN_99 - 1e-9, LN_99 + 1e-9, 7.0])),
    ],
)
def test_binned_act_dcf_rejects_llrs_exactly_at_the_bayes_threshold(grid):
    # the binned view (and the streaming and cluster engines, which count into it): the bin
    # holding ln 99 holds no value above it, so the binned value is exact, with bound 0
    mated, non_mated = AT_LN_99
    pairs = BinnedPairs(grid).add(mated, non_mated)
    assert binned_summary(pairs)["act_dcf"] == pytest.approx(0.75, rel=1e-15)
    assert pairs.error_bounds()["act_dcf"] == 0.0


@settings(max_examples=100)
@given(score_arrays, score_arrays, operating_points, st.integers(1, 5), st.integers(0, 5), st.sampled_from([1, 7, 64]))
def test_act_dcf_rejects_every_llr_at_the_threshold_of_any_operating_point(
    mated, non_mated, point, k_mated, k_non, n_bins
):
    t = point.threshold
    mated, non_mated = np.r_[mated, np.full(k_mated, t)], np.r_[non_mated, np.full(k_non, t)]
    want = act_dcf_by_definition(mated, non_mated, point.p_target, point.c_miss, point.c_fa, threshold=t)
    assert act_dcf(mated, non_mated, **point.to_dict()) == pytest.approx(want, rel=1e-12, abs=1e-12)
    # a grid with an edge just above t: the bin holding t holds no value above it, the binned view is exact
    low, high = min(mated.min(), non_mated.min()) - 1.0, max(mated.max(), non_mated.max()) + 1.0
    edges = np.unique(np.r_[np.linspace(low, high, n_bins + 1), np.nextafter(t, math.inf)])
    pairs = BinnedPairs(BinGrid(edges)).add(mated, non_mated)
    assert binned_summary(pairs, operating_point=point)["act_dcf"] == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("p_target, c_miss, c_fa", [(0.01, 1.0, 1.0), (0.05, 1.0, 1.0), (0.5, 1.0, 10.0)])
def test_calibrated_gaussian_llrs_meet_the_closed_form(p_target, c_miss, c_fa):
    """LLRs of N(+-d^2/2, d^2) are calibrated: actDCF = minDCF = the Bayes cost of the closed form."""
    d = 2.5
    rng = np.random.default_rng(7)
    mated = rng.normal(d * d / 2, d, 200_000)
    non_mated = rng.normal(-d * d / 2, d, 2_000_000)
    threshold = math.log(c_fa * (1 - p_target) / (c_miss * p_target))
    p_miss = norm.cdf((threshold - d * d / 2) / d)
    p_fa = norm.sf((threshold + d * d / 2) / d)
    want = (c_miss * p_target * p_miss + c_fa * (1 - p_target) * p_fa) / min(c_miss * p_target, c_fa * (1 - p_target))
    point = {"p_target": p_target, "c_miss": c_miss, "c_fa": c_fa}
    # sampling error: a few standard errors of the two rates
    tolerance = 4 * math.sqrt(p_miss / mated.size) * c_miss * p_target / min(c_miss * p_target, c_fa * (1 - p_target))
    tolerance += (
        4 * math.sqrt(p_fa / non_mated.size) * c_fa * (1 - p_target) / min(c_miss * p_target, c_fa * (1 - p_target))
    )
    assert act_dcf(mated, non_mated, **point) == pytest.approx(want, abs=tolerance)
    assert min_dcf(mated, non_mated, **point) == pytest.approx(want, abs=tolerance)


SPEECHBRAIN_MIN_DCF = Path(__file__).resolve().parents[1] / "fixtures" / "speechbrain_min_dcf.json"


def speechbrain_cases():
    """SpeechBrain's minDCF on fixed score sets, computed once (tests/fixtures/make_speechbrain_min_dcf.py)."""
    stored = json.loads(SPEECHBRAIN_MIN_DCF.read_text())
    assert stored["speechbrain"] == "1.1.2"
    return stored["cases"]


@pytest.mark.parametrize("case", speechbrain_cases(), ids=lambda case: f"{len(case['mated'])}x{len(case['non_mated'])}")
def test_min_dcf_equals_speechbrain(case):
    # stored values, not a live import: SpeechBrain's lazy modules break Hypothesis in the worker (issue 39)
    mated, non_mated = np.array(case["mated"]), np.array(case["non_mated"])
    point = OperatingPoint(p_target=case["p_target"], c_miss=case["c_miss"], c_fa=case["c_fa"])
    # SpeechBrain: not normalised, float32 rates, and no threshold below every score
    accept_all = point.c_fa * (1 - point.p_target)
    want = min(case["speechbrain_min_dcf"], accept_all)
    got = min_dcf(mated, non_mated, **point.to_dict())
    assert got * point.normaliser == pytest.approx(want, rel=1e-6, abs=1e-7)


def test_speechbrain_fixture_covers_ties_sizes_and_operating_points():
    cases = speechbrain_cases()
    assert len(cases) >= 60
    assert {(c["p_target"], c["c_miss"], c["c_fa"]) for c in cases} >= {(0.01, 1.0, 1.0), (0.5, 1.0, 10.0)}
    assert any(len(set(c["mated"]) | set(c["non_mated"])) < len(c["mated"]) + len(c["non_mated"]) for c in cases)
    assert any(min(len(c["mated"]), len(c["non_mated"])) == 1 for c in cases)
    # where "accept every pair" is cheapest, SpeechBrain's thresholds miss it
    assert any(c["speechbrain_min_dcf"] > c["c_fa"] * (1 - c["p_target"]) for c in cases)


def test_speechbrain_doctest_value_and_defaults():
    # SpeechBrain's minDCF docstring example: separable scores cost nothing
    assert min_dcf([0.6, 0.7, 0.8, 0.5], [0.4, 0.3, 0.2, 0.1]) == 0.0
    assert OperatingPoint().to_dict() == {"p_target": 0.01, "c_miss": 1.0, "c_fa": 1.0}
    assert OperatingPoint().threshold == pytest.approx(math.log(99.0))


@settings(max_examples=100)
@given(score_arrays, score_arrays, operating_points)
def test_binary_view_carries_both_costs(mated, non_mated, point):
    view = binary_summary(mated, non_mated, operating_point=point)
    kwargs = point.to_dict()
    assert view["min_dcf"] == min_dcf(mated, non_mated, **kwargs)
    assert view["act_dcf"] == act_dcf(mated, non_mated, **kwargs)


@pytest.mark.slow
@settings(max_examples=100)
@given(score_arrays, score_arrays, operating_points, st.sampled_from([2, 7, 64, 4096]))
def test_binned_costs_are_within_their_bounds(mated, non_mated, point, n_bins):
    low, high = min(mated.min(), non_mated.min()), max(mated.max(), non_mated.max())
    pairs = BinnedPairs(BinGrid.uniform(low, high, n_bins)).add(mated, non_mated)
    binned = binned_summary(pairs, operating_point=point)
    bounds = pairs.error_bounds(operating_point=point)
    kwargs = point.to_dict()
    exact_min, exact_act = min_dcf(mated, non_mated, **kwargs), act_dcf(mated, non_mated, **kwargs)
    assert -1e-12 <= binned["min_dcf"] - exact_min <= bounds["min_dcf"] + 1e-12  # fewer thresholds: never lower
    assert abs(binned["act_dcf"] - exact_act) <= bounds["act_dcf"] + 1e-12


def test_evaluate_reports_the_costs_at_its_operating_point_and_round_trips_json():
    dev, ev = simulate_system(leakage=0.5, seed=3)
    point = OperatingPoint(p_target=0.05, c_miss=2.0)
    default = evaluate(dev, ev).summary
    chosen = evaluate(dev, ev, operating_point=point).summary
    assert default.binary.operating_point == OperatingPoint()
    assert chosen.binary.operating_point == point
    assert default["binary_operating_point"] == {"p_target": 0.01, "c_miss": 1.0, "c_fa": 1.0}
    record = json.loads(json.dumps(chosen.to_dict()))
    assert record["binary_operating_point"] == {"p_target": 0.05, "c_miss": 2.0, "c_fa": 1.0}
    assert record["min_dcf"] == chosen.binary.min_dcf and record["act_dcf"] == chosen.binary.act_dcf
    assert 0.0 <= chosen.binary.min_dcf <= chosen.binary.act_dcf
    skipped = evaluate(dev, ev, binary_metrics=False).summary
    assert math.isnan(skipped["min_dcf"]) and skipped["binary_operating_point"] is None


def test_bad_operating_points_are_refused_in_one_line():
    for kwargs, match in (
        ({"p_target": 0.0}, "p_target must be a probability"),
        ({"p_target": 1.5}, "p_target must be a probability"),
        ({"p_target": "0.01"}, "p_target must be a number"),
        ({"c_miss": -1.0}, "c_miss must be a positive"),
        ({"c_fa": math.inf}, "c_fa must be a positive"),
        ({"c_fa": True}, "c_fa must be a number"),
    ):
        with pytest.raises(InputError, match=match):
            OperatingPoint(**kwargs)
    with pytest.raises(TypeError):
        OperatingPoint(0.01)  # keyword-only
    with pytest.raises(InputError, match="p_target must be a probability"):
        min_dcf([1.0], [0.0], p_target=0.0)
    dev, ev = simulate_system(leakage=0.5, seed=3)
    with pytest.raises(InputError, match="operating_point must be a lidframe.metrics.detection.OperatingPoint"):
        evaluate(dev, ev, operating_point={"p_target": 0.01})
