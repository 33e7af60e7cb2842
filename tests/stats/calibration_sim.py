"""Simulated audits whose dev set is small: the true ALID, and one audit's data (issue 41).

The generative model is :func:`lidframe.data.simulate.simulate_scoreset`: ``N`` enrolled
speakers, each speaking ``trials`` trials.  An audit's eval set is one draw of it; its
dev set another draw, of which only the trials of the first ``dev_speakers`` speakers are
kept (the calibrator is fitted on them; the z-norm still runs over the N columns, as in
the eval set).  The *true* ALID is what ``evaluate`` converges to as both sets grow: the
calibrator fitted on the pairs of many dev sets pooled, applied to many eval sets, their
per-trial LIDs averaged.  ``tests/stats/test_refit_bootstrap.py`` and
``bench/refit_bootstrap.py`` use it.
"""

from __future__ import annotations

import numpy as np

from lidframe import evaluate_fitted
from lidframe.calibrators import Logistic
from lidframe.core.znorm import row_znorm
from lidframe.data.scoreset import ScoreSet
from lidframe.data.simulate import simulate_scoreset

#: The model of the simulated audits: leakage, enrolled speakers, trials per speaker.
LEAKAGE, N_ENROLLED, TRIALS = 0.5, 20, 5


def eval_set(seed: int, *, n_enrolled: int = N_ENROLLED, trials: int = TRIALS) -> ScoreSet:
    """One eval set of the model (all *n_enrolled* speakers' trials)."""
    return simulate_scoreset(
        leakage=LEAKAGE, n_enrolled=n_enrolled, trials_per_speaker=trials, prefix="e", rng=[seed, 0]
    )


def dev_set(seed: int, dev_speakers: int, *, n_enrolled: int = N_ENROLLED, trials: int = TRIALS) -> ScoreSet:
    """One dev set of the model, its trials those of its first *dev_speakers* speakers."""
    full = simulate_scoreset(
        leakage=LEAKAGE, n_enrolled=n_enrolled, trials_per_speaker=trials, prefix="d", rng=[seed, 1]
    )
    return full.subset(np.flatnonzero(np.isin(full.trial_speakers, full.enrolled[:dev_speakers])))


def true_alid(
    *, n_dev_sets: int = 200, n_eval_sets: int = 1000, n_enrolled: int = N_ENROLLED, trials: int = TRIALS
) -> float:
    """The model's ALID under the limit calibrator: *n_dev_sets* dev sets' pairs pooled for it, *n_eval_sets* eval sets averaged.

    An eval set's ALID varies by about 0.25 bit (20 speakers of 5 trials), so the mean of
    1000 is within about 0.01 bit of the model's.
    """
    z, mated = [], []
    for k in range(n_dev_sets):
        dev = simulate_scoreset(
            leakage=LEAKAGE, n_enrolled=n_enrolled, trials_per_speaker=trials, prefix="d", rng=[10**6 + k, 1]
        )
        z.append(row_znorm(dev.scores).ravel())
        mated.append(dev.mated_mask().ravel())
    limit = Logistic(standard_errors=False).fit(np.concatenate(z), np.concatenate(mated))
    alids = [
        evaluate_fitted(
            eval_set(10**6 + k, n_enrolled=n_enrolled, trials=trials), limit, binary_metrics=False
        ).summary.alid
        for k in range(n_eval_sets)
    ]
    return float(np.mean(alids))  # every set has n_enrolled * trials trials: the mean of their means
