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

import asyncio
import contextlib
import math
import os
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.core.cosine import as_llr_map, check_embeddings
from lidframe.core.engine import Engine
from lidframe.core.lid import check_log_prior
from lidframe.core.openset import OpenSetStats
from lidframe.core.streaming import StreamingResult, lid_from_embeddings, pair_llr_grid
from lidframe.core.znorm import FittedCalibrator, check_ddof, uses_znorm
from lidframe.data.scoreset import check_true_index
from lidframe.errors import InputError, shorten
from lidframe.metrics.binned import BinnedPairs
from lidframe.metrics.binned_grid import BinGrid

__all__ = ["ClusterResult", "connect", "lid_on_cluster", "CONNECT_TIMEOUT_S", "BLOCK_BYTES"]

#: Seconds :func:`connect` waits for a scheduler given by its address.
CONNECT_TIMEOUT_S = 10
#: Default block size: about this many bytes of float64 trial rows per task (a few MiB, under
#: dask's large-graph warning), and at least four blocks per worker.
BLOCK_BYTES = 4 << 20


@attrs.frozen(eq=False)
class ClusterResult:
    """What :func:`lid_on_cluster` returns.

    Attributes
    ----------
    lid : StreamingResult
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

    lid: StreamingResult
    scheduler: str
    n_blocks: int
    block_rows: int
    n_workers: int


def connect(scheduler: Any, *, timeout_s: float | None = None) -> tuple[Any, bool]:
    """A ``distributed.Client`` for *scheduler* and whether it was opened here (close it after).

    An address is connected within *timeout_s* or refused: a closed port, an unreachable or
    unknown host, a server that accepts the connection and never replies (distributed's own
    handshake waits for it without a limit, whatever the Client's ``timeout``) and one that
    answers but not as a dask scheduler are each an :class:`~lidframe.errors.InputError`
    after at most *timeout_s* (and a fraction of a second).  The address is first tried
    on an event loop of its own, in a thread of its own, closed after
    (:func:`_scheduler_failure`: a TCP connection, then distributed's handshake), so a
    refusal there leaves no thread, loop or connection behind; the Client is then made
    with the time left, under the same overall deadline.

    A server that answers the probe and then stalls the Client's own connection is
    refused at the deadline too, but a Client being made cannot be interrupted: its
    thread (a daemon, which does not keep the process alive) and the Client's own
    connection attempt are left to end by themselves, and the Client is closed if it
    completes after the refusal.  Only then can something outlive the call.

    Parameters
    ----------
    scheduler : str or distributed.Client
        A scheduler address (``"tcp://10.0.0.5:8786"``) or a connected client (used as is).
    timeout_s : float, optional
        Seconds to wait for the scheduler at an address (default :data:`CONNECT_TIMEOUT_S`).

    Raises
    ------
    InputError
        distributed is not installed, *timeout_s* is not a positive number of seconds, or
        no dask scheduler answers at the address within *timeout_s*.
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
    timeout_s = _check_timeout(CONNECT_TIMEOUT_S if timeout_s is None else timeout_s)
    deadline = time.monotonic() + timeout_s

    def refused(why: str) -> InputError:
        return InputError(f"cannot reach the dask scheduler {scheduler!r} within {timeout_s:g} s: {why}")

    finished, failure = _run_until(deadline, lambda: asyncio.run(_scheduler_failure(scheduler, timeout_s)))
    if not finished:  # only a name lookup can outlive the deadline here (it ends by itself, in a daemon thread)
        raise refused("no answer (the host name lookup did not finish)")
    if failure is not None:
        raise refused(failure)

    finished, client = _open_client(scheduler, deadline)
    if not finished:
        raise refused("it answered the handshake but the client connection did not complete")
    if isinstance(client, BaseException):
        why = _reason(client)
        del client  # its traceback holds the half-made Client; dropped, that Client closes its loop
        raise refused(why)
    return client, True


def _open_client(scheduler: str, deadline: float) -> tuple[bool, Any]:
    """Make a ``distributed.Client`` for *scheduler* in a daemon thread until *deadline* (:func:`_run_until`).

    Returns ``(True, client)``, ``(True, exception)`` or ``(False, None)``.  A Client completed
    after the deadline is closed: whichever of this thread (giving up) and the connecting
    one (done) comes second under the lock closes it.
    """
    from distributed import Client

    handover = threading.Lock()
    late: dict[str, Any] = {}

    def open_client() -> Any:
        import dask

        left = max(deadline - time.monotonic(), 0.1)
        with dask.config.set({"distributed.comm.timeouts.connect": f"{left}s"}):
            client = Client(scheduler, timeout=left)
        with handover:
            late["client"] = client
            abandoned = late.get("abandoned", False)
        if abandoned:
            _close_quietly(client)
        return client

    finished, client = _run_until(deadline, open_client)
    if not finished:
        with handover:
            late["abandoned"] = True
            completed = late.get("client")
        if completed is not None:  # done between the deadline and now
            _close_quietly(completed)
    return finished, client


#: Seconds past the deadline that :func:`connect` waits for its own thread to report.
_DEADLINE_GRACE_S = 0.5


def _check_timeout(timeout_s: object) -> float:
    """*timeout_s* as a float number of seconds, or an InputError if it is not positive and finite."""
    if (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, (int, float, np.integer, np.floating))
        or not math.isfinite(timeout_s)
        or timeout_s <= 0
    ):
        raise InputError(f"timeout_s must be a positive, finite number of seconds, got {timeout_s!r}")
    return float(timeout_s)


def _run_until(deadline: float, work: Callable[[], Any]) -> tuple[bool, Any]:
    """Run *work* in a daemon thread until the monotonic *deadline* (and a grace).

    Returns ``(True, result)``, ``(True, exception)`` if *work* raised, or ``(False, None)``
    if it had not finished (the thread is left to end by itself; being a daemon, it does not
    keep the process alive).
    """
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # noqa: BLE001 -- any outcome, an interrupt too, is reported to the caller's thread
            outcome.append(exc)

    thread = threading.Thread(target=run, name="lidframe-connect", daemon=True)
    thread.start()
    thread.join(max(deadline - time.monotonic(), 0.0) + _DEADLINE_GRACE_S)
    return (True, outcome[0]) if outcome else (False, None)


def _close_quietly(client: Any) -> None:
    """Close a Client that :func:`connect` gave up on, best effort (nothing waits for it)."""
    with contextlib.suppress(Exception):
        client.close()


def _reason(exc: BaseException) -> str:
    """One line saying why a connection attempt failed."""
    return " ".join(str(exc).split()) or type(exc).__name__


async def _scheduler_failure(address: str, timeout_s: float) -> str | None:
    """Why no dask scheduler answers at *address* within *timeout_s* (``None``: one did, and was closed).

    A ``tcp://`` or ``tls://`` address is first opened as a plain TCP connection (so that a
    closed port or an unreachable host is told apart from a server that accepts and says
    nothing), then distributed's handshake runs, bounded by what is left of *timeout_s*.
    """
    from distributed.comm import connect as open_comm
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    try:
        scheme, location = parse_address(address)
        get_backend(scheme)
        host, port = parse_host_port(location) if scheme in ("tcp", "tls") else (None, None)
    except ValueError as exc:
        return f"not a dask scheduler address ({_reason(exc)}; expected e.g. 'tcp://127.0.0.1:8786')"
    if host is not None:
        failure = await _tcp_failure(host, port, timeout_s)
        if failure is not None:
            return failure
    from distributed.security import Security

    # the client's own security settings (distributed.comm.tls.* in the dask config), as Client uses them
    connection_args = Security().get_connection_args("client")
    if scheme == "tls" and connection_args.get("ssl_context") is None:
        return (
            "a tls:// address needs the client's TLS settings (distributed.comm.tls.ca-file, "
            "distributed.comm.tls.client.cert and .key in the dask config)"
        )
    left = max(deadline - loop.time(), 0.0)
    try:
        comm = await asyncio.wait_for(open_comm(address, timeout=max(left, 1e-3), **connection_args), left)
    except TimeoutError:
        return "it accepted the connection but sent no reply (is a dask scheduler listening there?)"
    except OSError as exc:
        return _reason(exc)
    except Exception as exc:  # noqa: BLE001 -- whatever distributed raises on a reply it cannot read: not a scheduler
        return f"what answers there is not a dask scheduler ({type(exc).__name__}: {shorten(_reason(exc))})"
    try:  # a scheduler answered; the probe's connection is closed (within the time left)
        await asyncio.wait_for(comm.close(), max(deadline - loop.time(), 0.1))
    except (TimeoutError, OSError):
        comm.abort()
    return None


async def _tcp_failure(host: str, port: int | None, timeout_s: float) -> str | None:
    """Why no plain TCP connection opens to *host*:*port* within *timeout_s* (``None``: one did, and was closed)."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except TimeoutError:
        return "no connection (is the host reachable?)"
    except ConnectionRefusedError:
        return f"no connection (refused: nothing listens on port {port} of {host})"
    except socket.gaierror as exc:
        return f"no connection (unknown host {host!r}: {exc.strerror})"
    except OSError as exc:
        return f"no connection ({os.strerror(exc.errno) if exc.errno else _reason(exc)})"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return None


#: What a worker returns for a block: LID, ranks, pair counts, (kernel, device, precision), open-set statistics.
BlockResult = tuple[np.ndarray, np.ndarray, BinnedPairs | None, tuple[str, str, str], OpenSetStats | None]


def _block_lid(
    trial_rows: np.ndarray,
    true_index: np.ndarray,
    row_names: np.ndarray,
    enrol_emb: np.ndarray,
    llr_map: FittedCalibrator,
    log_prior: np.ndarray,
    znorm_ddof: int,
    engine: Engine,
    grid: BinGrid | None,
    open_set: bool,
) -> BlockResult:
    """One block's per-trial LID, ranks, pair counts and open-set statistics: the task a worker runs (no state outside it)."""
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
        open_set=open_set,
    )
    return lid.lid_bits, lid.true_rank, lid.binned_pairs, (lid.kernel, lid.device, lid.precision), lid.open_stats


def _default_block_rows(n_trials: int, dim: int, n_workers: int) -> int:
    by_bytes = max(1, BLOCK_BYTES // (8 * dim))
    by_workers = max(1, math.ceil(n_trials / (4 * max(n_workers, 1))))
    return min(by_bytes, by_workers)


def _joined(values: Iterable[str]) -> str:
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
    open_set: bool = False,
) -> ClusterResult:
    """:func:`~lidframe.core.streaming.lid_from_embeddings` with the trial rows shared out over a dask cluster.

    Parameters
    ----------
    trial_emb : array_like, shape (T, d)
    enrol_emb : array_like, shape (N, d)
    true_index : array_like of int, shape (T,)
        Column of each trial's true speaker, in [0, N); -1 for an outsider trial only
        with *open_set*.
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
    open_set : bool, default False
        Also return every trial's open-set statistics (``lid.open_stats``), as
        :func:`~lidframe.core.streaming.lid_from_embeddings` does.

    Returns
    -------
    ClusterResult
    """
    znorm_ddof = check_ddof(znorm_ddof)
    engine = Engine() if engine is None else engine
    trials, enrol, true_index, log_prior, names = _checked_rows(
        trial_emb, enrol_emb, true_index, log_prior, row_names, open_set
    )
    _check_blocks(block_rows, binary_bins)
    llr_map = as_llr_map(calibrator)
    # the raw-score switch travels with the map: a map has no input_scale, the calibrator may
    map_or_calibrator = llr_map if uses_znorm(calibrator) == uses_znorm(llr_map) else calibrator
    grid: BinGrid | None = None
    if binary_bins is not None:  # from every trial's row statistics, once, before any task
        grid = pair_llr_grid(trials, enrol, calibrator, int(binary_bins), znorm_ddof=znorm_ddof, row_names=names)
    client, own_client = connect(scheduler)
    try:
        address = str(client.scheduler.address)
        n_workers = len(client.scheduler_info().get("workers", {}))
        block_rows = block_rows or _default_block_rows(trials.shape[0], trials.shape[1], n_workers)
        shared = client.scatter([enrol, map_or_calibrator, log_prior, grid], broadcast=True, hash=False)
        blocks = _row_blocks(block_rows, trials, true_index, names)
        results = _run_blocks(client, blocks, shared, znorm_ddof, engine, bool(open_set))
    finally:
        if own_client:
            client.close()
    return ClusterResult(
        lid=_merged(results), scheduler=address, n_blocks=len(results), block_rows=block_rows, n_workers=n_workers
    )


def _merged_stats(stats: list[OpenSetStats | None]) -> OpenSetStats | None:
    """The blocks' open-set statistics in trial order (None: the blocks ran in the closed set)."""
    if stats[0] is None:
        return None
    present = [block for block in stats if block is not None]
    assert len(present) == len(stats)  # every block runs with the same open_set
    return OpenSetStats(
        log_evidence=np.concatenate([block.log_evidence for block in present]),
        log_top=np.concatenate([block.log_top for block in present]),
    )


def _row_blocks(block_rows: int, *arrays: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """The blocks of *block_rows* rows of *arrays* (trial rows, true index, names), one tuple per block."""
    return [
        tuple(array[start : start + block_rows] for array in arrays) for start in range(0, len(arrays[0]), block_rows)
    ]


def _check_blocks(block_rows: object, binary_bins: object) -> None:
    """An InputError unless *block_rows* and *binary_bins* are None or positive integers (of :func:`lid_on_cluster`)."""
    if block_rows is not None and (isinstance(block_rows, bool) or not isinstance(block_rows, int) or block_rows < 1):
        raise InputError(f"block_rows must be a positive integer, got {block_rows!r}")
    if binary_bins is not None and not (isinstance(binary_bins, (int, np.integer)) and binary_bins >= 1):
        raise InputError(f"binary_bins must be a positive number of bins, got {binary_bins!r}")


def _checked_rows(
    trial_emb: ArrayLike,
    enrol_emb: ArrayLike,
    true_index: ArrayLike,
    log_prior: ArrayLike,
    row_names: ArrayLike | None,
    open_set: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(trials (T, d), enrolled (N, d), true_index, log_prior, row names) as the blocks get them, checked."""
    trial_unit, _enrol_unit = check_embeddings(trial_emb, enrol_emb)  # NaN rows named by their global row
    n_trials = trial_unit.shape[0]
    enrol = np.ascontiguousarray(enrol_emb, dtype=np.float64)
    trials = np.asarray(trial_emb, dtype=np.float64)
    true_index = check_true_index(true_index, n_trials, enrol.shape[0], allow_outsider=bool(open_set))
    log_prior = check_log_prior(log_prior, enrol.shape[0])
    names = np.arange(n_trials) if row_names is None else np.asarray(row_names)
    return trials, enrol, true_index, log_prior, names


def _run_blocks(
    client: Any,
    blocks: Sequence[tuple[np.ndarray, ...]],
    shared: list,
    znorm_ddof: int,
    engine: Engine,
    open_set: bool,
) -> list[BlockResult]:
    """Submit one task per block of (trial rows, true index, names) and gather them in order (cancelled on an error)."""
    futures = []
    with warnings.catch_warnings():  # a block is a few MiB by default; a larger one is the caller's choice
        warnings.filterwarnings("ignore", message=".*[Ll]arge graph.*")
        for rows, cols, names in blocks:
            futures.append(
                client.submit(
                    _block_lid, rows, cols, names, *shared[:3], znorm_ddof, engine, shared[3], open_set, pure=False
                )
            )
    try:
        return client.gather(futures)
    except BaseException:  # a block's InputError (or an interrupt): stop the others
        client.cancel(futures)
        raise


def _merged(blocks: list[BlockResult]) -> StreamingResult:
    """The blocks' per-trial outputs in trial order and their pair counts merged, as one StreamingResult."""
    binned: BinnedPairs | None = None
    for block in blocks:
        if block[2] is not None:
            binned = block[2] if binned is None else binned.merge(block[2])
    ran = [block[3] for block in blocks]
    open_stats = _merged_stats([block[4] for block in blocks])
    return StreamingResult(
        lid_bits=np.concatenate([block[0] for block in blocks]),
        true_rank=np.concatenate([block[1] for block in blocks]),
        kernel=_joined(r[0] for r in ran),
        device=_joined(r[1] for r in ran),
        precision=_joined(r[2] for r in ran),
        binned_pairs=binned,
        open_stats=open_stats,
    )
