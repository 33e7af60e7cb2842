"""Binary-view privacy metrics and identification metrics against independent computations."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from lidframe import InputError, evaluate
from lidframe.data.simulate import simulate_system
from lidframe.metrics.detection import cllr, eer_rocch, eer_threshold, min_cllr
from lidframe.metrics.identification import cllr_multiclass, rank1_rate, rank_disclosure, true_speaker_rank
from lidframe.metrics.linkability import dsys, linkability_bins
from lidframe.metrics.zebra import dece_bits, ece_bits, max_abs_llr, zebra_tag

scores_list = st.lists(st.integers(-20, 20).map(lambda k: k / 4), min_size=2, max_size=40)


def test_eer_rocch_of_two_gaussians_is_phi_minus_mu_over_2():
    rng = np.random.default_rng(0)
    for mu in (0.5, 1.0, 2.0):
        mated = rng.normal(mu / 2, 1, 20000)
        non_mated = rng.normal(-mu / 2, 1, 200000)
        want = norm.cdf(-mu / 2)
        # binomial sampling error of an error rate near `want` on 20,000 mated scores
        assert eer_rocch(mated, non_mated) == pytest.approx(want, abs=4 * math.sqrt(want * (1 - want) / 20000))
        assert eer_threshold(mated, non_mated) == pytest.approx(want, abs=4 * math.sqrt(want * (1 - want) / 20000))


@settings(max_examples=40)
@given(scores_list, scores_list, st.sampled_from(["exp", "cube", "affine", "logistic"]))
def test_eer_and_min_cllr_invariant_under_increasing_transforms(mated, non_mated, name):
    f = {
        "exp": np.exp,
        "cube": lambda x: x**3 + x,
        "affine": lambda x: 3.0 * x - 7.0,
        "logistic": lambda x: 1 / (1 + np.exp(-x)),
    }[name]
    mated, non_mated = np.array(mated), np.array(non_mated)
    ft, fn = f(mated), f(non_mated)
    # a strictly increasing map keeps the order, and the ties
    assert eer_rocch(ft, fn) == pytest.approx(eer_rocch(mated, non_mated), abs=1e-12)
    assert eer_threshold(ft, fn) == pytest.approx(eer_threshold(mated, non_mated), abs=1e-12)
    assert min_cllr(ft, fn) == pytest.approx(min_cllr(mated, non_mated), abs=1e-12)
    assert dece_bits(ft, fn) == pytest.approx(dece_bits(mated, non_mated), abs=1e-12)


@given(scores_list, scores_list)
def test_min_cllr_never_exceeds_cllr(mated, non_mated):
    assert min_cllr(mated, non_mated) <= cllr(mated, non_mated) + 1e-12


def test_cllr_of_zero_llrs_is_exactly_one():
    assert cllr(np.zeros(7), np.zeros(13)) == 1.0


def reference_dece(mated, non_mated):
    """Independent: brute-force PAV posteriors per score, ECE on a prior grid, Riemann sum in pi."""
    scores = np.r_[mated, non_mated]
    labels = np.r_[np.ones(len(mated)), np.zeros(len(non_mated))]
    values = np.unique(scores)
    post = np.array([labels[scores == v].mean() for v in values])
    weight = np.array([(scores == v).sum() for v in values], float)
    blocks = [[p, w, [i]] for i, (p, w) in enumerate(zip(post, weight))]
    merged = True
    while merged:
        merged = False
        for i in range(len(blocks) - 1):
            if blocks[i][0] > blocks[i + 1][0]:
                a, b = blocks[i], blocks[i + 1]
                blocks[i : i + 2] = [[(a[0] * a[1] + b[0] * b[1]) / (a[1] + b[1]), a[1] + b[1], a[2] + b[2]]]
                merged = True
                break
    p_of_value = np.empty(values.size)
    for p, _, members in blocks:
        p_of_value[members] = p
    p_score = p_of_value[np.searchsorted(values, scores)]
    with np.errstate(divide="ignore"):
        llr = np.log(p_score) - np.log(1 - p_score) - math.log(len(mated) / len(non_mated))
    pis = (np.arange(200000) + 0.5) / 200000  # midpoint rule in pi
    total = 0.0
    t_llr, n_llr = llr[: len(mated)], llr[len(mated) :]
    for pi in pis[::100]:  # 2000 points
        t = math.log(pi / (1 - pi))
        ece = (pi * np.mean(np.logaddexp(0, -(t_llr + t))) + (1 - pi) * np.mean(np.logaddexp(0, n_llr + t))) / math.log(
            2
        )
        h = -(pi * math.log2(pi) + (1 - pi) * math.log2(1 - pi))
        total += (h - ece) / 2000
    return total


def test_dece_against_independent_computation_and_limits():
    mated = np.array([0.1, 0.4, 0.5, 0.9, 1.3, 0.5, 2.0])
    non_mated = np.array([-0.3, 0.0, 0.2, 0.5, -1.0, 0.45, 0.7, -0.1, 0.4, 1.1])
    assert dece_bits(mated, non_mated) == pytest.approx(reference_dece(mated, non_mated), abs=2e-4)
    assert dece_bits([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) == pytest.approx(0.0, abs=1e-12)
    assert dece_bits([5.0, 6.0], [0.0, 1.0, 2.0]) == pytest.approx(1 / math.log(4), abs=1e-9)
    # ECE of zero LLRs is the binary entropy
    t = np.array([-2.0, 0.0, 3.0])
    pi = 1 / (1 + np.exp(-t))
    np.testing.assert_allclose(ece_bits([0.0], [0.0], t), -(pi * np.log2(pi) + (1 - pi) * np.log2(1 - pi)))


def test_max_abs_llr_against_hand_computation_and_tags():
    # separable: mated {2, 3}, non-mated {0, 1}; Laplace pseudo pairs pool with the ends:
    # bottom bin 1 mated / 3 non-mated, top bin 3 / 1; prior odds 2/2 -> LLR = -ln 3, +ln 3
    assert max_abs_llr([2.0, 3.0], [0.0, 1.0]) == pytest.approx(math.log(3) / math.log(10))
    # equal counts at one score: every Laplace-smoothed bin has posterior 1/2 -> max |LLR| = 0
    # (the case where ZEBRA itself fails); tag "0"
    assert max_abs_llr([1.0, 1.0], [1.0, 1.0]) == 0.0
    assert zebra_tag(0.0) == "0"
    assert [zebra_tag(v) for v in (0.5, 1.0, 1.5, 3.9, 4.5, 5.5, 6.0, 6.1)] == list("AABCDEEF")


def test_linkability_against_hand_computation():
    # 20 mated scores -> 2 bins over [0, 1]: mated 4 in bin 1, 16 in bin 2; non-mated 10 / 10.
    mated = np.r_[np.full(3, 0.2), 0.0, np.full(15, 0.8), 1.0]
    non_mated = np.r_[np.full(9, 0.3), 0.0, np.full(9, 0.7), 1.0]
    assert linkability_bins(20) == 2
    # densities (bin width 0.5): mated 4/20/0.5 = 0.4 and 1.6; non_mated 1.0 and 1.0 -> LR 0.4, 1.6
    # D = 0 for LR <= 1, 2*1.6/2.6 - 1 = 0.6/2.6 for the second; f = D * p_mated = (0, 1.6 * 0.6/2.6)
    # bin-sum: 0.5 * (f1 + f2); reference: trapezoid over the centres 0.25, 0.75 = 0.5 * (f1 + f2) / 2
    assert dsys(mated, non_mated, method="bin-sum") == pytest.approx(1.6 * 0.5 * (0.6 / 2.6))
    assert dsys(mated, non_mated) == pytest.approx(1.6 * 0.5 * (0.6 / 2.6) / 2)
    for method in ("reference", "bin-sum"):
        assert dsys([0.9, 1.0], [0.0, 0.1], method=method) == 0.0  # 2 mated scores -> 1 bin: nothing links
        assert dsys([1.0, 1.0], [1.0, 1.0], method=method) == 0.0
    # mated-only bin: D = 1, f = (0, 2); bin-sum 0.5 * 2 = 1, reference 0.5 * (0 + 2) / 2 = 0.5
    assert dsys([0.9, 1.0], [0.0, 0.1], n_bins=2, method="bin-sum") == pytest.approx(1.0)
    assert dsys([0.9, 1.0], [0.0, 0.1], n_bins=2) == pytest.approx(0.5)


def test_identification_metrics():
    scores = np.array([[0.9, 0.1, 0.5], [0.2, 0.8, 0.9], [0.3, 0.3, 0.1]])
    ranks = true_speaker_rank(scores, np.array([0, 1, 0]), tile_rows=2)
    assert ranks.tolist() == [1, 2, 1]  # a tie counts in the attacker's favour
    assert rank1_rate(ranks) == pytest.approx(2 / 3)
    bits, mean = rank_disclosure(ranks, 3)
    # gamma = (2/3, 1/3, 0): log2(3 * 2/3) = 1, log2(3 * 1/3) = 0
    np.testing.assert_allclose(bits[:2], [1.0, 0.0])
    assert bits[2] == -np.inf and mean == pytest.approx(2 / 3)
    with pytest.raises(InputError):
        true_speaker_rank(scores, np.array([0, 3, 0]))


def test_evaluate_reports_the_binary_and_identification_views():
    dev, ev = simulate_system(leakage=0.4, seed=8, n_enrolled=15)
    s = evaluate(dev, ev).summary
    assert s["alid"] == pytest.approx(s["log2_n"] - s["cllr_mc"], abs=1e-10)
    ranks = true_speaker_rank(ev.scores, ev.true_index)
    assert s["rank1_rate"] == rank1_rate(ranks)
    assert 0 <= s["rank_disclosure_bits"] <= s["log2_n"]
    assert s["zebra_tag"] in "0ABCDEF" and 0 <= s["dece_bits"] <= 1 / math.log(4) + 1e-9
    assert 0 <= s["dsys"] <= 1
    assert cllr_multiclass([0.5, 0.25]) == pytest.approx(1.5)
