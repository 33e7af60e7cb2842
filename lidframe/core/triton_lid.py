"""Triton kernel: fused matmul + online logsumexp + mated-score pick, one pass over N.

For query rows q_i (the trial embeddings, pre-scaled so that q_i . k_j is the LLR in
bits up to a per-row constant) and key rows k_j (the centred enrolled embeddings), each
program owns BLOCK_M trials and walks the N enrolled speakers BLOCK_N at a time::

    s = q . k^T (+ log2 prior_j)              fp32 accumulation of bf16/fp16/fp32 inputs
    run_max, run_sum  <- online log2-sum-exp2 of s over the columns seen so far
                         (run_max is also returned: the open set's best enrolled guess)
    mated_i          += s_i,true (before the prior is added)
    above_i          += #{j != true : q_i . k_j > threshold_i}

so the (T, N) score matrix never exists: memory traffic is the two embedding tables.
This is the structure of attention's softmax normaliser (FlashAttention) without the
value product.  Import this module only where Triton is installed; it is loaded lazily
by :mod:`lidframe.core.streaming`.  ``TRITON_INTERPRET=1`` runs it on CPU tensors (slowly;
the tests use that mode; bf16 loads are not supported by the interpreter).
"""

from __future__ import annotations

import os
from typing import Any

import torch
import triton
import triton.language as tl

__all__ = ["lid_lse_triton", "interpreting"]


def interpreting() -> bool:
    """Whether Triton runs in its CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


# Triton reads a kernel's parameter annotations (tl.constexpr marks the compile-time ones): its
# pointers and sizes stay unannotated, as Triton's own kernels leave them
@triton.jit
def _lid_kernel(  # type: ignore[no-untyped-def]
    q_ptr,
    k_ptr,
    bias_ptr,
    true_ptr,
    threshold_ptr,
    lse_ptr,
    max_ptr,
    mated_ptr,
    above_ptr,
    n_rows,
    n_cols,
    dim,
    stride_q,
    stride_k,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n_rows
    dims = tl.arange(0, BLOCK_D)
    dim_ok = dims < dim
    q = tl.load(
        q_ptr + rows.to(tl.int64)[:, None] * stride_q + dims[None, :], mask=row_ok[:, None] & dim_ok[None, :], other=0.0
    )
    true_col = tl.load(true_ptr + rows, mask=row_ok, other=-1)
    threshold = tl.load(threshold_ptr + rows, mask=row_ok, other=0.0)
    run_max = tl.full([BLOCK_M], float("-inf"), tl.float32)
    run_sum = tl.zeros([BLOCK_M], tl.float32)
    mated = tl.zeros([BLOCK_M], tl.float32)
    above = tl.zeros([BLOCK_M], tl.int32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        col_ok = cols < n_cols
        k = tl.load(
            k_ptr + cols.to(tl.int64)[:, None] * stride_k + dims[None, :],
            mask=col_ok[:, None] & dim_ok[None, :],
            other=0.0,
        )
        s = tl.dot(q, tl.trans(k), input_precision=INPUT_PRECISION)
        is_true = cols[None, :] == true_col[:, None]
        mated += tl.sum(tl.where(is_true, s, 0.0), axis=1)
        above += tl.sum(
            (col_ok[None, :] & (s > threshold[:, None]) & (cols[None, :] != true_col[:, None])).to(tl.int32), axis=1
        )
        if HAS_BIAS:
            s += tl.load(bias_ptr + cols, mask=col_ok, other=0.0)[None, :]
        s = tl.where(col_ok[None, :], s, float("-inf"))
        new_max = tl.maximum(run_max, tl.max(s, axis=1))
        safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)  # all-zero prior so far
        run_sum = run_sum * tl.exp2(run_max - safe_max) + tl.sum(tl.exp2(s - safe_max[:, None]), axis=1)
        run_max = new_max
    tl.store(lse_ptr + rows, run_max + tl.log2(run_sum), mask=row_ok)
    tl.store(max_ptr + rows, run_max, mask=row_ok)
    tl.store(mated_ptr + rows, mated, mask=row_ok)
    tl.store(above_ptr + rows, above, mask=row_ok)


_CONFIGS = [
    triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s)
    for m, n, w, s in [
        (128, 64, 4, 2),
        (128, 64, 8, 3),
        (128, 128, 8, 2),
        (64, 128, 4, 3),
        (64, 64, 4, 3),
        (128, 32, 4, 3),
        (256, 64, 8, 2),
    ]
]
_tuned_kernel = None


def _kernel_for(block_m: int | None, block_n: int | None) -> tuple[Any, dict[str, int]]:
    """The autotuned kernel, or the plain one when the blocks are fixed (tests, interpreter)."""
    global _tuned_kernel
    if block_m is None and interpreting():
        block_m, block_n = 32, 32  # autotuning in the interpreter would only cost time
    if block_m is not None:
        return _lid_kernel, {"BLOCK_M": block_m, "BLOCK_N": block_n or 16}
    if _tuned_kernel is None:
        _tuned_kernel = triton.autotune(configs=_CONFIGS, key=["n_cols", "dim", "HAS_BIAS"])(_lid_kernel)
    return _tuned_kernel, {}


def lid_lse_triton(
    query: torch.Tensor,
    key: torch.Tensor,
    bias: torch.Tensor | None,
    true_col: torch.Tensor,
    threshold: torch.Tensor,
    *,
    block_m: int | None = None,
    block_n: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run the fused kernel.

    Parameters
    ----------
    query : Tensor, shape (T, d), bf16, fp16 or fp32, contiguous rows
        Pre-scaled trial vectors (log2 units).
    key : Tensor, shape (N, d), same dtype and device
    bias : Tensor, shape (N,), fp32, or None
        Column offsets (log2 prior); None for a uniform prior (then the caller subtracts
        log2 N).
    true_col : Tensor of int32, shape (T,)
        Column of each trial's true speaker (-1 for an outsider trial: ``mated2`` 0,
        ``above`` meaningless).
    threshold : Tensor of fp32, shape (T,)
        Scores strictly above it (other than the true column) are counted in ``above``.
    block_m, block_n : int, optional
        Fixed tile sizes (default: autotuned per (N, d)).

    Returns
    -------
    lse2, max2, mated2 : Tensor of fp32, shape (T,)
        log2 sum_j 2^(s_ij + bias_j), max_j (s_ij + bias_j) and s_i,true (log2 units,
        the last without bias).
    above : Tensor of int32, shape (T,)
    """
    n_rows, dim = query.shape
    n_cols = key.shape[0]
    lse2 = torch.empty(n_rows, dtype=torch.float32, device=query.device)
    max2 = torch.empty_like(lse2)
    mated2 = torch.empty_like(lse2)
    above = torch.empty(n_rows, dtype=torch.int32, device=query.device)
    kernel, blocks = _kernel_for(block_m, block_n)
    block_d = max(16, triton.next_power_of_2(dim))
    # exact fp32 products for fp32 inputs (not TF32); the default for bf16/fp16 inputs
    precision = "ieee" if query.dtype == torch.float32 else None

    def grid(meta: dict[str, Any]) -> tuple[int]:
        return (triton.cdiv(n_rows, meta["BLOCK_M"]),)

    kernel[grid](
        query,
        key,
        bias if bias is not None else lse2,
        true_col,
        threshold,
        lse2,
        max2,
        mated2,
        above,
        n_rows,
        n_cols,
        dim,
        query.stride(0),
        key.stride(0),
        HAS_BIAS=bias is not None,
        BLOCK_D=block_d,
        INPUT_PRECISION=precision,
        **blocks,
    )
    return lse2, max2, mated2, above
