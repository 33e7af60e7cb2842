"""Streaming LID across a dask.distributed cluster: blocks of trial rows, one task each.

LID_i, the rank of the true speaker and the binned pair counts of trial i depend only on
trial i's row, the enrolled profiles, the calibrator's closed-form map, the prior and
the bin grid.  :func:`lid_on_cluster` therefore cuts the eval trials into blocks of rows
and runs, for each block, the single-process engine
(:func:`~lidframe.core.streaming.lid_from_embeddings`) on a worker:

* the enrolled profiles (N, d), the map, the log prior and the bin grid are sent once to
  every worker (``client.scatter(..., broadcast=True)``); a block's task carries its own
  trial rows, so it is a pure function of its inputs, which the scheduler holds until it
  has run: a task whose worker is lost is rerun elsewhere and gives the same numbers;
* the bin grid of the binned binary view is fixed on the client, before any task, from
  the closed-form row statistics of *all* trials (:func:`~lidframe.core.streaming.pair_llr_grid`,
  the grid the single-process pass fixes), so the blocks count on one grid and their
  :class:`~lidframe.metrics.binned.BinnedPairs` merge exactly
  (:meth:`~lidframe.metrics.binned.BinnedPairs.merge`: integer counts add);
* the client gathers the blocks in trial order and merges their counts.

Each row goes through the same float64 code as in one process, so LID and ranks equal
the single-process values (``tests/core/test_cluster.py``: LID within 1e-12, ranks and
counts exactly; the Cllr sums, added in another order, to float64 rounding).  Importing
this module does not import ``distributed``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.core.engine import Engine
from lidframe.core.lid import _check_log_prior
from lidframe.core.streaming import StreamingLID, _check_embeddings, _llr_map, lid_from_embeddings, pair_llr_grid
from lidframe.core.znorm import FittedCalibrator, check_ddof, uses_znorm
from lidframe.data.scoreset import check_true_index
from lidframe.errors import InputError
from lidframe.metrics.binned import BinGrid, BinnedPairs

__all__ = ["ClusterLID", "connect", "lid_on_cluster", "CONNECT_TIMEOUT_S", "BLOCK_BYTES"]

#: Seconds :func:`connect` waits for a scheduler given by its address.
CONNECT_TIMEOUT_S = 10
#: Default block size: about this many bytes of float64 trial rows per task (a few MiB, under
#: dask's large-graph warning), and at least four blocks per worker.
BLOCK_BYTES = 4 << 20


@attrs.frozen(eq=False)
class ClusterLID:
    """What :func:`lid_on_cluster` returns.

    Attributes
    ----------
    lid : StreamingLID
        Per-trial LID and ranks in trial order, and the merged pair counts (with
        ``binary_bins``), as the single-process engine returns them.  ``kernel``,
        ``device`` and ``precision`` are those of the blocks (distinct values joined by
        ``","`` if the workers ran different paths).
    scheduler : str
        Address of the scheduler that ran the blocks.
    n_blocks : int
        Blocks of trial rows (tasks).
    block_rows : int
        Trials per block (the last one may hold fewer).
    n_workers : int
        Workers connected when the blocks were submitted.
    """

    lid: StreamingLID
    scheduler: str
    n_blocks: int
    block_rows: int
    n_workers: int


def connect(scheduler: Any, *, timeout_s: float | None = None) -> tuple[Any, bool]:
    """A ``distributed.Client`` for *scheduler* and whether it was opened here (close it after).

    Parameters
    ----------
    scheduler : str or distributed.Client
        A scheduler address (``"tcp://10.0.0.5:8786"``) or a connected client (used as is).
    timeout_s : float, optional
        Seconds to wait for the scheduler at an address (default :data:`CONNECT_TIMEOUT_S`).

    Raises
    ------
    InputError
        distributed is not installed, or nothing answers at the address within *timeout_s*.
    """
    try:
        from distributed import Client
    except ImportError:
        raise InputError("scheduler= needs dask.distributed: pip install distributed") from None
    if isinstance(scheduler, Client):
        return scheduler, False
    if not isinstance(scheduler, str) or not scheduler:
        raise InputError(
            f"scheduler must be a dask scheduler address such as 'tcp://127.0.0.1:8786' or a "
            f"distributed.Client, got {scheduler!r}"
        )
    timeout_s = CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        return Client(scheduler, timeout=timeout_s), True
    except (OSError, TimeoutError, ValueError) as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(f"cannot reach the dask scheduler {scheduler!r} within {timeout_s:g} s: {why}") from None


def _block_lid(trial_rows, true_index, row_names, enrol_emb, llr_map, log_prior, znorm_ddof, engine, grid):
    """One block's per-trial LID, ranks and pair counts: the task a worker runs (no state outside it)."""
    lid = lid_from_embeddings(
        trial_rows,
        enrol_emb,
        true_index,
        llr_map,
        log_prior,
        znorm_ddof=znorm_ddof,
        engine=engine,
        row_names=row_names,
        binary_bins=grid,
    )
    return lid.lid_bits, lid.true_rank, lid.binned_pairs, (lid.kernel, lid.device, lid.precision)


def _default_block_rows(n_trials: int, dim: int, n_workers: int) -> int:
    by_bytes = max(1, BLOCK_BYTES // (8 * dim))
    by_workers = max(1, math.ceil(n_trials / (4 * max(n_workers, 1))))
    return min(by_bytes, by_workers)


def _joined(values) -> str:
    return ",".join(dict.fromkeys(values))


def lid_on_cluster(
    trial_emb: ArrayLike,
    enrol_emb: ArrayLike,
    true_index: ArrayLike,
    calibrator: FittedCalibrator,
    log_prior: ArrayLike,
    *,
    scheduler: Any,
    znorm_ddof: int = 1,
    engine: Engine | None = None,
    row_names: ArrayLike | None = None,
    binary_bins: int | None = None,
    block_rows: int | None = None,
) -> ClusterLID:
    """:func:`~lidframe.core.streaming.lid_from_embeddings` with the trial rows shared out over a dask cluster.

    Parameters
    ----------
    trial_emb : array_like, shape (T, d)
    enrol_emb : array_like, shape (N, d)
    true_index : array_like of int, shape (T,)
        Column of each trial's true speaker, in [0, N) (no impostor trials).
    calibrator : fitted calibrator or llr map
        Its closed-form map (``llr_map()``) is what the workers get.
    log_prior : array_like, shape (N,)
        Natural-log prior over the enrolled speakers.
    scheduler : str or distributed.Client
        Scheduler address (connected with a :data:`CONNECT_TIMEOUT_S` timeout and closed
        after) or a client (left open).
    znorm_ddof : {0, 1}
    engine : Engine, optional
        Run by every worker on its blocks (device ``"auto"`` resolves on the worker).
    row_names : array_like of str, shape (T,), optional
        Trial ids for error messages (default: the global row numbers).
    binary_bins : int, optional
        Count every pair's LLR into this many bins, on the grid of the whole set
        (:func:`~lidframe.core.streaming.pair_llr_grid`, fixed here before any task).
    block_rows : int, optional
        Trials per task (default: ~4 MiB of trial rows and at least 4 blocks per worker).

    Returns
    -------
    ClusterLID
    """
    znorm_ddof = check_ddof(znorm_ddof)
    engine = Engine() if engine is None else engine
    trial_unit, _enrol_unit = _check_embeddings(trial_emb, enrol_emb)  # NaN rows named by their global row
    del _enrol_unit
    n_trials, dim = trial_unit.shape
    enrol = np.ascontiguousarray(enrol_emb, dtype=np.float64)
    trials = np.asarray(trial_emb, dtype=np.float64)
    true_index = check_true_index(true_index, n_trials, enrol.shape[0], allow_impostor=False)
    log_prior = _check_log_prior(log_prior, enrol.shape[0])
    names = np.arange(n_trials) if row_names is None else np.asarray(row_names)
    if block_rows is not None and (isinstance(block_rows, bool) or not isinstance(block_rows, int) or block_rows < 1):
        raise InputError(f"block_rows must be a positive integer, got {block_rows!r}")
    if binary_bins is not None and not (isinstance(binary_bins, (int, np.integer)) and binary_bins >= 1):
        raise InputError(f"binary_bins must be a positive number of bins, got {binary_bins!r}")
    llr_map = _llr_map(calibrator)
    # the raw-score switch travels with the map: a map has no input_scale, the calibrator may
    map_or_calibrator = llr_map if uses_znorm(calibrator) == uses_znorm(llr_map) else calibrator
    grid: BinGrid | None = None
    if binary_bins is not None:  # from every trial's row statistics, once, before any task
        grid = pair_llr_grid(trials, enrol, calibrator, int(binary_bins), znorm_ddof=znorm_ddof, row_names=names)

    client, own_client = connect(scheduler)
    try:
        address = str(client.scheduler.address)
        n_workers = len(client.scheduler_info().get("workers", {}))
        block_rows = block_rows or _default_block_rows(n_trials, dim, n_workers)
        shared = client.scatter([enrol, map_or_calibrator, log_prior, grid], broadcast=True, hash=False)
        starts = range(0, n_trials, block_rows)
        futures = []
        with warnings.catch_warnings():  # a block is a few MiB by default; a larger one is the caller's choice
            warnings.filterwarnings("ignore", message=".*[Ll]arge graph.*")
            for start in starts:
                stop = min(start + block_rows, n_trials)
                futures.append(
                    client.submit(
                        _block_lid,
                        trials[start:stop],
                        true_index[start:stop],
                        names[start:stop],
                        *shared[:3],
                        znorm_ddof,
                        engine,
                        shared[3],
                        pure=False,
                    )
                )
        try:
            blocks = client.gather(futures)
        except BaseException:  # a block's InputError (or an interrupt): stop the others
            client.cancel(futures)
            raise
    finally:
        if own_client:
            client.close()

    binned: BinnedPairs | None = None
    for block in blocks:
        if block[2] is not None:
            binned = block[2] if binned is None else binned.merge(block[2])
    ran = [block[3] for block in blocks]
    lid = StreamingLID(
        lid_bits=np.concatenate([block[0] for block in blocks]),
        true_rank=np.concatenate([block[1] for block in blocks]),
        kernel=_joined(r[0] for r in ran),
        device=_joined(r[1] for r in ran),
        precision=_joined(r[2] for r in ran),
        binned_pairs=binned,
    )
    return ClusterLID(lid=lid, scheduler=address, n_blocks=len(blocks), block_rows=block_rows, n_workers=n_workers)
