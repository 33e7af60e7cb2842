"""The torch and Triton paths of the streaming engine (:func:`lidframe.core.streaming.lid_from_embeddings`).

The torch path (CPU or CUDA; float64, float32 or bfloat16 inputs accumulated in float32)
computes each tile's (tile_rows, N) scores, applies the closed-form map and takes the
row-wise logsumexp, as the numpy path does; the Triton path runs the fused kernel of
:mod:`lidframe.core.triton_lid` (affine maps only), which never holds a tile of scores.
Importing this module does not import torch: each path does, when it runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from lidframe.calibrators.maps import AffineMap
from lidframe.core.cosine import LLRMapLike, closed_form_znorm, tile_binned_pairs, with_intercept
from lidframe.core.lid import LN2, row_label, uniform_log_n
from lidframe.core.openset import OpenSetStats
from lidframe.core.progress import tile_starts
from lidframe.errors import InputError
from lidframe.metrics.binned import BinnedPairs
from lidframe.metrics.binned_grid import BinGrid

__all__ = ["torch_path", "triton_path"]

_LOG2E = 1.0 / LN2
# values per tile: (tile_rows, N) float tiles of this many entries
_TILE_VALUES_TORCH_CPU = 1 << 22
_TILE_VALUES_CUDA = 1 << 30

#: What a path returns: LID (T,), ranks (T,), the pairs it counted (or None), the open set's statistics (or None).
PathResult = tuple[np.ndarray, np.ndarray, BinnedPairs | None, OpenSetStats | None]


def _torch_prepare(
    trial_unit: np.ndarray, enrol_unit: np.ndarray, ddof: int, znorm: bool, device: str, row_names: Any
) -> tuple[Any, Any, Any]:
    import torch

    trial = torch.as_tensor(trial_unit, dtype=torch.float64, device=device)
    enrol = torch.as_tensor(enrol_unit, dtype=torch.float64, device=device)
    keys, row_scale = closed_form_znorm(trial, enrol, ddof, znorm, row_names)
    return trial, keys, row_scale


def _torch_dtype(precision: str) -> Any:
    import torch

    return {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16}[precision]


@contextlib.contextmanager
def _matmul_precision(device: str, fp32_precision: str) -> Iterator[None]:
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


@attrs.define(eq=False, kw_only=True)
class _TorchPass:
    """One pass of the torch path: its inputs on the device, and the per-trial outputs its tiles fill.

    ``log_evidence`` and ``log_top`` are None unless the pass computes the open set's statistics.
    """

    query: Any
    keys_t: Any
    cols_all: Any
    llr_map: Any  # a map of lidframe.calibrators.maps; an AffineMap where folded
    folded: bool  # the products are a z: the (affine) map is folded into them
    bias: Any  # the log prior as a tensor, or None under a uniform prior (log_n given)
    log_n: float | None
    top_of_constant: float
    binned: BinnedPairs | None
    row_names: Any
    lid: Any
    rank: Any
    log_evidence: Any = None
    log_top: Any = None

    def tile(self, start: int, stop: int) -> None:
        """Rows ``start:stop``: ranks, pair counts, LID and (open set) the statistics."""
        open_set = self.log_evidence is not None
        cols = self.cols_all[start:stop]
        outsider = cols < 0  # none in the closed set
        has_outsider = open_set and bool(outsider.any())
        if has_outsider:
            cols = cols.clamp(min=0)  # a stand-in column; the outsider rows' LID and rank are set below
        scores = self.query[start:stop] @ self.keys_t  # a * z (affine) or z
        mated_score = scores.gather(1, cols[:, None])
        self.rank[start:stop] = 1 + (scores > mated_score).sum(dim=1)
        llr = scores if self.folded else self.llr_map(scores)
        if self.binned is not None:
            pair_llr = with_intercept(llr, self.llr_map, self.folded)
            self.binned.add_tile(*((pair_llr[~outsider], cols[~outsider]) if has_outsider else (pair_llr, cols)))
        self._lid(start, stop, llr, cols, open_set)
        if has_outsider:
            self.lid[start:stop].masked_fill_(outsider, float("nan"))
            self.rank[start:stop].masked_fill_(outsider, 0)

    def _lid(self, start: int, stop: int, llr: Any, cols: Any, open_set: bool) -> None:
        """The tile's LID from its LLRs (and, in the open set, its log evidence and log top posterior)."""
        import torch

        mated_llr = llr.gather(1, cols[:, None])[:, 0]
        peak = llr.amax(dim=1)
        constant = peak == llr.amin(dim=1)  # no evidence: LID exactly 0 (as tile_lid)
        constant_llr = peak
        if self.bias is not None:
            llr = llr + self.bias
        lse = torch.logsumexp(llr, dim=1)
        if open_set:
            top = (llr.amax(dim=1) if self.bias is not None else peak) - lse
        if self.log_n is not None:
            lse = lse - self.log_n
        if not bool(torch.isfinite(lse).all()):
            bad = start + int(torch.nonzero(~torch.isfinite(lse))[0, 0])
            raise InputError(f"LLRs of {row_label(bad, self.row_names)} are not finite; check the calibrator")
        tile_lid = ((mated_llr - lse) / LN2).to(torch.float64)
        self.lid[start:stop] = tile_lid.masked_fill_(constant, 0.0)
        if open_set:
            evidence = torch.where(constant, constant_llr, lse).to(torch.float64)
            self.log_evidence[start:stop] = evidence + self.llr_map.intercept if self.folded else evidence
            self.log_top[start:stop] = top.to(torch.float64).masked_fill_(constant, self.top_of_constant)


def torch_path(
    trial_unit: np.ndarray,
    enrol_unit: np.ndarray,
    true_index: np.ndarray,
    llr_map: LLRMapLike,
    log_prior: np.ndarray,
    ddof: int,
    znorm: bool,
    precision: str,
    device: str,
    tile_rows: int | None,
    progress: bool,
    row_names: Any,
    binary_bins: int | BinGrid | None,
    open_set: bool,
) -> PathResult:
    """The torch path of :func:`~lidframe.core.streaming.lid_from_embeddings` (its arguments, checked)."""
    import torch

    trial, keys, row_scale = _torch_prepare(trial_unit, enrol_unit, ddof, znorm, device, row_names)
    n_trials, n_enrolled = trial.shape[0], keys.shape[0]
    slope = llr_map.slope if isinstance(llr_map, AffineMap) else 1.0
    work = torch.float64 if precision == "float64" else torch.float32  # products, map and logsumexp
    log_n = uniform_log_n(log_prior)
    run = _TorchPass(
        query=(trial * (row_scale * (slope if slope > 0 else 1.0))[:, None]).to(_torch_dtype(precision)).to(work),
        keys_t=keys.T.contiguous().to(_torch_dtype(precision)).to(work),
        # a writable copy: torch warns about read-only arrays (the caller's may be)
        cols_all=torch.as_tensor(np.array(true_index, copy=True), device=device),
        llr_map=llr_map,
        folded=isinstance(llr_map, AffineMap) and slope > 0,
        bias=None if log_n is not None else torch.as_tensor(log_prior, dtype=work, device=device),
        log_n=log_n,
        top_of_constant=-log_n if log_n is not None else float(np.max(log_prior)),
        binned=tile_binned_pairs(binary_bins, llr_map, keys, row_scale, ddof, znorm),
        row_names=row_names,
        lid=torch.empty(n_trials, dtype=torch.float64, device=device),
        rank=torch.empty(n_trials, dtype=torch.int64, device=device),
        log_evidence=torch.empty(n_trials, dtype=torch.float64, device=device) if open_set else None,
        log_top=torch.empty(n_trials, dtype=torch.float64, device=device) if open_set else None,
    )
    budget = _TILE_VALUES_CUDA if str(device).startswith("cuda") else _TILE_VALUES_TORCH_CPU
    tile_rows = tile_rows or max(1, budget // n_enrolled)
    with torch.inference_mode(), _matmul_precision(device, "tf32" if precision == "bfloat16" else "ieee"):
        for start in tile_starts(n_trials, tile_rows, progress, "LID tiles"):
            run.tile(start, min(start + tile_rows, n_trials))
    stats = None
    if open_set:
        stats = OpenSetStats(log_evidence=run.log_evidence.cpu().numpy(), log_top=run.log_top.cpu().numpy())
    return run.lid.cpu().numpy(), run.rank.cpu().numpy(), run.binned, stats


def triton_path(
    trial_unit: np.ndarray,
    enrol_unit: np.ndarray,
    true_index: np.ndarray,
    llr_map: Any,  # an AffineMap (the fused kernel's rule)
    log_prior: np.ndarray,
    ddof: int,
    znorm: bool,
    precision: str,
    device: str,
    progress: bool,
    row_names: Any,
    blocks: dict[str, int],
    open_set: bool,
) -> tuple[np.ndarray, np.ndarray, OpenSetStats | None]:
    """The fused Triton path of :func:`~lidframe.core.streaming.lid_from_embeddings` (affine maps; no pair counts)."""
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
