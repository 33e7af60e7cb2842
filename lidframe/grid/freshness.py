"""Whether stored cells are fresh: the one rule ``lidframe grid`` and ``lidframe report`` share.

A stored cell is fresh when its inputs digest equals that of the cell the spec plans now
(:func:`inputs_changed`); :func:`why_recomputed` says in words what changed, and
:func:`check_freshness` checks every finished cell of a grid folder against its spec.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from pathlib import Path

import attrs

from lidframe.data.digests import DigestCache
from lidframe.data.fileio import StrPath, real_path
from lidframe.errors import InputError
from lidframe.grid import store
from lidframe.grid.plan import plan_grid
from lidframe.grid.records import Cell, FitTask, Inputs, read_grid_json
from lidframe.grid.spec.loading import load_grid_spec
from lidframe.grid.spec.records import GridSpec
from lidframe.grid.stored import StoredCell

__all__ = ["Freshness", "check_freshness", "inputs_changed", "why_recomputed"]

_SHA = re.compile(r"^[0-9a-f]{32,64}$")


def inputs_changed(row: StoredCell, cell: Cell) -> str | None:
    """Why a stored cell's inputs differ from the planned *cell*'s (:func:`why_recomputed`); None if they match.

    The one freshness rule of the grid: ``lidframe grid`` recomputes such a cell and
    ``lidframe report`` (:func:`check_freshness`) flags it as stale.
    """
    if row.inputs_digest == cell.inputs_digest:
        return None
    return why_recomputed(row.inputs, cell.inputs)


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
    score_files : tuple of (str, str, str)
        (system, split, absolute path) of each score-set source of the spec's systems, and
        (system, role, path) of each fused attacker's cached dev and eval set
        (:meth:`~lidframe.grid.records.FusionJob.role`) that is there, where the cells were
        checked: the files whose provenance the page shows.
    tasks : dict
        ``cell_id -> FitTask`` of each finished cell that is fresh, the plan's task of it
        with that cell only (:class:`~lidframe.grid.records.FitTask`): what computes it now,
        from which the report rebuilds its evaluation to refit its per-speaker intervals
        (:mod:`lidframe.grid.report.refits`); empty where the cells were not checked.
    """

    spec: str | None
    stale: dict[str, str] = attrs.field(factory=dict)
    unchecked: str | None = None
    score_files: tuple[tuple[str, str, str], ...] = ()
    tasks: dict[str, FitTask] = attrs.field(factory=dict, eq=False, repr=False)


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
        given = _read_again(spec_path)
    try:
        record = read_grid_json(out)
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
        spec = given if given is not None else _read_again(spec_path)
        # the grid's digest cache is read, never written: a report changes nothing in the folder
        # but report/ (a file changed since the grid ran is hashed again, in memory)
        plan = plan_grid(spec, out, digests=DigestCache(out / "cache" / "digests.sqlite"))
        stored = store.read_stored_cells(out)
    except Exception as exc:  # noqa: BLE001 - advisory: whatever stops the check (a plugin, a stat) must not stop the report
        text = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
        return Freshness(str(spec_path), unchecked=" ".join(text.split()))
    files = [
        (s.name, split, p)
        for s in spec.systems
        for split, p in (("dev", s.dev), ("eval", s.eval))
        if isinstance(p, str)
    ]
    files += [
        (job.system, job.role(split), target)
        for job in plan.fusion_jobs
        for split, target in zip(("dev", "eval"), job.targets, strict=True)
        if Path(target).is_file()
    ]
    stale = _stale(plan.cells, stored)
    fresh = {
        cell.cell_id: attrs.evolve(task, cells=(cell,))
        for task in plan.tasks
        for cell in task.cells
        if cell.cell_id in stored and stored[cell.cell_id].status == "ok" and cell.cell_id not in stale
    }
    return Freshness(str(spec_path), stale, score_files=tuple(files), tasks=fresh)


def _read_again(spec_path: StrPath) -> GridSpec:
    """The spec, read only to plan it again: its calibrators are not fitted, and the old-name warning of
    ``[grid.ci]`` -- said when the grid ran -- is not repeated."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*\[grid\.ci\] is now called", category=FutureWarning)
        return load_grid_spec(spec_path, fit_calibrators=False)


def _stale(planned_cells: Iterable[Cell], stored: dict[str, StoredCell]) -> dict[str, str]:
    """``cell_id -> why`` of the finished cells that are not fresh, or that the plan no longer has."""
    stale: dict[str, str] = {}
    planned = set()
    for cell in planned_cells:
        planned.add(cell.cell_id)
        row = stored.get(cell.cell_id)
        changed = None if row is None or row.status != "ok" else inputs_changed(row, cell)
        if changed is not None:
            stale[cell.cell_id] = changed
    for key, row in stored.items():
        if row.status == "ok" and key not in planned:
            stale[key] = "not in the spec any more"
    return stale
