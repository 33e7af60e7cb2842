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

__all__ = ["check_jobs", "default_jobs", "exit_with_parent", "process_pool"]


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


def process_pool(jobs: int) -> ProcessPoolExecutor:
    """A pool of *jobs* worker processes that each run :func:`exit_with_parent` first.

    Parameters
    ----------
    jobs : int
        Number of worker processes (>= 1).

    Returns
    -------
    concurrent.futures.ProcessPoolExecutor
        The pool (use it as a context manager to shut it down).
    """
    return ProcessPoolExecutor(max_workers=jobs, initializer=exit_with_parent, initargs=(os.getpid(),))
