"""evaluate(): the whole pipeline against independent computations, and its properties."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression

import lidframe
from lidframe import Engine, Explicit, InputError, ScoreSet, WatchList, evaluate
from lidframe.calibrators import Logistic
from lidframe.data.simulate import simulate_system
from lidframe.metrics.aggregates import alid_decomposition
from tests.reference import dense_pipeline, dense_znorm
from tests.strategies import priors_of_every_kind, scoresets


def random_scoreset(rng, n_trials, n_enrolled, prefix="s", mated_shift=0.0):
    enrolled = [f"{prefix}{j}" for j in range(n_enrolled)]
    speakers = [enrolled[i % n_enrolled] for i in range(n_trials)]
    scores = rng.normal(size=(n_trials, n_enrolled))
    scores[np.arange(n_trials), np.arange(n_trials) % n_enrolled] += mated_shift
    return ScoreSet(scores, enrolled, speakers, [f"{prefix}-u{i}" for i in range(n_trials)])


@pytest.mark.parametrize("ddof", [0, 1])
def test_end_to_end_against_sklearn_and_dense_reference(ddof):
    rng = np.random.default_rng(7)
    dev = random_scoreset(rng, 120, 9, "d", mated_shift=1.5)
    ev = random_scoreset(rng, 90, 11, "e", mated_shift=1.0)
    # independent: sklearn fit on dense z-scores, then the textbook posterior
    z = dense_znorm(dev.scores, ddof)
    labels = np.zeros(z.shape, int)
    labels[np.arange(120), np.arange(120) % 9] = 1
    model = LogisticRegression(class_weight="balanced", tol=1e-10, max_iter=1000)
    model.fit(z.reshape(-1, 1), labels.ravel())
    want = dense_pipeline(
        ev.scores, ev.true_index, model.coef_[0, 0], model.intercept_[0], np.full(11, -math.log(11)), ddof
    )
    result = evaluate(dev, ev, znorm_ddof=ddof, engine=Engine(tile_rows=7))
    np.testing.assert_allclose(result.lid, want, atol=1e-6)  # solver tolerance, not the engine
    s = result.summary
    assert s["n_enrolled_trials"] == 90 and s["n_enrolled"] == 11 and s["n_outsider_trials"] == 0
    assert s["alid"] == pytest.approx(want.mean(), abs=1e-6)
    assert s["pdr"] == pytest.approx(np.mean(want > 0))
    assert s["lid_max"] == pytest.approx(want.max(), abs=1e-6)
    assert s["log2_n"] == pytest.approx(math.log2(11))


@pytest.mark.slow
@settings(max_examples=25)
@given(st.integers(0, 2**32 - 1))
def test_identity_free_scores_give_alid_near_zero_and_lid_uses_the_true_column(seed):
    # Hypothesis draws only a seed here, on purpose: the property is statistical (it holds
    # for i.i.d. scores, with a tolerance sized by their sampling error), so the 8,000
    # scores must be random draws, not numbers Hypothesis would shrink towards a pattern.
    # With scores independent of identity the fitted slope w is ~0 (sd about 0.08 at
    # this size) and ALID ~ w * mean(z_true) / ln 2, whose sd is about 0.01 bit; 0.15 bit
    # is > 10 sd (over 300 seeds the largest |ALID| seen was 0.08).
    rng = np.random.default_rng(seed)
    uniform = np.full(20, -math.log(20))
    ev = random_scoreset(rng, 200, 20, "e")
    result = evaluate(random_scoreset(rng, 200, 20, "d"), ev, binary_metrics=False)
    assert abs(result.calibrator.slope_) < 0.4
    assert abs(result.summary["alid"]) < 0.15
    # ALID ~ 0 holds whichever column an engine takes as the true speaker's, so the same
    # seed also checks what only the right column gives: the per-trial LIDs of the dense
    # reference, and on scores that do carry identity (mated scores + 1.5 sd) an ALID
    # above 0.5 bit (about 1.4 expected, sd about 0.1).  A wrong column cannot reach
    # it: under a uniform prior its expected LID is at most log2(N (1 - p_true) / (N - 1))
    # < 0 (Jensen), and it measured -1.4 to -2.9 bits over 30 seeds.
    cal = result.calibrator
    np.testing.assert_allclose(
        result.lid, dense_pipeline(ev.scores, ev.true_index, cal.slope_, cal.intercept_, uniform), rtol=0, atol=1e-10
    )
    ev = random_scoreset(rng, 200, 20, "e", mated_shift=1.5)
    informed = evaluate(random_scoreset(rng, 200, 20, "d", mated_shift=1.5), ev, binary_metrics=False)
    cal = informed.calibrator
    np.testing.assert_allclose(
        informed.lid, dense_pipeline(ev.scores, ev.true_index, cal.slope_, cal.intercept_, uniform), rtol=0, atol=1e-10
    )
    assert informed.summary["alid"] > 0.5


@pytest.mark.slow
@settings(max_examples=30)
@given(scoresets(max_trials=12, max_enrolled=6), scoresets(max_trials=12, max_enrolled=6))
def test_summary_identities_on_arbitrary_score_sets(dev, ev):
    if dev.n_outsider_trials == dev.n_trials or ev.n_outsider_trials == ev.n_trials:
        with pytest.raises(InputError, match="no trial's speaker is enrolled"):
            evaluate(dev, ev)
        return
    mated = dev.mated_mask()
    dev_rows = ~dev.is_outsider
    if mated[dev_rows].all() or not mated[dev_rows].any():  # pragma: no cover - N >= 2 makes this impossible
        return
    result = evaluate(dev, ev)
    s = result.summary
    lid = result.lid[~result.is_outsider]
    assert np.isnan(result.lid[result.is_outsider]).all()
    assert s["n_enrolled_trials"] + s["n_outsider_trials"] == ev.n_trials
    assert s["alid"] == pytest.approx(alid_decomposition(s), abs=1e-12)
    assert (lid <= math.log2(ev.n_enrolled) + 1e-12).all()
    np.testing.assert_allclose(result.posterior_true[~result.is_outsider], 2.0**lid / ev.n_enrolled, rtol=1e-10)


def test_outsider_trials_are_counted_and_excluded():
    rng = np.random.default_rng(0)
    dev = random_scoreset(rng, 60, 5, "d", mated_shift=2.0)
    ev = random_scoreset(rng, 20, 5, "e", mated_shift=2.0)
    speakers = ev.trial_speakers.copy()
    speakers[[3, 7]] = "stranger"
    ev_out = ScoreSet(ev.scores, ev.enrolled, speakers, ev.trial_ids)
    full = evaluate(dev, ev_out)
    closed = evaluate(dev, ev_out.closed_set())
    assert full.summary["n_outsider_trials"] == 2 and full.summary["n_enrolled_trials"] == 18
    np.testing.assert_array_equal(full.lid[~full.is_outsider], closed.lid)
    assert full.summary["alid"] == closed.summary["alid"]
    assert full.summary["eer"] == closed.summary["eer"]


def test_result_is_impostor_still_reads_for_one_release_with_a_warning():
    rng = np.random.default_rng(0)
    dev = random_scoreset(rng, 60, 5, "d", mated_shift=2.0)
    ev = random_scoreset(rng, 20, 5, "e", mated_shift=2.0)
    speakers = ev.trial_speakers.copy()
    speakers[[3, 7]] = "stranger"
    result = evaluate(dev, ScoreSet(ev.scores, ev.enrolled, speakers, ev.trial_ids))
    message = r"Result\.is_impostor is now Result\.is_outsider; the old name will be removed in the next release"
    with pytest.warns(FutureWarning, match=message) as caught:
        old = result.is_impostor
    assert len(caught) == 1 and caught[0].filename == __file__  # points at the user's line
    np.testing.assert_array_equal(old, result.is_outsider)
    assert np.flatnonzero(old).tolist() == [3, 7]
    assert "outsider" in result.to_frame().columns and "impostor" not in result.to_frame().columns


def test_watchlist_prior_changes_lid_and_respects_bound():
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=10, trials_per_speaker=10)
    prior = WatchList([ev.enrolled[0], ev.enrolled[1]], 5.0)
    result = evaluate(dev, ev, prior=prior)
    pi_true = np.exp(result.log_prior[ev.true_index])
    assert (result.lid <= -np.log2(pi_true) + 1e-12).all()
    assert result.summary["prior"] == "watchlist(2 ids, weight=5)"
    # the intercept no longer cancels under a non-uniform prior, but the formula holds
    llr = result.calibrator.llr(dense_znorm(ev.scores, 1))
    a = llr + result.log_prior
    lse = np.log(np.exp(a - a.max(1, keepdims=True)).sum(1)) + a.max(1)
    want = (llr[np.arange(ev.n_trials), ev.true_index] - lse) / math.log(2)
    np.testing.assert_allclose(result.lid, want, atol=1e-10)


def test_plain_system_reaches_log2_n_and_binary_metrics():
    dev, ev = simulate_system(leakage=1.0, seed=0)
    s = evaluate(dev, ev).summary
    assert s["alid"] == pytest.approx(math.log2(29), abs=0.01)
    assert s["eer"] == 0.0 and s["min_cllr"] == pytest.approx(0.0, abs=1e-12)
    assert s["cllr"] < 0.05


def test_calibrator_instance_is_cloned_not_modified_and_json():
    dev, ev = simulate_system(leakage=0.5, seed=1)
    mine = Logistic(weighting="prior")
    result = evaluate(dev, ev, calibrator=mine)
    assert not hasattr(mine, "slope_")
    assert result.calibrator is not mine and result.calibrator.weighting == "prior"
    record = json.loads(result.to_json())
    assert record["calibrator_fit"]["fitted"]["slope_"] == result.calibrator.slope_
    assert record["calibrator"] == "logistic(weighting=prior)"
    res2 = evaluate(dev, ev, calibrator="lidframe.calibrators.logistic:Logistic", binary_metrics=False)
    assert res2.summary["alid"] == evaluate(dev, ev).summary["alid"]  # import target == built-in name
    assert math.isnan(res2.summary["eer"]) and json.loads(res2.to_json())["eer"] is None


def test_evaluate_errors():
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=4, trials_per_speaker=3)
    with pytest.raises(
        InputError,
        match=r"unknown calibrator 'nope'; available: (\S+, )*logistic, (\S+, )*temperature\b",  # and any plugin
    ):
        evaluate(dev, ev, calibrator="nope")
    with pytest.raises(
        InputError, match=r"is not a calibrator: missing fit\(scores, labels\) returning self.*missing llr\(scores\)"
    ):
        evaluate(dev, ev, calibrator=object())
    with pytest.raises(InputError, match="unknown prior 'nobody'"):
        evaluate(dev, ev, prior="nobody")
    with pytest.raises(InputError, match="needs exactly one of ids="):
        evaluate(dev, ev, prior="watchlist")
    with pytest.raises(InputError, match="ddof must be 0"):
        evaluate(dev, ev, znorm_ddof=3)
    flat = np.array(ev.scores)
    flat[2] = 0.5
    with pytest.raises(InputError, match=r"z-norm is undefined for 1 trials.*'eval-spk000-002'"):
        evaluate(dev, ScoreSet(flat, ev.enrolled, ev.trial_speakers, ev.trial_ids))
    with pytest.raises(InputError, match="eval must be a ScoreSet"):
        evaluate(dev, 42)


def test_top_level_api():
    assert {"ScoreSet", "evaluate", "Result", "Uniform", "WatchList", "Explicit"} <= set(lidframe.__all__)


def test_alid_equals_log2_n_minus_multiclass_cllr():
    dev, ev = simulate_system(leakage=0.4, seed=5, n_enrolled=12)
    result = evaluate(dev, ev)
    # multiclass Cllr from the posterior of the true speaker, computed independently
    llr = result.calibrator.llr(dense_znorm(ev.scores, 1))
    post = np.exp(llr - llr.max(1, keepdims=True))
    post /= post.sum(1, keepdims=True)
    cllr_mc = -np.mean(np.log2(post[np.arange(ev.n_trials), ev.true_index]))
    assert result.summary["alid"] == pytest.approx(math.log2(12) - cllr_mc, abs=1e-10)


def test_certain_attacker_under_a_watch_list_keeps_posteriors_in_range():
    # a near-perfect system with a steep calibrator: posteriors round to 1 and must stay <= 1
    dev, ev = simulate_system(leakage=1.0, seed=0)
    result = evaluate(dev, ev, calibrator="temperature", prior=WatchList(list(ev.enrolled[:3]), 10.0))
    assert (result.posterior_true <= 1.0).all() and result.summary["cllr_mc"] >= 0.0


RANDOM_SYSTEM = Path(__file__).resolve().parents[2] / "examples" / "scores"
DEMO_WATCHLIST = "watchlist?ids=eval-spk000,eval-spk001,eval-spk002&weight=10"  # examples/grid.toml's


@pytest.mark.parametrize("calibrator", ["logistic", "temperature"])
@pytest.mark.parametrize("prior", ["uniform", DEMO_WATCHLIST], ids=["uniform", "watchlist"])
def test_random_system_of_the_demo_discloses_exactly_nothing(calibrator, prior):
    # examples/grid.toml's `random` system: both calibrators find no evidence on its dev
    # set (Logistic's slope is negative, Temperature's objective falls from a = 0), so
    # every LID is 0.0 and PDR 0 (it was 1.00 for logistic + watch list, from LIDs of
    # 9.6e-16, and 0.50 for temperature, from a slope of 4e-11)
    result = evaluate(
        RANDOM_SYSTEM / "random_dev.npz", RANDOM_SYSTEM / "random_eval.npz", calibrator=calibrator, prior=prior
    )
    assert result.calibrator.slope_ == 0.0
    enrolled = ~result.is_outsider  # the demo's eval sets hold 140 outsider trials: no LID in the closed set
    assert result.is_outsider.sum() == 140 and np.isnan(result.lid[result.is_outsider]).all()
    lid = result.lid[enrolled]
    assert np.array_equal(lid, np.zeros(lid.size)) and not np.signbit(lid).any()
    s = result.summary
    assert (s["alid"], s["pdr"], s["ndr"], s["lid_max"], s["lid_min"]) == (0.0, 0.0, 1.0, 0.0, 0.0)
    assert math.isnan(s["lid_pos"]) and s["lid_neg"] == 0.0


def gradient_at_zero(z, true_index):
    """d/da mean_i [a z_i,true - logsumexp_j a z_ij] at a = 0: the softmax is uniform there."""
    return float(np.mean(z[np.arange(z.shape[0]), true_index] - z.mean(axis=1)))


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.integers(2, 25), st.integers(3, 60), st.floats(-1.0, 0.3), st.data())
def test_temperature_without_evidence_has_slope_zero_and_lid_zero(seed, n_enrolled, n_trials, shift, data):
    # the seed draws the scores (statistical data, see above); the rest is drawn to shrink
    rng = np.random.default_rng(seed)
    dev = random_scoreset(rng, n_trials, n_enrolled, "d", mated_shift=shift)
    ev = random_scoreset(rng, 20, n_enrolled, "e")
    kind, log_prior = data.draw(priors_of_every_kind(n_enrolled), label="prior")
    result = evaluate(dev, ev, calibrator="temperature", prior=Explicit(dict(zip(ev.enrolled, np.exp(log_prior)))))
    z = dense_znorm(dev.scores, 1)
    if gradient_at_zero(z, dev.true_index) <= 0:  # concave objective falling from a = 0: optimum at 0
        assert result.calibrator.slope_ == 0.0
        assert np.array_equal(result.lid, np.zeros(20)) and not np.signbit(result.lid).any(), kind
        assert result.summary["pdr"] == 0.0 and result.summary["alid"] == 0.0
    else:  # an interior optimum (or the bound): the objective's derivative vanishes there
        slope = result.calibrator.slope_
        assert slope > 0.0
        if slope < result.calibrator.max_slope - 1e-6:
            p = np.exp(slope * z - (slope * z).max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            rows = np.arange(n_trials)
            assert abs(np.mean(z[rows, dev.true_index] - (p * z).sum(axis=1))) < 1e-6
