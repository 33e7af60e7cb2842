"""Streaming LID from embeddings: the (T, N) score matrix is never materialised.

An embedding attacker scores trial i against enrolled speaker j by the cosine
s_ij = x_i . e_j of unit vectors.  Two facts make a one-pass engine possible:

* **Closed-form row z-norm.**  With e_bar the mean enrolled vector and
  Sigma = sum_j (e_j - e_bar)(e_j - e_bar)^T / (N - ddof) (a d x d matrix, float64)::

      mean_i = x_i . e_bar,   std_i^2 = x_i^T Sigma x_i,   z_ij = x_i . (e_j - e_bar) / std_i

  so the z-scores are themselves dot products of rescaled trial vectors with centred
  enrolled vectors (no first pass over N, no cancellation of E[s^2] - mean^2).
* **Affine calibrators fold into the product.**  With llr = a z + b the intercept
  cancels in LID and LID_i = (a z_im - logsumexp_j(a z_ij + ln pi_j)) / ln 2: a matmul
  followed by a row-wise logsumexp, which a fused kernel computes online, tile by tile
  (the softmax normaliser of attention).  Other calibrators (isotonic, beta, Gaussian
  with unequal variances, plugins) are applied to (tile_rows, N) tiles of z-scores with
  their closed-form map (:mod:`lidframe.calibrators.maps`), on the tile's device.

:func:`lid_from_embeddings` returns a :class:`StreamingResult` (per-trial LID and rank of the
true speaker); the :class:`~lidframe.core.engine.Engine` it is given picks the path:
``numpy`` (CPU, float64/float32 BLAS, threaded by the BLAS library; here), ``torch`` (CPU or
CUDA, float64/float32/bfloat16, tiled) or ``triton`` (CUDA, the fused kernel of
:mod:`lidframe.core.triton_lid`; affine maps only), both in :mod:`lidframe.core.streaming_torch`.
The closed forms (z-norm, ``|z|`` bound, LLR grid) are in :mod:`lidframe.core.cosine`.
The float64 numpy path equals the dense reference (``row_znorm`` + calibrator +
``lid_from_llr`` on the materialised cosine matrix) to rounding; float32 and bfloat16
(fp32 accumulation) trade accuracy for speed (tests and ``bench/`` state the errors).
On every path a trial whose LLRs are all equal (an affine map of slope 0, or a map flat
over the row's z-scores) gets LID exactly 0.0, as in :mod:`lidframe.core.lid`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.calibrators.maps import AffineMap
from lidframe.core.cosine import (
    LLRMapLike,
    as_llr_map,
    check_embeddings,
    closed_form_znorm,
    llr_grid,
    pair_z_bound,
    tile_binned_pairs,
    with_intercept,
)
from lidframe.core.engine import Engine, resolve_device, resolve_precision, torch_available
from lidframe.core.lid import check_log_prior, default_tile_rows, run_tiles, tile_lid, tile_true_rank, uniform_log_n
from lidframe.core.openset import OpenSetStats
from lidframe.core.progress import tile_bar, tile_starts
from lidframe.core.streaming_torch import PathResult, torch_path, triton_path
from lidframe.core.znorm import FittedCalibrator, check_ddof, uses_znorm
from lidframe.data.scoreset import check_true_index
from lidframe.errors import InputError
from lidframe.metrics.binned import BinnedPairs
from lidframe.metrics.binned_grid import BinGrid

__all__ = [
    "StreamingResult",
    "cosine_row_stats",
    "lid_from_embeddings",
    "llr_grid",
    "pair_llr_grid",
]


@attrs.frozen(eq=False)
class StreamingResult:
    """Per-trial outputs of :func:`lid_from_embeddings`.

    Attributes
    ----------
    lid_bits : ndarray, shape (T,), float64
        LID in bits.
    true_rank : ndarray of int64, shape (T,)
        1 + the number of enrolled speakers scoring strictly above the true one.
    kernel : str
        The path that ran: ``"numpy"``, ``"torch"`` or ``"triton"``.
    device : str
    precision : str
    binned_pairs : BinnedPairs or None
        With ``binary_bins``: per-class histograms of every pair's LLR (intercept
        included), counted in the same tile pass, for
        :func:`lidframe.metrics.binned.binned_summary`; else None.
    open_stats : OpenSetStats or None
        With ``open_set``: every trial's log evidence and log top posterior
        (:mod:`lidframe.core.openset`); else None.
    """

    lid_bits: np.ndarray
    true_rank: np.ndarray
    kernel: str
    device: str
    precision: str
    binned_pairs: BinnedPairs | None = None
    open_stats: OpenSetStats | None = None


def cosine_row_stats(
    trial_emb: ArrayLike, enrol_emb: ArrayLike, *, znorm_ddof: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Row mean and standard deviation of the cosine scores, in closed form.

    Parameters
    ----------
    trial_emb : array_like, shape (T, d)
    enrol_emb : array_like, shape (N, d)
        Enrolled speaker profiles (any norm; scores use unit vectors).
    znorm_ddof : {0, 1}

    Returns
    -------
    mean, std : ndarray, shape (T,), float64
        Equal to ``scores.mean(1)`` and ``scores.std(1, ddof=znorm_ddof)`` of the materialised
        cosine matrix, without forming it (cost O(T d^2 + N d^2)).
    """
    znorm_ddof = check_ddof(znorm_ddof)
    trial_unit, enrol_unit = check_embeddings(trial_emb, enrol_emb)
    _keys, row_scale = closed_form_znorm(trial_unit, enrol_unit, znorm_ddof, True, None)
    return trial_unit @ enrol_unit.mean(axis=0), 1.0 / row_scale


def pair_llr_grid(
    trial_emb: ArrayLike,
    enrol_emb: ArrayLike,
    calibrator: FittedCalibrator,
    n_bins: int,
    *,
    znorm_ddof: int = 1,
    row_names: ArrayLike | None = None,
) -> BinGrid:
    """The LLR bin grid :func:`lid_from_embeddings` counts pairs on with ``binary_bins=n_bins``.

    Computed from the closed-form row statistics of *all* trials (float64, numpy), exactly
    as the single-process pass fixes it, so that blocks of trial rows counted on it
    (``binary_bins=grid``) merge into the single-process counts.

    Parameters
    ----------
    trial_emb : array_like, shape (T, d)
    enrol_emb : array_like, shape (N, d)
    calibrator : fitted calibrator or llr map
    n_bins : int
    znorm_ddof : {0, 1}
    row_names : array_like of str, shape (T,), optional

    Returns
    -------
    BinGrid
    """
    znorm_ddof = check_ddof(znorm_ddof)
    trial_unit, enrol_unit = check_embeddings(trial_emb, enrol_emb)
    znorm = uses_znorm(calibrator)
    keys, row_scale = closed_form_znorm(trial_unit, enrol_unit, znorm_ddof, znorm, row_names)
    z_bound = pair_z_bound(keys, row_scale, keys.shape[0], znorm_ddof, znorm)
    return llr_grid(as_llr_map(calibrator), z_bound, n_bins)


def _triton_usable(device: str) -> bool:
    try:
        from lidframe.core.triton_lid import interpreting
    except ImportError:
        return False
    return device.startswith("cuda") or interpreting()


def _choose_kernel(kernel: str, device: str, precision: str, llr_map: LLRMapLike) -> str:
    """The path *kernel* names on *device* at *precision* (``"auto"``: see :func:`lid_from_embeddings`), checked."""
    if kernel == "auto":
        if device == "cpu":
            return "numpy" if precision != "bfloat16" or not torch_available() else "torch"
        if isinstance(llr_map, AffineMap) and precision != "float64" and _triton_usable(device):
            return "triton"
        return "torch"
    _check_kernel(kernel, device, precision, llr_map)
    return kernel


def _check_kernel(kernel: str, device: str, precision: str, llr_map: LLRMapLike) -> None:
    """An InputError where the path *kernel* cannot run on *device* at *precision* with *llr_map*."""
    if kernel == "numpy" and device != "cpu":
        raise InputError(f"kernel 'numpy' runs on the CPU only, not on device {device!r}")
    if kernel == "numpy" and precision == "bfloat16":
        raise InputError("kernel 'numpy' has no bfloat16; use kernel 'torch'")
    if kernel in ("torch", "triton") and not torch_available():
        raise InputError(f"kernel {kernel!r} needs PyTorch (pip install torch)")
    if kernel == "triton":
        if not _triton_usable(device):
            raise InputError(f"kernel 'triton' needs Triton and a CUDA device (got device {device!r})")
        if not isinstance(llr_map, AffineMap):
            raise InputError(
                f"kernel 'triton' fuses affine calibrators only; {type(llr_map).__name__} needs kernel 'torch'"
            )
        if precision == "float64":
            raise InputError("kernel 'triton' computes in bfloat16 or float32, not float64")


def _numpy_path(
    trial_unit: np.ndarray,
    enrol_unit: np.ndarray,
    true_index: np.ndarray,
    llr_map: LLRMapLike,
    log_prior: np.ndarray,
    ddof: int,
    znorm: bool,
    precision: str,
    tile_rows: int | None,
    progress: bool,
    row_names: Any,
    binary_bins: int | BinGrid | None,
    open_set: bool,
    threads: int = 1,
) -> PathResult:
    """The numpy path of :func:`lid_from_embeddings` (its arguments, checked): BLAS products, tiles in *threads*."""
    keys, row_scale = closed_form_znorm(trial_unit, enrol_unit, ddof, znorm, row_names)
    n_trials, n_enrolled = trial_unit.shape[0], keys.shape[0]
    affine = llr_map if isinstance(llr_map, AffineMap) else None
    slope = affine.slope if affine is not None else 1.0
    binned = tile_binned_pairs(binary_bins, llr_map, keys, row_scale, ddof, znorm)
    dtype = np.float64 if precision == "float64" else np.float32
    query = (trial_unit * (row_scale * (slope if slope > 0 else 1.0))[:, None]).astype(dtype)
    keys_t = np.ascontiguousarray(keys.T.astype(dtype))
    log_n = uniform_log_n(log_prior)
    lid = np.empty(n_trials)
    rank = np.empty(n_trials, dtype=np.int64)
    stats = OpenSetStats.empty(n_trials) if open_set else None
    tile_rows = tile_rows or default_tile_rows(n_enrolled, threads if binary_bins is None else 1)
    folded = affine is not None and slope > 0  # the products are a z: the map is folded into them

    def work(start: int, stop: int) -> None:
        cols = true_index[start:stop]
        scores = np.asarray(query[start:stop] @ keys_t, dtype=np.float64)  # a * z (affine) or z
        enrolled = cols >= 0  # all True in the closed set
        rank[start:stop] = tile_true_rank(scores, cols)
        llr = scores if folded else np.asarray(llr_map(scores), dtype=np.float64)
        if llr.shape != scores.shape:
            raise InputError(f"the calibrator's llr() returned shape {llr.shape} for input shape {scores.shape}")
        if binned is not None:  # before tile_lid, which overwrites the tile; enrolled trials' pairs only
            pair_llr = with_intercept(llr, llr_map, folded)
            binned.add_tile(*((pair_llr, cols) if enrolled.all() else (pair_llr[enrolled], cols[enrolled])))
        views = None if stats is None else (stats.log_evidence[start:stop], stats.log_top[start:stop])
        lid[start:stop] = tile_lid(llr, cols, log_prior, log_n, start, row_names, views)

    # one thread with binned pairs, whose sums depend on the order the tiles add them in
    _numpy_tiles(n_trials, tile_rows, work, threads=1 if binned is not None else threads, progress=progress)
    if stats is not None and affine is not None and folded and affine.intercept != 0:
        np.add(stats.log_evidence, affine.intercept, out=stats.log_evidence)  # the folded products left it out
    return lid, rank, binned, stats


def _numpy_tiles(
    n_trials: int, tile_rows: int, work: Callable[[int, int], None], *, threads: int, progress: bool
) -> None:
    """Call ``work(start, stop)`` on each tile, one after the other, or in *threads* threads (:func:`run_tiles`)."""
    if threads <= 1:
        for start in tile_starts(n_trials, tile_rows, progress, "LID tiles"):
            work(start, min(start + tile_rows, n_trials))
        return
    # tiles in threads, each tile's product on one BLAS thread (the tiles are the parallelism);
    # a dgemm splits its output, not its sums, among BLAS threads: the products are the same
    from threadpoolctl import threadpool_limits

    bar = tile_bar(n_trials, tile_rows, progress, "LID tiles")

    def counted(start: int, stop: int) -> None:
        work(start, stop)
        if bar is not None:
            bar.update()

    try:
        with threadpool_limits(limits=1, user_api="blas"):
            run_tiles(n_trials, tile_rows, counted, threads=threads)
    finally:
        if bar is not None:
            bar.close()


def _checked_map(calibrator: FittedCalibrator, binary_bins: object) -> Callable[[np.ndarray], ArrayLike]:
    """The calibrator's closed-form map, checked (non-decreasing), after checking *binary_bins*."""
    llr_map = as_llr_map(calibrator)
    if isinstance(llr_map, AffineMap) and not llr_map.slope >= 0:
        raise InputError(f"an LLR map must be non-decreasing: affine map with slope {llr_map.slope} (need >= 0)")
    if binary_bins is not None and not (
        isinstance(binary_bins, BinGrid) or (isinstance(binary_bins, (int, np.integer)) and binary_bins >= 1)
    ):
        raise InputError(f"binary_bins must be a positive number of bins or a BinGrid, got {binary_bins!r}")
    return llr_map


def lid_from_embeddings(
    trial_emb: ArrayLike,
    enrol_emb: ArrayLike,
    true_index: ArrayLike,
    calibrator: FittedCalibrator,
    log_prior: ArrayLike,
    *,
    znorm_ddof: int = 1,
    engine: Engine | None = None,
    row_names: ArrayLike | None = None,
    triton_blocks: dict | None = None,
    binary_bins: int | BinGrid | None = None,
    open_set: bool = False,
) -> StreamingResult:
    """Per-trial LID of a cosine attacker straight from embeddings.

    Parameters
    ----------
    trial_emb : array_like, shape (T, d)
        Trial embeddings (any norm; cosine scoring uses unit vectors).
    enrol_emb : array_like, shape (N, d)
        One profile per enrolled speaker, in enrolled order.
    true_index : array_like of int, shape (T,)
        Column of each trial's true speaker, in [0, N); -1 for an outsider trial only
        with *open_set* (its LID NaN and rank 0 here; drop outsider trials otherwise).
    calibrator : fitted calibrator or llr map
        A fitted calibrator (its ``llr_map()`` is used when it has one, else its ``llr``)
        or a map from :mod:`lidframe.calibrators.maps`.  ``input_scale == "raw"`` skips the z-norm.
        An affine map must be non-decreasing (slope >= 0); slope 0 gives LID exactly 0.
    log_prior : array_like, shape (N,)
        Natural-log prior over the enrolled speakers (logsumexp = 0).
    znorm_ddof : {0, 1}
        Delta degrees of freedom of the (closed-form) row z-norm.
    engine : Engine, optional
        Where and how to run (default ``Engine()``; :class:`~lidframe.core.engine.Engine`).
        Kernel ``auto`` is triton on CUDA for affine maps below float64, torch on CUDA
        otherwise, numpy on the CPU (torch for bfloat16); bfloat16 accumulates in float32,
        and the map and the logsumexp run in float64 for float64, else float32.
    row_names : array_like of str, shape (T,), optional
        Trial ids for error messages.
    triton_blocks : dict, optional
        ``{"block_m": .., "block_n": ..}`` fixed Triton tiles (default: autotuned).
    binary_bins : int, optional
        Also count every pair's LLR (intercept included) into per-class histograms of
        this many equal bins, in the same tile pass, for the binned binary view
        (:mod:`lidframe.metrics.binned`; e.g. :data:`~lidframe.metrics.binned_grid.DEFAULT_BINS`).
        The grid spans the LLRs of z = +-:func:`~lidframe.core.cosine.pair_z_bound`, so no pair falls outside it;
        memory O(bins + tile).  The fused Triton kernel does not count pairs: the torch
        path runs instead (``StreamingResult.kernel`` says which ran).  A :class:`BinGrid`
        counts on that grid as given (:func:`pair_llr_grid` of the whole set, for blocks
        of its rows whose counts are merged: :mod:`lidframe.core.cluster`).  Only the
        enrolled trials' pairs are counted.
    open_set : bool, default False
        Also return every trial's open-set statistics (``StreamingResult.open_stats``,
        :class:`~lidframe.core.openset.OpenSetStats`, LLR intercept included), in the
        same pass, on every path.

    Returns
    -------
    StreamingResult
    """
    znorm_ddof = check_ddof(znorm_ddof)
    engine = Engine() if engine is None else engine
    device = resolve_device(engine.device, check=False)  # the machine is checked after the kernel's own rules
    precision = resolve_precision(engine.precision, device)
    trial_unit, enrol_unit, true_index, log_prior = _checked_rows(trial_emb, enrol_emb, true_index, log_prior, open_set)
    znorm = uses_znorm(calibrator)
    llr_map = _checked_map(calibrator, binary_bins)
    kernel = _choose_kernel(engine.kernel, device, precision, llr_map)
    resolve_device(device)  # an explicit CUDA device this machine lacks: refused, not run on the CPU
    if kernel == "triton" and binary_bins is not None:  # the fused kernel never holds a tile of LLRs
        kernel = "torch"
    common = (trial_unit, enrol_unit, true_index, llr_map, log_prior, znorm_ddof, znorm, precision)
    lid, rank, binned, stats = _run_path(
        kernel, common, device, engine, row_names, binary_bins, triton_blocks or {}, open_set
    )
    return StreamingResult(lid, rank, kernel, device, precision, binned_pairs=binned, open_stats=stats)


def _checked_rows(
    trial_emb: ArrayLike, enrol_emb: ArrayLike, true_index: ArrayLike, log_prior: ArrayLike, open_set: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(unit trial rows, unit enrolled rows, true_index, log_prior) of :func:`lid_from_embeddings`, checked."""
    trial_unit, enrol_unit = check_embeddings(trial_emb, enrol_emb)
    n_trials, n_enrolled = trial_unit.shape[0], enrol_unit.shape[0]
    true_index = check_true_index(true_index, n_trials, n_enrolled, allow_outsider=bool(open_set))
    return trial_unit, enrol_unit, true_index, check_log_prior(log_prior, n_enrolled)


def _run_path(
    kernel: str,
    common: tuple[np.ndarray, np.ndarray, np.ndarray, LLRMapLike, np.ndarray, int, bool, str],
    device: str,
    engine: Engine,
    row_names: ArrayLike | None,
    binary_bins: int | BinGrid | None,
    triton_blocks: dict[str, int],
    open_set: bool,
) -> PathResult:
    """The path *kernel* on the checked inputs *common* (trial, enrolled, true_index, map, prior, ddof, znorm, precision)."""
    if kernel == "numpy":
        return _numpy_path(
            *common, engine.tile_rows, engine.progress, row_names, binary_bins, open_set, engine.cpu_threads()
        )
    if kernel == "torch":
        return torch_path(*common, device, engine.tile_rows, engine.progress, row_names, binary_bins, open_set)
    lid, rank, stats = triton_path(*common, device, engine.progress, row_names, triton_blocks, open_set)
    return lid, rank, None, stats
