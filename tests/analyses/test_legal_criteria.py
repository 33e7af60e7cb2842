"""The legal block of an evaluation (lidframe.analyses.legal_criteria) and the per-trial P(link) at N' = 2.

The block must be exactly what the two analyses give when called on their own on the same
set (same seed, same bootstrap), read back from its JSON unchanged, and leave a criterion
absent -- with the reason, never an error -- where the eval set does not allow it.  The
per-trial ``p_link_2`` of ``Result.to_frame()`` is checked against a count over the
scores: the share of the other enrolled speakers that do not score above the true one.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe import InputError, ScoreSet, evaluate
from lidframe.analyses import legal_criteria as block
from lidframe.analyses.legal import linkability_curve, singling_out
from lidframe.analyses.legal_criteria import LegalCriteria, legal_criteria
from lidframe.data.simulate import simulate_system
from lidframe.stats.bootstrap import Bootstrap

BOOT = Bootstrap(n_boot=150, seed=7)


@pytest.fixture(scope="module")
def repeated():
    """A system with outsiders and 5 trials of every speaker, evaluated."""
    dev, ev = simulate_system(leakage=0.4, seed=11, n_enrolled=12, trials_per_speaker=5, n_outsiders=2)
    return ev, evaluate(dev, ev)


def test_the_block_is_what_the_two_analyses_give_on_the_same_set(repeated):
    ev, result = repeated
    got = legal_criteria(result, ev, bootstrap=BOOT, seed=3)
    assert got.absent == {}
    assert got.linkability is not None and got.singling_out is not None
    # linkability from the eval set's raw scores, singling out with the same seed: the same numbers, bit for bit
    assert got.linkability.to_dict() == linkability_curve(ev, bootstrap=BOOT).to_dict()
    assert got.singling_out.to_dict() == singling_out(ev, seed=3, bootstrap=BOOT).to_dict()
    assert got.to_dict()["singling_out"] != legal_criteria(result, ev, bootstrap=BOOT, seed=4).to_dict()["singling_out"]
    assert (got.n_enrolled, got.n_trials, got.seed) == (12, 60, 3)
    assert (got.level, got.method) == (BOOT.level, BOOT.method)
    assert got.linkability.points[-1].pi_link == result.summary.rank1_rate  # pi_link(N) is rank-1


def test_without_a_bootstrap_there_is_no_interval(repeated):
    ev, result = repeated
    record = legal_criteria(result, ev, bootstrap=None).to_dict()
    assert record["level"] is None and record["method"] == ""
    ends = [(p["low"], p["high"]) for p in record["linkability"]["points"]]
    ends.append((record["singling_out"]["low"], record["singling_out"]["high"]))
    assert set(ends) == {(None, None)}


def test_the_block_reads_back_from_its_json(repeated):
    ev, result = repeated
    for boot in (BOOT, None):
        record = legal_criteria(result, ev, bootstrap=boot).to_dict()
        text = json.dumps(record)
        back = LegalCriteria.from_dict(json.loads(text))
        assert json.dumps(back.to_dict()) == text
        assert back.linkability is not None and back.linkability.n_enrolled == 12
        if boot is not None:
            assert back.singling_out is not None and back.singling_out.interval.level == BOOT.level


def test_single_trials_leave_singling_out_absent_with_its_reason():
    dev, ev = simulate_system(leakage=0.4, seed=1, n_enrolled=9, trials_per_speaker=1)
    result = evaluate(dev, ev)
    got = legal_criteria(result, ev, bootstrap=BOOT)
    assert got.singling_out is None and list(got.absent) == ["singling_out"]
    assert "at least 2 trials of every speaker" in got.absent["singling_out"]
    assert "\n" not in got.absent["singling_out"]
    assert got.linkability is not None  # one trial each still ranks
    record = json.loads(json.dumps(got.to_dict()))
    assert record["singling_out"] is None and record["absent"] == got.absent
    assert LegalCriteria.from_dict(record).absent == got.absent


def test_an_outsider_with_one_trial_is_a_person_too():
    """Singling out draws among every trial speaker: an outsider with a single trial leaves it absent, saying whom."""
    dev, ev = simulate_system(leakage=0.4, seed=1, n_enrolled=6, trials_per_speaker=3)
    speakers = ev.trial_speakers.copy()
    speakers[0] = "stranger"  # one outsider trial, of a speaker heard once
    ev = ScoreSet(ev.scores, ev.enrolled, speakers, ev.trial_ids)
    got = legal_criteria(evaluate(dev, ev), ev, bootstrap=None)
    assert "'stranger'" in got.absent["singling_out"] and got.linkability is not None


def test_a_set_too_large_to_draw_in_an_evaluation_leaves_singling_out_absent(repeated, monkeypatch):
    ev, result = repeated
    monkeypatch.setattr(block, "SINGLING_OUT_VALUE_LIMIT", 12 * 20 * 12 * 5 - 1)  # one value too many
    got = legal_criteria(result, ev, bootstrap=None)
    assert got.singling_out is None and "would compare 14,400 scores" in got.absent["singling_out"]
    monkeypatch.setattr(block, "SINGLING_OUT_VALUE_LIMIT", 12 * 20 * 12 * 5)
    assert legal_criteria(result, ev, bootstrap=None).singling_out is not None


def test_a_record_must_say_why_a_criterion_is_missing(repeated):
    ev, result = repeated
    good = legal_criteria(result, ev, bootstrap=None)
    with pytest.raises(InputError, match="given or absent with a reason"):
        LegalCriteria(linkability=None, singling_out=good.singling_out, n_enrolled=12, n_trials=60, seed=0)
    with pytest.raises(InputError, match="given or absent with a reason"):
        LegalCriteria(
            linkability=good.linkability,
            singling_out=good.singling_out,
            absent={"linkability": "no"},
            n_enrolled=12,
            n_trials=60,
            seed=0,
        )
    record = good.to_dict()
    del record["seed"]
    with pytest.raises(InputError, match="summary.json: not a legal block.*seed"):
        LegalCriteria.from_dict(record, where="summary.json")


# ------------------------------------------------------------------ per trial: P(link) at N' = 2
def _link_at_two_by_count(scores: np.ndarray, true_index: np.ndarray) -> np.ndarray:
    """Each trial's share of the other enrolled speakers that do not score above its true one (NaN: outsider)."""
    out = np.full(true_index.size, np.nan)
    for i, j in enumerate(true_index):
        if j < 0:
            continue
        others = np.delete(scores[i], j)
        out[i] = np.mean(others <= scores[i, j])  # a tie counts for the attacker
    return out


@settings(max_examples=25, deadline=None)
@given(
    n_enrolled=st.integers(2, 7),
    trials_per=st.integers(2, 4),
    levels=st.integers(2, 6),
    seed=st.integers(0, 2**16),
)
def test_p_link_2_of_each_trial_is_the_share_of_others_not_above_it(n_enrolled, trials_per, levels, seed):
    rng = np.random.default_rng(seed)
    speakers = np.repeat(np.arange(n_enrolled + 1), trials_per)  # the last one an outsider
    scores = rng.integers(0, levels, (speakers.size, n_enrolled)).astype(float)  # ties on purpose
    scores[np.ptp(scores, axis=1) == 0, 0] += 1.0  # no constant row (z-norm needs a spread)
    names = np.array([f"s{k}" for k in range(n_enrolled + 1)])
    ev = ScoreSet(scores, names[:-1], names[speakers], np.array([f"t{t}" for t in range(speakers.size)]))
    dev, _ = simulate_system(leakage=0.5, seed=seed % 97, n_enrolled=4, trials_per_speaker=4)
    frame = evaluate(dev, ev).to_frame()
    want = _link_at_two_by_count(ev.scores, ev.true_index)
    np.testing.assert_allclose(frame["p_link_2"].to_numpy(), want, rtol=0, atol=1e-12, equal_nan=True)
    closed = ~np.isnan(want)
    pi_link_2 = linkability_curve(ev, [2], bootstrap=None).points[0].pi_link
    assert math.isclose(float(np.mean(want[closed])), pi_link_2, abs_tol=1e-12)
