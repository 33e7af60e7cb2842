"""The CMC curve and its chance levels (lidframe.core.cmc, lidframe.metrics.identification), against hand counts.

Rates are counted here by brute force (a loop over trials), chance is k/N, the binomial tail
is summed from math.comb, and a random attacker's curve is checked against k/N.
"""

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe import Bootstrap, InputError, ScoreSet, evaluate
from lidframe.core.cmc import CMCCurve, cmc_curve, result_cmc
from lidframe.data.simulate import simulate_system
from lidframe.metrics.identification import (
    CMC_ALL_KS_UP_TO,
    chance_p_values,
    cmc_ks,
    true_speaker_rank,
)
from lidframe.stats.bootstrap import ratio_ci
from lidframe.stats.interval import Interval


def binomial_tail(hits: int, n: int, p: float) -> float:
    """P(Binomial(n, p) >= hits), summed term by term."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(hits, n + 1))


@st.composite
def ranked_trials(draw):
    n_enrolled = draw(st.integers(1, 30))
    ranks = draw(st.lists(st.integers(1, n_enrolled), min_size=1, max_size=60))
    return n_enrolled, ranks


@given(ranked_trials())
def test_points_are_the_brute_force_counts_with_chance_k_over_n(case):
    n_enrolled, ranks = case
    curve = cmc_curve(ranks, n_enrolled)
    assert [p.k for p in curve.points] == cmc_ks(n_enrolled).tolist()
    for point in curve.points:
        hits = sum(1 for r in ranks if r <= point.k)
        assert point.hits == hits
        assert point.top_k_rate == hits / len(ranks)
        assert point.chance == point.k / n_enrolled
        assert point.p_chance == pytest.approx(
            binomial_tail(hits, len(ranks), point.k / n_enrolled), rel=1e-9, abs=1e-300
        )
        assert point.interval is None
    assert curve.points[-1].k == n_enrolled and curve.points[-1].top_k_rate == 1.0  # every true speaker is in the top N
    assert curve.rank1 is not None and curve.rank1.top_k_rate == np.mean(np.asarray(ranks) == 1)


def test_the_default_grid_has_every_k_up_to_ten_then_log_spaced_k_up_to_n():
    assert cmc_ks(7).tolist() == list(range(1, 8))
    ks = cmc_ks(5000)
    assert ks[:CMC_ALL_KS_UP_TO].tolist() == list(range(1, CMC_ALL_KS_UP_TO + 1))
    assert ks[-1] == 5000 and len(ks) <= CMC_ALL_KS_UP_TO + 40 and (np.diff(ks) > 0).all()
    ratios = ks[CMC_ALL_KS_UP_TO + 5 :] / ks[CMC_ALL_KS_UP_TO + 4 : -1]
    assert ratios.max() / ratios.min() < 1.3  # log-spaced: about one ratio between neighbours
    assert cmc_ks(50, [5, 1, 5, 50]).tolist() == [1, 5, 50]


@pytest.mark.parametrize(
    ("ks", "words"),
    [([0], "outside 1..N"), ([51], "outside 1..N"), ([1.5], "whole numbers"), ([], "whole numbers")],
)
def test_a_bad_k_is_refused_in_one_line(ks, words):
    with pytest.raises(InputError, match=words):
        cmc_curve([1, 2], 50, ks=ks)


def test_bad_ranks_and_a_speaker_bootstrap_without_speakers_are_refused():
    with pytest.raises(InputError, match="1..3"):
        cmc_curve([1, 4], 3)
    with pytest.raises(InputError, match="1..3"):
        cmc_curve([], 3)
    with pytest.raises(InputError, match="speakers"):
        cmc_curve([1, 2, 3], 3, bootstrap=Bootstrap(n_boot=100))
    with pytest.raises(InputError, match="one id per rank"):
        cmc_curve([1, 2, 3], 3, speakers=["a", "b"])


def test_the_binomial_tail_of_the_issue_example():
    # a rank-1 rate of 10 % on 120 trials of 24 speakers: 12 hits where chance expects 5
    (p,) = chance_p_values([12], 120, [1 / 24])
    assert p == pytest.approx(binomial_tail(12, 120, 1 / 24), rel=1e-12)
    assert chance_p_values([0], 120, [1 / 24])[0] == 1.0


def test_a_random_attacker_is_at_chance():
    # scores independent of the speaker: every rank equally likely, so top-k -> k/N
    rng = np.random.default_rng(7)
    n_trials, n_enrolled = 40_000, 24
    scores = rng.normal(size=(n_trials, n_enrolled))
    truth = rng.integers(0, n_enrolled, size=n_trials)
    curve = cmc_curve(true_speaker_rank(scores, truth), n_enrolled)
    for point in curve.points:
        sd = math.sqrt(point.chance * (1 - point.chance) / n_trials)
        assert abs(point.top_k_rate - point.chance) <= 4.5 * sd + 1e-12, point.k


def test_the_rank1_point_is_the_summarys_rank1_rate_and_outsiders_are_left_out():
    dev, ev = simulate_system(leakage=0.5, seed=4, n_enrolled=12, trials_per_speaker=5, n_outsiders=2)
    result = evaluate(dev, ev)
    curve = result_cmc(result)
    assert curve.rank1.top_k_rate == result.summary.rank1_rate
    assert curve.n_trials == result.summary.n_enrolled_trials == int((~result.is_outsider).sum())
    assert curve.n_enrolled == 12 and curve.n_speakers == 12
    # the ranks recomputed from the scores, by brute force
    closed = ~np.asarray(ev.is_outsider)
    scores, truth = np.asarray(ev.scores)[closed], np.asarray(ev.true_index)[closed]
    ranks = [1 + int(np.sum(row > row[t])) for row, t in zip(scores, truth, strict=True)]
    for point in curve.points:
        assert point.hits == sum(r <= point.k for r in ranks)


@pytest.mark.parametrize("unit", ["speaker", "trial"])
def test_intervals_resample_the_trials_speakers_as_one_bootstrap_of_every_point(unit):
    dev, ev = simulate_system(leakage=0.3, seed=5, n_enrolled=15, trials_per_speaker=6)
    result = evaluate(dev, ev)
    boot = Bootstrap(n_boot=300, seed=11, unit=unit, method="percentile")
    curve = result_cmc(result, bootstrap=boot)
    ranks = np.asarray(result.true_rank)
    # the same bootstrap over the trials themselves (each trial an item, its speaker the unit)
    parts = {str(p.k): ((ranks <= p.k).astype(float), np.ones(ranks.size)) for p in curve.points}
    speakers = np.asarray(result.trial_speakers) if unit == "speaker" else None
    want = ratio_ci(parts, boot, speakers=speakers)
    for point in curve.points:
        assert isinstance(point.interval, Interval)
        assert point.interval.level == 0.95 and point.interval.method == "percentile"
        assert point.interval.estimate == point.top_k_rate
        assert point.interval.low == pytest.approx(want[str(point.k)].low, abs=1e-12)
        assert point.interval.high == pytest.approx(want[str(point.k)].high, abs=1e-12)
        assert point.interval.low <= point.top_k_rate <= point.interval.high


def test_the_record_round_trips_through_json():
    dev, ev = simulate_system(leakage=0.5, seed=6, n_enrolled=40, trials_per_speaker=3)
    result = evaluate(dev, ev)
    for curve in (
        result_cmc(result),
        result_cmc(result, bootstrap=Bootstrap(n_boot=100)),
        result_cmc(result, ks=[1, 5]),
    ):
        stored = json.loads(json.dumps(curve.to_dict()))
        again = CMCCurve.from_dict(stored)
        assert again.to_dict() == curve.to_dict()
        assert list(stored["points"][0]) == [
            "k",
            "top_k_rate",
            "top_k_rate_low",
            "top_k_rate_high",
            "chance",
            "hits",
            "p_chance",
        ]
        frame = curve.to_frame()
        assert list(frame["k"]) == [p.k for p in curve.points]


def test_ties_count_for_the_attacker_so_a_constant_attacker_is_not_at_chance():
    # the documented caveat: a constant row ranks every speaker first (1 + #strictly higher)
    ev = ScoreSet(np.zeros((4, 5)), list("abcde"), list("abcd"), ["t1", "t2", "t3", "t4"])
    ranks = true_speaker_rank(ev.scores, ev.true_index)
    assert cmc_curve(ranks, 5).rank1.top_k_rate == 1.0
