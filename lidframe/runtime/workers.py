"""Worker processes that end with the process that started them.

:func:`process_pool` is the one way lidframe starts a local process pool (the grid's
``jobs``, the real-voice demo's anonymisers).  Its workers run :func:`exit_with_parent`
first, so a parent killed even by SIGKILL leaves no orphan computing on: on Linux the
kernel signals the worker (``PR_SET_PDEATHSIG``), and on every platform a daemon thread
polls the parent twice a second and ends the worker once it is gone.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

from lidframe.errors import InputError

__all__ = ["check_jobs", "default_jobs", "default_threads", "exit_with_parent", "process_pool"]


def check_jobs(jobs: object, *, what: str = "worker processes", name: str = "jobs") -> int:
    """*jobs* if it is a positive integer (bools are not), else an :class:`InputError` naming *name* and *what*.

    Parameters
    ----------
    jobs : object
        The number asked for.
    what : str
        What is counted, for the message ("worker processes", "engine processes").
    name : str
        The argument's name as the caller knows it (``jobs``, ``--jobs``).

    Returns
    -------
    int
        *jobs*.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"{name} must be a positive number of {what}, got {jobs!r}")
    return jobs


def default_jobs() -> int:
    """The default of a CLI ``--jobs``: the CPU count (1 where it is unknown)."""
    return os.cpu_count() or 1


def default_threads() -> int:
    """Threads a CPU engine uses by default: the cores this process may run on, or fewer if ``OMP_NUM_THREADS`` says so.

    ``OMP_NUM_THREADS`` (a positive integer; anything else is ignored) is the variable that
    the BLAS and OpenMP libraries under NumPy, SciPy and PyTorch already follow, so one
    setting bounds them all: a grid of several worker processes sets it for its workers.

    Returns
    -------
    int
        At least 1.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    limit = os.environ.get("OMP_NUM_THREADS", "").strip()
    if limit.isdigit() and int(limit) >= 1:
        cores = min(cores, int(limit))
    return max(1, cores)


def exit_with_parent(parent_pid: int) -> None:
    """Pool-worker initializer: end this worker as soon as process *parent_pid* dies.

    Parameters
    ----------
    parent_pid : int
        The process that started the pool.

    Notes
    -----
    A worker killed this way may stop in the middle of a file it writes (the demo's
    anonymisers write their wav files themselves, each through a temporary name): the
    caller must not trust an output it did not see finish (the demo removes a data dir's
    stamp before remaking it and writes it only after).  The grid's workers write nothing;
    only its main process writes the store.
    """
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    started_by = os.getppid()

    def parent_gone() -> bool:
        if os.getppid() != started_by:
            return True
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    if parent_gone():  # it died before this worker got here
        os._exit(1)

    def watch() -> None:
        while not parent_gone():
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="lidframe-parent-watch", daemon=True).start()


def _start_worker(parent_pid: int, threads: int) -> None:
    """Pool-worker initializer: :func:`exit_with_parent`, and this worker's share of the cores (``OMP_NUM_THREADS``)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    exit_with_parent(parent_pid)


def process_pool(jobs: int) -> ProcessPoolExecutor:
    """A pool of *jobs* worker processes that each run :func:`exit_with_parent` first.

    Each worker gets ``OMP_NUM_THREADS`` set to its share of :func:`default_threads`
    (at least 1), so that the engines' threads in *jobs* workers do not ask for *jobs*
    times the cores there are.

    Parameters
    ----------
    jobs : int
        Number of worker processes (>= 1).

    Returns
    -------
    concurrent.futures.ProcessPoolExecutor
        The pool (use it as a context manager to shut it down).
    """
    share = max(1, default_threads() // jobs)
    return ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker, initargs=(os.getpid(), share))
