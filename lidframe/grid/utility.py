"""The utility of a grid's systems -- WER and rho_F0 of their speech -- as ``lidframe report`` reads it.

A system of a grid spec may name a utility file (``[systems.NAME] utility = "U.json"``,
the JSON of ``lidframe utility --json``; :mod:`lidframe.grid.spec`).  It is no input of any
cell: the LID cells are neither recomputed nor stale when it changes.  So that a report
never shows an old utility, :func:`grid_utility` reads every file again each time a report
is written, with its SHA-256 (the report lists it among its inputs):

* from the spec the report checks the cells against (``--spec``, or the one
  ``OUT/grid.json`` names): its ``utility`` keys as they are now;
* where that spec is not there (moved) or is no longer a readable TOML spec, from the
  paths ``OUT/grid.json`` recorded when the grid last ran.

A file that is gone, or that is no longer a utility record, is one line naming the spec
(or ``grid.json``), the system and the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.data.fileio import StrPath, file_sha256
from lidframe.errors import InputError, quote

if TYPE_CHECKING:
    from lidframe.grid.spec.records import GridSpec
    from lidframe.utility import Utility

__all__ = ["UtilityFile", "grid_utility", "recorded_utility", "UTILITY_KEY"]

#: The key of ``OUT/grid.json`` that records each system's utility file (absolute paths), when any has one.
UTILITY_KEY = "utility"


@attrs.frozen(kw_only=True)
class UtilityFile:
    """One system's utility, as a report read it.

    Attributes
    ----------
    system : str
        The system's name in the spec (``[systems.NAME]``).
    path : str
        The utility file (absolute).
    sha256 : str
        Its SHA-256 (64 hex digits), taken when it was read.
    utility : Utility
        What it holds (:func:`lidframe.utility.read_utility`).
    """

    system: str
    path: str
    sha256: str
    utility: Utility


def recorded_utility(spec: GridSpec) -> dict[str, str]:
    """``system -> utility file`` of *spec* (absolute paths), as ``OUT/grid.json`` records it; empty when none."""
    return {system.name: system.utility for system in spec.systems if system.utility is not None}


def _read(system: str, path: str, where: str) -> UtilityFile:
    """The utility file of *system* at *path*, its digest taken before it is read; errors name *where* it was found."""
    from lidframe.utility import read_utility

    try:
        sha256 = file_sha256(path)
        return UtilityFile(system=system, path=path, sha256=sha256, utility=read_utility(path))
    except (InputError, OSError) as exc:
        reason = " ".join(str(getattr(exc, "strerror", None) or exc).split())
        raise InputError(f"{where}: the utility file of system {quote(system)} ({path}): {reason}") from None


def grid_utility(out_dir: StrPath, *, spec: StrPath | None = None) -> dict[str, UtilityFile]:
    """Each system's utility, read now: from *spec*'s ``utility`` keys, else from ``OUT/grid.json``'s record.

    Parameters
    ----------
    out_dir : str or os.PathLike
        The grid folder.
    spec : str or os.PathLike, optional
        The spec the report checks the cells against (``lidframe report --spec``, or the one
        ``OUT/grid.json`` names).  Where it is not given, not there, or not a readable TOML
        spec, the paths ``OUT/grid.json`` recorded when the grid ran are read.

    Returns
    -------
    dict of str to UtilityFile
        In the spec's order; empty when no system names a utility file.

    Raises
    ------
    InputError
        A utility file that is gone or is not a utility record (one line naming the spec
        key ``[systems.NAME.utility]``, or ``grid.json`` and the system, and the file).
    """
    from lidframe.grid.spec.systems import spec_utility

    if spec is not None and Path(spec).is_file():
        found = spec_utility(spec)  # a bad utility key or file raises here, naming the spec and the system
        if found is not None:
            return {
                name: UtilityFile(system=name, path=path, sha256=file_sha256(path), utility=utility)
                for name, (path, utility) in found.items()
            }
    from lidframe.grid.records import read_grid_json

    record_path = Path(out_dir) / "grid.json"
    try:
        record: Any = read_grid_json(out_dir)
    except InputError:
        return {}  # no record, or not one (the report says its cells were not checked)
    recorded = record.get(UTILITY_KEY) if isinstance(record, Mapping) else None
    if not isinstance(recorded, Mapping):
        return {}
    return {str(name): _read(str(name), str(path), str(record_path)) for name, path in recorded.items()}
