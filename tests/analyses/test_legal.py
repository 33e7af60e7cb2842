"""The legal-criteria analyses (lidframe.analyses.legal): their records, intervals, conversations and refusals.

The formulas are tested in tests/metrics/test_legal.py; here each analysis is checked
against what it must reproduce: pi_link(N) against the evaluation's own rank-1 rate, the
interval against the speaker bootstrap redone by hand, conversations against the mean of
the utterances their ids name, and the records' JSON against the shapes summary.json uses.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lidframe import InputError, ScoreSet, evaluate
from lidframe.analyses.legal import (
    LinkabilityCurve,
    SinglingOut,
    conversations,
    linkability_curve,
    singling_out,
)
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.simulate import simulate_system
from lidframe.stats.bootstrap import Bootstrap


@pytest.fixture(scope="module")
def system():
    return simulate_system(leakage=0.4, seed=2, n_outsiders=3)


def embedding_set(seed: int = 0, n_speakers: int = 6, trials_per: int = 6, dim: int = 8) -> EmbeddingSet:
    rng = np.random.default_rng(seed)
    identity = rng.standard_normal((n_speakers, dim))
    speaker = np.repeat(np.arange(n_speakers), trials_per)
    trials = identity[speaker] + 0.8 * rng.standard_normal((speaker.size, dim))
    enrolled = np.array([f"spk{s}" for s in range(n_speakers)])
    ids = np.array([f"u{t}" for t in range(speaker.size)])
    return EmbeddingSet(trials, identity + 0.3 * rng.standard_normal(identity.shape), enrolled, enrolled[speaker], ids)


def test_pi_link_at_n_is_the_evaluations_rank1_rate_and_chance_is_one_over_n_prime(system):
    dev, ev = system
    result = evaluate(dev, ev)
    curve = linkability_curve(result, bootstrap=None)
    assert [p.n_prime for p in curve.points] == [2, 4, 8, 16, 29]  # powers of two below N, and N
    assert curve.points[-1].pi_link == result.summary.rank1_rate
    assert [p.chance for p in curve.points] == [1 / n for n in (2, 4, 8, 16, 29)]
    assert curve.n_trials == ev.n_trials - ev.n_outsider_trials
    pi_link = [p.pi_link for p in curve.points]
    assert pi_link == sorted(pi_link, reverse=True)  # a larger search links fewer
    assert linkability_curve(ev, bootstrap=None).to_dict() == curve.to_dict()  # ranked from the scores alike


def test_the_curve_is_the_json_shape_of_the_legal_block(system):
    _, ev = system
    curve = linkability_curve(ev, [29, 3, 3, 10], bootstrap=Bootstrap(n_boot=200))
    record = curve.to_dict()
    assert list(record) == ["points"]
    assert [list(p) for p in record["points"]] == [["n_prime", "pi_link", "low", "high", "chance"]] * 3
    assert [p["n_prime"] for p in record["points"]] == [3, 10, 29]  # sorted, repeats dropped
    for point, interval in zip(curve.points, curve.intervals):
        assert interval.estimate == point.pi_link and interval.bounds == (point.low, point.high)
        assert interval.level == 0.95 and interval.method == "bca"
        assert point.low <= point.pi_link <= point.high
    assert curve.to_frame()["n_prime"].tolist() == [3, 10, 29]
    assert isinstance(curve, LinkabilityCurve)


def test_the_interval_is_the_speaker_bootstrap_of_the_trial_mean():
    """Percentile interval redone by hand: multinomial speaker counts, each trial weighted by its speaker's count."""
    rng = np.random.default_rng(9)
    n_speakers, trials_per = 12, 5
    speaker = np.repeat(np.arange(n_speakers), trials_per)
    scores = rng.standard_normal((speaker.size, n_speakers)) + 1.2 * (speaker[:, None] == np.arange(n_speakers))
    enrolled = np.array([f"s{j:02d}" for j in range(n_speakers)])
    data = ScoreSet(scores, enrolled, enrolled[speaker])
    options = Bootstrap(n_boot=300, method="percentile", seed=5)
    curve = linkability_curve(data, [2, 6, 12], bootstrap=options)

    true_score = scores[np.arange(speaker.size), speaker]
    beaters = (scores > true_score[:, None]).sum(axis=1)
    counts = np.random.default_rng(5).multinomial(n_speakers, np.full(n_speakers, 1 / n_speakers), size=300)
    weights = counts[:, speaker]  # speakers are sorted as their ids: s00, s01, ...
    for point in curve.points:
        n_prime = point.n_prime
        p_link = np.array(
            [math.comb(n_speakers - 1 - m, n_prime - 1) / math.comb(n_speakers - 1, n_prime - 1) for m in beaters]
        )
        assert point.pi_link == pytest.approx(p_link.mean(), abs=1e-12)
        resampled = weights @ p_link / weights.sum(axis=1)
        low, high = np.quantile(resampled, [0.025, 0.975])
        assert (point.low, point.high) == pytest.approx((low, high), abs=1e-12)


def test_singling_out_is_the_json_shape_and_seeded(system):
    _, ev = system
    outcome = singling_out(ev, 10, draws=30, seed=4, bootstrap=Bootstrap(n_boot=200))
    record = outcome.to_dict()
    assert list(record) == ["n", "l", "pi_sing", "low", "high", "chance", "draws"]
    assert (record["n"], record["l"], record["draws"]) == (10, 1, 30)
    assert record["chance"] == math.exp(-1)
    assert outcome.low <= outcome.pi_sing <= outcome.high
    assert outcome.interval.estimate == outcome.pi_sing and outcome.interval.method == "bca"
    again = singling_out(ev, 10, draws=30, seed=4, bootstrap=Bootstrap(n_boot=200))
    assert again.to_dict() == record
    assert singling_out(ev, 10, draws=30, seed=5, bootstrap=None).pi_sing != outcome.pi_sing
    default = singling_out(ev, bootstrap=None)
    assert (default.n, default.draws) == (ev.n_enrolled, 20)
    assert math.isnan(default.low) and default.to_dict()["low"] is None
    assert isinstance(default, SinglingOut)


def test_a_leaky_system_singles_out_above_a_random_one():
    leaky = singling_out(simulate_system(leakage=0.9, seed=1)[1], bootstrap=None)
    blind = singling_out(simulate_system(leakage=0.0, seed=1)[1], bootstrap=None)
    assert leaky.pi_sing > 0.6 > 0.45 > blind.pi_sing  # the blind one near its finite-M chance (~0.35)


def test_conversations_average_the_unit_embeddings_their_ids_name():
    data = embedding_set(trials_per=7)
    merged = conversations(data, 3, np.random.default_rng(0))
    assert merged.n_trials == 6 * 2  # 7 // 3 conversations per speaker; one utterance each left over
    index = {u: t for t, u in enumerate(data.trial_ids)}
    for vector, name, speaker in zip(merged.trial_vectors, merged.trial_ids, merged.trial_speakers):
        rows = [index[u] for u in name.split("+")]
        assert len(rows) == 3 and set(data.trial_speakers[rows]) == {speaker}
        units = data.trial_vectors[rows] / np.linalg.norm(data.trial_vectors[rows], axis=1, keepdims=True)
        np.testing.assert_allclose(vector, units.mean(axis=0), atol=1e-12)
    used = [u for name in merged.trial_ids for u in name.split("+")]
    assert len(used) == len(set(used))  # disjoint utterances
    assert conversations(data, 1, np.random.default_rng(0)) is data


def test_embedding_sets_at_l_1_are_their_score_sets():
    data = embedding_set(seed=3)
    scores = data.to_scoreset()
    assert singling_out(data, 4, seed=2).to_dict() == singling_out(scores, 4, seed=2).to_dict()
    assert linkability_curve(data).to_dict() == linkability_curve(scores).to_dict()


def test_longer_conversations_single_out_and_link_more():
    data = embedding_set(seed=1, n_speakers=10, trials_per=16, dim=6)
    one = singling_out(data, 10, l=1, draws=60, bootstrap=None)
    four = singling_out(data, 10, l=4, draws=60, bootstrap=None)
    assert (one.l, four.l) == (1, 4)
    assert four.pi_sing > one.pi_sing
    link_one = linkability_curve(data, [10], l=1, bootstrap=None).points[0].pi_link
    link_four = linkability_curve(data, [10], l=4, bootstrap=None).points[0].pi_link
    assert link_four > link_one


def one_line(call, words: str) -> None:
    with pytest.raises(InputError, match=words) as info:
        call()
    assert "\n" not in str(info.value)


def test_too_few_trials_per_speaker_is_one_line_naming_them():
    enrolled = np.array(["a", "b", "c"])
    data = ScoreSet(np.arange(12.0).reshape(4, 3) % 5, enrolled, ["a", "a", "b", "c"])
    one_line(lambda: singling_out(data), r"at least 2 trials of every speaker.*'b', 'c' have 1")
    unheard = ScoreSet(np.arange(12.0).reshape(4, 3) % 5, enrolled, ["a", "a", "b", "b"])
    one_line(lambda: singling_out(unheard), r"every enrolled speaker.*none of 'c'")
    short = embedding_set(trials_per=5)
    one_line(lambda: singling_out(short, l=3), r"l=3 .* at least 6 trials of every speaker.*'spk0'")
    one_line(lambda: linkability_curve(short, l=6), r"l=6 .* at least 6 trials")


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_bad_conversation_length_is_one_line(bad):
    data = embedding_set()
    one_line(lambda: singling_out(data, l=bad), "conversation length l must be a positive integer")
    one_line(lambda: linkability_curve(data, l=bad), "conversation length l must be a positive integer")


def test_out_of_range_sizes_draws_and_inputs_are_one_line(system):
    dev, ev = system
    one_line(lambda: linkability_curve(ev, [1, 5]), r"within 2..29 .*got 1")
    one_line(lambda: linkability_curve(ev, [30]), r"within 2..29 .*got 30")
    one_line(lambda: singling_out(ev, 1), r"within 2..32")  # 29 enrolled + 3 outsider speakers
    one_line(lambda: singling_out(ev, 33), r"within 2..32")
    one_line(lambda: singling_out(ev, 5, draws=0), "draws must be a positive integer")
    one_line(lambda: singling_out(ev, l=2), "needs an embedding set")
    one_line(lambda: linkability_curve(ev, l=2), "needs an embedding set")
    result = evaluate(dev, ev)
    one_line(lambda: singling_out(result), "a Result holds only ranks")
    one_line(lambda: linkability_curve(result, l=2), "needs the embedding set")
    outsiders_only = ev.subset(ev.is_outsider)
    one_line(lambda: linkability_curve(outsiders_only), "trials whose speaker is enrolled")


def test_errors_on_a_set_read_from_a_file_name_it(tmp_path):
    enrolled = np.array(["a", "b", "c"])
    path = tmp_path / "eval.npz"
    ScoreSet(np.arange(12.0).reshape(4, 3) % 5, enrolled, ["a", "a", "b", "c"]).save(path)
    one_line(lambda: singling_out(path), rf"^{path} \(eval\): singling out needs at least 2 trials")
