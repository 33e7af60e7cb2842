"""Bootstrap intervals, paired comparisons: exactness of the vectorised metrics and coverage."""

import math

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe import Bootstrap, InputError, evaluate
from lidframe.analyses.compare import PAIRED_BOOTSTRAP, compare_systems, paired_comparison
from lidframe.data.simulate import simulate_system
from lidframe.metrics.aggregates import lid_summary
from lidframe.metrics.detection import cllr, eer_rocch
from lidframe.stats.bootstrap import bootstrap_ci
from lidframe.stats.weighted import PairLLRs, binary_metrics_weighted, lid_metrics_weighted
from tests.reference import oracle_lids
from tests.strategies import lid_grid_values, resample_weights


def paired_bootstrap(**changes):
    """The paired-comparison bootstrap settings with *changes*."""
    return attrs.evolve(PAIRED_BOOTSTRAP, **changes)


@st.composite
def lids_and_resamples(draw, n_resamples=4):
    """(n,) LIDs on a 0.01 grid (ties, zeros) and (n_resamples, n) bootstrap weights."""
    lid = np.array(draw(st.lists(lid_grid_values, min_size=3, max_size=60)))
    return lid, draw(resample_weights(lid.size, n_resamples))


@settings(max_examples=30)
@given(lids_and_resamples())
def test_weighted_metrics_equal_the_metrics_of_the_expanded_resample(case):
    lid, weights = case
    got = lid_metrics_weighted(lid, weights)
    for b in range(4):
        want = lid_summary(np.repeat(lid, weights[b].astype(int)))
        for key in got:
            if math.isnan(want[key]):
                assert math.isnan(got[key][b])
            else:
                assert got[key][b] == pytest.approx(want[key], abs=1e-12), key


def test_weighted_binary_metrics_equal_direct_computation():
    rng = np.random.default_rng(1)
    t, n = 40, 6
    mated = np.round(rng.normal(1, 1, t), 1)
    non_mated = np.round(rng.normal(0, 1, (t, n - 1)), 1)  # ties on purpose
    weights = rng.multinomial(t, np.full(t, 1 / t), size=5).astype(float)
    got = binary_metrics_weighted(PairLLRs(mated, non_mated), weights)
    for b in range(5):
        w = weights[b].astype(int)
        mated_rep, non_mated_rep = np.repeat(mated, w), np.repeat(non_mated, w, axis=0).ravel()
        assert got["eer"][b] == pytest.approx(eer_rocch(mated_rep, non_mated_rep), abs=1e-12)
        assert got["cllr"][b] == pytest.approx(cllr(mated_rep, non_mated_rep), abs=1e-12)


def test_fixed_seed_gives_identical_intervals_and_other_seeds_differ():
    dev, ev = simulate_system(leakage=0.4, seed=2)
    a = evaluate(dev, ev, bootstrap=Bootstrap(n_boot=300, seed=7)).summary["intervals"]
    b = evaluate(dev, ev, bootstrap=Bootstrap(n_boot=300, seed=7)).summary["intervals"]
    c = evaluate(dev, ev, bootstrap=Bootstrap(n_boot=300, seed=8)).summary["intervals"]
    assert a == b and a != c
    s = evaluate(dev, ev).summary
    for key, (low, high) in a.items():
        if key != "lid_max":
            assert low <= s[key] <= high, key


@pytest.mark.slow
def test_coverage_by_simulation():
    """200 repetitions at nominal 90 %: coverage within [0.83, 0.96] (3 binomial SDs ~ 0.064).

    Independent trials: trial bootstrap, BCa and percentile.  Clustered trials (30
    speakers x 10 trials, speaker-level leakage mu_s ~ N(1, 0.5)): the speaker (cluster)
    bootstrap covers, the trial bootstrap does not -- why speaker is the default.
    """
    rng = np.random.default_rng(123)
    truth = oracle_lids(rng, np.full(1_000_000, 1.0)).mean()
    for method in ("bca", "percentile"):
        hits = sum(
            (lambda ci: ci.low <= truth <= ci.high)(
                bootstrap_ci(
                    oracle_lids(rng, np.full(300, 1.0)),
                    Bootstrap(unit="trial", n_boot=400, level=0.9, method=method, seed=rep),
                )["alid"]
            )
            for rep in range(200)
        )
        assert 0.83 <= hits / 200 <= 0.96, (method, hits)
    truth_c = oracle_lids(rng, np.repeat(rng.normal(1.0, 0.5, 100_000), 10)).mean()
    speakers = np.repeat(np.arange(30), 10)
    cover = {"speaker": 0, "trial": 0}
    for rep in range(200):
        lid = oracle_lids(rng, np.repeat(rng.normal(1.0, 0.5, 30), 10))
        for unit in cover:
            ci = bootstrap_ci(lid, Bootstrap(unit=unit, n_boot=400, level=0.9, seed=rep), speakers=speakers)["alid"]
            cover[unit] += ci.low <= truth_c <= ci.high
    assert 0.83 <= cover["speaker"] / 200 <= 0.96, cover
    assert cover["trial"] / 200 < 0.8, cover


def test_paired_comparison_detects_a_real_difference_and_not_a_null_one():
    rng = np.random.default_rng(4)
    speakers = np.repeat(np.arange(40), 10)
    base = rng.normal(0.3, 1.0, 400)
    better = base + 0.2 + rng.normal(0, 0.1, 400)
    same = base + rng.normal(0, 0.1, 400)
    real = paired_comparison(
        better, base, speakers=speakers, bootstrap=paired_bootstrap(n_boot=500, seed=0), n_perm=2000
    )["alid"]
    assert real["diff"] == pytest.approx(np.mean(better - base))
    assert real["low"] > 0 and real["p_value"] < 0.01
    null = paired_comparison(
        same, base, speakers=speakers, bootstrap=paired_bootstrap(n_boot=500, seed=0), n_perm=2000
    )["alid"]
    assert null["low"] < 0 < null["high"] or null["p_value"] > 0.01


def test_sign_flip_p_value_matches_exhaustive_enumeration():
    # 8 units: the permutation distribution of the mean difference has 2^8 sign patterns
    d = np.array([0.9, 0.4, 1.3, -0.2, 0.8, 0.5, 1.1, 0.3])
    signs = np.array([[1 if (m >> k) & 1 else -1 for k in range(8)] for m in range(256)])
    exact = np.mean(np.abs((signs * d).mean(1)) >= abs(d.mean()) - 1e-12)
    got = paired_comparison(d, np.zeros(8), bootstrap=paired_bootstrap(unit="trial", n_boot=200, seed=1), n_perm=20000)[
        "alid"
    ]["p_value"]
    assert got == pytest.approx(exact, abs=0.01)


def test_compare_systems_aligns_by_trial_id_and_applies_holm():
    rng = np.random.default_rng(5)
    ids = np.array([f"t{i}" for i in range(200)])
    spk = np.repeat([f"s{i}" for i in range(20)], 10)
    a = rng.normal(0.5, 1, 200)
    b = a - 0.3 + rng.normal(0, 0.1, 200)
    c = a + rng.normal(0, 0.1, 200)
    order = rng.permutation(200)  # system c listed in another trial order
    rows = compare_systems(
        {"a": (ids, spk, a), "b": (ids, spk, b), "c": (ids[order], spk[order], c[order])},
        bootstrap=paired_bootstrap(n_boot=300, seed=0),
        n_perm=1000,
    ).rows
    alid = [r for r in rows if r["metric"] == "alid"]
    assert [(r["a"], r["b"]) for r in alid] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert alid[1]["diff"] == pytest.approx(np.mean(a - c))
    from statsmodels.stats.multitest import multipletests

    assert [r["p_holm"] for r in alid] == pytest.approx(
        list(multipletests([r["p_value"] for r in alid], method="holm")[1])
    )
    with pytest.raises(InputError, match="missing 't0'"):
        compare_systems({"a": (ids, spk, a), "b": (ids[1:], spk[1:], b[1:])})


def test_bad_arguments():
    with pytest.raises(InputError, match="speaker"):
        bootstrap_ci(np.zeros(5), Bootstrap(unit="speaker"))
    with pytest.raises(InputError, match="'bca' or 'percentile'"):
        bootstrap_ci(np.zeros(5), Bootstrap(unit="trial", method="student"))
    with pytest.raises(InputError, match="n_boot"):
        bootstrap_ci(np.zeros(5), Bootstrap(unit="trial", n_boot=10))
    with pytest.raises(InputError, match="level"):
        bootstrap_ci(np.zeros(5), Bootstrap(unit="trial", level=1.5))
