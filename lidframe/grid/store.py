"""The grid's result store ``OUT/results.sqlite``.

Store
-----
One table, ``cells``, with one row per *logical* cell -- (system, attacker, mechanism,
calibrator, prior, seed) and, in a grid with the ``scenarios`` axis, its scenario --
whose ``cell_id`` is a hash of those components and nothing else (a cell without a
scenario is hashed from the six alone, as before the axis), so a recomputed cell
replaces its row (``INSERT OR REPLACE``; the seven columns are also declared
``UNIQUE``).  What the cell was computed from is kept beside it: ``inputs`` (JSON,
``{key: [label, digest]}`` for every file, code version and setting it read) and
``inputs_digest`` (a hash of those), which the runner compares to decide whether a
stored cell is still fresh, and ``per_trial_sha256``, the SHA-256 of the cell's
per-trial file as it was written, which ``lidframe grid`` (before it reuses the cell)
and ``lidframe report`` check the file against, so that a file changed or swapped with
another cell's is refused, not reported.  ``PRAGMA user_version`` holds
:data:`SCHEMA_VERSION`; older layouts are migrated on the next ``lidframe grid`` run and
read as they are by ``lidframe report``:

* layout 0 (no input digests, content-hash ids, possibly two rows for one cell): the
  newest row of each cell is kept and marked for recomputation, and ``lidframe report``
  reads it deduplicated;
* layout 2 (no per-trial digests): the column is added empty; ``lidframe grid``
  recomputes those cells (their per-trial files cannot be checked) and ``lidframe
  report`` says that their per-trial files were not checked;
* layout 3 (no ``scenario`` column): the table is rebuilt with the column, ``-`` in
  every row (its cells had no scenario), and the ``UNIQUE`` constraint over the seven;
  nothing is recomputed for it.

A store that cannot be read (not SQLite, damaged, a folder, written by a newer lidframe,
a table of another program), that cannot be written (read-only, its disk full) or that
another process holds locked is refused with one line naming the file and what to do
(:class:`~lidframe.errors.InputError`), before anything is written; a store file that
could not be created is not left behind.

In memory a component a cell does not have is None; the store writes it ``-``
(:data:`lidframe.grid.records.NONE`): :func:`cell_id`, :func:`stored_cells` and
:func:`read_finished` convert, so ids and rows are those of every earlier lidframe.
What a row means as a record -- :class:`~lidframe.grid.stored.StoredCell`, a
:class:`~lidframe.grid.records.FinishedCell` with its summary parsed -- and the check of
each cell's per-trial file against its stored digest
(:func:`~lidframe.grid.stored.verify_per_trial_files`) are :mod:`lidframe.grid.stored`'s.
:func:`~lidframe.grid.lock.folder_lock` (re-exported here) holds the output folder's lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lidframe.data.digests import sqlite_problem
from lidframe.errors import InputError
from lidframe.grid.lock import folder_lock
from lidframe.grid.records import NONE, FinishedCell, stored_name
from lidframe.grid.stored import StoredCell, finished_cell, joined_name, stored_cell

__all__ = [
    "SCHEMA_VERSION",
    "KEYS",
    "cell_id",
    "cell_ids",
    "check_store",
    "folder_lock",
    "open_store",
    "stored_cells",
    "write_cell",
    "read_finished",
    "cell_name",
]

#: ``PRAGMA user_version`` of the current layout (0: the first layout, without input digests;
#: 2: without per-trial digests; 3: without the scenario column).
SCHEMA_VERSION = 4
#: Seconds a connection waits for another process's lock on the store before giving up.
BUSY_TIMEOUT_S = 10.0
#: The logical identity of a cell (with its scenario, :data:`SCENARIO`, where it has one).
KEYS = ("system", "attacker", "mechanism", "calibrator", "prior", "seed")
#: The column of a cell's scenario (``-``: none; every cell of a grid without the ``scenarios`` axis).
SCENARIO = "scenario"

_COLUMNS = (
    "cell_id",
    *KEYS,
    "spec_digest",
    "status",
    "error",
    "summary",
    "per_trial",
    "seconds",
    "finished_at",
    "inputs_digest",
    "inputs",
    "per_trial_sha256",
    SCENARIO,
)
#: The columns of layout 3 (without the scenario), of layout 2 (nor per-trial digests) and of the
#: first layout (0, nor input digests).
_V3_COLUMNS = _COLUMNS[:-1]
_V2_COLUMNS = _COLUMNS[:-2]
_LEGACY_COLUMNS = _COLUMNS[:-4]
_SCHEMA = """
CREATE TABLE IF NOT EXISTS cells (
    cell_id TEXT PRIMARY KEY,
    system TEXT NOT NULL, attacker TEXT NOT NULL, mechanism TEXT NOT NULL, calibrator TEXT NOT NULL,
    prior TEXT NOT NULL, seed INTEGER NOT NULL,
    spec_digest TEXT, status TEXT, error TEXT, summary TEXT, per_trial TEXT,
    seconds REAL, finished_at REAL, inputs_digest TEXT, inputs TEXT, per_trial_sha256 TEXT,
    scenario TEXT NOT NULL DEFAULT '-',
    UNIQUE (system, attacker, mechanism, calibrator, prior, seed, scenario)
)
"""


def _columns_of(version: int) -> tuple[str, ...]:
    """The columns of the ``cells`` table in store layout *version*."""
    return {SCHEMA_VERSION: _COLUMNS, 3: _V3_COLUMNS, 2: _V2_COLUMNS}.get(version, _LEGACY_COLUMNS)


def cell_id(
    system: str,
    attacker: str | None,
    mechanism: str | None,
    calibrator: str,
    prior: str,
    seed: int,
    scenario: str | None = None,
) -> str:
    """The id of a logical cell: 32 hex digits of SHA-256 over its components (and nothing else).

    A missing attacker or mechanism (None) counts as ``-``, as the store writes it.  A cell
    without a scenario (None: every cell of a grid without the ``scenarios`` axis) is
    hashed from its six components alone, so its id is the one every earlier lidframe
    computed; a scenario is hashed after them.  The hashed bytes are
    ``json.dumps(["cell", system, attacker, mechanism, calibrator, prior, seed(, scenario)])``
    (:func:`cell_ids` writes them).
    """
    return cell_ids(system, attacker, mechanism, calibrator, prior, (seed,), scenario)[0]


def cell_ids(
    system: str,
    attacker: str | None,
    mechanism: str | None,
    calibrator: str,
    prior: str,
    seeds: Sequence[int],
    scenario: str | None = None,
) -> list[str]:
    """The :func:`cell_id` of each of *seeds*' cells of one (system, attacker, mechanism, calibrator, prior, scenario).

    The components' JSON is written once and each seed's spliced in, byte for byte the
    ``json.dumps`` of the whole list (its items joined by ``", "``): the planner's cost per
    cell is one SHA-256 of a short string.

    Returns
    -------
    list of str
        32 hex digits per seed, in the order of *seeds*.
    """
    head = json.dumps(["cell", system, stored_name(attacker), stored_name(mechanism), calibrator, prior])[:-1] + ", "
    tail = "]" if scenario is None else f", {json.dumps(scenario)}]"
    return [hashlib.sha256(f"{head}{_seed_json(seed)}{tail}".encode()).hexdigest()[:32] for seed in seeds]


def _seed_json(seed: int) -> str:
    """``json.dumps(seed)``: an int's repr, as json writes it (faster than the encoder); anything else through json."""
    return int.__repr__(seed) if type(seed) is int else json.dumps(seed)


# ------------------------------------------------------------------ checking
def _store_file(out: Path) -> Path:
    return out / "results.sqlite"


def _refusal(path: Path, exc: sqlite3.Error) -> InputError:
    text = str(exc)
    problem = sqlite_problem(exc)
    if problem == "locked":
        return InputError(
            f"{path}: the store is locked by another process (a running lidframe grid or an SQLite tool); "
            "try again when it has finished"
        )
    if problem == "read-only":
        return InputError(f"{path}: the store is read-only; make it writable or use another --out folder")
    if problem == "full":
        return InputError(
            f"{path}: the store cannot be written: the disk is full ({text}); free space and rerun "
            "(the cells stored so far are kept)"
        )
    return InputError(
        f"{path}: not a readable lidframe grid store ({text}); move it away (a new grid run then starts "
        "afresh) or restore it from a copy"
    )


def _read_only_reason(path: Path) -> str | None:
    """Why *path* cannot be written, or None.  Write bits are honoured even for root."""
    mode = path.stat().st_mode
    if not os.access(path, os.W_OK) or not mode & 0o222:
        return f"is read-only (mode {mode & 0o777:04o})"
    folder = path.parent
    if not os.access(folder, os.W_OK) or not folder.stat().st_mode & 0o222:
        return f"is in a read-only folder ({folder})"
    return None


def check_store(out_dir: str | os.PathLike[str], *, write: bool) -> int | None:
    """Check ``OUT/results.sqlite`` without writing anything.

    Parameters
    ----------
    out_dir : str or os.PathLike
        The grid's output folder.
    write : bool
        Also require that the store can be written (``lidframe grid``).

    Returns
    -------
    int or None
        The store's layout version (0: first layout, :data:`SCHEMA_VERSION`: current), or
        None when there is no store yet (no file, or an empty SQLite file).

    Raises
    ------
    InputError
        One line naming the file: not SQLite or damaged, a folder, read-only (with
        *write*), locked by another process, a newer layout, or not a grid store.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: is a file, not a grid output folder")
    path = _store_file(out)
    if not path.exists():
        return None
    if not path.is_file():
        raise InputError(f"{path}: is not a file; move it away (the grid keeps its results in this file)")
    if write:
        reason = _read_only_reason(path)
        if reason:
            raise InputError(f"{path}: the store {reason}; make it writable or use another --out folder")
    version, tables, columns, problems = _read_layout(path)
    if problems != ["ok"]:
        raise InputError(
            f"{path}: the store is damaged ({problems[0]}); move it away (a new grid run then starts afresh) "
            "or restore it from a copy"
        )
    if version > SCHEMA_VERSION:
        raise InputError(
            f"{path}: written by a newer lidframe (store layout {version}, this one reads up to {SCHEMA_VERSION}); "
            "upgrade lidframe or use another --out folder"
        )
    if not tables:
        return None
    expected = _columns_of(version)
    if "cells" not in tables or columns != expected:
        found = f"tables {sorted(tables)}" if "cells" not in tables else f"cells columns {list(columns)}"
        raise InputError(f"{path}: not a lidframe grid store (found {found}); move it away or use another --out folder")
    return int(version)


def _read_layout(path: Path) -> tuple[int, set[str], tuple[str, ...], list[str]]:
    """The store's layout, read-only: its ``user_version``, tables, ``cells`` columns and ``quick_check`` lines.

    Raises
    ------
    InputError
        When SQLite cannot read it (:func:`_refusal`).
    """
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            columns = tuple(row[1] for row in connection.execute("PRAGMA table_info(cells)"))
            problems = [row[0] for row in connection.execute("PRAGMA quick_check")]
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise _refusal(path, exc) from None
    return version, tables, columns, problems


# ------------------------------------------------------------------ writing
def open_store(out_dir: str | os.PathLike[str]) -> tuple[sqlite3.Connection, str | None]:
    """Open the store for writing (creating or migrating it); return it and a note on a migration.

    Call :func:`check_store` first (this one assumes a readable store) and hold
    :func:`folder_lock`.

    Raises
    ------
    InputError
        When the store cannot be written or is locked by another process.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = _store_file(out)
    created = not path.exists()
    note: str | None = None
    orphans: list[str] = []
    try:
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
        try:
            connection.execute("BEGIN IMMEDIATE")  # fails now, not after the work, if it cannot be written
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if version == 0 and "cells" in tables:
                note, orphans = _migrate(connection, out)
            elif version in (2, 3) and "cells" in tables:
                if version == 2:  # its cells are recomputed: no per-trial digest to check
                    connection.execute("ALTER TABLE cells ADD COLUMN per_trial_sha256 TEXT")
                _add_scenarios(connection)
            if version != SCHEMA_VERSION or "cells" not in tables:  # a current store is not written to here
                connection.execute(_SCHEMA)
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            connection.commit()
        except BaseException:
            connection.close()
            raise
    except sqlite3.Error as exc:
        if created:  # a store this call began and could not finish (a full disk): none is left behind
            for leftover in (path, path.with_name(path.name + "-journal")):
                with contextlib.suppress(OSError):
                    leftover.unlink()
        raise _refusal(path, exc) from None
    for name in orphans:  # per-trial files of the older duplicate rows, now referenced by no row
        with contextlib.suppress(OSError):
            (out / name).unlink()
    return connection, note


def _migrate(connection: sqlite3.Connection, out: Path) -> tuple[str, list[str]]:
    """First layout -> current: the newest row of each logical cell, marked for recomputation.

    Returns the note to print and the per-trial files that no row references any more.
    """
    rows = connection.execute(f"SELECT {', '.join(_LEGACY_COLUMNS)} FROM cells ORDER BY finished_at").fetchall()
    newest: dict[str, tuple[Any, ...]] = {}
    dropped_files = []
    for row in rows:
        record = dict(zip(_LEGACY_COLUMNS, row))
        key = cell_id(*(record[k] for k in KEYS))
        if key in newest and newest[key][11]:
            dropped_files.append(newest[key][11])
        newest[key] = (key, *row[1:], None, None, None, NONE)
    connection.execute("DROP TABLE cells")
    connection.execute(_SCHEMA)
    connection.executemany(f"INSERT INTO cells VALUES ({', '.join('?' * len(_COLUMNS))})", list(newest.values()))
    duplicates = len(rows) - len(newest)
    note = (
        f"migrated {_store_file(out)} to store layout {SCHEMA_VERSION}: {len(newest)} cells"
        + (f" (dropped {duplicates} older duplicate rows)" if duplicates else "")
        + "; its cells carry no input digests, so they are recomputed"
    )
    return note, dropped_files


def _add_scenarios(connection: sqlite3.Connection) -> None:
    """Layout 3 -> current: the table rebuilt with the scenario column (``-`` in every row) and its constraint.

    SQLite cannot widen a ``UNIQUE`` constraint in place, so the rows are copied into a
    new table (within the caller's transaction) and the old one dropped.
    """
    connection.execute("ALTER TABLE cells RENAME TO cells_layout3")
    connection.execute(_SCHEMA)
    old = ", ".join(_V3_COLUMNS)
    connection.execute(f"INSERT INTO cells ({old}, {SCENARIO}) SELECT {old}, '{NONE}' FROM cells_layout3")
    connection.execute("DROP TABLE cells_layout3")


def _scenario_column(columns: Iterable[str]) -> str:
    """What to select for the scenario: the column, or ``'-'`` in a store of an earlier layout."""
    return SCENARIO if SCENARIO in set(columns) else f"'{NONE}'"


def stored_cells(connection: sqlite3.Connection) -> dict[str, StoredCell]:
    """``cell_id -> StoredCell`` of every row."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(cells)")}
    sha = "per_trial_sha256" if "per_trial_sha256" in columns else "NULL"  # layout 2: no per-trial digests
    return {
        key: stored_cell(status, digest, inputs, per_trial, per_trial_sha256, components, scenario)
        for key, status, digest, inputs, per_trial, per_trial_sha256, scenario, *components in connection.execute(
            f"SELECT cell_id, status, inputs_digest, inputs, per_trial, {sha}, {_scenario_column(columns)}, "
            f"{', '.join(KEYS)} FROM cells"
        )
    }


def read_stored_cells(out_dir: str | os.PathLike[str]) -> dict[str, StoredCell]:
    """:func:`stored_cells` of a folder's store, opened read-only (nothing is created or migrated).

    Parameters
    ----------
    out_dir : str or os.PathLike
        The grid's output folder.

    Returns
    -------
    dict
        ``cell_id -> StoredCell``; a first-layout store's cells have no input digests.

    Raises
    ------
    InputError
        No store, or one :func:`check_store` refuses, or that cannot be read.
    """
    out = Path(out_dir)
    check_store(out, write=False)
    path = _store_file(out)
    if not path.exists():
        raise InputError(f"{out}: no results.sqlite here; run lidframe grid SPEC --out {out} first")
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            columns = {row[1] for row in connection.execute("PRAGMA table_info(cells)")}
            if "inputs_digest" in columns:
                return stored_cells(connection)
            # the first layout kept no input digests: its cells read as stored without them,
            # which lidframe grid recomputes (and migrates the store)
            return {
                key: stored_cell(status, None, None, per_trial, None, components, None)
                for key, status, per_trial, *components in connection.execute(
                    f"SELECT cell_id, status, per_trial, {', '.join(KEYS)} FROM cells"
                )
            }
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise _refusal(path, exc) from None


def write_cell(
    connection: sqlite3.Connection, out_dir: str | os.PathLike[str], row: Mapping[str, Any], replaced: str | None
) -> None:
    """Insert or replace one cell's row, in one transaction; then remove the per-trial file it replaced.

    Parameters
    ----------
    connection : sqlite3.Connection
        From :func:`open_store`.
    out_dir : str or os.PathLike
        The output folder (per-trial paths are relative to it).
    row : mapping
        A value for each column (:data:`_COLUMNS`); ``per_trial`` must already be complete on disk.
    replaced : str or None
        The per-trial path of the row it replaces, if any.

    Raises
    ------
    InputError
        When the store cannot be written (locked, disk full, read-only), naming it.
    """
    values = tuple(row[column] for column in _COLUMNS)
    try:
        with connection:
            connection.execute(f"INSERT OR REPLACE INTO cells VALUES ({', '.join('?' * len(_COLUMNS))})", values)
    except sqlite3.Error as exc:
        what = {
            "full": "the disk is full; free space and rerun to resume",
            "locked": "another process holds the store locked; rerun to resume when it has finished",
            "read-only": "the store has become read-only; make it writable and rerun to resume",
        }.get(sqlite_problem(exc), "rerun to resume")
        raise InputError(
            f"{_store_file(Path(out_dir))}: cannot store cell {row['system']}/{row['calibrator']}/{row['prior']} "
            f"({' '.join(str(exc).split())}); {what} (the cells stored so far are kept)"
        ) from None
    if replaced and replaced != row["per_trial"]:
        with contextlib.suppress(OSError):
            (Path(out_dir) / replaced).unlink()


# ------------------------------------------------------------------ naming
def cell_name(cell: Mapping[str, Any]) -> str:
    """A stored row's six components joined by ``/`` (``alpha/-/-/logistic/uniform/0``), as messages name it.

    A row with a scenario has it after the mechanism (``b3/ecapa/-/ignorant/logistic/uniform/0``).
    """
    return joined_name((cell[key] for key in KEYS), cell.get(SCENARIO))


# ------------------------------------------------------------------ reading
def read_finished(out_dir: str | os.PathLike[str]) -> list[FinishedCell]:
    """Rows with status ``ok``, one per logical cell, read without writing anything.

    Returns
    -------
    list of FinishedCell
        Components (a stored ``-`` read as None; ``scenario`` None in a store of an earlier
        layout), ``summary`` (a :class:`~lidframe.core.summary.Summary`) with
        ``calibrator_fit`` and ``longitudinal`` (:func:`lidframe.grid.stored.stored_summary`),
        ``per_trial`` (relative to *out_dir*), ``cell_id`` and ``per_trial_sha256`` (None
        in a store of an earlier layout); in the order the cells finished.

    Raises
    ------
    InputError
        No store, or one :func:`check_store` refuses; a summary that is not JSON, or not
        a summary any lidframe wrote.
    """
    out = Path(out_dir)
    version = check_store(out, write=False)
    path = _store_file(out)
    if version is None:
        if path.exists():
            raise InputError(f"{path}: the store holds no cells; run lidframe grid SPEC --out {out} first")
        raise InputError(f"{out}: no results.sqlite here; run lidframe grid SPEC --out {out} first")
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            sha = "per_trial_sha256" if version in (3, SCHEMA_VERSION) else "NULL"
            scenario = SCENARIO if version == SCHEMA_VERSION else f"'{NONE}'"
            rows = connection.execute(
                f"SELECT cell_id, {', '.join(KEYS)}, {scenario}, summary, per_trial, {sha}, finished_at FROM cells "
                "WHERE status = 'ok' ORDER BY finished_at"
            ).fetchall()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise _refusal(path, exc) from None
    by_cell: dict[tuple[Any, ...], FinishedCell] = {}
    for key, *components, summary, per_trial, per_trial_sha256, _ in rows:
        # the first layout may hold two rows for one cell: the newest wins
        by_cell[tuple(components)] = finished_cell(path, key, components, summary, per_trial, per_trial_sha256)
    if version == 0:
        warnings.warn(
            f"{path}: written by an earlier lidframe without input digests; rerun lidframe grid to check that "
            "its cells are fresh",
            stacklevel=2,
        )
    return list(by_cell.values())
