"""Per-speaker intervals that refit the calibrator on resampled dev speakers (issue 41: honest certainty).

Against a brute-force loop written here from the definition (draw the dev speakers as the
headline's bootstrap does, refit the calibrator exactly on the resampled dev rows,
recompute every eval trial's LID by hand, then draw each speaker's trials from its own
seed), the width of a speaker's interval with a calibrator of 5 or 60 dev speakers, and
what the table says its intervals cover.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import logsumexp
from scipy.stats import beta

from lidframe import Bootstrap, evaluate, evaluate_fitted, fit_calibrator, per_speaker
from lidframe.calibrators import Logistic
from lidframe.core.znorm import row_znorm
from lidframe.data.simulate import simulate_scoreset, simulate_system


def _mixture_cp(k: np.ndarray, n: int, level: float) -> tuple[float, float]:
    """Clopper-Pearson tails averaged over the counts *k* (one per refitted calibrator), solved by brentq."""
    tail = (1 - level) / 2

    def below(x: float) -> float:
        return float(np.mean([1.0 if kb == 0 else beta.cdf(x, kb, n - kb + 1) for kb in k])) - tail

    def above(x: float) -> float:
        return float(np.mean([1.0 if kb == n else beta.sf(x, kb + 1, n - kb) for kb in k])) - tail

    low = 0.0 if below(0.0) >= 0 else brentq(below, 0.0, 1.0, xtol=1e-14)
    high = 1.0 if above(1.0 - 1e-15) >= 0 else brentq(above, 0.0, 1.0, xtol=1e-14)
    return low, high


def _balanced_logistic(z: np.ndarray, mated: np.ndarray) -> tuple[float, float]:
    """(slope, intercept) of the default Logistic calibrator, by Newton's method on its objective.

    scikit-learn's ``LogisticRegression(class_weight="balanced", C=1)``: each class weighs
    n / (2 n_class) per pair, and the slope carries the L2 penalty slope^2 / 2.
    """
    y = mated.astype(np.float64)
    weight = np.where(mated, y.size / (2 * y.sum()), y.size / (2 * (y.size - y.sum())))
    design = np.column_stack([z, np.ones_like(z)])
    params = np.zeros(2)
    for _ in range(100):
        p = 1 / (1 + np.exp(-(design @ params)))
        gradient = design.T @ (weight * (p - y)) + np.array([params[0], 0.0])
        hessian = (design * (weight * p * (1 - p))[:, None]).T @ design + np.diag([1.0, 0.0])
        step = np.linalg.solve(hessian, gradient)
        params -= step
        if np.abs(step).max() < 1e-13:
            break
    return float(params[0]), float(params[1])


def _brute_force(dev, ev, n_boot: int, seed: int, level: float) -> dict[str, dict[str, tuple[float, float]]]:
    """Each enrolled speaker's percentile ALID / LIDmax and mixture-CP PDR intervals, by a loop over exact refits."""
    units, unit_of_trial = np.unique(dev.trial_speakers, return_inverse=True)
    dev_counts = np.random.default_rng([seed, 1]).multinomial(units.size, np.full(units.size, 1 / units.size), n_boot)
    dev_counts = dev_counts[:, unit_of_trial.ravel()]
    dev_z, eval_z = row_znorm(dev.scores), row_znorm(ev.scores)
    lids = []
    for b in range(n_boot):
        rows = np.repeat(np.arange(dev.n_trials), dev_counts[b])
        mated = np.zeros((rows.size, dev.n_enrolled), dtype=bool)
        mated[np.arange(rows.size), dev.true_index[rows]] = True
        slope, intercept = _balanced_logistic(dev_z[rows].ravel(), mated.ravel())
        llr = slope * eval_z + intercept
        true_llr = llr[np.arange(ev.n_trials), ev.true_index]
        lids.append((true_llr - logsumexp(llr, axis=1) + math.log(ev.n_enrolled)) / math.log(2))
    lid = np.array(lids)  # (n_boot, T): every eval trial under every refitted calibrator
    children = np.random.SeedSequence(seed).spawn(ev.n_enrolled)
    out = {}
    for column, speaker in enumerate(ev.enrolled):
        trials = np.flatnonzero(ev.true_index == column)
        rng = np.random.default_rng(int(children[column].generate_state(1)[0]))
        counts = rng.multinomial(trials.size, np.full(trials.size, 1 / trials.size), n_boot)
        own = lid[:, trials]
        alid = (counts * own).sum(axis=1) / trials.size
        lid_max = np.where(counts > 0, own, -np.inf).max(axis=1)
        tails = [(1 - level) / 2, 1 - (1 - level) / 2]
        out[str(speaker)] = {
            "alid": tuple(np.quantile(alid, tails)),
            "lid_max": tuple(np.quantile(lid_max, tails)),
            "pdr": _mixture_cp((own > 0).sum(axis=1), trials.size, level),
        }
    return out


def test_per_speaker_intervals_equal_a_brute_force_loop_over_refitted_calibrators():
    dev, ev = simulate_system(leakage=0.6, seed=11, n_enrolled=8, trials_per_speaker=4)
    options = Bootstrap(n_boot=100, method="percentile", seed=5, level=0.9)
    table = per_speaker(evaluate(dev, ev, bootstrap=options), bootstrap=options)
    assert table.bootstrap["resample"] == "dev+eval"
    want = _brute_force(dev, ev, options.n_boot, options.seed, options.level)
    # 256 dev pairs, fewer than the pooled refits' 1024 bins: the refits are the exact fits, to the solver's tolerance
    for row in table.rows:
        for metric, (low, high) in want[row.speaker].items():
            assert row[f"{metric}_low"] == pytest.approx(low, abs=1e-6), (row.speaker, metric)
            assert row[f"{metric}_high"] == pytest.approx(high, abs=1e-6), (row.speaker, metric)


def _mean_widths(table) -> dict[str, float]:
    frame = table.to_frame()
    return {metric: float((frame[f"{metric}_high"] - frame[f"{metric}_low"]).mean()) for metric in ("alid", "lid_max")}


@pytest.mark.slow
def test_a_speakers_interval_widens_when_the_calibrator_is_fitted_on_5_dev_speakers_not_60():
    """Issue 41: the per-speaker intervals held the calibrator fixed, so a small dev set did not show in them."""
    ev = simulate_scoreset(leakage=0.5, n_enrolled=60, trials_per_speaker=10, prefix="e", rng=2)
    full = simulate_scoreset(leakage=0.5, n_enrolled=60, trials_per_speaker=10, prefix="d", rng=1)
    ratio = {}
    for k in (5, 60):
        dev = full.subset(np.flatnonzero(np.isin(full.trial_speakers, full.enrolled[:k])))
        width = {}
        for resample in ("eval", "dev+eval"):
            options = Bootstrap(n_boot=400, resample=resample)
            result = evaluate(dev, ev, binary_metrics=False, bootstrap=options)
            width[resample] = _mean_widths(per_speaker(result, bootstrap=options))
        ratio[k] = {metric: width["dev+eval"][metric] / width["eval"][metric] for metric in width["eval"]}
    # measured at 1000 resamples: ALID 1.11 and LIDmax 1.70 times as wide refitted with 5 dev speakers, 1.01 and 1.12 with 60
    assert ratio[5]["alid"] >= 1.06 and ratio[5]["lid_max"] >= 1.3
    assert ratio[60]["alid"] <= 1.04
    assert ratio[5]["alid"] > ratio[60]["alid"] and ratio[5]["lid_max"] > ratio[60]["lid_max"]


def test_the_table_says_what_its_intervals_cover():
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=8, trials_per_speaker=4)
    options = Bootstrap(n_boot=100)
    refit = per_speaker(evaluate(dev, ev, bootstrap=options), bootstrap=options)
    assert refit.bootstrap == {**options.to_dict(), "unit": "trial"}
    assert "refitted" in refit.interval_note and "held fixed" not in refit.interval_note
    assert refit.interval_methods["pdr"].startswith("clopper-pearson, averaged")
    # without its dev set (or asked to), the calibrator cannot be refitted: held fixed, and said
    fitted = fit_calibrator(dev, "logistic")
    for result, asked in [
        (evaluate_fitted(ev, fitted, bootstrap=options), options),
        (evaluate(dev, ev, bootstrap=options), Bootstrap(n_boot=100, resample="eval")),
        (evaluate(dev, ev), options),  # the evaluation drew no intervals: nothing to refit from
    ]:
        fixed = per_speaker(result, bootstrap=asked)
        assert fixed.bootstrap["resample"] == "eval" and "held fixed" in fixed.interval_note
        assert fixed.interval_methods["pdr"] == "clopper-pearson"
    assert refit.to_dict()["bootstrap"]["resample"] == "dev+eval"


def test_the_table_reuses_the_headlines_refitted_calibrators(monkeypatch):
    calls = []
    refit_weighted = Logistic.refit_weighted

    def counted(self, *args, **kwargs):
        calls.append(1)
        return refit_weighted(self, *args, **kwargs)

    monkeypatch.setattr(Logistic, "refit_weighted", counted)
    dev, ev = simulate_system(leakage=0.5, seed=6, n_enrolled=6, trials_per_speaker=4)
    options = Bootstrap(n_boot=100)
    result = evaluate(dev, ev, bootstrap=options)
    before = len(calls)
    assert before >= options.n_boot and len(result.refit.fits) > 0
    table = per_speaker(result, bootstrap=options)
    assert len(calls) == before and table.bootstrap["resample"] == "dev+eval"  # the same dev resamples: no refit
    per_speaker(result, bootstrap=Bootstrap(n_boot=100, seed=1))  # other dev resamples: refitted now
    assert len(calls) > before


def test_open_set_rows_refit_the_calibrator_too():
    dev, ev = simulate_system(leakage=0.5, seed=4, n_enrolled=8, trials_per_speaker=5, n_outsiders=3)
    prior = "uniform?outside=0.3"
    options = Bootstrap(n_boot=100, method="percentile")
    fixed_options = Bootstrap(n_boot=100, method="percentile", resample="eval")
    refit = per_speaker(evaluate(dev, ev, prior=prior, bootstrap=options), bootstrap=options)
    fixed = per_speaker(evaluate(dev, ev, prior=prior, bootstrap=fixed_options), bootstrap=fixed_options)
    assert refit.bootstrap["resample"] == "dev+eval" and fixed.bootstrap["resample"] == "eval"
    by_speaker = {row.speaker: row for row in fixed.rows}
    outsiders = [row for row in refit.rows if row.outsider]
    assert outsiders and all(row.n_trials >= 2 for row in outsiders)
    for row in refit.rows:
        same = by_speaker[row.speaker]
        assert row.alid == same.alid  # the estimates are the evaluation's
        assert row.alid_low <= row.alid_high and row.alid_low != same.alid_low, row.speaker
