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
``numpy`` (CPU, float64/float32 BLAS, threaded by the BLAS library), ``torch`` (CPU or
CUDA, float64/float32/bfloat16, tiled) or ``triton`` (CUDA, the fused kernel of
:mod:`lidframe.core.triton_lid`; affine maps only).
The float64 numpy path equals the dense reference (``row_znorm`` + calibrator +
``lid_from_llr`` on the materialised cosine matrix) to rounding; float32 and bfloat16
(fp32 accumulation) trade accuracy for speed (tests and ``bench/`` state the errors).
On every path a trial whose LLRs are all equal (an affine map of slope 0, or a map flat
over the row's z-scores) gets LID exactly 0.0, as in :mod:`lidframe.core.lid`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.calibrators.maps import AffineMap, llr_map_of
from lidframe.core.engine import Engine, resolve_device, resolve_precision, torch_available
from lidframe.core.lid import (
    LN2,
    check_log_prior,
    default_tile_rows,
    row_label,
    run_tiles,
    tile_lid,
    tile_true_rank,
    uniform_log_n,
)
from lidframe.core.openset import OpenSetStats
from lidframe.core.znorm import FittedCalibrator, check_ddof, uses_znorm
from lidframe.data.scoreset import check_true_index
from lidframe.data.vectors import unit_rows
from lidframe.errors import InputError, preview
from lidframe.metrics.binned import BinGrid, BinnedPairs

__all__ = [
    "StreamingResult",
    "cosine_row_stats",
    "lid_from_embeddings",
    "llr_grid",
    "pair_llr_grid",
]

_LOG2E = 1.0 / LN2
# a row whose cosine scores have a standard deviation below this is constant to
# float64 resolution (cosines are bounded by 1 in magnitude)
_ZERO_STD = 16.0 * np.finfo(np.float64).eps
# values per tile: (tile_rows, N) float tiles of this many entries
_TILE_VALUES_TORCH_CPU = 1 << 22
_TILE_VALUES_CUDA = 1 << 30


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


def _to_numpy(values):
    return values.detach().cpu().numpy() if hasattr(values, "detach") else np.asarray(values)


def closed_form_znorm(trial_unit, enrol_unit, ddof: int, znorm: bool, row_names):
    """(keys (N, d), row_scale (T,)) in float64: z_ij = row_scale_i * trial_unit_i . keys_j."""
    if not znorm:
        return enrol_unit, trial_unit[:, 0] * 0.0 + 1.0  # ones, as a numpy array or a tensor
    n_enrolled = enrol_unit.shape[0]
    keys = enrol_unit - enrol_unit.mean(axis=0)
    covariance = (keys.T @ keys) / (n_enrolled - ddof)
    variance = ((trial_unit @ covariance) * trial_unit).sum(axis=1)
    std = variance.clip(min=0.0) ** 0.5
    constant = std <= _ZERO_STD
    if bool(constant.any()):
        rows = np.flatnonzero(_to_numpy(constant))
        names = rows if row_names is None else np.asarray(row_names)[rows]
        raise InputError(f"z-norm is undefined for {rows.size} trials whose scores are all equal: {preview(names)}")
    return keys, 1.0 / std


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


def pair_z_bound(keys, row_scale, n_enrolled: int, ddof: int, znorm: bool) -> float:
    """An upper bound of |z_ij| over every pair, before the pass.

    Cauchy-Schwarz: z_ij = row_scale_i x_i . k_j with |x_i| = 1, so |z_ij| <= max_i
    row_scale_i * max_j |k_j|; with the z-norm also Samuelson's inequality: a value of a
    row standardised with ``ddof`` is at most sqrt((N - 1) (N - ddof) / N) from the mean.
    """
    key_norm = float(_to_numpy((keys * keys).sum(axis=1)).max()) ** 0.5
    bound = float(_to_numpy(row_scale).max()) * key_norm
    if znorm:
        bound = min(bound, math.sqrt((n_enrolled - 1) * (n_enrolled - ddof) / n_enrolled))
    return bound


def llr_grid(llr_map: Callable[[np.ndarray], ArrayLike], z_bound: float, n_bins: int) -> BinGrid:
    """Equal LLR bins covering map([-z_bound, z_bound]), fixed before the pass.

    Parameters
    ----------
    llr_map : callable
        Non-decreasing score-to-LLR map (:mod:`lidframe.calibrators.maps`), intercept included.
    z_bound : float
        Bound of |z| over every pair (:func:`pair_z_bound`).
    n_bins : int

    Returns
    -------
    BinGrid
        Every pair's LLR lies inside it (to rounding; anything outside is counted in an end bin).
    """
    ends = np.asarray(llr_map(np.array([-z_bound, z_bound], dtype=np.float64)), dtype=np.float64)
    if not np.isfinite(ends).all():
        raise InputError(
            f"the calibrator maps z = +-{z_bound:.3g} to LLRs {ends.tolist()}; binary metrics need finite LLRs"
        )
    low, high = float(ends.min()), float(ends.max())
    margin = 1e-9 * max(high - low, abs(low), abs(high), 1.0)  # rounding of the products
    return BinGrid.uniform(low - margin, high + margin, n_bins)


def check_embeddings(trial_emb: ArrayLike, enrol_emb: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Unit trial (T, d) and enrolled (N, d) rows, float64; an InputError for bad shapes, N < 2 or NaN/inf rows."""
    trial_emb = np.asarray(trial_emb, dtype=np.float64)
    enrol_emb = np.asarray(enrol_emb, dtype=np.float64)
    if trial_emb.ndim != 2 or enrol_emb.ndim != 2 or trial_emb.shape[1] != enrol_emb.shape[1]:
        raise InputError(
            f"trial (T, d) and enrolled (N, d) embeddings needed, got {trial_emb.shape} and {enrol_emb.shape}"
        )
    if enrol_emb.shape[0] < 2:
        raise InputError(f"LID needs N >= 2 enrolled speakers, got {enrol_emb.shape[0]}")
    for what, values in (("trial", trial_emb), ("enrolled", enrol_emb)):
        bad = ~np.isfinite(values).all(axis=1)
        if bad.any():
            raise InputError(f"{what} embeddings hold NaN or inf in rows {preview(np.flatnonzero(bad))}")
    return unit_rows(trial_emb, what="trial"), unit_rows(enrol_emb, what="enrolled")


def _triton_usable(device: str) -> bool:
    try:
        from lidframe.core.triton_lid import interpreting
    except ImportError:
        return False
    return device.startswith("cuda") or interpreting()


def _choose_kernel(kernel: str, device: str, precision: str, llr_map) -> str:
    on_cpu = device == "cpu"
    if kernel == "auto":
        if on_cpu:
            return "numpy" if precision != "bfloat16" or not torch_available() else "torch"
        if isinstance(llr_map, AffineMap) and precision != "float64" and _triton_usable(device):
            return "triton"
        return "torch"
    if kernel == "numpy" and not on_cpu:
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
    return kernel


def _bar(n_trials: int, tile_rows: int, progress: bool, label: str):
    """A tqdm bar over the tiles (updated by the caller), or None without *progress* or tqdm."""
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(desc=label, unit="tile", total=len(range(0, n_trials, tile_rows)))


def _tiles(n_trials: int, tile_rows: int, progress: bool, label: str):
    starts = range(0, n_trials, tile_rows)
    if progress:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return starts
        return tqdm(starts, desc=label, unit="tile", total=len(starts))
    return starts


def _binned_pairs(binary_bins, llr_map, keys, row_scale, ddof, znorm):
    """An empty BinnedPairs on a grid that holds every pair's LLR, or None without *binary_bins*.

    *binary_bins* is a number of bins (the grid is fixed here from these rows) or a
    :class:`BinGrid` fixed by the caller (the blocks of :mod:`lidframe.core.cluster`).
    """
    if binary_bins is None:
        return None
    if isinstance(binary_bins, BinGrid):
        return BinnedPairs(binary_bins)
    z_bound = pair_z_bound(keys, row_scale, keys.shape[0], ddof, znorm)
    return BinnedPairs(llr_grid(llr_map, z_bound, binary_bins))


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


def as_llr_map(calibrator):
    """The closed-form map of a fitted calibrator (or the map itself)."""
    return calibrator if callable(calibrator) and not hasattr(calibrator, "llr") else llr_map_of(calibrator)


def _pair_llr(llr, llr_map, folded: bool):
    """The tile's LLRs with the intercept that the LID path leaves out of a folded affine map."""
    return llr + llr_map.intercept if folded and llr_map.intercept != 0 else llr


def _numpy_path(
    trial_unit,
    enrol_unit,
    true_index,
    llr_map,
    log_prior,
    ddof,
    znorm,
    precision,
    tile_rows,
    progress,
    row_names,
    binary_bins,
    open_set,
    threads=1,
):
    keys, row_scale = closed_form_znorm(trial_unit, enrol_unit, ddof, znorm, row_names)
    n_trials, n_enrolled = trial_unit.shape[0], keys.shape[0]
    affine = isinstance(llr_map, AffineMap)
    slope = llr_map.slope if affine else 1.0
    binned = _binned_pairs(binary_bins, llr_map, keys, row_scale, ddof, znorm)
    dtype = np.float64 if precision == "float64" else np.float32
    query = (trial_unit * (row_scale * (slope if slope > 0 else 1.0))[:, None]).astype(dtype)
    keys_t = np.ascontiguousarray(keys.T.astype(dtype))
    log_n = uniform_log_n(log_prior)
    lid = np.empty(n_trials)
    rank = np.empty(n_trials, dtype=np.int64)
    stats = OpenSetStats.empty(n_trials) if open_set else None
    tile_rows = tile_rows or default_tile_rows(n_enrolled, threads if binary_bins is None else 1)
    folded = affine and slope > 0  # the products are a z: the map is folded into them

    def work(start: int, stop: int) -> None:
        cols = true_index[start:stop]
        scores = np.asarray(query[start:stop] @ keys_t, dtype=np.float64)  # a * z (affine) or z
        enrolled = cols >= 0  # all True in the closed set
        rank[start:stop] = tile_true_rank(scores, cols)
        llr = scores if folded else np.asarray(llr_map(scores), dtype=np.float64)
        if llr.shape != scores.shape:
            raise InputError(f"the calibrator's llr() returned shape {llr.shape} for input shape {scores.shape}")
        if binned is not None:  # before tile_lid, which overwrites the tile; enrolled trials' pairs only
            pair_llr = _pair_llr(llr, llr_map, folded)
            binned.add_tile(*((pair_llr, cols) if enrolled.all() else (pair_llr[enrolled], cols[enrolled])))
        views = None if stats is None else (stats.log_evidence[start:stop], stats.log_top[start:stop])
        lid[start:stop] = tile_lid(llr, cols, log_prior, log_n, start, row_names, views)

    if threads <= 1 or binned is not None:
        # one thread; and always with binned pairs, whose sums depend on the order the tiles add them in
        for start in _tiles(n_trials, tile_rows, progress, "LID tiles"):
            work(start, min(start + tile_rows, n_trials))
    else:
        # tiles in threads, each tile's product on one BLAS thread (the tiles are the parallelism);
        # a dgemm splits its output, not its sums, among BLAS threads: the products are the same
        from threadpoolctl import threadpool_limits

        bar = _bar(n_trials, tile_rows, progress, "LID tiles")

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
    if stats is not None and folded and llr_map.intercept != 0:  # the folded products left the intercept out
        np.add(stats.log_evidence, llr_map.intercept, out=stats.log_evidence)
    return lid, rank, binned, stats


def _torch_prepare(trial_unit, enrol_unit, ddof, znorm, device, row_names):
    import torch

    trial = torch.as_tensor(trial_unit, dtype=torch.float64, device=device)
    enrol = torch.as_tensor(enrol_unit, dtype=torch.float64, device=device)
    keys, row_scale = closed_form_znorm(trial, enrol, ddof, znorm, row_names)
    return trial, keys, row_scale


def _torch_dtype(precision: str):
    import torch

    return {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16}[precision]


@contextlib.contextmanager
def _matmul_precision(device: str, fp32_precision: str):
    """CUDA float32 matmuls as *fp32_precision* ("tf32" or "ieee") inside the block, restored after.

    bfloat16 inputs are carried in float32: TF32 tensor cores hold their 8-bit mantissas
    exactly and accumulate in float32, so the products are those of a bf16 GEMM with a
    float32 output (a bf16 output would round every score to 3 significant digits).
    """
    if not str(device).startswith("cuda"):
        yield
        return
    import torch

    settings = torch.backends.cuda.matmul
    before = settings.fp32_precision
    settings.fp32_precision = fp32_precision
    try:
        yield
    finally:
        settings.fp32_precision = before


def _torch_path(
    trial_unit,
    enrol_unit,
    true_index,
    llr_map,
    log_prior,
    ddof,
    znorm,
    precision,
    device,
    tile_rows,
    progress,
    row_names,
    binary_bins,
    open_set,
):
    import torch

    trial, keys, row_scale = _torch_prepare(trial_unit, enrol_unit, ddof, znorm, device, row_names)
    n_trials, n_enrolled = trial.shape[0], keys.shape[0]
    affine = isinstance(llr_map, AffineMap)
    slope = llr_map.slope if affine else 1.0
    binned = _binned_pairs(binary_bins, llr_map, keys, row_scale, ddof, znorm)
    work = torch.float64 if precision == "float64" else torch.float32  # products, map and logsumexp
    query = (trial * (row_scale * (slope if slope > 0 else 1.0))[:, None]).to(_torch_dtype(precision)).to(work)
    keys_t = keys.T.contiguous().to(_torch_dtype(precision)).to(work)
    log_n = uniform_log_n(log_prior)
    bias = None if log_n is not None else torch.as_tensor(log_prior, dtype=work, device=device)
    # a writable copy: torch warns about read-only arrays (the caller's may be)
    cols_all = torch.as_tensor(np.array(true_index, copy=True), device=device)
    lid = torch.empty(n_trials, dtype=torch.float64, device=device)
    rank = torch.empty(n_trials, dtype=torch.int64, device=device)
    if open_set:
        log_evidence = torch.empty(n_trials, dtype=torch.float64, device=device)
        log_top = torch.empty(n_trials, dtype=torch.float64, device=device)
        top_of_constant = -log_n if log_n is not None else float(np.max(log_prior))
    budget = _TILE_VALUES_CUDA if str(device).startswith("cuda") else _TILE_VALUES_TORCH_CPU
    tile_rows = tile_rows or max(1, budget // n_enrolled)
    folded = affine and slope > 0  # the products are a z: the map is folded into them
    with torch.inference_mode(), _matmul_precision(device, "tf32" if precision == "bfloat16" else "ieee"):
        for start in _tiles(n_trials, tile_rows, progress, "LID tiles"):
            stop = min(start + tile_rows, n_trials)
            cols = cols_all[start:stop]
            outsider = cols < 0  # none in the closed set
            has_outsider = open_set and bool(outsider.any())
            if has_outsider:
                cols = cols.clamp(min=0)  # a stand-in column; the outsider rows' LID and rank are set below
            scores = query[start:stop] @ keys_t  # a * z (affine) or z
            mated_score = scores.gather(1, cols[:, None])
            rank[start:stop] = 1 + (scores > mated_score).sum(dim=1)
            llr = scores if folded else llr_map(scores)
            if binned is not None:
                pair_llr = _pair_llr(llr, llr_map, folded)
                binned.add_tile(*((pair_llr[~outsider], cols[~outsider]) if has_outsider else (pair_llr, cols)))
            mated_llr = llr.gather(1, cols[:, None])[:, 0]
            peak = llr.amax(dim=1)
            constant = peak == llr.amin(dim=1)  # no evidence: LID exactly 0 (as tile_lid)
            constant_llr = peak
            if bias is not None:
                llr = llr + bias
            lse = torch.logsumexp(llr, dim=1)
            if open_set:
                top = (llr.amax(dim=1) if bias is not None else peak) - lse
            if log_n is not None:
                lse = lse - log_n
            if not bool(torch.isfinite(lse).all()):
                bad = start + int(torch.nonzero(~torch.isfinite(lse))[0, 0])
                raise InputError(f"LLRs of {row_label(bad, row_names)} are not finite; check the calibrator")
            tile_lid = ((mated_llr - lse) / LN2).to(torch.float64)
            lid[start:stop] = tile_lid.masked_fill_(constant, 0.0)
            if open_set:
                evidence = torch.where(constant, constant_llr, lse).to(torch.float64)
                log_evidence[start:stop] = evidence + llr_map.intercept if folded else evidence
                log_top[start:stop] = top.to(torch.float64).masked_fill_(constant, top_of_constant)
            if has_outsider:
                lid[start:stop].masked_fill_(outsider, float("nan"))
                rank[start:stop].masked_fill_(outsider, 0)
    stats = None
    if open_set:
        stats = OpenSetStats(log_evidence=log_evidence.cpu().numpy(), log_top=log_top.cpu().numpy())
    return lid.cpu().numpy(), rank.cpu().numpy(), binned, stats


def _triton_path(
    trial_unit,
    enrol_unit,
    true_index,
    llr_map,
    log_prior,
    ddof,
    znorm,
    precision,
    device,
    progress,
    row_names,
    blocks,
    open_set,
):
    import torch

    from lidframe.core.triton_lid import lid_lse_triton

    trial, keys, row_scale = _torch_prepare(trial_unit, enrol_unit, ddof, znorm, device, row_names)
    slope = llr_map.slope if llr_map.slope > 0 else 1.0
    dtype = torch.bfloat16 if precision == "bfloat16" else torch.float32
    query = (trial * (row_scale * slope * _LOG2E)[:, None]).to(dtype).contiguous()
    keys = keys.to(dtype).contiguous()
    cols = torch.as_tensor(true_index, device=device)
    # the true speaker's score from the same rounded inputs: the threshold of the rank count
    threshold = (query.float() * keys[cols].float()).sum(dim=1)
    log_n = uniform_log_n(log_prior)
    bias = None if log_n is not None else torch.as_tensor(log_prior * _LOG2E, dtype=torch.float32, device=device)
    lse2, max2, mated2, above = lid_lse_triton(query, keys, bias, cols.to(torch.int32), threshold, **blocks)
    lid = mated2.double() - lse2.double()
    if log_n is not None:
        lid += log_n * _LOG2E
    if llr_map.slope == 0:  # llr = intercept for every speaker: LID exactly 0 (as tile_lid)
        lid.zero_()
    rank = 1 + above.long()
    outsider = cols < 0
    lid.masked_fill_(outsider, float("nan"))
    rank.masked_fill_(outsider, 0)
    stats = None
    if open_set:
        log_evidence = lse2.double() * LN2 - (log_n if log_n is not None else 0.0) + llr_map.intercept
        log_top = (max2.double() - lse2.double()) * LN2
        if llr_map.slope == 0:  # every LLR is the intercept (as tile_lid)
            log_evidence.fill_(llr_map.intercept)
            log_top.fill_(-log_n if log_n is not None else float(np.max(log_prior)))
        stats = OpenSetStats(log_evidence=log_evidence.cpu().numpy(), log_top=log_top.cpu().numpy())
    return lid.cpu().numpy(), rank.cpu().numpy(), stats


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
        (:mod:`lidframe.metrics.binned`; e.g. :data:`~lidframe.metrics.binned.DEFAULT_BINS`).
        The grid spans the LLRs of z = +-:func:`pair_z_bound`, so no pair falls outside it;
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
    trial_unit, enrol_unit = check_embeddings(trial_emb, enrol_emb)
    n_trials, n_enrolled = trial_unit.shape[0], enrol_unit.shape[0]
    true_index = check_true_index(true_index, n_trials, n_enrolled, allow_outsider=bool(open_set))
    log_prior = check_log_prior(log_prior, n_enrolled)
    znorm = uses_znorm(calibrator)
    llr_map = _checked_map(calibrator, binary_bins)
    kernel = _choose_kernel(engine.kernel, device, precision, llr_map)
    resolve_device(device)  # an explicit CUDA device this machine lacks: refused, not run on the CPU
    if kernel == "triton" and binary_bins is not None:  # the fused kernel never holds a tile of LLRs
        kernel = "torch"
    common = (trial_unit, enrol_unit, true_index, llr_map, log_prior, znorm_ddof, znorm, precision)
    binned = None
    if kernel == "numpy":
        lid, rank, binned, stats = _numpy_path(
            *common, engine.tile_rows, engine.progress, row_names, binary_bins, open_set, engine.cpu_threads()
        )
    elif kernel == "torch":
        lid, rank, binned, stats = _torch_path(
            *common, device, engine.tile_rows, engine.progress, row_names, binary_bins, open_set
        )
    else:
        lid, rank, stats = _triton_path(*common, device, engine.progress, row_names, triton_blocks or {}, open_set)
    return StreamingResult(
        lid_bits=lid,
        true_rank=rank,
        kernel=kernel,
        device=device,
        precision=precision,
        binned_pairs=binned,
        open_stats=stats,
    )
