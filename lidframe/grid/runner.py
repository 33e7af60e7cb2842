"""Run a grid: plan the cells, share the work, cache it, store every finished cell once.

Planning
--------
A cell is (system, attacker, mechanism, calibrator, prior, seed); the mechanism (a
Gaussian speaker mechanism releasing the trial embeddings, ``-`` for none) applies to
data-dir systems only.  The work is shared:

* score sets once per (system, attacker, split): score-set files are read as they
  are; data-dir systems are scored by each attacker into the content-addressed cache
  ``OUT/cache/scores/<hash>.npz`` (hash of the data-dir listings, the attacker spec and
  the lidframe version);
* calibrator fits once per (system, attacker, calibrator): one *task* fits the
  calibrator on dev and evaluates every (prior, seed) cell with it.

Store
-----
``OUT/results.sqlite`` (standard-library sqlite3) holds one row per finished cell: its
id (a hash of the cell's components and inputs), the spec digest, status (``ok`` or
``error`` with the error text), the summary as JSON, the seconds it took and the path of
its per-trial file ``OUT/cells/<id>.npz`` (trial ids, speakers, LID, posterior).  A row
is inserted, in a transaction, only after its file is complete (written to a temporary
name, then renamed), so an interrupted run never leaves a half cell.  A rerun skips
cells that are stored as ``ok`` (``--force`` recomputes them); failed cells are retried.

Execution
---------
``backend="local"`` runs the tasks in a process pool (``jobs`` workers; ``jobs=1`` runs
them in this process) and ``backend="dask"`` on a dask.distributed cluster
(``scheduler`` address, or a ``distributed.Client``); only the main process writes the
store.  A failing cell is recorded with its error and the others go on.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, cast

import attrs
import numpy as np

from lidframe.data.fileio import StrPath, atomic_path, file_sha256, json_clean
from lidframe.errors import InputError
from lidframe.grid.spec import GridSpec, load_grid_spec

if TYPE_CHECKING:
    from distributed import Client

    from lidframe.attackers.base import EmbeddingAttacker

__all__ = ["run_grid", "plan_grid", "open_store", "stored_cells"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cells (
    cell_id TEXT PRIMARY KEY,
    system TEXT, attacker TEXT, mechanism TEXT, calibrator TEXT, prior TEXT, seed INTEGER,
    spec_digest TEXT, status TEXT, error TEXT, summary TEXT, per_trial TEXT,
    seconds REAL, finished_at REAL
)
"""


def _version() -> str:
    from lidframe._version import __version__

    return __version__


def _ci_key(bootstrap) -> dict:
    """The [grid.ci] settings that identify a cell (its seed is the cell's own)."""
    return {k: v for k, v in bootstrap.to_dict().items() if k != "seed"}


def _hash(*parts) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(json.dumps(part, sort_keys=True, default=str).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def _source_digest(source) -> str:
    if isinstance(source, str):
        return file_sha256(source)
    listing = []
    for folder in [source["enrol"], *source["trials"]]:
        for name in ("wav.scp", "utt2spk"):
            file = Path(folder) / name
            listing.append(file_sha256(file) if file.is_file() else None)
    return _hash(listing)


# ------------------------------------------------------------------- planning
def plan_grid(spec: GridSpec, out_dir: StrPath) -> dict:
    """Score jobs and fit tasks of *spec* (see the module docstring)."""
    out = Path(out_dir)
    version = _version()
    score_jobs, tasks = {}, []
    for system in spec.systems:
        attackers = spec.attackers if system.needs_attacker else ("-",)
        mechanisms = (spec.mechanisms or ("-",)) if system.needs_attacker else ("-",)
        digests = {"dev": _source_digest(system.dev), "eval": _source_digest(system.eval)}
        for attacker, mechanism in ((a, m) for a in attackers for m in mechanisms):
            sources = {}
            for split in ("dev", "eval"):
                source = getattr(system, split)
                if system.needs_attacker:
                    key = _hash("scores", digests[split], attacker, mechanism, split, version)
                    target = str(out / "cache" / "scores" / f"{key}.npz")
                    score_jobs[target] = {
                        "source": source,
                        "attacker": attacker,
                        "mechanism": mechanism,
                        "target": target,
                    }
                    sources[split] = target
                else:
                    sources[split] = source
            for calibrator in spec.calibrators:
                cells = []
                for prior in spec.priors:
                    for seed in spec.seeds:
                        cell_id = _hash(
                            system.name,
                            digests,
                            attacker,
                            mechanism,
                            calibrator,
                            prior,
                            seed,
                            spec.znorm_ddof,
                            None if spec.ci is None else _ci_key(spec.ci),
                            spec.longitudinal,
                            version,
                        )
                        cells.append(
                            {
                                "cell_id": cell_id,
                                "system": system.name,
                                "attacker": attacker,
                                "mechanism": mechanism,
                                "calibrator": calibrator,
                                "prior": prior,
                                "seed": seed,
                            }
                        )
                tasks.append(
                    {
                        "dev": sources["dev"],
                        "eval": sources["eval"],
                        "calibrator": calibrator,
                        "cells": cells,
                        "znorm_ddof": spec.znorm_ddof,
                        "ci": spec.ci,
                        "longitudinal": spec.longitudinal,
                    }
                )
    return {"score_jobs": list(score_jobs.values()), "tasks": tasks}


# ---------------------------------------------------------------------- work
def _score_job(job: dict) -> str:
    """Score a data-dir split with an attacker into the cache (skipped when cached)."""
    target = Path(job["target"])
    if target.is_file():
        return str(target)
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker
    from lidframe.registry import create

    attacker = create("attacker", job["attacker"])
    enrol = read_data_dir(job["source"]["enrol"])
    trials = [u for folder in job["source"]["trials"] for u in read_data_dir(folder)]
    target.parent.mkdir(parents=True, exist_ok=True)
    if job.get("mechanism", "-") == "-":
        scores = attacker.score(trials, group_by_speaker(enrol))
    else:
        from lidframe.privacy.audit import released_scoreset

        # released_scoreset checks that the attacker embeds and enrols (an EmbeddingAttacker's methods)
        embedding_attacker = cast("EmbeddingAttacker", attacker)
        scores = released_scoreset(embedding_attacker, job["mechanism"], group_by_speaker(enrol), trials)
    scores.save(target)
    return str(target)


def _run_task(task: dict) -> list:
    """Fit one calibrator on dev, evaluate every (prior, seed) cell; errors are returned, not raised."""
    from lidframe.core.evaluation import evaluate_fitted, fit_calibrator
    from lidframe.data.scoreset import ScoreSet

    results = []
    start = time.perf_counter()
    try:
        dev, ev = ScoreSet.load(task["dev"]), ScoreSet.load(task["eval"])
        fitted = fit_calibrator(dev, task["calibrator"], znorm_ddof=task["znorm_ddof"])
        fit_error = None
    except Exception as exc:  # recorded per cell, the grid goes on
        fit_error = f"{type(exc).__name__}: {exc}"
    fit_seconds = time.perf_counter() - start
    for cell in task["cells"]:
        began = time.perf_counter()
        record = dict(cell, fit_seconds=fit_seconds)
        if fit_error is not None:
            results.append(dict(record, status="error", error=fit_error, seconds=fit_seconds))
            continue
        try:
            result = evaluate_fitted(
                ev,
                fitted,
                cell["prior"],
                dev=dev,
                znorm_ddof=task["znorm_ddof"],
                bootstrap=None if task["ci"] is None else attrs.evolve(task["ci"], seed=cell["seed"]),
            )
            summary = result.to_dict()
            settings = task.get("longitudinal")
            if settings and cell["prior"] == "uniform":  # the k-utterance attacker uses a uniform prior
                from lidframe.analyses.longitudinal import longitudinal

                summary["longitudinal"] = {
                    fusion: longitudinal(
                        dev,
                        ev,
                        settings["k"],
                        fusion=fusion,
                        calibrator=task["calibrator"],
                        groups_per_speaker=settings["groups"],
                        znorm_ddof=task["znorm_ddof"],
                        bootstrap=None,
                        seed=cell["seed"],
                    ).to_dict()["rows"]
                    for fusion in settings["fusions"]
                }
            results.append(
                dict(
                    record,
                    status="ok",
                    error=None,
                    summary=json_clean(summary),
                    trial_ids=result.trial_ids,
                    trial_speakers=result.trial_speakers,
                    lid=result.lid,
                    posterior_true=result.posterior_true,
                    seconds=time.perf_counter() - began,
                )
            )
        except Exception as exc:
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            results.append(dict(record, status="error", error=detail, seconds=time.perf_counter() - began))
    return results


# --------------------------------------------------------------------- store
def open_store(out_dir: StrPath) -> sqlite3.Connection:
    """The grid's SQLite store (created if needed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(out / "results.sqlite")
    connection.execute(_SCHEMA)
    connection.commit()
    return connection


def stored_cells(connection: sqlite3.Connection, status: str = "ok") -> set[str]:
    """Ids of stored cells with *status*."""
    return {row[0] for row in connection.execute("SELECT cell_id FROM cells WHERE status = ?", (status,))}


def _store(connection, out: Path, record: dict, spec_digest: str) -> None:
    per_trial = None
    if record["status"] == "ok":
        per_trial = out / "cells" / f"{record['cell_id']}.npz"
        per_trial.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(per_trial, suffix=".npz") as tmp, open(tmp, "wb") as handle:
            np.savez(
                handle,
                trial_ids=record["trial_ids"],
                trial_speakers=record["trial_speakers"],
                lid=record["lid"],
                posterior_true=record["posterior_true"],
            )
    with connection:  # one transaction: the row appears only with its file complete
        connection.execute(
            "INSERT OR REPLACE INTO cells VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record["cell_id"],
                record["system"],
                record["attacker"],
                record["mechanism"],
                record["calibrator"],
                record["prior"],
                record["seed"],
                spec_digest,
                record["status"],
                record["error"],
                json.dumps(record.get("summary")) if record["status"] == "ok" else None,
                str(per_trial.relative_to(out)) if per_trial else None,
                record["seconds"],
                time.time(),
            ),
        )


# ----------------------------------------------------------------- execution
def _executor(backend: str, jobs: int, scheduler):
    if backend == "local":
        if jobs <= 1:
            return None, lambda fn, items: (fn(item) for item in items)
        from concurrent.futures import ProcessPoolExecutor, as_completed

        pool = ProcessPoolExecutor(max_workers=jobs)

        def run(fn, items):
            futures = [pool.submit(fn, item) for item in items]
            for future in as_completed(futures):
                yield future.result()

        return pool.shutdown, run
    if backend == "dask":
        try:
            from distributed import Client
            from distributed import as_completed as dask_as_completed
        except ImportError:
            raise InputError("the dask backend needs dask.distributed: pip install distributed") from None
        if scheduler is None:
            raise InputError("--backend dask needs --scheduler ADDRESS (e.g. tcp://127.0.0.1:8786)")
        own_client = not isinstance(scheduler, Client)
        client = Client(scheduler) if own_client else scheduler

        def run(fn, items):
            futures = client.map(fn, items, pure=False)
            for future in dask_as_completed(futures):
                yield future.result()

        return (client.close if own_client else None), run
    raise InputError(f"backend must be 'local' or 'dask', got {backend!r}")


def run_grid(
    spec_path: StrPath,
    out_dir: StrPath,
    *,
    backend: str = "local",
    jobs: int = 1,
    scheduler: str | Client | None = None,
    resume: bool = True,
    force: bool = False,
    progress: bool = False,
) -> dict:
    """Run (or resume) a grid; return counts ``{"cells", "skipped", "ok", "error", "fits", "scored"}``."""
    spec = load_grid_spec(spec_path)
    out = Path(out_dir)
    plan = plan_grid(spec, out)
    connection = open_store(out)
    done = set() if force or not resume else stored_cells(connection)
    tasks = []
    for task in plan["tasks"]:
        todo = [c for c in task["cells"] if c["cell_id"] not in done]
        if todo:
            tasks.append(dict(task, cells=todo))
    needed = {t["dev"] for t in tasks} | {t["eval"] for t in tasks}
    score_jobs = [j for j in plan["score_jobs"] if j["target"] in needed and (force or not Path(j["target"]).is_file())]
    counts = {
        "cells": spec.n_cells(),
        "skipped": spec.n_cells() - sum(len(t["cells"]) for t in tasks),
        "ok": 0,
        "error": 0,
        "fits": len(tasks),
        "scored": len(score_jobs),
    }
    closer, run = _executor(backend, jobs, scheduler)
    bar = None
    if progress:
        try:
            from tqdm import tqdm

            bar = tqdm(total=sum(len(t["cells"]) for t in tasks), desc="grid cells", unit="cell")
        except ImportError:
            bar = None
    try:
        failed_scores = {}
        for job in score_jobs:  # scoring failures become the error of every cell that needs them
            try:
                _score_job(job)
            except Exception as exc:
                failed_scores[job["target"]] = f"{type(exc).__name__}: {exc}"
        runnable = []
        for task in tasks:
            broken = failed_scores.get(task["dev"]) or failed_scores.get(task["eval"])
            if broken:
                for cell in task["cells"]:
                    _store(connection, out, dict(cell, status="error", error=broken, seconds=0.0), spec.digest)
                    counts["error"] += 1
            else:
                runnable.append(task)
        for results in run(_run_task, runnable):
            for record in results:
                _store(connection, out, record, spec.digest)
                counts[record["status"]] += 1
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        if closer is not None:
            closer()
        connection.close()
    write_json_summary(out, spec, counts)
    return counts


def write_json_summary(out: Path, spec: GridSpec, counts: dict) -> None:
    """``OUT/grid.json``: the spec path and digest, and the counts of the last run."""
    from lidframe.data.fileio import write_json

    write_json(
        out / "grid.json",
        {"spec": str(spec.path), "spec_digest": spec.digest, "last_run": counts, "lidframe_version": _version()},
    )
