"""The longitudinal per-k intervals with the calibrator refitted on resampled dev speakers (issue 41).

Against a loop written here from the definitions (draw the eval groups' speakers and the
dev speakers, refit the calibrator exactly on each dev resample -- and tau with the
temperature fusion --, fuse the same groups by hand and take their LIDs, the percentile
interval of the resampled ALIDs); a small dev set widens the interval; held fixed the
rows are those of the eval-only bootstrap.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from lidframe import Bootstrap
from lidframe.analyses.longitudinal import draw_groups, longitudinal
from lidframe.core.znorm import row_znorm
from lidframe.data.simulate import simulate_system
from lidframe.stats.bootstrap import bootstrap_ci
from tests.stats.test_refit_bootstrap import _exact_fit, _unit_counts

KS = (1, 3, "all")


def _group_lid(llr: np.ndarray, groups, true_cols: np.ndarray) -> np.ndarray:
    """LID (bits) of each group of rows of *llr* (T, N) fused by summing, under the uniform prior."""
    fused = np.stack([llr[g].sum(axis=0) for g in groups])
    n = llr.shape[1]
    return (fused[np.arange(len(groups)), true_cols] - logsumexp(fused, axis=1) + math.log(n)) / math.log(2)


def _tau(dev_llr: np.ndarray, groups, true_cols: np.ndarray, weights: np.ndarray) -> float:
    """The temperature that minimises the weighted mean log-loss of the summed dev groups (the definition)."""
    found = minimize_scalar(
        lambda t: -np.average(_group_lid(t * dev_llr, groups, true_cols), weights=weights),
        bounds=(0.0, 10.0),
        method="bounded",
        options={"xatol": 1e-8},
    )
    return float(found.x)


def _brute_force(dev, ev, fusion: str, options: Bootstrap, seed: int, ks) -> dict:
    """k -> each resample's ALID, by a loop over the calibrator refitted exactly on each dev resample."""
    dev_counts = _unit_counts(np.random.default_rng([options.seed, 1]), dev.trial_speakers, options.n_boot)
    dev_z, eval_z = row_znorm(dev.scores), row_znorm(ev.scores)
    rng = np.random.default_rng(seed)
    draws = []
    for k in ks:  # the groups as longitudinal draws them: eval groups, then (temperature) dev groups
        groups, _ = draw_groups(ev.trial_speakers, k, rng, 10)
        dev_groups = draw_groups(dev.trial_speakers, k, rng, 10)[0] if fusion == "temperature" else None
        draws.append((groups, dev_groups))
    llr_of = [
        _exact_fit("logistic", dev_z[np.repeat(np.arange(dev.n_trials), c)], dev.true_index[np.repeat(np.arange(dev.n_trials), c)])
        for c in dev_counts
    ]  # fmt: skip
    out = {}
    for k, (groups, dev_groups) in zip(ks, draws, strict=True):
        true_cols = ev.true_index[[g[0] for g in groups]]
        eval_counts = _unit_counts(
            np.random.default_rng(options.seed), ev.trial_speakers[[g[0] for g in groups]], options.n_boot
        )
        alids = []
        for b in range(options.n_boot):
            tau = 1.0
            if dev_groups is not None:
                weights = np.array([dev_counts[b][g].mean() for g in dev_groups])
                tau = _tau(llr_of[b](dev_z), dev_groups, dev.true_index[[g[0] for g in dev_groups]], weights)
            lid = _group_lid(tau * llr_of[b](eval_z), groups, true_cols)
            alids.append(np.average(lid, weights=eval_counts[b]))
        out[k] = np.array(alids)
    return out


# with "all" a speaker's every trial is fused: the log-loss is flat in tau up to the search's bound (10), where
# the pooled and the exact refits' taus part by more than their LLRs do (ALID ends 5e-5 bit apart)
@pytest.mark.parametrize(("fusion", "ks"), [("sum", KS), ("temperature", (1, 3))])
def test_intervals_equal_a_loop_of_exact_refits(fusion, ks):
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=8, trials_per_speaker=5)
    options = Bootstrap(n_boot=100, method="percentile", seed=5)
    found = longitudinal(dev, ev, ks, fusion=fusion, bootstrap=options, seed=2)
    assert found.resample == "dev+eval" and found.to_dict()["resample"] == "dev+eval"
    want = _brute_force(dev, ev, fusion, options, 2, ks)
    for row in found.rows:
        low, high = np.quantile(want[row.k], [0.025, 0.975])
        got = row.intervals["alid"]
        # the pooled refits and the bounded tau search against exact fits: within the solvers' tolerance
        assert got.low == pytest.approx(low, abs=1e-6) and got.high == pytest.approx(high, abs=1e-6), row.k


def test_a_small_dev_set_widens_the_per_k_interval():
    dev, ev = simulate_system(leakage=0.5, seed=4, n_enrolled=30, trials_per_speaker=8)
    ratio = {}
    for n_dev in (3, 30):
        few = dev.subset(np.flatnonzero(np.isin(dev.trial_speakers, dev.enrolled[:n_dev])))
        width = {}
        for resample in ("eval", "dev+eval"):
            options = Bootstrap(n_boot=200, method="percentile", resample=resample)
            rows = longitudinal(few, ev, (1, 4), bootstrap=options).rows
            width[resample] = np.array([r.intervals["alid"].high - r.intervals["alid"].low for r in rows])
        ratio[n_dev] = width["dev+eval"] / width["eval"]
    # k = 1: 0.948 against 0.609 bit with 3 dev speakers (x 1.56), 0.491 against 0.466 with 30 (x 1.05);
    # k = 4: x 1.10 and x 0.98
    assert ratio[3][0] > 1.4 and ratio[30][0] < 1.1 and ratio[3][1] > ratio[30][1], ratio


def test_held_fixed_the_rows_are_the_eval_only_bootstrap_of_the_groups():
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=8, trials_per_speaker=5)
    options = Bootstrap(n_boot=100, method="percentile", resample="eval")  # BCa: its z0 counts exact ties
    found = longitudinal(dev, ev, KS, bootstrap=options, seed=2)
    assert found.resample == "eval" and longitudinal(dev, ev, KS, bootstrap=None).resample is None
    calibrated = _exact_fit("logistic", row_znorm(dev.scores), dev.true_index)(row_znorm(ev.scores))
    rng = np.random.default_rng(2)
    for row, k in zip(found.rows, KS, strict=True):
        groups, _ = draw_groups(ev.trial_speakers, k, rng, 10)
        lid = _group_lid(calibrated, groups, ev.true_index[[g[0] for g in groups]])
        assert row.alid == pytest.approx(lid.mean(), abs=1e-9)
        speakers = ev.trial_speakers[[g[0] for g in groups]]
        want = bootstrap_ci(lid, options, speakers=speakers)["alid"]
        assert row.intervals["alid"].bounds == pytest.approx(want.bounds, abs=1e-9)


def test_the_command_line_says_what_the_intervals_cover(tmp_path, capsys):
    import json

    from lidframe.cli import main

    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=8, trials_per_speaker=5)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    argv = ["longitudinal", "--dev", str(tmp_path / "dev.npz"), "--eval", str(tmp_path / "eval.npz"), "--k", "1,2"]
    for flags, resample, words in (
        ([], "dev+eval", "calibrator refitted on resampled dev speakers"),
        (["--bootstrap-resample", "eval"], "eval", "calibrator held fixed"),
    ):
        out = tmp_path / f"{resample}.json"
        assert main([*argv, "--n-boot", "100", *flags, "--json", str(out)]) == 0
        assert f"95% speaker-bootstrap CI of ALID ({words})" in capsys.readouterr().out
        assert json.loads(out.read_text())["resample"] == resample


def test_a_refit_that_fails_is_one_line_naming_the_dev_set_and_the_way_out():
    from lidframe.errors import InputError

    class FitsOnce:
        """A plugin calibrator whose first fit works and whose refits fail."""

        fits = 0

        def fit(self, scores, labels):
            type(self).fits += 1
            if type(self).fits > 1:
                raise InputError("no second fit here")
            return self

        def llr(self, scores):
            return 2.0 * scores

    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=8, trials_per_speaker=5)
    with pytest.raises(InputError) as caught:
        longitudinal(dev, ev, (1,), calibrator=FitsOnce(), bootstrap=Bootstrap(n_boot=100))
    message = str(caught.value)
    assert "\n" not in message and message.startswith("dev: refitting calibrator")
    assert "no second fit here (Bootstrap(resample='eval') holds it fixed)" in message
    FitsOnce.fits = 0
    assert longitudinal(dev, ev, (1,), calibrator=FitsOnce(), bootstrap=Bootstrap(n_boot=100, resample="eval")).rows


def test_a_dev_resample_without_a_speaker_of_k_trials_fits_tau_on_every_group():
    """Temperature fusion at k = 4 where one dev speaker of eight has 4 trials: many dev resamples draw none of it.

    Their groups all weigh 0 (the review of issue 41 found ``np.average`` raising
    ZeroDivisionError there); tau is then fitted on every group under the resample's refit,
    and the interval is finite, around the same point estimate as held fixed.
    """
    dev, ev = simulate_system(leakage=0.5, seed=5, n_enrolled=8, trials_per_speaker=6)
    keep = np.zeros(dev.n_trials, dtype=bool)
    for speaker in dev.enrolled:
        rows = np.flatnonzero(dev.trial_speakers == speaker)
        keep[rows if speaker == dev.enrolled[0] else rows[:2]] = True
    uneven = dev.subset(np.flatnonzero(keep))
    rows = {}
    for resample in ("eval", "dev+eval"):
        options = Bootstrap(n_boot=100, method="percentile", resample=resample)
        rows[resample] = longitudinal(uneven, ev, (4,), fusion="temperature", bootstrap=options).rows[0]
    refitted = rows["dev+eval"].intervals["alid"]
    assert rows["dev+eval"].alid == rows["eval"].alid
    assert math.isfinite(refitted.low) and math.isfinite(refitted.high) and refitted.low <= refitted.high
