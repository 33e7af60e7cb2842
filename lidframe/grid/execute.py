"""Execute a planned grid: choose the cells to compute, run the work on a backend, store each finished cell.

``backend="local"`` runs the fit tasks in a process pool (``jobs`` workers; ``jobs=1``
runs them in this process) and ``backend="dask"`` on a dask.distributed cluster; only
this process writes the store (:class:`CellWriter`), under the output folder's lock.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from lidframe.data.digests import DigestCache
from lidframe.data.fileio import atomic_path
from lidframe.errors import InputError
from lidframe.grid import store
from lidframe.grid.freshness import inputs_changed
from lidframe.grid.progress import progress_bar
from lidframe.grid.records import Cell, CellOutcome, FitTask, FusionJob, GridPlan, ScoreJob, stored_name
from lidframe.grid.stored import StoredCell, verify_per_trial_files
from lidframe.grid.work import fuse_splits, readable_scores, run_task, score_split
from lidframe.runtime.workers import check_jobs, process_pool

if TYPE_CHECKING:
    import sqlite3

__all__ = ["RunOptions", "Todo", "CellWriter", "check_backend", "connect", "select_todo", "say_why", "execute"]


def _quiet(line: str) -> None:
    return None


@attrs.frozen(kw_only=True)
class RunOptions:
    """How a grid runs (:func:`lidframe.grid.runner.run_grid`'s options, once checked).

    Attributes
    ----------
    backend : {"local", "dask"}
    jobs : int
        Worker processes of the local backend (1: in this process).
    client : distributed.Client or None
        The connected dask client of a ``dask`` run.
    force : bool
        Recompute every cell.
    progress : bool
        tqdm bars over the planned and the computed cells.
    log : callable
        Called with one line per group of recomputed cells and why, and on a store migration.
    """

    backend: str = "local"
    jobs: int = 1
    client: Any = None
    force: bool = False
    progress: bool = False
    log: Callable[[str], Any] = _quiet


def check_backend(backend: str, jobs: int, scheduler: object) -> None:
    """Refuse a bad backend choice before anything is written."""
    if backend not in ("local", "dask"):
        raise InputError(f"backend must be 'local' or 'dask', got {backend!r}")
    check_jobs(jobs)
    if backend == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise InputError("the dask backend needs dask.distributed: pip install distributed") from None
        if scheduler is None:
            raise InputError("--backend dask needs --scheduler ADDRESS (e.g. tcp://127.0.0.1:8786)")


def connect(backend: str, scheduler: object) -> tuple[Any, bool]:
    """The dask client of a ``dask`` run and whether it was opened here; ``(None, False)`` for ``local``.

    Through :func:`lidframe.core.cluster.connect`, within
    :data:`~lidframe.core.cluster.CONNECT_TIMEOUT_S` (read when called).
    """
    if backend != "dask":
        return None, False
    from lidframe.core import cluster

    return cluster.connect(scheduler, timeout_s=cluster.CONNECT_TIMEOUT_S)


def _executor(options: RunOptions) -> tuple[Callable[[], Any] | None, Callable[[Callable, list], Iterator]]:
    """Shutdown (or None) and ``run(fn, items)`` of the backend."""
    if options.backend == "local":
        if options.jobs <= 1:
            return None, lambda fn, items: (fn(item) for item in items)
        from concurrent.futures import as_completed

        pool = process_pool(options.jobs)

        def run(fn, items):
            futures = [pool.submit(fn, item) for item in items]
            for future in as_completed(futures):
                yield future.result()

        return pool.shutdown, run
    from distributed import as_completed as dask_as_completed

    def run_dask(fn, items):
        futures = options.client.map(fn, items, pure=False)
        for future in dask_as_completed(futures):
            yield future.result()

    return None, run_dask


@attrs.frozen(kw_only=True)
class Todo:
    """What a run computes (:func:`select_todo`).

    Attributes
    ----------
    tasks : tuple of FitTask
        The plan's tasks that hold a cell to compute, each with only those cells.
    reasons : collections.Counter
        ``why -> count`` of the stored cells computed again.
    stale : int
        Stored ``ok`` cells computed again because their inputs (or per-trial file) changed.
    """

    tasks: tuple[FitTask, ...]
    reasons: Counter = attrs.field(eq=False)
    stale: int


def _why_again(row: StoredCell | None, cell: Cell, out: Path, force: bool) -> tuple[str | None, bool]:
    """Why a planned cell is computed (None: reuse it) and whether its stored ``ok`` row was stale."""
    if force or row is None:
        return "", False
    if row.status != "ok":
        return "it failed before (retried)", False
    if (changed := inputs_changed(row, cell)) is not None:
        return changed, True
    if not row.per_trial or not (out / row.per_trial).is_file():
        return f"its per-trial file {row.per_trial} is missing", True
    if row.per_trial_sha256 is None:
        return "its per-trial file has no recorded digest (stored by an earlier lidframe)", True
    return None, False


def select_todo(plan: GridPlan, stored: dict[str, StoredCell], out: Path, *, force: bool, digests: DigestCache) -> Todo:
    """The cells to compute, the reasons for recomputing stored ones, and how many were stale.

    Raises
    ------
    InputError
        A cell it would reuse whose per-trial file is not the one stored with it
        (:func:`lidframe.grid.stored.verify_per_trial_files`).
    """
    reasons: Counter = Counter()
    stale = 0
    tasks = []
    reused: list[StoredCell] = []
    for task in plan.tasks:
        todo = []
        for cell in task.cells:
            row = stored.get(cell.cell_id)
            why, was_stale = _why_again(row, cell, out, force)
            if why is None and row is not None:
                reused.append(row)
                continue
            if why:
                reasons[why] += 1
            stale += was_stale
            todo.append(cell)
        if todo:
            tasks.append(attrs.evolve(task, cells=tuple(todo)))
    verify_per_trial_files(out, reused, digest=digests.digest)
    return Todo(tasks=tuple(tasks), reasons=reasons, stale=stale)


def say_why(reasons: Counter, log: Callable[[str], Any]) -> None:
    """One line per reason for recomputing stored cells (the ten most common, then how many more)."""
    shown = reasons.most_common()
    for reason, count in shown[:10]:
        log(f"recomputing {count} cell{'s' if count != 1 else ''}: {reason}")
    if len(shown) > 10:
        log(f"recomputing {sum(c for _, c in shown[10:])} more cells for {len(shown) - 10} other reasons")


#: The arrays of a per-trial file, in the order they are written (the file's bytes, hence its SHA-256, follow it).
_PER_TRIAL_ARRAYS = ("trial_ids", "trial_speakers", "lid", "posterior_true")
#: The further arrays of an open-set cell's file, after those (a closed-set cell's file is as it always was).
_OPEN_SET_ARRAYS = ("outsider", "membership_bits", "top_posterior")


class CellWriter:
    """Stores finished cells: each one's per-trial file (named by its SHA-256), then its row, counting them.

    Parameters
    ----------
    connection : sqlite3.Connection
        The store, open for writing (:func:`lidframe.grid.store.open_store`).
    out : pathlib.Path
        The output folder.
    spec_digest : str
        The digest of the spec the cells come from.
    stored : dict
        ``cell_id -> StoredCell`` before the run (a replaced row's per-trial file goes).
    """

    def __init__(self, connection: sqlite3.Connection, out: Path, spec_digest: str, stored: dict[str, Any]):
        self.connection, self.out, self.spec_digest, self.stored = connection, out, spec_digest, stored
        self.counts = {"ok": 0, "error": 0}

    def write(self, outcome: CellOutcome) -> None:
        """Write one finished (or failed) cell."""
        previous = self.stored.get(outcome.cell.cell_id)
        replaced = previous.per_trial if previous else None
        per_trial, sha256 = self._per_trial_file(outcome) if outcome.status == "ok" else (None, None)
        row = self._row(outcome, per_trial, sha256)
        try:
            store.write_cell(self.connection, self.out, row, replaced)
        except BaseException:  # no row names the new file (a full disk): it is not left behind
            if per_trial is not None and row["per_trial"] != replaced:
                per_trial.unlink(missing_ok=True)
            raise
        self.counts[outcome.status] += 1

    def _per_trial_file(self, outcome: CellOutcome) -> tuple[Path, str]:
        buffer = io.BytesIO()
        arrays: dict[str, Any] = {name: getattr(outcome, name) for name in _PER_TRIAL_ARRAYS}
        arrays.update({name: getattr(outcome, name) for name in _OPEN_SET_ARRAYS if getattr(outcome, name) is not None})
        np.savez(buffer, **arrays)
        content = buffer.getvalue()
        sha256 = hashlib.sha256(content).hexdigest()  # file_sha256 of the file written below
        per_trial = self.out / "cells" / f"{outcome.cell.cell_id}-{sha256[:12]}.npz"
        per_trial.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(per_trial, suffix=".npz") as tmp:
            tmp.write_bytes(content)
        return per_trial, sha256

    def _row(self, outcome: CellOutcome, per_trial: Path | None, sha256: str | None) -> dict[str, Any]:
        """The store row of *outcome*: its components as stored (``-`` for none), then what it gave."""
        cell = outcome.cell
        return {
            "cell_id": cell.cell_id,
            "system": cell.system,
            "attacker": stored_name(cell.attacker),
            "mechanism": stored_name(cell.mechanism),
            "calibrator": cell.calibrator,
            "prior": cell.prior,
            "seed": cell.seed,
            "spec_digest": self.spec_digest,
            "status": outcome.status,
            "error": outcome.error,
            "summary": json.dumps(outcome.summary) if outcome.status == "ok" else None,
            "per_trial": str(per_trial.relative_to(self.out)) if per_trial else None,
            "seconds": outcome.seconds,
            "finished_at": time.time(),
            "inputs_digest": cell.inputs_digest,
            "inputs": json.dumps(cell.inputs, sort_keys=True),
            "per_trial_sha256": sha256,
            "scenario": stored_name(cell.scenario),
        }


def _cache_jobs(plan: GridPlan, tasks: Iterable[FitTask], force: bool) -> tuple[list[ScoreJob], list[FusionJob]]:
    """The score and fusion jobs the *tasks* need whose cache files are missing, damaged, or to be computed again.

    A fusion job to run needs its members' score sets, which are scored where their files are missing too.
    """
    needed = {t.dev for t in tasks} | {t.eval for t in tasks}
    fusions = [
        job
        for job in plan.fusion_jobs
        if job.dev_target in needed and (force or not all(readable_scores(t) for t in job.targets))
    ]
    needed |= {path for job in fusions for path in (*job.dev, *job.eval)}
    scores = [
        job
        for job in plan.score_jobs
        if job.target in needed and (force or not Path(job.target).is_file() or not readable_scores(job.target))
    ]
    return scores, fusions


def _fill_cache(score_jobs: list[ScoreJob], fusion_jobs: list[FusionJob]) -> dict[str, str]:
    """Score, then fuse, into the cache; ``target -> error`` of each file that could not be made.

    A member that failed is the error of every fusion that reads it.
    """
    failed: dict[str, str] = {}
    for job in score_jobs:  # scoring failures become the error of every cell that needs them
        try:
            Path(job.target).unlink(missing_ok=True)  # forced, or damaged: scored again
            score_split(job)
        except Exception as exc:  # noqa: BLE001 - any scoring failure becomes the error of its cells
            failed[job.target] = f"{type(exc).__name__}: {exc}"
    for fusion in fusion_jobs:
        broken = next((failed[path] for path in (*fusion.dev, *fusion.eval) if path in failed), None)
        if broken is None:
            try:
                for target in fusion.targets:  # forced, or damaged: fused again
                    Path(target).unlink(missing_ok=True)
                fuse_splits(fusion)
            except Exception as exc:  # noqa: BLE001 - any fusion failure becomes the error of its cells
                broken = f"{type(exc).__name__}: {exc}"
        if broken is not None:
            failed.update(dict.fromkeys(fusion.targets, f"{fusion.attacker}: {broken}"))
    return failed


def execute(plan: GridPlan, todo: Todo, writer: CellWriter, options: RunOptions) -> dict[str, int]:
    """Score and fuse what the cells need, then compute them, storing each; the run's counts (without ``recomputed``)."""
    score_jobs, fusion_jobs = _cache_jobs(plan, todo.tasks, options.force)
    n_cells = plan.n_cells
    counts = {"cells": n_cells, "skipped": n_cells - sum(len(t.cells) for t in todo.tasks)}
    closer, run = _executor(options)
    try:
        failed_scores = _fill_cache(score_jobs, fusion_jobs)
        runnable = []
        for task in todo.tasks:
            broken = failed_scores.get(task.dev) or failed_scores.get(task.eval)
            if broken:
                for cell in task.cells:
                    writer.write(CellOutcome(cell=cell, status="error", error=broken, seconds=0.0))
            else:
                runnable.append(task)
        total = sum(len(t.cells) for t in runnable)
        with progress_bar(total, "grid cells", "cell", enabled=options.progress) as advance:
            for outcomes in run(run_task, runnable):
                for outcome in outcomes:
                    writer.write(outcome)
                    advance(1)
    finally:
        if closer is not None:
            closer()
    scored = len(score_jobs) + 2 * len(fusion_jobs)  # a fusion writes a dev and an eval set
    return {**counts, **writer.counts, "fits": len(todo.tasks), "scored": scored}
