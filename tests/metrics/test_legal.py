"""Linkability pi_link(N') and singling out pi_sing(N) (lidframe.metrics.legal).

Every expected value here is computed another way: pi_link by enumerating every candidate
subset, by exact rational arithmetic and by the peer package's exact estimator; pi_sing
by enumerating every set of N speakers (and every choice of test conversations), by the
peer's own sampler, and for a random attacker by integrating the Gaussian order
statistics the calibrated threshold is made of.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lidframe import InputError
from lidframe.metrics.identification import rank1_rate, true_speaker_rank
from lidframe.metrics.legal import (
    SINGLING_OUT_CHANCE,
    check_n_primes,
    conversation_table,
    isolation_outcomes,
    link_probabilities,
    linkability_chance,
    linkability_exact,
    singling_out_outcomes,
)


@st.composite
def tied_trials(draw, max_enrolled=7, max_trials=6):
    """(scores (T, N), true_index (T,)): few distinct score values, so ties are common."""
    n_enrolled = draw(st.integers(2, max_enrolled))
    n_trials = draw(st.integers(1, max_trials))
    scores = draw(arrays(np.float64, (n_trials, n_enrolled), elements=st.sampled_from([0.0, 0.5, 1.0, 1.5])))
    true_index = np.array(draw(st.lists(st.integers(0, n_enrolled - 1), min_size=n_trials, max_size=n_trials)))
    return scores, true_index


def brute_force_pi_link(scores: np.ndarray, true_index: np.ndarray, n_prime: int) -> float:
    """Mean over trials and over every candidate set (the true speaker + N'-1 others) of "no candidate beats it"."""
    n_enrolled = scores.shape[1]
    linked = []
    for row, true in zip(scores, true_index):
        others = [j for j in range(n_enrolled) if j != true]
        wins = [not any(row[j] > row[true] for j in chosen) for chosen in itertools.combinations(others, n_prime - 1)]
        linked.append(np.mean(wins))
    return float(np.mean(linked))


@settings(max_examples=60, deadline=None)
@given(tied_trials())
def test_pi_link_is_the_mean_over_every_candidate_subset(case):
    scores, true_index = case
    n_enrolled = scores.shape[1]
    beaters = true_speaker_rank(scores, true_index) - 1
    sizes = list(range(2, n_enrolled + 1))
    expected = [brute_force_pi_link(scores, true_index, n) for n in sizes]
    np.testing.assert_allclose(linkability_exact(beaters, n_enrolled, sizes), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(link_probabilities(beaters, n_enrolled, sizes).mean(axis=1), expected, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(tied_trials(max_enrolled=12, max_trials=10))
def test_pi_link_matches_the_peers_exact_estimator(case):
    pytest.importorskip("legal_eval", reason="the peer voice-anonymization-legal-eval is in the test extra")
    from legal_eval.io import ScoreMatrix
    from legal_eval.metrics import linkability

    scores, true_index = case
    n_enrolled = scores.shape[1]
    enrolled = [f"s{j}" for j in range(n_enrolled)]
    matrix = ScoreMatrix(scores.T.copy(), enrolled, [enrolled[j] for j in true_index], {})
    sizes = list(range(2, n_enrolled + 1))
    peer = [linkability(matrix, n, estimator="exact")[0] for n in sizes]
    beaters = true_speaker_rank(scores, true_index) - 1
    np.testing.assert_allclose(linkability_exact(beaters, n_enrolled, sizes), peer, rtol=0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(tied_trials(max_enrolled=12, max_trials=12))
def test_pi_link_at_n_is_the_rank1_rate_exactly(case):
    scores, true_index = case
    n_enrolled = scores.shape[1]
    ranks = true_speaker_rank(scores, true_index)
    assert linkability_exact(ranks - 1, n_enrolled, [n_enrolled])[0] == rank1_rate(ranks)
    assert set(link_probabilities(ranks - 1, n_enrolled, [n_enrolled]).ravel()) <= {0.0, 1.0}


def test_link_probability_is_exact_at_a_hundred_thousand_speakers():
    """Against exact rationals C(N-1-m, N'-1) / C(N-1, N'-1), where a naive ratio of binomials overflows."""
    n_enrolled = 100_000
    beaters = np.array([0, 1, 7, 60, 400, 3000, 99_999])
    for n_prime in (2, 3, 50, 1000, 50_000, 99_999, 100_000):
        got = link_probabilities(beaters, n_enrolled, [n_prime])[0]
        for m, value in zip(beaters, got):
            exact = Fraction(math.comb(n_enrolled - 1 - int(m), n_prime - 1), math.comb(n_enrolled - 1, n_prime - 1))
            assert value == pytest.approx(float(exact), rel=1e-11, abs=1e-300), (n_prime, m)
            if m == 0:
                assert value == 1.0
            if m > n_enrolled - n_prime:
                assert value == 0.0


@pytest.mark.parametrize("n_enrolled", [2, 5, 24, 1000])
def test_a_blind_attacker_links_at_chance(n_enrolled):
    """Every rank equally often (a random attacker's expectation) gives exactly 1/N' at every N'."""
    sizes = list(range(2, n_enrolled + 1)) if n_enrolled < 100 else [2, 3, 10, 999, 1000]
    got = linkability_exact(np.arange(n_enrolled), n_enrolled, sizes)
    np.testing.assert_allclose(got, [linkability_chance(n) for n in sizes], rtol=1e-12, atol=0)


def test_a_random_attacker_links_near_chance():
    """i.i.d. scores: pi_link(N') within 4.5 standard errors of 1/N' (the standard error of a mean of the P_i)."""
    rng = np.random.default_rng(7)
    n_trials, n_enrolled = 4000, 60
    scores = rng.standard_normal((n_trials, n_enrolled))
    true_index = rng.integers(0, n_enrolled, n_trials)
    beaters = true_speaker_rank(scores, true_index) - 1
    sizes = [2, 5, 20, 60]
    per_trial = link_probabilities(beaters, n_enrolled, sizes)
    error = per_trial.std(axis=1, ddof=1) / math.sqrt(n_trials)
    got = linkability_exact(beaters, n_enrolled, sizes)
    assert np.all(np.abs(got - 1.0 / np.array(sizes)) < 4.5 * error)


@pytest.mark.parametrize(
    ("n_primes", "words"),
    [
        ([1], "within 2..6"),
        ([7], "within 2..6"),
        ([0, 2, 9], "got 0, 9"),
        ([2.5], "must be integers"),
        ([True], "must be integers"),
        ([], "at least one"),
    ],
)
def test_candidate_set_sizes_out_of_range_are_one_line(n_primes, words):
    with pytest.raises(InputError, match=words) as info:
        check_n_primes(n_primes, 6)
    assert "\n" not in str(info.value)
    with pytest.raises(InputError, match=words):
        linkability_exact(np.zeros(3, dtype=int), 6, n_primes)


@pytest.mark.parametrize(
    ("beaters", "n_enrolled", "words"),
    [
        ([0, 6], 6, "within 0..5"),
        ([-1], 6, "within 0..5"),
        ([0], 1, "N >= 2"),
        ([], 4, "non-empty"),
        ([0.5], 4, "integer"),
    ],
)
def test_bad_beaters_are_one_line(beaters, n_enrolled, words):
    with pytest.raises(InputError, match=words) as info:
        link_probabilities(np.asarray(beaters), n_enrolled, [2])
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ singling out
def threshold_of(calibration: np.ndarray, n_above: int) -> float:
    """Midway between the n_above-th and (n_above + 1)-th highest calibration scores, by sorting."""
    ranked = np.sort(calibration)[::-1]
    return (ranked[n_above - 1] + ranked[n_above]) / 2.0


def exact_isolation(conversation_scores, counts, own, n, test_slot=None) -> float:
    """The expectation of one predicate's isolation: every set of n speakers, and every choice of test slots.

    The sets are equally likely, and given a set each choice of its test slots is; so the
    mean is over sets of the mean over their slot choices.
    """
    others = [s for s in range(counts.size) if s != own]
    rates = []
    for chosen in itertools.combinations(others, n - 1):
        wins = []
        members = (own, *chosen)
        slot_choices = (
            [tuple(int(test_slot[s]) for s in members)]
            if test_slot is not None
            else itertools.product(*(range(counts[s]) for s in members))
        )
        for slots in slot_choices:
            calibration = [
                conversation_scores[s, k] for s, t in zip(members, slots) for k in range(counts[s]) if k != t
            ]
            threshold = threshold_of(np.array(calibration), int(counts[own]) - 1)
            fired = sum(conversation_scores[s, t] > threshold for s, t in zip(members, slots))
            wins.append(fired == 1)
        rates.append(np.mean(wins))
    return float(np.mean(rates))


def conversations_case(seed: int, counts: list[int], separation: float = 1.0):
    """(scores (T, S), rows, counts): each speaker's own predicate scores its conversations higher."""
    rng = np.random.default_rng(seed)
    speaker = np.repeat(np.arange(len(counts)), counts)
    scores = rng.standard_normal((speaker.size, len(counts))) + separation * (
        speaker[:, None] == np.arange(len(counts))
    )
    names, rows, table_counts = conversation_table(np.array([f"spk{s}" for s in speaker]))
    return scores, rows, table_counts


def test_conversation_table_lists_each_speakers_rows_in_order():
    names, rows, counts = conversation_table(["b", "a", "b", "c", "a", "b"])
    assert names.tolist() == ["a", "b", "c"]
    assert counts.tolist() == [2, 3, 1]
    assert [rows[s, : counts[s]].tolist() for s in range(3)] == [[1, 4], [0, 2, 5], [3]]


@pytest.mark.parametrize("fixed", [True, False])
def test_isolation_rate_matches_the_enumeration_of_every_set(fixed):
    """Each predicate's rate over 3000 draws within 4.5 binomial standard errors of its exact expectation.

    The draws are independent Bernoulli(q) for a predicate whose enumerated expectation is q,
    so the standard error of their mean is sqrt(q (1 - q) / draws); the mean over predicates
    is held to the same rule with the variances summed.
    """
    counts_list = [3, 2, 4, 2, 3, 2]
    scores, rows, counts = conversations_case(3, counts_list)
    n, draws = 3, 3000
    test_slot = np.zeros(counts.size, dtype=np.int64) if fixed else None
    outcomes = singling_out_outcomes(
        scores, rows, counts, np.arange(counts.size), n, draws, np.random.default_rng(11), test_slot=test_slot
    )
    padding = np.arange(rows.shape[1]) >= counts[:, None]
    exact = np.array(
        [
            exact_isolation(np.where(padding, np.nan, scores[rows, p]), counts, p, n, test_slot)
            for p in range(counts.size)
        ]
    )
    error = np.sqrt(exact * (1 - exact) / draws)
    assert np.all(np.abs(outcomes.mean(axis=1) - exact) <= 4.5 * error + 1e-12)
    assert abs(outcomes.mean() - exact.mean()) <= 4.5 * math.sqrt(np.sum(error**2)) / counts.size
    assert 0.05 < exact.mean() < 0.95  # the case is not degenerate


def test_isolation_agrees_with_the_peer_on_the_same_conversations():
    """The peer's singling_out and ours on one fixed split: both within 4.5 standard errors of the enumeration.

    Both estimate each predicate's expectation q (enumerated here) by independent draws, so
    their difference has standard error sqrt(2 q (1 - q) / draws); per predicate that is the
    tolerance, at 4.5 of them (a chance failure below 1e-5 per predicate).
    """
    pytest.importorskip("legal_eval", reason="the peer voice-anonymization-legal-eval is in the test extra")
    from legal_eval.metrics import singling_out as peer_singling_out
    from legal_eval.metrics.singling_out import ConversationScores

    counts_list = [3, 4, 2, 3, 2, 5, 3]
    scores, rows, counts = conversations_case(5, counts_list, separation=1.5)
    n, draws = 4, 1500
    names = [f"spk{s}" for s in range(counts.size)]
    test_scores = np.array([[scores[rows[s, 0], p] for s in range(counts.size)] for p in range(counts.size)])
    calibration_rows = np.concatenate([rows[s, 1 : counts[s]] for s in range(counts.size)])
    bounds = np.concatenate(([0], np.cumsum(counts - 1)))
    peer_scores = ConversationScores(
        names, names, test_scores, scores[calibration_rows].T.copy(), list(itertools.pairwise(bounds))
    )
    peer = peer_singling_out(peer_scores, n, n_runs=draws, seed=0)
    peer_rate = np.array([np.mean(peer[name]) for name in names])
    ours = singling_out_outcomes(
        scores, rows, counts, np.arange(counts.size), n, draws, np.random.default_rng(0), test_slot=np.zeros(7, int)
    ).mean(axis=1)
    padding = np.arange(rows.shape[1]) >= counts[:, None]
    exact = np.array(
        [exact_isolation(np.where(padding, np.nan, scores[rows, p]), counts, p, n, np.zeros(7, int)) for p in range(7)]
    )
    error = np.sqrt(exact * (1 - exact) / draws)
    assert np.all(np.abs(ours - peer_rate) <= 4.5 * math.sqrt(2) * error + 1e-12)
    assert np.all(np.abs(peer_rate - exact) <= 4.5 * error + 1e-12)


def gaussian_isolation(n: int, m: int) -> float:
    """A random predicate's isolation rate: n speakers of m calibration and one test conversation, i.i.d. N(0, 1).

    The threshold is the midpoint of the m-th and (m+1)-th highest of K = n m i.i.d.
    scores, whose upper-tail masses a < b have density K! / ((m-1)! (K-m-1)!) a^(m-1)
    (1-b)^(K-m-1); given it, each test conversation fires with q = Phi(-threshold),
    independently, so exactly one fires with probability n q (1 - q)^(n - 1).
    """
    from scipy import integrate, special, stats

    k = n * m
    log_c = special.gammaln(k + 1) - special.gammaln(m) - special.gammaln(k - m)

    def density(a, b):
        q = stats.norm.sf((stats.norm.isf(a) + stats.norm.isf(b)) / 2.0)
        return math.exp(log_c + (m - 1) * math.log(a) + (k - m - 1) * math.log1p(-b)) * n * q * (1 - q) ** (n - 1)

    value, _ = integrate.dblquad(density, 0.0, 1.0, 0.0, lambda b: b, epsabs=1e-10, epsrel=1e-9)
    return value


def random_attacker_rates(n_speakers: int, trials_per: int, n: int, draws: int, seed: int) -> np.ndarray:
    """Per-predicate isolation rates of i.i.d. N(0, 1) scores (every speaker's predicate a column)."""
    rng = np.random.default_rng(seed)
    speaker = np.repeat(np.arange(n_speakers), trials_per)
    scores = rng.standard_normal((speaker.size, n_speakers))
    _, rows, counts = conversation_table(speaker)
    return singling_out_outcomes(scores, rows, counts, np.arange(n_speakers), n, draws, rng).mean(axis=1)


def test_a_random_predicate_isolates_as_the_gaussian_order_statistics_say():
    """i.i.d. scores, 4 calibration conversations each: the closed form is 0.337, clearly below e^-1.

    Each predicate's rate (over draws) uses its own column of i.i.d. scores, so the rates of
    the 600 predicates are i.i.d. with mean the closed form: 4.5 standard errors of their mean.
    """
    rates = random_attacker_rates(600, 5, 30, 40, seed=1)
    expected = gaussian_isolation(30, 4)
    assert expected == pytest.approx(0.3372, abs=1e-4)
    assert abs(rates.mean() - expected) < 4.5 * rates.std(ddof=1) / math.sqrt(rates.size)


@pytest.mark.slow
def test_a_random_predicate_isolates_at_e_minus_one_for_large_n():
    """N = 200 speakers of 50 calibration conversations: the closed form is within 0.003 of e^-1, and so the rate."""
    expected = gaussian_isolation(200, 50)
    assert abs(expected - SINGLING_OUT_CHANCE) < 0.003
    rates = random_attacker_rates(200, 51, 200, 30, seed=2)
    assert abs(rates.mean() - SINGLING_OUT_CHANCE) < 0.003 + 4.5 * rates.std(ddof=1) / math.sqrt(rates.size)


def test_isolation_draws_are_seeded():
    scores, rows, counts = conversations_case(2, [3, 3, 2, 4, 2])
    own = np.arange(counts.size)
    first = singling_out_outcomes(scores, rows, counts, own, 3, 50, np.random.default_rng(4))
    again = singling_out_outcomes(scores, rows, counts, own, 3, 50, np.random.default_rng(4))
    np.testing.assert_array_equal(first, again)
    assert first.shape == (5, 50)


def test_a_predicate_fires_where_the_threshold_says():
    """Two speakers, own conversations scored (5, 4 | test 3), the other's (1 | test 2): threshold 2.5, one fires."""
    conversation_scores = np.array([[3.0, 5.0, 4.0], [2.0, 1.0, np.nan]])
    counts = np.array([3, 2])
    outcome = isolation_outcomes(
        conversation_scores, counts, 0, 2, 4, np.random.default_rng(0), test_slot=np.zeros(2, int)
    )
    # M = 2: calibration 5, 4, 1 -> midway between 4 and 1 is 2.5; tests 3 (fires) and 2 (does not)
    assert outcome.tolist() == [True] * 4


@pytest.mark.parametrize(
    ("counts", "n", "draws", "words"),
    [
        ([2, 1, 3], 2, 5, "1 speakers have fewer"),
        ([2, 2, 3], 1, 5, "within 2..3"),
        ([2, 2, 3], 4, 5, "within 2..3"),
        ([2, 2, 3], 2, 0, "positive integer"),
        ([2, 2, 3], True, 5, "within 2..3"),
    ],
)
def test_bad_singling_out_input_is_one_line(counts, n, draws, words):
    counts = np.array(counts)
    rows = np.zeros((3, 3), dtype=int)
    with pytest.raises(InputError, match=words) as info:
        singling_out_outcomes(np.zeros((3, 3)), rows, counts, np.arange(3), n, draws, np.random.default_rng(0))
    assert "\n" not in str(info.value)
