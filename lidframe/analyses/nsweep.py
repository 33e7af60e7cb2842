"""N-sweep: disclosure as a function of the size of the attacker's database.

The same anonymised trial is easier to link in a small database than in a large one.
For each database size n in a grid, :func:`nsweep` repeatedly draws, for every trial,
n enrolled candidates that always include the trial's true speaker (n - 1 distractors
drawn without replacement from the other N - 1), and recomputes LID against those n:

    LID_i(n) = log2( n * softmax_{j in S_i}(llr_ij)[true] )      (uniform prior over S_i)

The pair LLRs stay those of the full evaluation (the same row z-norm and the calibrator
fitted on the full dev set): the evidence per (trial, speaker) pair does not change,
only the candidate set shrinks.  For each n it reports the mean over repetitions of
ALID, PDR and LIDmax with a percentile interval over the repetitions (the variation due
to which distractors are drawn), next to the ceiling log2 n.

The result is a frozen :class:`NSweepResult` record (one row per n; ``to_dict()`` /
``to_frame()``); :func:`lidframe.report.analysis_figures.plot_nsweep` draws it and
:func:`default_sizes` gives the default grid of n.  Memory: the eval LLR matrix (T x N float64) is held once.

A closed-set analysis by definition: each trial's n candidates include its true enrolled
speaker and the prior is uniform over them given enrolment, so there is no prior to give
and no ``outside`` (the open set, :mod:`lidframe.core.openset`, is :func:`lidframe.evaluate`'s):
outsider trials of the eval set are left out, and the calibrator is fitted on the dev
set's enrolled trials only, as :func:`lidframe.evaluate` fits it in the closed set.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import attrs
import numpy as np

from lidframe.core.engine import Engine, check_engine
from lidframe.core.evaluation import fit_calibrator
from lidframe.core.lid import lid_from_llr
from lidframe.core.sets import SetLike, as_scoreset, naming_set
from lidframe.core.znorm import calibrated_llr
from lidframe.data.records import RowRecord, TableRecord, as_rows
from lidframe.errors import InputError
from lidframe.registry import CalibratorLike, describe_component

__all__ = ["nsweep", "NSweepRow", "NSweepResult", "default_sizes"]

SWEEP_METRICS = ("alid", "pdr", "lid_max")


def default_sizes(n_enrolled: int) -> list[int]:
    """Powers of two from 2 below N, and N itself."""
    sizes = [2**k for k in range(1, int(math.log2(n_enrolled)) + 1) if 2**k < n_enrolled]
    return sizes + [n_enrolled]


@attrs.frozen(eq=False, kw_only=True)
class NSweepRow(RowRecord):
    """One database size n of :func:`nsweep` (a row of :class:`NSweepResult`).

    Also a read-only mapping of its fields (``row["alid"]``,
    :class:`~lidframe.data.records.RowRecord`).  Each metric is the mean over the
    repetitions (random draws of the n - 1 distractors), with the percentile interval over
    them at the result's ``level``.

    Attributes
    ----------
    n : int
        Database size: the candidates of each trial (its true speaker among them).
    log2_n : float
        log2 n (bits), the ceiling of LID against n candidates.
    repeats : int
        Random draws of distractors (1 for the full size N).
    alid, alid_low, alid_high : float
        ALID (bits) and its interval.
    pdr, pdr_low, pdr_high : float
        PDR (share of trials with LID > 0) and its interval.
    lid_max, lid_max_low, lid_max_high : float
        LIDmax (bits) and its interval.
    """

    n: int
    log2_n: float
    repeats: int
    alid: float
    alid_low: float
    alid_high: float
    pdr: float
    pdr_low: float
    pdr_high: float
    lid_max: float
    lid_max_low: float
    lid_max_high: float


@attrs.frozen(eq=False)
class NSweepResult(TableRecord):
    """Outcome of :func:`nsweep`: one row per database size n.

    ``to_dict()`` (JSON-able, the fields below) and ``to_frame()`` (the rows) come from
    :class:`~lidframe.data.records.TableRecord`.

    Attributes
    ----------
    level : float
        Level of the percentile intervals over repetitions.
    n_enrolled : int
        N of the eval set (the largest size).
    calibrator : str
        The fitted calibrator, with its parameters.
    rows : tuple of NSweepRow
        One per size, smallest first.
    """

    level: float
    n_enrolled: int
    calibrator: str
    rows: tuple[NSweepRow, ...] = attrs.field(converter=as_rows)


def _subset_lid(llr: np.ndarray, true_index: np.ndarray, n: int, rng, engine: Engine | None = None) -> np.ndarray:
    """LID of every trial against n candidates: its true speaker + n - 1 random others."""
    t, big_n = llr.shape
    rows = np.arange(t)
    if n == big_n:
        chosen, true_in_chosen = llr, true_index
    else:
        keys = rng.random((t, big_n))
        keys[rows, true_index] = -1.0  # always among the n smallest keys
        cols = np.argpartition(keys, n - 1, axis=1)[:, :n]
        chosen = np.take_along_axis(llr, cols, axis=1)
        true_in_chosen = np.argmax(cols == true_index[:, None], axis=1)
    # the engine's own LID (uniform prior over the n candidates), so that this sweep
    # treats a constant row (exactly 0 bit) like evaluate does
    engine = check_engine(engine)
    return lid_from_llr(
        chosen, np.full(n, -math.log(n)), true_in_chosen, tile_rows=engine.tile_rows, threads=engine.cpu_threads()
    )


def nsweep(
    dev: SetLike,
    eval: SetLike,
    calibrator: str | CalibratorLike = "logistic",
    *,
    sizes: Iterable[int] | None = None,
    repeats: int = 20,
    level: float = 0.95,
    znorm_ddof: int = 1,
    seed: int = 0,
    engine: Engine | None = None,
) -> NSweepResult:
    """Disclosure versus database size (module docstring).

    Parameters
    ----------
    dev, eval : ScoreSet or path
    calibrator : str or calibrator
        Fitted once on the full dev set.
    sizes : sequence of int, optional
        Database sizes n, each in 2..N (default :func:`default_sizes`).
    repeats : int
        Random candidate draws per size (the full size N needs only one).
    level : float
        Level of the percentile interval over repetitions.
    znorm_ddof : {0, 1}
    seed : int
    engine : Engine, optional
        Engine settings of the LID of each draw (default ``Engine()``; the tiles' threads
        and size).

    Returns
    -------
    NSweepResult
    """
    engine = check_engine(engine)
    dev = as_scoreset(dev, "dev")
    eval_set = as_scoreset(eval, "eval")
    closed = eval_set.closed_set() if eval_set.n_outsider_trials else eval_set
    if closed.n_trials < 1 or eval_set.n_outsider_trials == eval_set.n_trials:
        raise InputError("eval: no trial's speaker is enrolled")
    big_n = closed.n_enrolled
    sizes = default_sizes(big_n) if sizes is None else sorted({int(n) for n in sizes})
    bad = [n for n in sizes if not 2 <= n <= big_n]
    if bad:
        raise InputError(f"database sizes must be within 2..{big_n} (the eval's N), got {bad}")
    if not (isinstance(repeats, int) and repeats >= 1):
        raise InputError(f"repeats must be a positive integer, got {repeats!r}")
    if not 0 < level < 1:
        raise InputError(f"level must be in (0, 1), got {level}")
    fitted = fit_calibrator(dev, calibrator, znorm_ddof=znorm_ddof)
    with naming_set(closed, "eval"):  # a z-norm error names the trial; this adds the file and split
        llr = calibrated_llr(closed.scores, fitted, znorm_ddof=znorm_ddof, row_names=closed.trial_ids)
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        reps = 1 if n == big_n else repeats
        values = {k: np.empty(reps) for k in SWEEP_METRICS}
        for r in range(reps):
            lid = _subset_lid(llr, closed.true_index, n, rng, engine)
            values["alid"][r] = lid.mean()
            values["pdr"][r] = np.mean(lid > 0)
            values["lid_max"][r] = lid.max()
        measured = {}
        for k, v in values.items():
            low, high = np.quantile(v, [(1 - level) / 2, 1 - (1 - level) / 2])
            measured.update({k: float(v.mean()), f"{k}_low": float(low), f"{k}_high": float(high)})
        rows.append(NSweepRow(n=n, log2_n=math.log2(n), repeats=reps, **measured))
    return NSweepResult(rows=rows, level=level, n_enrolled=big_n, calibrator=describe_component(fitted))
