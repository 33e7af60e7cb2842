"""Posterior over the N enrolled speakers and Local Information Disclosure (LID), in tiles.

Given natural-log likelihood ratios ``llr`` (T, N) -- one per (trial, enrolled speaker)
pair -- and a prior ``log_prior`` (N,) over the enrolled speakers, the attacker's
posterior is the log-softmax::

    log p_ij = llr_ij + log_prior_j - logsumexp_k(llr_ik + log_prior_k)

and the disclosure of trial *i* whose true speaker is column m is, in bits::

    LID_i = (log p_im - log_prior_m) / ln 2 = (llr_im - logsumexp_k(llr_ik + log_prior_k)) / ln 2

so LID_i <= -log2 prior_m (log2 N under a uniform prior).  Everything is float64.  A
row whose LLRs are all equal (a calibrator that found no evidence, e.g. a slope of 0)
leaves the posterior at the prior, and its LID is exactly 0.0 under any prior: the
engines detect such rows (max == min) instead of trusting the rounding of the sum.

:func:`lid_from_llr` starts from the LLRs; :func:`lid_from_scores` starts from raw scores
and applies the z-norm-then-calibrate step of :func:`lidframe.core.znorm.calibrated_llr`
to each tile (the dense engine of ``evaluate``); :func:`log_posterior` gives the whole
(T, N) posterior of small inputs.  The tiled functions work through the trials a tile of
rows at a time, so the memory they add beyond their input is O(tile_rows x N), not
O(T x N).  With ``threads`` > 1 the tiles run in a pool of threads (NumPy releases the
GIL in its ufuncs and reductions), each tile computed exactly as one thread computes it:
every number is bit-identical whatever the thread count, and an error names the same
first bad row.

In :func:`lid_from_scores` an affine calibrator (logistic, temperature, identity, Gaussian
with equal variances) runs in place in each thread's reused tile buffer, bit for bit as
``z * slope + intercept`` (:mod:`lidframe.core.affine_tiles`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lidframe.calibrators.maps import AffineMap
from lidframe.core.affine_tiles import affine_form, affine_tile_llr
from lidframe.core.znorm import FittedCalibrator, calibrated_llr, check_ddof, uses_znorm
from lidframe.data.scoreset import check_true_index
from lidframe.errors import InputError

__all__ = ["log_posterior", "lid_from_llr", "lid_from_scores", "default_tile_rows", "LN2"]

LN2 = math.log(2.0)

# Tiles hold about this many float64 values (16 MiB): big enough to amortise numpy's
# per-call overhead, small enough to keep memory flat.
_TILE_VALUES = 1 << 21
# The exponentials of a tile are taken this many values at a time (1 MiB of float64: in cache when summed).
_EXP_BLOCK_VALUES = 1 << 17


def exp_block_rows(n_enrolled: int) -> int:
    """Rows whose exponentials :func:`tile_lid` takes at a time (about 1 MiB of float64: summed while in cache)."""
    return max(1, _EXP_BLOCK_VALUES // max(1, int(n_enrolled)))


def default_tile_rows(n_enrolled: int, threads: int = 1) -> int:
    """Rows per tile so that the (tile_rows, N) float64 tiles of *threads* threads hold about 16 MiB together."""
    return max(1, _TILE_VALUES // max(1, int(n_enrolled)) // max(1, int(threads)))


def check_log_prior(log_prior: ArrayLike, n_enrolled: int) -> np.ndarray:
    """*log_prior* as float64 of shape (N,), or an InputError unless it is a normalised log prior."""
    log_prior = np.asarray(log_prior, dtype=np.float64)
    if log_prior.shape != (n_enrolled,):
        raise InputError(f"log_prior must have shape ({n_enrolled},), got {log_prior.shape}")
    if np.isnan(log_prior).any() or np.isposinf(log_prior).any():
        raise InputError("log_prior must hold log-probabilities (no NaN or +inf)")
    total = np.logaddexp.reduce(log_prior)
    if abs(total) > 1e-9:
        raise InputError(f"log_prior must be normalised (logsumexp = 0), got logsumexp = {total:.3g}")
    return log_prior


def uniform_log_n(log_prior: np.ndarray) -> float | None:
    """log N when *log_prior* is uniform (exactly), else None."""
    return math.log(log_prior.shape[0]) if np.all(log_prior == log_prior[0]) else None


def _prepare(
    log_prior: ArrayLike, true_index: ArrayLike, tile_rows: int | None, n_trials: int, n_enrolled: int, threads: int
) -> tuple[np.ndarray, np.ndarray, int, float | None]:
    """Validated (log_prior, true_index, tile_rows, log N if the prior is uniform else None)."""
    log_prior = check_log_prior(log_prior, n_enrolled)
    true_index = check_true_index(true_index, n_trials, n_enrolled, allow_outsider=True)
    return log_prior, true_index, tile_rows or default_tile_rows(n_enrolled, threads), uniform_log_n(log_prior)


def run_tiles(n_trials: int, tile_rows: int, work: Callable[[int, int], None], *, threads: int = 1) -> None:
    """Call ``work(start, stop)`` on each tile of *tile_rows* trials, in a pool of *threads* threads.

    Each call must write only its own rows of its outputs.  Errors surface in tile order:
    the results are awaited tile by tile, so the error raised is the one of the first
    failing tile (what a single thread raises), and the tiles not yet started are
    cancelled.

    Parameters
    ----------
    n_trials, tile_rows : int
        Rows in all, and per tile.
    work : callable
        ``work(start, stop)`` computes rows ``start:stop``.
    threads : int
        Threads (1: the tiles run here, one after the other).
    """
    starts = range(0, n_trials, tile_rows)
    if threads <= 1 or len(starts) <= 1:
        for start in starts:
            work(start, min(start + tile_rows, n_trials))
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(threads, len(starts)), thread_name_prefix="lidframe-tile") as pool:
        futures = [pool.submit(work, start, min(start + tile_rows, n_trials)) for start in starts]
        try:
            for future in futures:
                future.result()
        finally:
            for future in futures:
                future.cancel()


def check_threads(threads: object) -> int:
    """*threads* if it is a positive integer (bools are not), else an :class:`InputError`."""
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise InputError(f"threads must be a positive integer, got {threads!r}")
    return int(threads)


def row_label(row: int, row_names: Any) -> str:
    """How an error names row *row*: its trial id where the caller gave the ids (``row_names``), else its index."""
    return f"row {row}" if row_names is None else f"trial {str(row_names[row])!r}"


def tile_lid(
    llr_tile: np.ndarray,
    true_cols: np.ndarray,
    log_prior: np.ndarray,
    uniform_log_n: float | None,
    row_offset: int,
    row_names: Any = None,
    stats_out: tuple[np.ndarray, np.ndarray] | None = None,
    *,
    peak: np.ndarray | None = None,
    exp_buffer: np.ndarray | None = None,
) -> np.ndarray:
    """LID (bits) of one tile; *llr_tile* is overwritten.  Rows with true_cols < 0 get NaN.

    An error names a bad row by its trial id when *row_names* (the ids of every row of the
    array the tile starts at *row_offset* in) is given, else by ``row_offset`` + its index.

    A row whose LLRs are all equal (max == min, compared exactly) carries no evidence:
    its posterior is the prior and its LID is exactly 0.0 under any prior.  It gets that
    0.0 directly rather than from the floating-point sum, which under a non-uniform
    prior leaves rounding noise of the order of 1e-16 bit (``-logsumexp(log_prior)`` in
    float64), enough to move a zero-information trial into PDR.

    *stats_out*, the open set's ``(log_evidence, log_top)`` views of the tile's rows
    (:class:`lidframe.core.openset.OpenSetStats`), is filled for every row, outsider rows
    included: log Σ_j π_j e^{l_ij} and max_j log p(j | s_i) in nats.  A row whose LLRs
    all equal c gets log evidence c and log top max_j log π_j exactly.

    *peak*, each row's largest LLR, saves the pass that finds it where the caller has it
    already; it must be bit for bit ``llr_tile.max(axis=1)`` (:func:`~lidframe.core.affine_tiles.affine_peak`).
    *exp_buffer*, float64 of shape (rows, N) for some rows >= 1, is the scratch the
    exponentials go through (default: a new one).
    """
    rows = np.arange(llr_tile.shape[0])
    closed = true_cols >= 0
    llr_true = np.where(closed, llr_tile[rows, np.where(closed, true_cols, 0)], np.nan)
    if peak is None:
        peak = llr_tile.max(axis=1)
    constant_llr = peak.copy()  # a row of equal LLRs: its one value (the open set's log evidence)
    constant = None
    if uniform_log_n is None:
        constant = peak == llr_tile.min(axis=1)  # False for NaN rows, which raise below
        llr_tile += log_prior
        peak = llr_tile.max(axis=1)
    if not np.isfinite(peak).all():
        bad = int(np.flatnonzero(~np.isfinite(peak))[0])
        raise InputError(
            f"LLRs of {row_label(row_offset + bad, row_names)} are not finite (max {peak[bad]}); check the calibrator"
        )
    llr_tile -= peak[:, None]
    # logsumexp_k(llr_k + log_prior_k) = peak + log(sum), kept relative to the peak; the tile keeps
    # its LLRs minus the peak for the check of equal rows below
    row_sum = _exp_row_sums(llr_tile, exp_buffer)
    if constant is None:
        constant = _equal_rows(llr_tile, row_sum)
    log_sum = np.log(row_sum)
    log_norm = log_sum - uniform_log_n if uniform_log_n is not None else log_sum  # log_prior = -log N not added
    lid_bits = ((llr_true - peak) - log_norm) / LN2
    if np.isnan(lid_bits[closed]).any():
        bad = int(np.flatnonzero(np.isnan(lid_bits) & closed)[0])
        raise InputError(
            f"LLR of the true speaker in {row_label(row_offset + bad, row_names)} is NaN; check the calibrator"
        )
    lid_bits[constant & closed] = 0.0
    if stats_out is not None:
        log_evidence, log_top = stats_out
        np.add(peak, log_norm, out=log_evidence)
        np.negative(log_sum, out=log_top)
        log_evidence[constant] = constant_llr[constant]
        log_top[constant] = -uniform_log_n if uniform_log_n is not None else float(np.max(log_prior))
    return lid_bits


def _exp_row_sums(shifted: np.ndarray, exp_buffer: np.ndarray | None) -> np.ndarray:
    """Each row's sum of exp(*shifted*), the exponentials taken a block of rows at a time in *exp_buffer*.

    The block (default: a new one of about 1 MiB) is summed while in cache; *shifted* is not modified.
    """
    row_sum = np.empty(shifted.shape[0])
    if exp_buffer is None:
        exp_buffer = np.empty((min(exp_block_rows(shifted.shape[1]), shifted.shape[0]), shifted.shape[1]))
    block = exp_buffer.shape[0]
    for start in range(0, shifted.shape[0], block):
        stop = min(start + block, shifted.shape[0])
        exps = np.exp(shifted[start:stop], out=exp_buffer[: stop - start])
        np.sum(exps, axis=1, out=row_sum[start:stop])
    return row_sum


def _equal_rows(shifted: np.ndarray, row_sum: np.ndarray) -> np.ndarray:
    """Which rows of LLRs minus their peak (*shifted*, uniform prior) are all equal, given their *row_sum* of exps.

    A row of equal LLRs sums N ones exactly (each exp(0) = 1), so only a row whose sum is
    exactly N can be one; its values are then compared with 0 exactly -- instead of a pass
    for the minimum over every row.
    """
    constant = row_sum == shifted.shape[1]
    for row in np.flatnonzero(constant):
        constant[row] = not shifted[row].any()
    return constant


def _collect_pairs(
    llr: np.ndarray, cols: np.ndarray, pair_llr_out: tuple[np.ndarray, np.ndarray], mated_pos: int
) -> tuple[int, int]:
    """Copy a tile's mated and non-mated LLRs into the caller's buffers; return new offsets.

    The tile's pairs go after those of the *mated_pos* enrolled trials before it (N - 1 non-mated pairs each).
    """
    mated, non_mated = pair_llr_out
    non_mated_pos = mated_pos * (llr.shape[1] - 1)
    closed = cols >= 0
    if not closed.all():
        llr, cols = llr[closed], cols[closed]
    rows = np.arange(cols.size)
    mated[mated_pos : mated_pos + cols.size] = llr[rows, cols]
    keep = np.ones(llr.shape, dtype=bool)
    keep[rows, cols] = False
    n_non_mated = keep.size - cols.size
    np.compress(keep.ravel(), llr.ravel(), out=non_mated[non_mated_pos : non_mated_pos + n_non_mated])
    return mated_pos + cols.size, non_mated_pos + n_non_mated


def lid_from_llr(
    llr: ArrayLike,
    log_prior: ArrayLike,
    true_index: ArrayLike,
    *,
    tile_rows: int | None = None,
    stats_out: tuple[np.ndarray, np.ndarray] | None = None,
    threads: int = 1,
) -> np.ndarray:
    """Per-trial LID in bits from a full LLR matrix.

    Parameters
    ----------
    llr : array_like, shape (T, N)
        Natural-log likelihood ratios, one per (trial, enrolled speaker).
    log_prior : array_like, shape (N,)
        Natural-log prior probabilities of the enrolled speakers (logsumexp = 0).
    true_index : array_like of int, shape (T,)
        Column of each trial's true speaker; -1 marks an outsider trial.
    tile_rows : int, optional
        Trials per tile (default: about 16 MiB of tiles in all, shared among the threads).
    stats_out : tuple of (ndarray, ndarray), optional
        ``(log_evidence, log_top)`` float64 buffers of shape (T,), filled for every trial
        (outsider trials included) with the open set's statistics (:func:`tile_lid`).
    threads : int
        Threads the tiles run in (the numbers do not depend on it).

    Returns
    -------
    lid_bits : ndarray, shape (T,), float64
        LID_i in bits (closed set); NaN for outsider trials.
    """
    llr = np.asarray(llr, dtype=np.float64)
    if llr.ndim != 2:
        raise InputError(f"llr must be a (T, N) array, got shape {llr.shape}")
    n_trials, n_enrolled = llr.shape
    threads = check_threads(threads)
    log_prior, true_index, tile_rows, log_n = _prepare(log_prior, true_index, tile_rows, n_trials, n_enrolled, threads)
    out = np.empty(n_trials, dtype=np.float64)
    workspaces = threading.local()  # each thread's buffers, reused tile after tile

    def work(start: int, stop: int) -> None:
        space = _Workspace.of_thread(workspaces, min(tile_rows, n_trials), n_enrolled, llr=True)
        tile = space.llr[: stop - start]
        np.copyto(tile, llr[start:stop])  # tile_lid overwrites its tile
        views = None if stats_out is None else (stats_out[0][start:stop], stats_out[1][start:stop])
        out[start:stop] = tile_lid(
            tile, true_index[start:stop], log_prior, log_n, start, stats_out=views, exp_buffer=space.exps
        )

    run_tiles(n_trials, tile_rows, work, threads=threads)
    return out


def log_posterior(llr: ArrayLike, log_prior: ArrayLike) -> np.ndarray:
    """Dense log posterior ``log p`` (T, N) over the enrolled speakers (small inputs only).

    Parameters
    ----------
    llr : array_like, shape (T, N)
        Natural-log likelihood ratios.
    log_prior : array_like, shape (N,)
        Natural-log prior probabilities (logsumexp = 0).
    """
    from scipy.special import log_softmax

    llr = np.asarray(llr, dtype=np.float64)
    log_prior = check_log_prior(log_prior, llr.shape[-1])
    return log_softmax(llr + log_prior, axis=-1)


def lid_from_scores(
    scores: ArrayLike,
    true_index: ArrayLike,
    calibrator: FittedCalibrator,
    log_prior: ArrayLike,
    *,
    znorm_ddof: int = 1,
    tile_rows: int | None = None,
    row_names: np.ndarray | Sequence[str] | None = None,
    pair_llr_out: tuple[np.ndarray, np.ndarray] | None = None,
    stats_out: tuple[np.ndarray, np.ndarray] | None = None,
    rank_out: np.ndarray | None = None,
    threads: int = 1,
) -> np.ndarray:
    """Per-trial LID in bits from raw scores: z-norm, calibrate and normalise tile by tile.

    Parameters
    ----------
    scores : array_like, shape (T, N)
        Raw attacker similarities.
    true_index : array_like of int, shape (T,)
        Column of each trial's true speaker; -1 marks an outsider trial (LID NaN).
    calibrator : fitted calibrator or callable
        A fitted calibrator (its ``llr`` is applied; ``input_scale == "raw"`` skips the
        row z-norm) or an elementwise, non-decreasing map from z-scores (any shape) to
        natural-log LLRs; applied by :func:`lidframe.core.znorm.calibrated_llr`.
    log_prior : array_like, shape (N,)
        Natural-log prior probabilities of the enrolled speakers.
    znorm_ddof : {0, 1}
        Delta degrees of freedom of the row z-norm.
    tile_rows : int, optional
        Trials per tile (default: about 16 MiB of tiles in all, shared among the threads).
    row_names : array_like of str, shape (T,), optional
        Trial ids, used to name constant rows in errors.
    pair_llr_out : tuple of (ndarray, ndarray), optional
        ``(mated, non_mated)`` float64 buffers of sizes T_c and T_c (N - 1), where T_c
        counts the non-outsider trials; filled, in trial order, with the LLR of every
        mated and non-mated pair for binary metrics (this is the one O(T x N) output).
    stats_out : tuple of (ndarray, ndarray), optional
        ``(log_evidence, log_top)`` float64 buffers of shape (T,), filled for every trial
        with the open set's statistics (:func:`tile_lid`).
    rank_out : ndarray of int64, shape (T,), optional
        Filled with the rank (1 = best) of each trial's true speaker by raw score
        (:func:`lidframe.metrics.identification.true_speaker_rank`), from the tile the
        engine already holds; 0 for an outsider trial.
    threads : int
        Threads the tiles run in (the numbers do not depend on it).

    Returns
    -------
    lid_bits : ndarray, shape (T,), float64
        NaN for outsider trials.
    """
    scores, znorm_ddof, threads = _checked_scores(scores, znorm_ddof, threads)
    n_trials, n_enrolled = scores.shape
    log_prior, true_index, tile_rows, log_n = _prepare(log_prior, true_index, tile_rows, n_trials, n_enrolled, threads)
    out = np.empty(n_trials, dtype=np.float64)
    enrolled_before = np.r_[0, np.cumsum(true_index >= 0)]  # where each tile's pairs start in pair_llr_out
    affine = affine_form(calibrator)
    znorm = affine is None or uses_znorm(calibrator)  # (the generic path below asks calibrated_llr)
    workspaces = threading.local()  # each thread's buffers, reused tile after tile

    def work(start: int, stop: int) -> None:
        space = _Workspace.of_thread(workspaces, min(tile_rows, n_trials), n_enrolled, llr=affine is not None)
        cols = true_index[start:stop]
        if rank_out is not None:
            rank_out[start:stop] = tile_true_rank(scores[start:stop], cols, above=space.flags(stop - start))
        llr, peak = _tile_llr(scores, start, stop, calibrator, affine, znorm, znorm_ddof, row_names, space.llr)
        if pair_llr_out is not None:
            _collect_pairs(llr, cols, pair_llr_out, int(enrolled_before[start]))
        views = None if stats_out is None else (stats_out[0][start:stop], stats_out[1][start:stop])
        out[start:stop] = tile_lid(
            llr, cols, log_prior, log_n, start, row_names, views, peak=peak, exp_buffer=space.exps
        )

    run_tiles(n_trials, tile_rows, work, threads=threads)
    return out


def _checked_scores(scores: ArrayLike, znorm_ddof: int, threads: int) -> tuple[np.ndarray, int, int]:
    """(scores as a float64 (T, N) array, znorm_ddof, threads) of :func:`lid_from_scores`, checked."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2:
        raise InputError(f"scores must be a (T, N) array, got shape {scores.shape}")
    return scores, check_ddof(znorm_ddof), check_threads(threads)


def _tile_llr(
    scores: np.ndarray,
    start: int,
    stop: int,
    calibrator: FittedCalibrator,
    affine: AffineMap | None,
    znorm: bool,
    znorm_ddof: int,
    row_names: np.ndarray | Sequence[str] | None,
    buffer: np.ndarray,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(LLRs, each row's largest LLR or None) of rows ``start:stop`` of *scores*, which :func:`tile_lid` may overwrite.

    An affine map (*affine*, :func:`~lidframe.core.affine_tiles.affine_form`) runs in this thread's *buffer* where it can
    (:func:`~lidframe.core.affine_tiles.affine_tile_llr`); any other calibrator's ``llr()`` runs on the tile's z-scores.
    """
    names = None if row_names is None else row_names[start:stop]
    tile_scores = scores[start:stop]
    if affine is not None:
        return affine_tile_llr(
            tile_scores, affine, znorm, znorm_ddof, names, buffer[: stop - start], scores.flags.c_contiguous
        )
    llr = calibrated_llr(tile_scores, calibrator, znorm_ddof=znorm_ddof, row_names=names)
    if np.may_share_memory(llr, scores):  # an identity map on raw scores: tile_lid overwrites its tile
        llr = llr.copy()
    return llr, None


class _Workspace:
    """One thread's buffers for :func:`lid_from_scores`, reused tile after tile: a tile of LLRs (*llr*: for an
    affine map) and the exponentials' block (*exps*), whose bytes also hold the rank count's flags.

    The flags (one byte per score) are done with before the exponentials start, so they share the block's
    memory instead of adding a buffer that would stay allocated beside the tile's LLRs.
    """

    def __init__(self, tile_rows: int, n_enrolled: int, *, llr: bool) -> None:
        self.llr = np.empty((tile_rows if llr else 0, n_enrolled))
        self.exps = np.empty((min(exp_block_rows(n_enrolled), tile_rows), n_enrolled))

    @classmethod
    def of_thread(cls, workspaces: threading.local, tile_rows: int, n_enrolled: int, *, llr: bool) -> _Workspace:
        """This thread's workspace in *workspaces*, made on the thread's first tile."""
        space = getattr(workspaces, "space", None)
        if space is None:
            space = workspaces.space = cls(tile_rows, n_enrolled, llr=llr)
        return space

    def flags(self, rows: int) -> np.ndarray | None:
        """A bool buffer of shape (rows, N) in the exponentials' block, or None where the block is too small."""
        n_enrolled = self.exps.shape[1]
        size = rows * n_enrolled
        if size > self.exps.nbytes:
            return None
        return self.exps.reshape(-1).view(np.uint8)[:size].view(bool).reshape(rows, n_enrolled)


def tile_true_rank(scores: np.ndarray, true_cols: np.ndarray, *, above: np.ndarray | None = None) -> np.ndarray:
    """Rank (1 = best) of each row's true column among its scores (ties with it count in its favour); 0 for
    rows whose true column is negative (outsider trials).

    *above*, a bool buffer of the shape of *scores*, holds the comparisons (default: a new one).
    """
    closed = true_cols >= 0
    true_score = scores[np.arange(scores.shape[0]), np.where(closed, true_cols, 0)]
    above = np.greater(scores, true_score[:, None], out=above)
    # count the flags as bytes in a narrow integer (exact: a count <= N); twice as fast as count_nonzero(axis=1)
    counts = np.add.reduce(above.view(np.uint8), axis=1, dtype=np.uint16 if scores.shape[1] <= 0xFFFF else np.int64)
    return np.where(closed, counts.astype(np.int64) + 1, 0)
