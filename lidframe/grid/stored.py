"""What the grid's store holds, as records: its rows read back, and each cell's per-trial file checked.

:mod:`lidframe.grid.store` is the SQLite layer (the layouts, their migration, the rows
read and written); this module is what its rows mean.  :class:`StoredCell` is what the
store holds about a cell, enough to decide whether it is fresh (:func:`stored_cell`);
:func:`finished_cell` reads a finished row as a :class:`~lidframe.grid.records.FinishedCell`
(its summary JSON parsed into a :class:`~lidframe.core.summary.Summary` by
:func:`stored_summary`, the one place that parses it, and its ``legal`` block by
:func:`stored_legal`; :func:`as_finished_cell` reads a
mapping of a finished cell the same way); :func:`joined_name`
names a cell as messages do.  :func:`verify_per_trial_files` checks each cell's
per-trial file against the SHA-256 stored with it, so that a file changed or swapped
with another cell's is refused, not reported or reused.

A component a cell does not have is ``-`` (:data:`lidframe.grid.records.NONE`) in a row
and None in a record (:func:`~lidframe.grid.records.from_stored`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from lidframe.core.summary import Summary
from lidframe.errors import InputError
from lidframe.grid.records import NONE, FinishedCell, from_stored

if TYPE_CHECKING:
    from lidframe.analyses.legal_criteria import LegalCriteria

__all__ = [
    "StoredCell",
    "PerTrialRecord",
    "joined_name",
    "stored_cell",
    "finished_cell",
    "stored_summary",
    "stored_legal",
    "as_finished_cell",
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
        The summary JSON, read by :func:`stored_summary`.
    per_trial, per_trial_sha256 : str
        As stored (the digest None in a store of an earlier layout).

    Raises
    ------
    InputError
        A summary that is not JSON, or not a summary :func:`stored_summary` reads.
    """
    system, attacker, mechanism, calibrator, prior, seed, scenario = components
    where = f"{path}: cell {key} ({system}, {calibrator}, {prior})"
    try:
        parsed = json.loads(summary)
    except (TypeError, json.JSONDecodeError):
        raise InputError(f"{where} has an unreadable summary; rerun lidframe grid with --force") from None
    record, calibrator_fit, longitudinal = stored_summary(parsed, where=where)
    legal = stored_legal(parsed, where=where)
    return FinishedCell(
        cell_id=key,
        system=system,
        attacker=from_stored(attacker),
        mechanism=from_stored(mechanism),
        calibrator=calibrator,
        prior=prior,
        seed=seed,
        scenario=from_stored(scenario),
        summary=record,
        per_trial=per_trial,
        per_trial_sha256=per_trial_sha256,
        calibrator_fit=calibrator_fit,
        longitudinal=longitudinal,
        legal=legal,
    )


def stored_legal(parsed: Mapping[str, Any], *, where: str) -> LegalCriteria | None:
    """The ``legal`` block of a cell's parsed summary JSON as its record; None in a cell stored without one.

    Raises
    ------
    InputError
        A block that is not one lidframe writes
        (:meth:`~lidframe.analyses.legal_criteria.LegalCriteria.from_dict`), naming *where*.
    """
    from lidframe.analyses.legal_criteria import LegalCriteria

    block = parsed.get("legal")
    if block is None:
        return None
    if not isinstance(block, Mapping):
        raise InputError(f"{where} has a legal block that is not a JSON object; rerun lidframe grid with --force")
    try:
        return LegalCriteria.from_dict(block, where=f"{where}: its legal block")
    except InputError as exc:
        raise InputError(f"{exc}; rerun lidframe grid with --force") from None


def stored_summary(parsed: Any, *, where: str) -> tuple[Summary, dict[str, Any] | None, dict[str, Any] | None]:
    """A cell's summary JSON, parsed, as its records: the :class:`~lidframe.core.summary.Summary` and what the store keeps beside it.

    Parameters
    ----------
    parsed : dict
        The summary as the grid stores it: :meth:`Summary.to_dict
        <lidframe.core.summary.Summary.to_dict>` with ``calibrator_fit`` (of
        :meth:`Result.to_dict <lidframe.core.evaluation.Result.to_dict>`) and, in a
        uniform-prior cell of a grid with ``[grid.longitudinal]``, ``longitudinal``.  One
        written by an earlier lidframe reads too: the old keys of
        :data:`~lidframe.core.summary.RENAMED_KEYS` under their new names, and one of 0.2.0
        with its detection costs missing (:meth:`Summary.from_dict
        <lidframe.core.summary.Summary.from_dict>`, ``earlier``).
    where : str
        Names the store and the cell in the error.

    Returns
    -------
    summary : Summary
    calibrator_fit : dict or None
    longitudinal : dict or None
        ``fusion -> rows`` of the k-utterance attacker.

    Raises
    ------
    InputError
        Not a summary as any lidframe wrote it (a key it always writes is missing, or a
        value is not of its kind).
    """
    if not isinstance(parsed, dict):
        raise InputError(f"{where} has an unreadable summary (not a JSON object); rerun lidframe grid with --force")
    try:
        summary = Summary.from_dict(parsed, earlier=True)
    except (InputError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(
            f"{where} has a summary this lidframe cannot read ({exc}); rerun lidframe grid with --force"
        ) from None
    return summary, parsed.get("calibrator_fit"), parsed.get("longitudinal")


#: The keys of a finished cell's mapping (:meth:`FinishedCell.to_dict <lidframe.grid.records.FinishedCell.to_dict>`) that
#: :func:`as_finished_cell` needs.
_NEEDED = ("system", "attacker", "mechanism", "calibrator", "prior", "seed", "summary", "per_trial")


def as_finished_cell(cell: FinishedCell | Mapping[str, Any]) -> FinishedCell:
    """*cell* as a :class:`~lidframe.grid.records.FinishedCell`: a record as it is, a mapping read into one.

    The grid report's functions take the records :func:`lidframe.grid.report.load_results`
    returns or mappings as their ``to_dict()`` gives them (``-`` for none; the summary a
    dict as stored, or a :class:`~lidframe.core.summary.Summary`); this reads the latter
    as the store's rows are read (:func:`stored_summary`), so that every reader uses the
    record's attributes.

    Raises
    ------
    InputError
        A mapping without the keys of a finished cell (:data:`_NEEDED`), or whose summary
        :func:`stored_summary` does not read.
    """
    if isinstance(cell, FinishedCell):
        return cell
    missing = [key for key in _NEEDED if key not in cell]
    if missing:
        raise InputError(f"grid cell {cell!r:.80}: not a finished cell record (no {', '.join(missing)})")
    components = [cell[key] for key in _NEEDED[:6]]
    name = joined_name(components, cell.get("scenario"))
    legal = None
    if isinstance(cell["summary"], Summary):
        summary, calibrator_fit, longitudinal = cell["summary"], None, None
    else:
        summary, calibrator_fit, longitudinal = stored_summary(cell["summary"], where=f"grid cell {name}")
        legal = stored_legal(cell["summary"], where=f"grid cell {name}")
    system, attacker, mechanism, calibrator, prior, seed = components
    return FinishedCell(
        cell_id=str(cell.get("cell_id", "")),
        system=system,
        attacker=from_stored(attacker),  # None as it is
        mechanism=from_stored(mechanism),
        calibrator=calibrator,
        prior=prior,
        seed=seed,
        scenario=from_stored(cell.get("scenario", NONE)),
        summary=summary,
        per_trial=cell["per_trial"],
        per_trial_sha256=cell.get("per_trial_sha256"),
        calibrator_fit=calibrator_fit,
        longitudinal=longitudinal,
        legal=legal,
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
