"""The bootstrap that refits the calibrator on resampled dev speakers (issue 41: honest certainty).

Against a brute-force loop written here from the definition (draw dev and eval speakers,
refit the calibrator on the resampled dev rows, recompute each resample's LIDs by hand),
the 5-vs-60 dev speakers width of an ALID interval, coverage of the true ALID by
simulation, and what the records say the intervals cover.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import binom

from lidframe import Bootstrap, evaluate, evaluate_fitted, fit_calibrator
from lidframe.calibrators import Isotonic, Logistic, Temperature
from lidframe.core.summary import Summary
from lidframe.core.znorm import row_znorm
from lidframe.data.simulate import simulate_scoreset, simulate_system
from lidframe.errors import InputError
from tests.stats.calibration_sim import dev_set, eval_set, true_alid


class UnweightedLogistic:
    """A plugin calibrator whose ``fit`` takes no sample weights: refitted on repeated pairs."""

    def fit(self, scores, labels):
        self.inner_ = Logistic(standard_errors=False).fit(scores, labels)
        return self

    def llr(self, scores):
        return self.inner_.llr(scores)


def _exact_fit(calibrator: str, z: np.ndarray, true: np.ndarray):
    """The calibrator of *calibrator* fitted exactly on dev z-rows (T, N) with true columns (T,): its llr."""
    mated = np.zeros(z.shape, dtype=bool)
    mated[np.arange(true.size), true] = True
    if calibrator == "temperature":
        return Temperature().fit_rows(z, true).llr
    if calibrator == "isotonic":
        return Isotonic().fit(z.ravel(), mated.ravel()).llr
    return Logistic(standard_errors=False).fit(z.ravel(), mated.ravel()).llr  # logistic and the plugin


def _unit_counts(rng: np.random.Generator, speakers: np.ndarray, n_boot: int) -> np.ndarray:
    """(n_boot, T) trial counts: whole speakers drawn with replacement (one multinomial call, units sorted)."""
    units, unit_of_trial = np.unique(speakers, return_inverse=True)
    counts = rng.multinomial(units.size, np.full(units.size, 1.0 / units.size), size=n_boot)
    return counts[:, unit_of_trial.ravel()]


def _brute_force(dev, ev, calibrator: str, n_boot: int, seed: int, resample: str) -> dict[str, np.ndarray]:
    """Each resample's ALID, LID q99 and Cllr (bits) by a loop over refitted calibrators, from the definitions."""
    eval_counts = _unit_counts(np.random.default_rng(seed), ev.trial_speakers, n_boot)
    dev_counts = _unit_counts(np.random.default_rng([seed, 1]), dev.trial_speakers, n_boot)
    dev_z, eval_z = row_znorm(dev.scores), row_znorm(ev.scores)
    fixed = _exact_fit(calibrator, dev_z, dev.true_index)
    out: dict[str, list[float]] = {"alid": [], "lid_q99": [], "cllr": []}
    for b in range(n_boot):
        if resample == "dev+eval":
            rows = np.repeat(np.arange(dev.n_trials), dev_counts[b])
            llr_of = _exact_fit(calibrator, dev_z[rows], dev.true_index[rows])
        else:
            llr_of = fixed
        rows = np.repeat(np.arange(ev.n_trials), eval_counts[b])
        llr = llr_of(eval_z[rows])
        true = ev.true_index[rows]
        mated_llr = llr[np.arange(rows.size), true]
        lid = (mated_llr - logsumexp(llr, axis=1) + math.log(ev.n_enrolled)) / math.log(2)
        non_mated = np.delete(llr.ravel(), np.ravel_multi_index((np.arange(rows.size), true), llr.shape))
        out["alid"].append(lid.mean())
        out["lid_q99"].append(np.quantile(lid, 0.99))
        out["cllr"].append((np.logaddexp(0, -mated_llr).mean() + np.logaddexp(0, non_mated).mean()) / (2 * math.log(2)))
    return {key: np.array(values) for key, values in out.items()}


@pytest.mark.parametrize("resample", ["dev+eval", "eval"])
@pytest.mark.parametrize("calibrator", ["logistic", "temperature", "isotonic", "plugin"])
def test_intervals_equal_a_brute_force_loop_over_refitted_calibrators(calibrator, resample):
    dev, ev = simulate_system(leakage=0.6, seed=11, n_enrolled=8, trials_per_speaker=4)
    options = Bootstrap(n_boot=100, method="percentile", seed=5, resample=resample)
    spec = UnweightedLogistic() if calibrator == "plugin" else calibrator
    summary = evaluate(dev, ev, calibrator=spec, bootstrap=options).summary
    assert summary.bootstrap == options  # what the intervals cover, as asked
    want = _brute_force(dev, ev, calibrator, options.n_boot, options.seed, resample)
    # the pooled refits (1024 bins, more than these 256 dev pairs hold) are the exact fits, to the solvers' tolerance
    for key, values in want.items():
        low, high = np.quantile(values, [0.025, 0.975])
        got = summary.intervals[key]
        assert got.low == pytest.approx(low, abs=1e-6) and got.high == pytest.approx(high, abs=1e-6), key


@pytest.mark.slow
def test_an_alid_interval_widens_when_the_calibrator_is_fitted_on_5_dev_speakers_not_60():
    """Issue 41: the interval was as wide whatever the dev set; refitting the calibrator makes a small one show."""
    ev = simulate_scoreset(leakage=0.5, n_enrolled=60, trials_per_speaker=10, prefix="e", rng=2)
    full = simulate_scoreset(leakage=0.5, n_enrolled=60, trials_per_speaker=10, prefix="d", rng=1)
    width = {}
    for k in (5, 60):
        dev = full.subset(np.flatnonzero(np.isin(full.trial_speakers, full.enrolled[:k])))
        for resample in ("eval", "dev+eval"):
            interval = evaluate(
                dev, ev, binary_metrics=False, bootstrap=Bootstrap(n_boot=1000, resample=resample)
            ).summary.intervals["alid"]
            width[k, resample] = interval.high - interval.low
    assert width[5, "dev+eval"] >= 1.25 * width[5, "eval"]  # 0.60 against 0.44 bit
    assert width[60, "dev+eval"] <= 1.05 * width[60, "eval"]  # 0.555 against 0.547: the calibrator is well fitted
    assert width[5, "dev+eval"] > width[60, "dev+eval"]


#: Coverage by simulation: audits, resamples, dev speakers (of 20 enrolled, 5 trials each), eval trials per speaker.
COVERAGE_AUDITS, COVERAGE_RESAMPLES, COVERAGE_DEV_SPEAKERS, COVERAGE_EVAL_TRIALS = 200, 200, 3, 40


@pytest.mark.slow
def test_a_nominal_95_percent_interval_covers_the_true_alid_near_95_percent_of_the_time():
    """The true ALID: the limit calibrator (pairs of 200 dev sets) on 1000 eval sets (tests/stats/calibration_sim.py).

    A dev set of 3 speakers and an eval set of 20 speakers x 40 trials: the calibrator is
    the larger part of the uncertainty.  Tolerance: the binomial band that holds 99.9 % of
    the hit counts of an interval whose coverage lies between 0.93 (speaker-bootstrap
    intervals of 20 speakers run a little below nominal: docs/statistics.md) and 0.97 --
    [173, 200] of 200 audits.  An interval that holds the calibrator fixed covers 84 %
    here (bench/refit_bootstrap.py), 168 of 200: outside it.
    """
    truth = true_alid()
    hits = 0
    for audit in range(COVERAGE_AUDITS):
        dev, ev = dev_set(audit, COVERAGE_DEV_SPEAKERS), eval_set(audit, trials=COVERAGE_EVAL_TRIALS)
        options = Bootstrap(n_boot=COVERAGE_RESAMPLES, level=0.95, seed=audit)
        interval = evaluate(dev, ev, binary_metrics=False, bootstrap=options).summary.intervals["alid"]
        hits += interval.low <= truth <= interval.high
    low, high = binom.ppf(0.0005, COVERAGE_AUDITS, 0.93), binom.ppf(0.9995, COVERAGE_AUDITS, 0.97)
    assert low <= hits <= high, f"{hits} of {COVERAGE_AUDITS} intervals cover the true ALID {truth:.4f}"


def test_the_summary_says_what_its_intervals_cover():
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=8, trials_per_speaker=4)
    options = Bootstrap(n_boot=100)
    refit = evaluate(dev, ev, bootstrap=options).summary
    assert refit.bootstrap.resample == "dev+eval" and refit.to_dict()["bootstrap"]["resample"] == "dev+eval"
    # a fitted calibrator without its dev set cannot be refitted: the intervals hold it fixed, and say so
    fitted = fit_calibrator(dev, "logistic")
    fixed = evaluate_fitted(ev, fitted, bootstrap=options).summary
    assert fixed.bootstrap == Bootstrap(n_boot=100, resample="eval")
    assert "held fixed" in fixed.bootstrap.covers() and "refitted" in refit.bootstrap.covers()
    # given its dev set, evaluate_fitted refits a copy of it, as evaluate does
    again = evaluate_fitted(ev, fitted, dev=dev, bootstrap=options).summary
    assert again.to_dict()["intervals"] == refit.to_dict()["intervals"]
    # a summary written before 0.3.0 has no "resample": its intervals held the calibrator fixed
    stored = refit.to_dict()
    del stored["bootstrap"]["resample"]
    assert Summary.from_dict(stored).bootstrap.resample == "eval"


def test_open_set_intervals_refit_the_calibrator_with_the_outsider_pairs():
    dev, ev = simulate_system(leakage=0.5, seed=4, n_enrolled=8, trials_per_speaker=4, n_outsiders=3)
    summary = evaluate(dev, ev, prior="uniform?outside=0.3", bootstrap=Bootstrap(n_boot=100)).summary
    fixed = evaluate(dev, ev, prior="uniform?outside=0.3", bootstrap=Bootstrap(n_boot=100, resample="eval")).summary
    assert summary.bootstrap.resample == "dev+eval"
    for key in ("alid", "alid_enrolled", "alid_outsider", "membership_enrolled"):
        interval = summary.intervals[key]
        assert interval.low <= interval.high and interval.low != fixed.intervals[key].low, key
    assert summary.intervals["alid"].low <= summary.alid <= summary.intervals["alid"].high


def test_a_bad_resample_option_and_a_dev_set_of_one_speaker_are_refused():
    with pytest.raises(InputError, match="resample must be 'dev\\+eval'.*or 'eval'"):
        Bootstrap(resample="dev")
    dev, ev = simulate_system(leakage=0.5, seed=5, n_enrolled=6, trials_per_speaker=4)
    one = dev.subset(np.flatnonzero(dev.trial_speakers == dev.trial_speakers[0]))
    with pytest.raises(InputError, match="dev speakers needs at least two of them, got 1 \\(resample=.eval. holds"):
        evaluate(one, ev, bootstrap=Bootstrap(n_boot=100))
    assert evaluate(one, ev, bootstrap=Bootstrap(n_boot=100, resample="eval")).summary.intervals
