"""Run a grid: plan the cells, share the work, cache it, store every finished cell once.

Planning
--------
A cell is (system, attacker, mechanism, calibrator, prior, seed); the mechanism (a
Gaussian speaker mechanism releasing the trial embeddings, ``-`` for none) applies to
data-dir systems only.  The work is shared:

* score sets once per (system, attacker, mechanism, split): score-set files are read as
  they are; data-dir systems are scored by each attacker into the content-addressed
  cache ``OUT/cache/scores/<hash>.npz``;
* calibrator fits once per (system, attacker, mechanism, calibrator): one *task* fits
  the calibrator on dev and evaluates every (prior, seed) cell with it.

Inputs
------
Every cell records what it was computed from, as ``{key: [label, digest]}``:

* the SHA-256 of each file it reads: the dev and eval score-set files; for data-dir
  systems each folder's ``wav.scp`` and ``utt2spk`` and -- when the attacker reads audio
  (its ``reads_audio`` attribute; True unless it says otherwise) -- every audio file they
  list; every file a component spec names (``precomputed?path=``, ``ecapa?checkpoint=``,
  ``watchlist?file=``, ``explicit?file=``, and whatever a component declares with an
  ``input_files(params)`` classmethod, :func:`lidframe.registry.spec_inputs`);
* the code: lidframe's version, and each component's distribution version (a plugin's);
* the settings ``znorm_ddof``, ``[grid.ci]`` and ``[grid.longitudinal]``.

File digests go through :class:`lidframe.data.digests.DigestCache` at
``OUT/cache/digests.sqlite``: a file whose size, mtime, ctime and inode are unchanged
is not read again, so an unchanged corpus costs one ``stat`` per file on a rerun.  The
score cache key hashes the same inputs of its split and attacker.

Store
-----
``OUT/results.sqlite`` (:mod:`lidframe.grid.store`) holds one row per logical cell:
its components, the spec digest, status (``ok`` or ``error`` with the error text), the
summary as JSON, the seconds it took, its inputs and their digest, the path of its
per-trial file ``OUT/cells/<id>-<sha256>.npz`` (trial ids, speakers, LID, posterior;
named by the first 12 hex digits of its SHA-256) and that SHA-256.  A row is written, in
a transaction, only after its file is complete (written to a temporary name, then
renamed), so an interrupted run never leaves a half cell; a recomputed cell's new file
has a new name, so the file its row still names is never overwritten before the row is
replaced.  A rerun skips a cell stored as ``ok`` whose inputs digest is unchanged and
whose per-trial file is there with the SHA-256 stored with it; it recomputes -- and
*replaces* -- a cell whose inputs changed, saying which cells and why (``recomputing 2
cells: eval file scores/eval.npz changed``); failed cells are retried; ``force``
recomputes everything.  A per-trial file whose bytes are not those stored with its cell
(changed, or swapped with another cell's) stops the run before anything is written,
naming it (:func:`lidframe.grid.store.verify_per_trial_files`); ``lidframe report``
checks the same.

Execution
---------
``backend="local"`` runs the tasks in a process pool (``jobs`` workers; ``jobs=1`` runs
them in this process) and ``backend="dask"`` on a dask.distributed cluster
(``scheduler`` address, or a ``distributed.Client``); only the main process writes the
store, under the output folder's lock (:func:`lidframe.grid.store.folder_lock`).  The
scheduler is reached first, through :func:`lidframe.core.cluster.connect` within
:data:`lidframe.core.cluster.CONNECT_TIMEOUT_S`, before anything is created in the
output folder: one that cannot be reached or never answers leaves the folder as it was.
A run that created the output folder and stops before its store exists removes it again.
Pool workers end when the process that started them dies, even by SIGKILL
(:func:`lidframe.runtime.workers.process_pool`).  A failing cell is recorded with its error
and the others go on.

Planning
--------
Checking the spec and planning a grid of many cells takes seconds (for a spec of many
calibrators, fitting each once to check it is most of it): a spec of at least
:data:`lidframe.grid.spec.NOTE_CELLS` cells says so in one line (``note``), and
``progress`` shows bars over the calibrator checks, the planned cells and the computed
cells.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import attrs
import numpy as np

from lidframe.data.digests import DigestCache
from lidframe.data.fileio import StrPath, atomic_path, json_clean, real_path
from lidframe.errors import InputError
from lidframe.grid import store
from lidframe.grid.progress import progress_bar
from lidframe.grid.spec import GridSpec, load_grid_spec
from lidframe.runtime.workers import check_jobs, process_pool

if TYPE_CHECKING:
    import sqlite3

    from distributed import Client

    from lidframe.attackers.base import EmbeddingAttacker

__all__ = ["run_grid", "plan_grid", "open_store", "stored_cells", "check_freshness", "Freshness"]

#: ``{key: [label, digest]}``: what a cell or a score set was computed from.
Inputs = dict[str, list[str]]


def _version() -> str:
    """lidframe's version and a digest of its loaded source (:func:`lidframe._version.code_version`)."""
    from lidframe._version import code_version

    return code_version()


def _ci_key(bootstrap) -> dict:
    """The [grid.ci] settings that identify a cell (its seed is the cell's own)."""
    return {k: v for k, v in bootstrap.to_dict().items() if k != "seed"}


def _hash(*parts) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(json.dumps(part, sort_keys=True, default=str).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def _shown(path: StrPath) -> str:
    """*path* relative to the working directory when it lies below it, else absolute."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative.startswith("..") else relative


def inputs_digest(inputs: Inputs) -> str:
    """One hash of a cell's inputs (their digests, not their labels)."""
    return _hash(sorted((key, value[1]) for key, value in inputs.items()))


# ------------------------------------------------------------------ inputs
class _InputDigests:
    """The inputs of sources and components, each computed once per plan."""

    def __init__(self, digests: DigestCache):
        self.digests = digests
        self._folders: dict[tuple[str, bool], Inputs] = {}
        self._components: dict[tuple[str, str], tuple[Inputs, bool]] = {}

    def source(self, split: str, source: str | dict, *, reads_audio: bool) -> Inputs:
        """Inputs of one split: a score-set file, or data dirs (their lists, and audio if read)."""
        if isinstance(source, str):
            return {f"{split} file": [f"{split} file {_shown(source)}", self.digests.digest(source)]}
        inputs: Inputs = {}
        for role, folder in [("enrol", source["enrol"])] + [("trials", f) for f in source["trials"]]:
            for key, value in self._folder(folder, reads_audio).items():
                inputs[f"{split} {role} {key}"] = [f"{split} {value[0]}", value[1]]
        return inputs

    def _folder(self, folder: str, reads_audio: bool) -> Inputs:
        cached = self._folders.get((folder, reads_audio))
        if cached is not None:
            return cached
        from lidframe.data.kaldi import read_data_dir

        base = Path(folder)
        inputs: Inputs = {}
        for name in ("wav.scp", "utt2spk"):
            inputs[f"{folder} {name}"] = [f"{_shown(base / name)}", self.digests.digest(base / name)]
        if (base / "spk2utt").is_file():  # optional, but read_data_dir checks it against utt2spk
            inputs[f"{folder} spk2utt"] = [f"{_shown(base / 'spk2utt')}", self.digests.digest(base / "spk2utt")]
        if reads_audio:  # a listed file that is missing counts as "missing": its arrival changes the digest
            listing = [
                (u.utt_id, self.digests.digest(u.path) if u.path and os.path.isfile(u.path) else "missing")
                for u in read_data_dir(base)
            ]
            inputs[f"{folder} audio"] = [f"audio listed in {_shown(base / 'wav.scp')}", _hash(listing)]
        self._folders[(folder, reads_audio)] = inputs
        return inputs

    def component(self, kind: str, spec: str) -> tuple[Inputs, bool]:
        """Inputs of a component spec (its files and code version), and whether it reads audio."""
        key = (kind, spec)
        if key not in self._components:
            from lidframe.registry import spec_inputs

            found = spec_inputs(kind, spec)
            inputs: Inputs = {f"{kind} code": [f"{kind} {spec!r} code", found.version]}
            for path in found.files:
                inputs[f"{kind} file {path}"] = [f"{kind} file {_shown(path)}", self.digests.digest(path)]
            self._components[key] = (inputs, found.reads_audio)
        return self._components[key]


def _settings(spec: GridSpec, version: str) -> Inputs:
    return {
        "setting znorm_ddof": ["[grid] znorm_ddof", json.dumps(spec.znorm_ddof)],
        "setting ci": ["[grid.ci]", json.dumps(None if spec.ci is None else _ci_key(spec.ci), sort_keys=True)],
        "setting longitudinal": ["[grid.longitudinal]", json.dumps(spec.longitudinal, sort_keys=True)],
        "lidframe code": ["lidframe code", f"lidframe {version}"],
    }


# ------------------------------------------------------------------- planning
def plan_grid(spec: GridSpec, out_dir: StrPath, *, digests: DigestCache | None = None, progress: bool = False) -> dict:
    """Score jobs and fit tasks of *spec*, every cell with its inputs (see the module docstring).

    Parameters
    ----------
    spec : GridSpec
        A validated spec.
    out_dir : str or os.PathLike
        The output folder (score-cache paths lie below it).
    digests : DigestCache, optional
        Where file digests are looked up and remembered; an in-memory one by default.
    progress : bool
        A tqdm bar over the planned cells.

    Returns
    -------
    dict
        ``{"score_jobs": [...], "tasks": [...]}``; each task has its ``cells``, each cell
        its ``cell_id``, components, ``inputs`` and ``inputs_digest``.
    """
    out = Path(out_dir)
    version = _version()
    found = _InputDigests(digests if digests is not None else DigestCache())
    settings = _settings(spec, version)
    score_jobs, tasks = {}, []
    with progress_bar(spec.n_cells(), "planning cells", "cell", enabled=progress) as advance:
        for system in spec.systems:
            attackers = spec.attackers if system.needs_attacker else ("-",)
            mechanisms = (spec.mechanisms or ("-",)) if system.needs_attacker else ("-",)
            for attacker, mechanism in ((a, m) for a in attackers for m in mechanisms):
                attacker_inputs, reads_audio = found.component("attacker", attacker) if attacker != "-" else ({}, False)
                sources, data_inputs = {}, {}
                for split in ("dev", "eval"):
                    source = getattr(system, split)
                    data_inputs.update(found.source(split, source, reads_audio=reads_audio))
                    if system.needs_attacker:
                        split_inputs = found.source(split, source, reads_audio=reads_audio)
                        key = _hash(
                            "scores",
                            inputs_digest(split_inputs),
                            inputs_digest(attacker_inputs),
                            attacker,
                            mechanism,
                            split,
                            version,
                        )
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
                    calibrator_inputs, _ = found.component("calibrator", calibrator)
                    cells = []
                    for prior in spec.priors:
                        prior_inputs, _ = found.component("prior", prior)
                        for seed in spec.seeds:
                            inputs = {**data_inputs, **attacker_inputs, **calibrator_inputs, **prior_inputs, **settings}
                            cells.append(
                                {
                                    "cell_id": store.cell_id(system.name, attacker, mechanism, calibrator, prior, seed),
                                    "system": system.name,
                                    "attacker": attacker,
                                    "mechanism": mechanism,
                                    "calibrator": calibrator,
                                    "prior": prior,
                                    "seed": seed,
                                    "inputs": inputs,
                                    "inputs_digest": inputs_digest(inputs),
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
                    advance(len(cells))
    return {"score_jobs": list(score_jobs.values()), "tasks": tasks}


_SHA = re.compile(r"^[0-9a-f]{32,64}$")


def inputs_changed(row: store.StoredCell, cell: dict) -> str | None:
    """Why a stored cell's inputs differ from the planned *cell*'s (:func:`why_recomputed`); None if they match.

    The one freshness rule of the grid: ``lidframe grid`` recomputes such a cell and
    ``lidframe report`` (:func:`check_freshness`) flags it as stale.
    """
    if row.inputs_digest == cell["inputs_digest"]:
        return None
    return why_recomputed(row.inputs, cell["inputs"])


def why_recomputed(stored: Inputs | None, current: Inputs) -> str:
    """What changed between a stored cell's inputs and the current ones, in words.

    Parameters
    ----------
    stored : dict or None
        The stored ``{key: [label, digest]}`` (None: stored without input digests).
    current : dict
        The planned inputs.

    Returns
    -------
    str
        E.g. ``"eval file scores/eval.npz changed"``; settings and code versions show
        their old and new values (``"[grid] znorm_ddof changed (1 -> 0)"``).
    """
    if stored is None:
        return "stored without input digests (by an earlier lidframe)"
    parts = []
    for key, (label, digest) in current.items():
        if key not in stored:
            parts.append(f"{label} is a new input")
        elif stored[key][1] != digest:
            shown = "" if _SHA.match(digest) else f" ({stored[key][1]} -> {digest})"
            parts.append(f"{label} changed{shown}")
    parts += [f"{stored[key][0]} is no longer an input" for key in stored if key not in current]
    return "; ".join(parts) or "its inputs changed"


@attrs.frozen
class Freshness:
    """Whether the finished cells of a grid folder are still current (:func:`check_freshness`).

    Attributes
    ----------
    spec : str or None
        The spec the cells were compared with.
    stale : dict
        ``cell_id -> why``: finished cells whose inputs differ from what the spec plans now
        (``"eval file scores/eval.npz changed"``), or that the spec no longer plans
        (``"not in the spec any more"``).
    unchecked : str or None
        Why the cells could not be checked (no ``grid.json``, the spec moved, ...); None
        when they were.
    """

    spec: str | None
    stale: dict[str, str] = attrs.field(factory=dict)
    unchecked: str | None = None


def check_freshness(out_dir: StrPath, *, spec_path: StrPath | None = None) -> Freshness:
    """Plan the grid's spec again and compare every finished cell's inputs digest with the plan.

    What ``lidframe grid`` would recompute because its inputs changed (a score file, an
    audio file, a checkpoint, a setting, lidframe's code) is *stale*: a report of the folder
    shows it, but must say that its numbers are not those of the current inputs.

    Parameters
    ----------
    out_dir : str or os.PathLike
        The grid's output folder.
    spec_path : str or os.PathLike, optional
        The spec to compare with (default: the one ``OUT/grid.json`` names, as it was given
        to ``lidframe grid``).  A spec given here must be a grid spec: one that is not
        there or that does not validate is an error, not a report "not checked".

    Returns
    -------
    Freshness
        The stale cells, or why they could not be checked; nothing is written (the
        digest cache ``OUT/cache/digests.sqlite`` is only read).  The spec's calibrators
        are not fitted to check them (the grid did, before it ran them).

    Raises
    ------
    InputError
        *spec_path* given, and not there, not a file, or not a valid grid spec.
    """
    out = Path(out_dir)
    given = None
    if spec_path is not None:  # asked for by name: its own problems are errors, not "not checked"
        given = load_grid_spec(spec_path, fit_calibrators=False)
    try:
        record = json.loads((out / "grid.json").read_text(encoding="utf-8"))
        ran_in = str(record.get("cwd") or "")
        if spec_path is None:
            spec_path = str(record["spec"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        if spec_path is None:
            return Freshness(
                None, unchecked=f"{out / 'grid.json'} is missing or unreadable, so no spec to compare with"
            )
        ran_in = ""
    if ran_in and real_path(ran_in) != real_path(Path.cwd()):  # real_path: a symlink loop compares, never raises
        # a component option's file (ecapa?checkpoint=model.ckpt) is relative to where the grid ran
        return Freshness(
            str(spec_path), unchecked=f"the grid ran in {ran_in}; run lidframe report from there to check its cells"
        )
    if given is None and not Path(spec_path).is_file():
        return Freshness(str(spec_path), unchecked=f"the grid spec {spec_path} is not there (moved? give --spec)")
    try:
        spec = given if given is not None else load_grid_spec(spec_path, fit_calibrators=False)
        # the grid's digest cache is read, never written: a report changes nothing in the folder
        # but report/ (a file changed since the grid ran is hashed again, in memory)
        plan = plan_grid(spec, out, digests=DigestCache(out / "cache" / "digests.sqlite"))
        stored = store.read_stored_cells(out)
    except Exception as exc:  # advisory: whatever stops the check (a plugin, a stat) must not stop the report
        text = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
        return Freshness(str(spec_path), unchecked=" ".join(text.split()))
    stale: dict[str, str] = {}
    planned = set()
    for task in plan["tasks"]:
        for cell in task["cells"]:
            planned.add(cell["cell_id"])
            row = stored.get(cell["cell_id"])
            changed = None if row is None or row.status != "ok" else inputs_changed(row, cell)
            if changed is not None:
                stale[cell["cell_id"]] = changed
    for key, row in stored.items():
        if row.status == "ok" and key not in planned:
            stale[key] = "not in the spec any more"
    return Freshness(str(spec_path), stale)


# ---------------------------------------------------------------------- work
def _readable(score_file: str) -> bool:
    """Whether a cached score set loads (a damaged cache file is scored again, not failed on forever)."""
    from lidframe.data.scoreset import ScoreSet

    try:
        ScoreSet.load(score_file)
    except InputError:
        return False
    return True


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
    """The grid's SQLite store, opened for writing (created or migrated if needed; :mod:`lidframe.grid.store`)."""
    store.check_store(out_dir, write=True)
    connection, _ = store.open_store(out_dir)
    return connection


def stored_cells(connection: sqlite3.Connection, status: str = "ok") -> set[str]:
    """Ids of stored cells with *status*."""
    return {key for key, cell in store.stored_cells(connection).items() if cell.status == status}


def _store(connection: sqlite3.Connection, out: Path, record: dict, spec_digest: str, replaced: str | None) -> None:
    """Write a finished cell's per-trial file (named by its SHA-256, stored with the row), then its row."""
    per_trial = sha256 = None
    if record["status"] == "ok":
        buffer = io.BytesIO()
        np.savez(
            buffer,
            trial_ids=record["trial_ids"],
            trial_speakers=record["trial_speakers"],
            lid=record["lid"],
            posterior_true=record["posterior_true"],
        )
        content = buffer.getvalue()
        sha256 = hashlib.sha256(content).hexdigest()  # file_sha256 of the file written below
        per_trial = out / "cells" / f"{record['cell_id']}-{sha256[:12]}.npz"
        per_trial.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(per_trial, suffix=".npz") as tmp:
            tmp.write_bytes(content)
    row = {key: record[key] for key in (*store.KEYS, "cell_id", "status", "error", "seconds", "inputs_digest")}
    row.update(
        spec_digest=spec_digest,
        summary=json.dumps(record.get("summary")) if record["status"] == "ok" else None,
        per_trial=str(per_trial.relative_to(out)) if per_trial else None,
        per_trial_sha256=sha256,
        finished_at=time.time(),
        inputs=json.dumps(record["inputs"], sort_keys=True),
    )
    try:
        store.write_cell(connection, out, row, replaced)
    except BaseException:  # no row names the new file (a full disk): it is not left behind
        if per_trial is not None and row["per_trial"] != replaced:
            per_trial.unlink(missing_ok=True)
        raise


# ----------------------------------------------------------------- execution
def _check_backend(backend: str, jobs: int, scheduler: object) -> None:
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


def _connect(backend: str, scheduler: object) -> tuple[Any, bool]:
    """The dask client of a ``dask`` run and whether it was opened here; ``(None, False)`` for ``local``.

    Through :func:`lidframe.core.cluster.connect`, within
    :data:`~lidframe.core.cluster.CONNECT_TIMEOUT_S` (read when called).
    """
    if backend != "dask":
        return None, False
    from lidframe.core import cluster

    return cluster.connect(scheduler, timeout_s=cluster.CONNECT_TIMEOUT_S)


def _executor(
    backend: str, jobs: int, client: Any
) -> tuple[Callable[[], Any] | None, Callable[[Callable, list], Iterator]]:
    """Shutdown (or None) and ``run(fn, items)`` of the backend; *client* is the connected dask client."""
    if backend == "local":
        if jobs <= 1:
            return None, lambda fn, items: (fn(item) for item in items)
        from concurrent.futures import as_completed

        pool = process_pool(jobs)

        def run(fn, items):
            futures = [pool.submit(fn, item) for item in items]
            for future in as_completed(futures):
                yield future.result()

        return pool.shutdown, run
    from distributed import as_completed as dask_as_completed

    def run_dask(fn, items):
        futures = client.map(fn, items, pure=False)
        for future in dask_as_completed(futures):
            yield future.result()

    return None, run_dask


def _todo(
    plan: dict, stored: dict[str, store.StoredCell], out: Path, force: bool, digests: DigestCache
) -> tuple[list, Counter, int]:
    """Tasks holding the cells to compute, the reasons for recomputing stored ones, and how many were stale.

    Raises
    ------
    InputError
        A cell it would reuse whose per-trial file is not the one stored with it
        (:func:`lidframe.grid.store.verify_per_trial_files`).
    """
    reasons: Counter = Counter()
    stale = 0
    tasks = []
    reused = []
    for task in plan["tasks"]:
        todo = []
        for cell in task["cells"]:
            row = stored.get(cell["cell_id"])
            if force or row is None:
                pass
            elif row.status != "ok":
                reasons["it failed before (retried)"] += 1
            elif (changed := inputs_changed(row, cell)) is not None:
                reasons[changed] += 1
                stale += 1
            elif not row.per_trial or not (out / row.per_trial).is_file():
                reasons[f"its per-trial file {row.per_trial} is missing"] += 1
                stale += 1
            elif row.per_trial_sha256 is None:
                reasons["its per-trial file has no recorded digest (stored by an earlier lidframe)"] += 1
                stale += 1
            else:
                reused.append(dict(cell, per_trial=row.per_trial, per_trial_sha256=row.per_trial_sha256))
                continue
            todo.append(cell)
        if todo:
            tasks.append(dict(task, cells=todo))
    store.verify_per_trial_files(out, reused, digest=digests.digest)
    return tasks, reasons, stale


def _say_why(reasons: Counter, log: Callable[[str], Any]) -> None:
    shown = reasons.most_common()
    for reason, count in shown[:10]:
        log(f"recomputing {count} cell{'s' if count != 1 else ''}: {reason}")
    if len(shown) > 10:
        log(f"recomputing {sum(c for _, c in shown[10:])} more cells for {len(shown) - 10} other reasons")


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
    log: Callable[[str], Any] | None = None,
    note: Callable[[str], Any] | None = None,
) -> dict:
    """Run (or resume) a grid.

    Parameters
    ----------
    spec_path : str or os.PathLike
        The TOML spec (:mod:`lidframe.grid.spec`).
    out_dir : str or os.PathLike
        The output folder (store, caches, per-trial files); locked while the grid runs.
    backend : {"local", "dask"}
    jobs : int
        Worker processes of the local backend (1: in this process).
    scheduler : str or distributed.Client, optional
        The dask scheduler (backend ``"dask"``); an address is connected to first, within
        :data:`lidframe.core.cluster.CONNECT_TIMEOUT_S`.
    resume : bool
        Skip cells stored as ``ok`` with unchanged inputs (False: same as *force*).
    force : bool
        Recompute every cell.
    progress : bool
        Show tqdm bars over the calibrator checks, the planned cells and the computed cells.
    log : callable, optional
        Called with one line per group of recomputed cells and why, and on a store migration.
    note : callable, optional
        Called with one line before a large spec (:data:`lidframe.grid.spec.NOTE_CELLS`
        cells or more, or with *progress*) is checked and planned, which takes seconds.

    Returns
    -------
    dict
        Counts ``{"cells", "skipped", "ok", "error", "fits", "scored", "recomputed"}``;
        ``recomputed`` counts stored cells whose inputs changed.

    Raises
    ------
    InputError
        A bad spec or backend choice, a dask scheduler that cannot be reached or does
        not answer, an unreadable or unwritable store or digest cache (locked,
        read-only, its disk full), a per-trial file that is not the one stored with its
        cell, or another grid holding the folder -- all before any cell is computed.
    """
    spec = load_grid_spec(spec_path, progress=progress, note=note)
    _check_backend(backend, jobs, scheduler)
    force = force or not resume
    out = Path(out_dir)
    store.check_store(out, write=True)
    say = log if log is not None else (lambda line: None)
    client, own_client = _connect(backend, scheduler)  # before anything is created in OUT
    try:
        made = _make_folder(out)
        # a run that made OUT and stops before its store exists removes the folder again, holding
        # the lock: never what a run started at the same time made (store.folder_lock)
        with store.folder_lock(out, made=made):
            counts = _run_locked(spec, out, backend, jobs, client, force, progress, say)
    finally:
        if own_client:
            client.close()
    return counts


def _make_folder(out: Path) -> bool:
    """Create the output folder (and its missing parents); whether this call made *out* itself.

    One ``mkdir`` decides: of two runs started at once on a new folder, only one made it.
    """
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a parent that is a file, a read-only or full disk
        raise InputError(f"{out.parent}: cannot create the output folder's parent ({exc.strerror or exc})") from None
    try:
        out.mkdir()
    except FileExistsError:
        if not out.is_dir():
            raise InputError(f"{out}: is a file, not a grid output folder") from None
        return False
    except OSError as exc:
        raise InputError(f"{out}: cannot create the output folder ({exc.strerror or exc})") from None
    return True


def _run_locked(spec, out, backend, jobs, client, force, progress, say) -> dict:
    """Plan, check the stored cells, then compute the others (:func:`run_grid`, under the folder's lock)."""
    connection, migrated = store.open_store(out)  # writes nothing to a store of the current layout
    try:
        if migrated:
            say(migrated)
        digests = DigestCache(out / "cache" / "digests.sqlite")
        plan = plan_grid(spec, out, digests=digests, progress=progress)
        stored = store.stored_cells(connection)
        tasks, reasons, stale = _todo(plan, stored, out, force, digests)  # a wrong per-trial file stops here
        digests.save()
        write_json_summary(out, spec, None)  # the spec these cells come from, even if the run stops
        _say_why(reasons, say)
        planned = {cell["cell_id"] for task in plan["tasks"] for cell in task["cells"]}
        others = len(set(stored) - planned)
        if others:
            say(f"{others} stored cells are not in this spec (left from an earlier one; kept, and reported)")
        counts = _execute(spec, plan, tasks, stored, out, connection, backend, jobs, client, force, progress)
        counts["recomputed"] = stale
    finally:
        connection.close()
    write_json_summary(out, spec, counts)
    return counts


def _execute(spec, plan, tasks, stored, out, connection, backend, jobs, client, force, progress) -> dict:
    needed = {t["dev"] for t in tasks} | {t["eval"] for t in tasks}
    score_jobs = [
        j
        for j in plan["score_jobs"]
        if j["target"] in needed and (force or not Path(j["target"]).is_file() or not _readable(j["target"]))
    ]
    n_cells = sum(len(t["cells"]) for t in plan["tasks"])
    counts = {
        "cells": n_cells,
        "skipped": n_cells - sum(len(t["cells"]) for t in tasks),
        "ok": 0,
        "error": 0,
        "fits": len(tasks),
        "scored": len(score_jobs),
    }

    def keep(record: dict) -> None:
        previous = stored.get(record["cell_id"])
        _store(connection, out, record, spec.digest, previous.per_trial if previous else None)
        counts[record["status"]] += 1

    closer, run = _executor(backend, jobs, client)
    try:
        failed_scores = {}
        for job in score_jobs:  # scoring failures become the error of every cell that needs them
            try:
                Path(job["target"]).unlink(missing_ok=True)  # forced, or damaged: scored again
                _score_job(job)
            except Exception as exc:
                failed_scores[job["target"]] = f"{type(exc).__name__}: {exc}"
        runnable = []
        for task in tasks:
            broken = failed_scores.get(task["dev"]) or failed_scores.get(task["eval"])
            if broken:
                for cell in task["cells"]:
                    keep(dict(cell, status="error", error=broken, seconds=0.0))
            else:
                runnable.append(task)
        total = sum(len(t["cells"]) for t in runnable)
        with progress_bar(total, "grid cells", "cell", enabled=progress) as advance:
            for results in run(_run_task, runnable):
                for record in results:
                    keep(record)
                    advance(1)
    finally:
        if closer is not None:
            closer()
    return counts


def write_json_summary(out: Path, spec: GridSpec, counts: dict | None) -> None:
    """``OUT/grid.json``: the spec (absolute path) and digest, the folder the grid ran in, and the last run's counts.

    Written when a run starts (``counts`` None) and again when it ends, so a report of an
    interrupted run compares its cells with the spec that made them.
    """
    from lidframe.data.fileio import write_json

    write_json(
        out / "grid.json",
        {
            "spec": str(Path(spec.path).resolve()),
            "spec_digest": spec.digest,
            "cwd": os.getcwd(),
            "last_run": counts,
            "lidframe_version": _version(),
        },
    )
