"""What the grid's store holds, as records: its rows read back, and each cell's per-trial file checked.

:mod:`lidframe.grid.store` is the SQLite layer (the layouts, their migration, the rows
read and written); this module is what its rows mean.  :class:`StoredCell` is what the
store holds about a cell, enough to decide whether it is fresh (:func:`stored_cell`);
:func:`finished_cell` reads a finished row as a :class:`~lidframe.grid.records.FinishedCell`
(its summary JSON parsed, with the summary keys of this release); :func:`joined_name`
names a cell as messages do.  :func:`verify_per_trial_files` checks each cell's
per-trial file against the SHA-256 stored with it, so that a file changed or swapped
with another cell's is refused, not reported or reused.

A component a cell does not have is ``-`` (:data:`lidframe.grid.records.NONE`) in a row
and None in a record (:func:`~lidframe.grid.records.from_stored`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from lidframe.core.summary import with_current_keys
from lidframe.errors import InputError
from lidframe.grid.records import NONE, FinishedCell, from_stored

__all__ = [
    "StoredCell",
    "PerTrialRecord",
    "joined_name",
    "stored_cell",
    "finished_cell",
    "verify_per_trial_files",
]


@attrs.frozen
class StoredCell:
    """What the store holds about one cell: enough to decide whether it is fresh.

    Attributes
    ----------
    status : {"ok", "error"}
    inputs_digest : str or None
        None in a store of the first layout.
    inputs : dict or None
        ``{key: [label, digest]}``; None when not stored (or unreadable).
    per_trial : str or None
        Its per-trial file, relative to the grid folder.
    per_trial_sha256 : str or None
        That file's SHA-256 as written; None in a store of an earlier layout.
    name : str
        Its six components joined by ``/`` (its scenario after the mechanism, where it has
        one), as messages name it.
    """

    status: str
    inputs_digest: str | None
    inputs: dict[str, list[str]] | None
    per_trial: str | None
    per_trial_sha256: str | None = None
    name: str = ""


class PerTrialRecord(Protocol):
    """A stored cell's per-trial file, as :func:`verify_per_trial_files` checks it (a :class:`StoredCell`, a
    :class:`~lidframe.grid.records.FinishedCell`)."""

    @property
    def name(self) -> str: ...
    @property
    def per_trial(self) -> str | None: ...
    @property
    def per_trial_sha256(self) -> str | None: ...


def joined_name(components: Iterable[Any], scenario: str | None) -> str:
    """A cell's six components joined by ``/``, its scenario (if any) after the mechanism, as messages name it."""
    parts = [str(c) for c in components]
    if scenario not in (None, NONE):
        parts.insert(3, str(scenario))
    return "/".join(parts)


def stored_cell(
    status: str,
    inputs_digest: str | None,
    inputs: str | None,
    per_trial: str | None,
    per_trial_sha256: str | None,
    components: Sequence[Any],
    scenario: str | None,
) -> StoredCell:
    """A row's :class:`StoredCell`: its ``inputs`` JSON parsed (None when not stored or unreadable)."""
    try:
        parsed = json.loads(inputs) if inputs else None
    except json.JSONDecodeError:
        parsed = None  # unreadable: compared as "no digests", so the cell is recomputed
    return StoredCell(status, inputs_digest, parsed, per_trial, per_trial_sha256, joined_name(components, scenario))


def finished_cell(
    path: Path, key: str, components: Sequence[Any], summary: str, per_trial: str, per_trial_sha256: str | None
) -> FinishedCell:
    """A finished row as a :class:`~lidframe.grid.records.FinishedCell` (a stored ``-`` read as None).

    Parameters
    ----------
    path : pathlib.Path
        The store file (named in the error).
    key : str
        The row's ``cell_id``.
    components : sequence
        ``(system, attacker, mechanism, calibrator, prior, seed, scenario)`` as stored.
    summary : str
        The summary JSON: parsed, with the keys of this release
        (:func:`lidframe.core.summary.with_current_keys`).
    per_trial, per_trial_sha256 : str
        As stored (the digest None in a store of an earlier layout).

    Raises
    ------
    InputError
        A summary that is not JSON.
    """
    system, attacker, mechanism, calibrator, prior, seed, scenario = components
    try:
        parsed = json.loads(summary)
    except (TypeError, json.JSONDecodeError):
        raise InputError(
            f"{path}: cell {key} ({system}, {calibrator}, {prior}) has an "
            "unreadable summary; rerun lidframe grid with --force"
        ) from None
    if isinstance(parsed, dict):  # a store written before this release holds the old summary keys
        parsed = with_current_keys(parsed)
    return FinishedCell(
        cell_id=key,
        system=system,
        attacker=from_stored(attacker),
        mechanism=from_stored(mechanism),
        calibrator=calibrator,
        prior=prior,
        seed=seed,
        scenario=from_stored(scenario),
        summary=parsed,
        per_trial=per_trial,
        per_trial_sha256=per_trial_sha256,
    )


def verify_per_trial_files(
    out_dir: str | os.PathLike[str],
    cells: Iterable[PerTrialRecord],
    *,
    digest: Callable[[Path], str] | None = None,
) -> int:
    """Check that each cell's per-trial file is the one written with it (its stored SHA-256).

    Parameters
    ----------
    out_dir : str or os.PathLike
        The grid's output folder (per-trial paths are relative to it).
    cells : iterable of PerTrialRecord
        Stored cells (:class:`StoredCell`, :class:`~lidframe.grid.records.FinishedCell`):
        their ``name``, ``per_trial`` and ``per_trial_sha256`` (None: a cell stored before
        per-trial digests, not checked).
    digest : callable, optional
        ``path -> SHA-256`` (default :func:`lidframe.data.fileio.file_sha256`; the grid
        passes its digest cache).

    Returns
    -------
    int
        How many cells had no stored digest to check against.

    Raises
    ------
    InputError
        A per-trial file that is missing, or whose bytes are not those written with its
        cell (changed, or swapped with another cell's): one line naming the first such
        file and its cell, how many more there are, and what to do.
    """
    from lidframe.data.fileio import file_sha256

    out = Path(out_dir)
    hashed = digest if digest is not None else file_sha256
    unchecked = 0
    wrong: list[tuple[Path, PerTrialRecord, str]] = []
    for cell in cells:
        path = out / str(cell.per_trial)
        if not path.is_file():
            raise InputError(
                f"{path}: the per-trial file of grid cell {cell.name} is missing; rerun lidframe grid on {out}"
            )
        if cell.per_trial_sha256 is None:
            unchecked += 1
            continue
        found = hashed(path)
        if found != cell.per_trial_sha256:
            wrong.append((path, cell, found))
    if wrong:
        path, cell, found = wrong[0]
        more = f"; so do the per-trial files of {len(wrong) - 1} more cells" if len(wrong) > 1 else ""
        raise InputError(
            f"{path}: the per-trial file of grid cell {cell.name} does not match the digest stored with the "
            f"cell (sha256 {found[:12]}..., stored {str(cell.per_trial_sha256)[:12]}...): it was changed, or "
            f"swapped with another cell's, after the grid wrote it{more}; delete it and rerun lidframe grid on "
            f"{out}, which recomputes the cell"
        )
    return unchecked
