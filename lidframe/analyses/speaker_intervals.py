"""The intervals of a per-speaker table (:mod:`lidframe.analyses.per_speaker`): :func:`speaker_interval_fields`.

Each speaker's intervals come from **that speaker's trials**: they describe the variation
of its own trials given its enrolment, not the variation over speakers.

* ``alid`` and ``lid_max``: the speaker's trials resampled with replacement (the only unit
  inside one speaker), each speaker from its own seed (:func:`speaker_seeds`), by
  :func:`lidframe.stats.grouped.group_intervals` (BCa or percentile as asked; LIDmax
  always percentile, biased low).
* ``pdr``: the Clopper-Pearson interval of k of n, k the speaker's trials with LID > 0
  (:func:`lidframe.stats.proportion.clopper_pearson`): exact for a proportion, unlike a
  bootstrap of a few 0/1 values.

What they cover follows the evaluation's own intervals.  Where its bootstrap refitted the
calibrator on resampled dev speakers (``Result.refit``, ``Bootstrap(resample="dev+eval")``,
:mod:`lidframe.core.refit`), so do the speakers' intervals, on **the same dev resamples**
(the same seed's second stream, the same units): resample b of every speaker takes its
trials' LIDs under the calibrator refitted on dev resample b, so the table costs one more
pass of the headline's refits, not one per speaker; and a speaker's PDR interval averages
the Clopper-Pearson tails of its k under each refitted calibrator
(:func:`~lidframe.stats.proportion.clopper_pearson_mixture`), the exact interval when the
calibrator moves no trial across LID = 0.  Where the evaluation held the calibrator fixed
(no dev set, ``resample="eval"``; a grid cell rebuilt from its per-trial LIDs without its
evaluation computed again, :mod:`lidframe.grid.report.refits`), so do they, and the table
says so (``bootstrap["resample"]`` ``"eval"``, ``interval_note``).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from lidframe.core.refit import dev_resampling
from lidframe.core.result import Result
from lidframe.stats.bootstrap import Bootstrap
from lidframe.stats.grouped import group_intervals
from lidframe.stats.proportion import CLOPPER_PEARSON, CLOPPER_PEARSON_MIXTURE, clopper_pearson, clopper_pearson_mixture

__all__ = ["SpeakerIntervals", "speaker_interval_fields", "speaker_seeds", "interval_note"]

#: Metrics that get ``<metric>_low`` / ``<metric>_high`` columns with ``bootstrap=``.
PER_SPEAKER_CI_METRICS = ("alid", "lid_max", "pdr")

#: What the ALID and LIDmax intervals hold with few trials (the coverage measured by
#: ``bench/ci_coverage.py``, BCa at nominal 95 %, the calibrator held fixed; bench/RESULTS.md).
_FEW_TRIALS = (
    "ALID's and LIDmax's (bootstrap of the speaker's trials) cover less with few trials (ALID at nominal 95 %: "
    "84 % of simulated speakers at 10 trials, 89 % at 20, 90 % at 30), and LIDmax's is biased low"
)
_NOTE_FIXED = (
    "per-speaker intervals at {level:g} % from each speaker's own trials: PDR's (Clopper-Pearson) cover at least "
    "{level:g} %; " + _FEW_TRIALS + "; the calibrator is held fixed: they leave out its uncertainty"
)
_NOTE_REFITTED = (
    "per-speaker intervals at {level:g} % from each speaker's own trials and the dev speakers resampled, the "
    "calibrator refitted on each dev resample (those of the headline's intervals): they include the calibrator's "
    "uncertainty; PDR's average the Clopper-Pearson tails over the refitted calibrators; " + _FEW_TRIALS
)


@attrs.frozen(eq=False)
class SpeakerIntervals:
    """What :func:`speaker_interval_fields` returns.

    Attributes
    ----------
    fields : list of dict
        Per speaker (the enrolled ones in enrolment order, then the outsider speakers),
        ``<metric>_low`` and ``<metric>_high`` of :data:`PER_SPEAKER_CI_METRICS` (NaN
        ALID and LIDmax ends with fewer than two trials, NaN PDR ends without trials).
    bootstrap : Bootstrap
        What they cover: ``unit="trial"`` (a speaker's trials), ``resample`` ``"dev+eval"``
        where the calibrator was refitted, else ``"eval"``.
    methods : dict
        Metric -> its interval's method.
    note : str
        The table's one line on what the intervals hold.
    """

    fields: list[dict[str, Any]]
    bootstrap: Bootstrap
    methods: dict[str, str]
    note: str


def speaker_seeds(seed: int, n_speakers: int) -> list[int]:
    """One reproducible bootstrap seed per speaker column, from :class:`numpy.random.SeedSequence`."""
    return [int(child.generate_state(1)[0]) for child in np.random.SeedSequence(seed).spawn(n_speakers)]


def interval_note(level: float, *, refitted: bool) -> str:
    """The table's ``interval_note`` at *level* (a fraction), the calibrator *refitted* or held fixed."""
    return (_NOTE_REFITTED if refitted else _NOTE_FIXED).format(level=round(100 * level, 6))


def speaker_interval_fields(
    result: Result, speaker: np.ndarray, n_speakers: int, trials: np.ndarray, bootstrap: Bootstrap
) -> SpeakerIntervals:
    """Each speaker's interval fields (module docstring), the calibrator refitted where *result*'s bootstrap refitted it.

    Parameters
    ----------
    result : Result
        The evaluation (its per-trial LID and, where present, ``refit``).
    speaker : ndarray of int, shape (T_s,)
        The speaker column of each trial of the table (enrolled columns first, then outsider speakers).
    n_speakers : int
        The table's speaker columns.
    trials : ndarray of int, shape (T_s,)
        The rows of *result* those trials are.
    bootstrap : Bootstrap
        The caller's settings: level, method, resamples, seed; its ``unit`` is the dev set's.
    """
    lid = np.asarray(result.lid, dtype=np.float64)[trials]
    seeds = speaker_seeds(bootstrap.seed, n_speakers)
    refit = result.refit if bootstrap.resample == "dev+eval" else None
    dev, dev_rows = None, None
    if refit is not None:
        dev = dev_resampling(refit, pairs=None, group_means_of=None)
        # the engine ran the enrolled trials in the closed set (in eval order), every trial in the open set
        dev_rows = trials if result.outside > 0 else np.searchsorted(np.flatnonzero(~result.is_outsider), trials)
    found = group_intervals(lid, speaker, n_speakers, bootstrap, seeds=seeds, dev=dev, dev_rows=dev_rows)
    n_trials = np.bincount(speaker, minlength=n_speakers)
    if found.positives is None:
        positives = np.bincount(speaker, weights=(lid > 0).astype(np.float64), minlength=n_speakers)
        pdr_low, pdr_high = clopper_pearson(np.round(positives), n_trials, level=bootstrap.level)
    else:
        pdr_low, pdr_high = clopper_pearson_mixture(found.positives, n_trials, level=bootstrap.level)
    fields = []
    for j in range(n_speakers):
        row: dict[str, Any] = {"pdr_low": float(pdr_low[j]), "pdr_high": float(pdr_high[j])}
        for metric in ("alid", "lid_max"):
            own = found.intervals[j]
            interval = None if own is None else own[metric]
            row[f"{metric}_low"] = np.nan if interval is None else interval.low
            row[f"{metric}_high"] = np.nan if interval is None else interval.high
        fields.append(row)
    refitted = dev is not None
    covered = attrs.evolve(bootstrap, unit="trial", resample="dev+eval" if refitted else "eval")
    methods = {
        "alid": bootstrap.method,
        "lid_max": "percentile",
        "pdr": CLOPPER_PEARSON_MIXTURE if refitted else CLOPPER_PEARSON,
    }
    return SpeakerIntervals(fields, covered, methods, interval_note(bootstrap.level, refitted=refitted))
