"""Run a grid: plan the cells, share the work, cache it, store every finished cell once.

The rooms: the spec (:mod:`~lidframe.grid.spec`), the records (:mod:`~lidframe.grid.records`),
the cells' inputs (:mod:`~lidframe.grid.inputs`), the plan (:mod:`~lidframe.grid.plan`),
freshness (:mod:`~lidframe.grid.freshness`), the workers' work (:mod:`~lidframe.grid.work`),
execution (:mod:`~lidframe.grid.execute`), the store (:mod:`~lidframe.grid.store`) and
the folder's lock (:mod:`~lidframe.grid.lock`); this module runs them in order.

Planning
--------
A cell is (system, attacker, mechanism, calibrator, prior, seed), and with the
``scenarios`` axis a threat-model scenario (:mod:`lidframe.data.scenario`); the mechanism
(a Gaussian speaker mechanism releasing the trial embeddings) and the scenario apply to
data-dir systems only (None for none, stored as ``-``).  The work is shared:

* score sets once per (system, attacker, mechanism, scenario, split): score-set files are
  read as they are; data-dir systems are scored by each attacker into the
  content-addressed cache ``OUT/cache/scores/<hash>.npz``;
* calibrator fits once per (system, attacker, mechanism, scenario, calibrator): one
  *task* fits the calibrator on dev and evaluates every (prior, seed) cell with it.

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
* the settings ``znorm_ddof``, ``[grid.bootstrap]`` and ``[grid.longitudinal]``.

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
naming it (:func:`lidframe.grid.stored.verify_per_trial_files`); ``lidframe report``
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

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lidframe._version import code_version
from lidframe.data import runpaths
from lidframe.data.digests import DigestCache
from lidframe.data.fileio import StrPath
from lidframe.errors import InputError
from lidframe.grid import store
from lidframe.grid.execute import CellWriter, RunOptions, check_backend, connect, execute, say_why, select_todo
from lidframe.grid.freshness import Freshness, check_freshness, inputs_changed, why_recomputed
from lidframe.grid.inputs import Inputs, inputs_digest
from lidframe.grid.plan import plan_grid
from lidframe.grid.records import GridRun
from lidframe.grid.spec.loading import load_grid_spec
from lidframe.grid.spec.records import GridSpec

if TYPE_CHECKING:
    import sqlite3

    from distributed import Client

__all__ = [
    "run_grid",
    "plan_grid",
    "open_store",
    "stored_cells",
    "check_freshness",
    "Freshness",
    "GridRun",
    "RunOptions",
    "inputs_changed",
    "why_recomputed",
    "inputs_digest",
    "Inputs",
    "write_json_summary",
    "spec_input_paths",
]


def open_store(out_dir: StrPath) -> sqlite3.Connection:
    """The grid's SQLite store, opened for writing (created or migrated if needed; :mod:`lidframe.grid.store`)."""
    store.check_store(out_dir, write=True)
    connection, _ = store.open_store(out_dir)
    return connection


def stored_cells(connection: sqlite3.Connection, status: str = "ok") -> set[str]:
    """Ids of stored cells with *status*."""
    return {key for key, cell in store.stored_cells(connection).items() if cell.status == status}


def run_grid(
    spec: GridSpec | StrPath,
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
) -> GridRun:
    """Run (or resume) a grid.

    Parameters
    ----------
    spec : GridSpec or str or os.PathLike
        The spec: a TOML file (:mod:`lidframe.grid.spec`), or one already read with
        :func:`~lidframe.grid.spec.load_grid_spec`.
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
        cells or more, or with *progress*) is checked and planned, which takes seconds
        (a path only: a GridSpec is checked already).

    Returns
    -------
    GridRun
        The spec, the folder and the counts: ``cells``, ``skipped``, ``ok``, ``error``,
        ``fits``, ``scored`` and ``recomputed`` (stored cells whose inputs changed);
        ``run["ok"]`` reads a count too.

    Raises
    ------
    InputError
        A bad spec or backend choice, a dask scheduler that cannot be reached or does
        not answer, an unreadable or unwritable store, digest cache or folder (locked,
        read-only, its disk full, holding or inside an input: :func:`spec_input_paths`), a per-trial
        file not the one stored with its cell, or another grid holding the folder -- all before any cell is computed.
    """
    if not isinstance(spec, GridSpec):
        spec = load_grid_spec(spec, progress=progress, note=note)
    check_backend(backend, jobs, scheduler)
    out = Path(out_dir)
    _check_folder(out, spec)
    client, own_client = connect(backend, scheduler)  # before anything is created in OUT
    options = RunOptions(
        backend=backend,
        jobs=jobs,
        client=client,
        force=force or not resume,
        progress=progress,
        log=log if log is not None else RunOptions().log,
    )
    try:
        made = _make_folder(out)
        # a run that made OUT and stops before its store exists removes the folder again, holding
        # the lock: never what a run started at the same time made (store.folder_lock)
        with store.folder_lock(out, made=made):
            counts = _run_locked(spec, out, options)
    finally:
        if own_client:
            client.close()
    return GridRun(spec=spec, out_dir=out, **counts)


def _check_folder(out: Path, spec: GridSpec) -> None:
    """*out* can hold the grid's store, and it holds no input of *spec* nor lies inside one (before anything is made)."""
    runpaths.refuse_outputs_on_inputs(folders={"grid output folder": out}, inputs=spec_input_paths(spec))
    store.check_store(out, write=True)


def spec_input_paths(spec: GridSpec) -> list[str]:
    """Every file and data dir *spec* names: itself, its systems' sources, adapted checkpoints and utility files,
    and the files its component specs name (what the grid's output folder must keep off).

    A component spec that does not read is left out (planning refuses it with its message).
    """
    from lidframe.registry.specs import spec_inputs

    paths = [str(spec.path)]
    for system in spec.systems:
        for source in (system.dev, system.eval):
            if isinstance(source, str):
                paths.append(source)
            else:
                paths += [
                    source["enrol"],
                    *source["trials"],
                    *([source["original_enrol"]] if "original_enrol" in source else []),
                ]
        paths += [*system.adapted.values(), *([system.utility] if system.utility else [])]
    for kind, specs in (("attacker", spec.attackers), ("calibrator", spec.calibrators), ("prior", spec.priors)):
        for component in specs:
            try:
                paths += [str(p) for p in spec_inputs(kind, component).files]
            except InputError:
                continue
    return paths


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


def _run_locked(spec: GridSpec, out: Path, options: RunOptions) -> dict[str, int]:
    """Plan, check the stored cells, then compute the others (:func:`run_grid`, under the folder's lock)."""
    connection, migrated = store.open_store(out)  # writes nothing to a store of the current layout
    try:
        if migrated:
            options.log(migrated)
        digests = DigestCache(out / "cache" / "digests.sqlite")
        plan = plan_grid(spec, out, digests=digests, progress=options.progress)
        stored = store.stored_cells(connection)
        # a wrong per-trial file stops here
        todo = select_todo(plan, stored, out, force=options.force, digests=digests)
        digests.save()
        write_json_summary(out, spec, None)  # the spec these cells come from, even if the run stops
        say_why(todo.reasons, options.log)
        others = len(set(stored) - {cell.cell_id for cell in plan.cells})
        if others:
            options.log(f"{others} stored cells are not in this spec (left from an earlier one; kept, and reported)")
        counts = execute(plan, todo, CellWriter(connection, out, spec.digest, stored), options)
        counts["recomputed"] = todo.stale
    finally:
        connection.close()
    write_json_summary(out, spec, counts)
    return counts


def write_json_summary(out: Path, spec: GridSpec, counts: dict[str, int] | None) -> None:
    """``OUT/grid.json``: the spec (absolute path) and digest, the folder the grid ran in, and the last run's counts.

    Written when a run starts (``counts`` None) and again when it ends, so a report of an
    interrupted run compares its cells with the spec that made them.  When a system names
    a utility file, the key ``utility`` records each (``system -> absolute path``): what a
    report reads where the spec is gone (:func:`lidframe.grid.utility.grid_utility`).
    """
    from lidframe.data.fileio import write_json
    from lidframe.grid.utility import UTILITY_KEY, recorded_utility

    record: dict[str, Any] = {
        "spec": str(Path(spec.path).resolve()),
        "spec_digest": spec.digest,
        "cwd": os.getcwd(),
        "last_run": counts,
        "lidframe_version": code_version(),
    }
    utility = recorded_utility(spec)
    if utility:  # a grid without utility writes the record as before
        record[UTILITY_KEY] = utility
    write_json(out / "grid.json", record)
