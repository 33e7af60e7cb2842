"""ZEBRA's individual metric max |LLR| against ZEBRA's published algorithm, re-implemented here."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe.metrics.binary_view import binary_summary
from lidframe.metrics.zebra import max_abs_llr, zebra_tag


def pool_adjacent_violators(values):
    """Non-decreasing least-squares fit of unit-weight values: the textbook stack of blocks."""
    blocks = []  # [mean, count]
    for v in values:
        blocks.append([float(v), 1])
        while len(blocks) > 1 and blocks[-2][0] >= blocks[-1][0]:
            mean, count = blocks.pop()
            blocks[-1][0] = (blocks[-1][0] * blocks[-1][1] + mean * count) / (blocks[-1][1] + count)
            blocks[-1][1] += count
    return np.concatenate([np.full(count, mean) for mean, count in blocks])


def zebra_max_abs_llr_log10(mated, non_mated):
    """ZEBRA's max |LLR| (``zebra_framework``): BOSARIS ``optimal_llr`` with Laplace, real scores only.

    Sort all scores (non-mated first among ties, a stable sort) into 0/1 labels; put the
    Laplace pseudo labels [1, 0] below and [1, 0] above them; PAV; remove the four pseudo
    entries; LLR = logit(posterior) - ln(N_mated / N_non_mated); max |LLR| / ln 10 over the
    real scores.  (ZEBRA's code also adds a ramp of at most 1e-6 nats to keep the LLRs
    strictly monotone; it is left out here, far below the tolerance.)
    """
    scores = np.r_[non_mated, mated]
    labels = np.r_[np.zeros(len(non_mated)), np.ones(len(mated))][np.argsort(scores, kind="mergesort")]
    posterior = pool_adjacent_violators(np.r_[1.0, 0.0, labels, 1.0, 0.0])[2:-2]
    llr = np.log(posterior) - np.log1p(-posterior) - math.log(len(mated) / len(non_mated))
    return float(np.max(np.abs(llr)) / math.log(10.0))


@st.composite
def distinct_score_pairs(draw, max_mated=30, max_non_mated=300):
    """(mated, non_mated) with all scores distinct (ZEBRA orders ties by class; lidframe pools them).

    Sizes range from balanced to the 1-to-N shape (few mated, many non-mated) where a
    pseudo-only bin at the top would give ln(N_non_mated / N_mated).
    """
    n_mated = draw(st.integers(1, max_mated))
    n_non_mated = draw(st.integers(1, max_non_mated))
    values = draw(st.lists(st.integers(-5000, 5000), min_size=n_mated + n_non_mated,
                           max_size=n_mated + n_non_mated, unique=True))  # fmt: skip
    scores = np.array(values, dtype=np.float64) / 1000.0
    return scores[:n_mated], scores[n_mated:]


@pytest.mark.slow
@settings(max_examples=200)
@given(distinct_score_pairs())
def test_max_abs_llr_is_zebras_algorithm(pair):
    mated, non_mated = pair
    want = zebra_max_abs_llr_log10(mated, non_mated)
    got = max_abs_llr(mated, non_mated)
    assert got == pytest.approx(want, abs=1e-9)
    assert binary_summary(mated, non_mated)["max_abs_llr_log10"] == pytest.approx(want, abs=1e-9)


@settings(max_examples=50)
@given(st.integers(1, 40), st.integers(2, 60), st.integers(0, 2**32 - 1))
def test_1_to_n_scores_without_information_are_not_lifted_to_log10_n_minus_1(n_trials, n_enrolled, seed):
    # T mated and T (N - 1) non-mated scores from one distribution, the binary view of a
    # zero-information 1-to-N attacker
    rng = np.random.default_rng(seed)
    mated, non_mated = rng.standard_normal(n_trials), rng.standard_normal(n_trials * (n_enrolled - 1))
    assert max_abs_llr(mated, non_mated) == pytest.approx(zebra_max_abs_llr_log10(mated, non_mated), abs=1e-9)


def test_issue_example_null_system_is_tag_a():
    # 1,000 mated and 28,000 non-mated scores from the same N(0, 1): counting the
    # pseudo-only top bin would give log10(28) = 1.447 and tag B
    rng = np.random.default_rng(0)
    mated, non_mated = rng.standard_normal(1000), rng.standard_normal(28000)
    want = zebra_max_abs_llr_log10(mated, non_mated)
    got = max_abs_llr(mated, non_mated)
    assert got == pytest.approx(want, abs=1e-9)
    assert got < 0.3 and zebra_tag(got) == "A"
    assert abs(got - math.log10(28)) > 1.0
    summary = binary_summary(mated, non_mated)
    assert summary["zebra_tag"] == "A" and summary["max_abs_llr_log10"] == pytest.approx(want, abs=1e-9)


def test_pseudo_pair_pooled_with_real_scores_still_counts():
    # separable 2 : 2 -- each pseudo pair pools with the real scores at its end (bins 1 : 3
    # and 3 : 1), so those LLRs, +-ln 3, are the real scores' own
    assert max_abs_llr([2.0, 3.0], [0.0, 1.0]) == pytest.approx(math.log10(3.0))
    assert zebra_max_abs_llr_log10(np.array([2.0, 3.0]), np.array([0.0, 1.0])) == pytest.approx(math.log10(3.0))
    # one mated score above 3 non-mated ones: the top pseudo pair pools with it (2 : 1),
    # posterior 2/3, LLR ln 2 - ln(1/3) = ln 6; the bottom bin (1 : 4) has LLR ln(3/4)
    assert max_abs_llr([5.0], [0.0, 1.0, 2.0]) == pytest.approx(math.log10(6.0))
    assert zebra_max_abs_llr_log10(np.array([5.0]), np.array([0.0, 1.0, 2.0])) == pytest.approx(math.log10(6.0))


@settings(max_examples=100)
@given(st.lists(st.integers(-8, 8), min_size=1, max_size=30), st.lists(st.integers(-8, 8), min_size=1, max_size=60))
def test_ties_within_a_class_agree_with_zebra(mated, non_mated):
    # docs/metrics.md: ZEBRA sorts the non-mated scores before the mated ones (stable), so a
    # tie between the classes is ordered by class; lidframe pools it.  Within a class the
    # order of ties does not matter, so the two agree unless a mated score equals a non-mated one.
    mated, non_mated = np.array(mated, dtype=np.float64) / 2, np.array(non_mated, dtype=np.float64) / 2
    want = zebra_max_abs_llr_log10(mated, non_mated)
    got = max_abs_llr(mated, non_mated)
    if not np.intersect1d(mated, non_mated).size:
        assert got == pytest.approx(want, abs=1e-9)


def test_a_tie_across_the_classes_is_pooled_not_ordered_by_class():
    # five mated and five non-mated scores, all 0: no information.  Pooled (lidframe): every
    # real score in one bin at the prior, max |LLR| 0, tag 0.  Ordered by class (ZEBRA): PAV
    # splits the tie, the mated scores pool with the top pseudo pair, 6 : 1, log10 6.
    assert max_abs_llr(np.zeros(5), np.zeros(5)) == 0.0
    assert zebra_tag(max_abs_llr(np.zeros(5), np.zeros(5))) == "0"
    assert zebra_max_abs_llr_log10(np.zeros(5), np.zeros(5)) == pytest.approx(math.log10(6.0))
