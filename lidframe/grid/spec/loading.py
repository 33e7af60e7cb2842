"""Reading and validating a grid spec: :func:`load_grid_spec`.

The spec is read key by key (:mod:`~lidframe.grid.spec.reading`, the ``[systems]``
tables :mod:`~lidframe.grid.spec.systems`), the keys checked against each other, and
then what its cells will read is checked (:mod:`~lidframe.grid.spec.checks`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lidframe.data.fileio import StrPath
from lidframe.grid.spec.checks import (
    check_components,
    check_fusions,
    check_scenario_inputs,
    enrolled_speakers,
    probe_calibrators,
    probe_priors,
)
from lidframe.grid.spec.reading import fail, grid_axes, read_toml
from lidframe.grid.spec.records import GridSpec
from lidframe.grid.spec.systems import read_systems

__all__ = ["load_grid_spec", "NOTE_CELLS"]

#: A spec of at least this many cells says what it checks and plans (checking it takes seconds).
NOTE_CELLS = 1000


def _shape(systems, attackers, mechanisms, calibrators, priors, seeds, scenarios=()) -> str:
    """The axes in words: ``"3 systems x 2 calibrators x 2 priors x 1 seed"`` (attackers, mechanisms, scenarios when given)."""
    axes = [("system", systems), ("attacker", attackers), ("mechanism", mechanisms), ("scenario", scenarios)]
    axes += [("calibrator", calibrators), ("prior", priors), ("seed", seeds)]
    optional = ("attacker", "mechanism", "scenario")
    return " x ".join(f"{len(v)} {name}{'' if len(v) == 1 else 's'}" for name, v in axes if v or name not in optional)


def _parse(path: Path) -> GridSpec:
    """The spec as the TOML says it, each key checked on its own (the components are not built yet)."""
    raw, doc = read_toml(path)
    spec = GridSpec(
        path=path,
        digest=hashlib.sha256(raw).hexdigest(),
        **grid_axes(path, doc),
        systems=read_systems(path, doc.get("systems")),
    )
    if any(s.needs_attacker for s in spec.systems) and not spec.attackers:
        fail(path, "grid.attackers", "data-dir systems need at least one attacker spec")
    if spec.mechanisms and not any(s.needs_attacker for s in spec.systems):
        fail(path, "grid.mechanisms", "mechanisms transform embeddings: they need data-dir systems and an attacker")
    if spec.scenarios and not any(s.needs_attacker for s in spec.systems):
        fail(
            path,
            "grid.scenarios",
            "scenarios say what an attacker enrols and which model it scores with: they need data-dir systems and "
            "an attacker",
        )
    return spec


def _say_what_is_checked(spec: GridSpec, note: Callable[[str], Any], *, progress: bool, fit_calibrators: bool) -> None:
    """The one line of a large spec (or with *progress*): its cells, and that they are checked and planned."""
    n_cells = spec.n_cells()
    if progress or n_cells >= NOTE_CELLS:
        shape = _shape(
            spec.systems, spec.attackers, spec.mechanisms, spec.calibrators, spec.priors, spec.seeds, spec.scenarios
        )
        fits = (
            f" (each of the {len(spec.calibrators)} calibrators is fitted once to check it)" if fit_calibrators else ""
        )
        note(f"{spec.path}: {n_cells} cells ({shape}); checking the spec and planning the cells{fits}")


def load_grid_spec(
    path: StrPath,
    *,
    fit_calibrators: bool = True,
    progress: bool = False,
    note: Callable[[str], Any] | None = None,
) -> GridSpec:
    """Read and validate a grid spec.

    Parameters
    ----------
    path : str or os.PathLike
        The TOML file; relative ``[systems]`` paths are resolved against its folder.
    fit_calibrators : bool
        Fit each calibrator once on simulated scores, to find parameters refused only at
        fit time (the slow part of a spec of many calibrators).  False for a spec read
        only to plan it again (a report comparing a finished grid's inputs).
    progress : bool
        A tqdm bar over the calibrator fits.
    note : callable, optional
        Called with one line saying how many cells the spec has and that they are
        checked and planned, before the checks, when the spec has at least
        :data:`NOTE_CELLS` cells or *progress* is on.

    Returns
    -------
    GridSpec
        The validated spec, with absolute source paths and the SHA-256 digest of the file.

    Raises
    ------
    InputError
        Naming the file and the TOML key: syntax errors, unknown keys, wrong types,
        missing files or directories, unknown components or parameters, ``[grid.ci]``
        beside ``[grid.bootstrap]``, an unknown scenario, a scenario without what it
        needs (``original_enrol``, an ``adapted`` checkpoint), a system's ``utility`` file
        missing or not a utility record (naming the system and the file), a fusion entry
        that does not name two or more attackers of the list
        (:func:`~lidframe.grid.spec.fusion.fused_attacker`).

    Warns
    -----
    FutureWarning
        A spec with ``[grid.ci]``, the old name of ``[grid.bootstrap]``.
    """
    path = Path(path)
    spec = _parse(path)
    if note is not None:
        _say_what_is_checked(spec, note, progress=progress, fit_calibrators=fit_calibrators)
    built_calibrators = check_components(path, "grid.calibrators", "calibrator", spec.calibrators)
    built_priors = check_components(path, "grid.priors", "prior", spec.priors)
    check_components(path, "grid.attackers", "attacker", spec.attackers)
    check_fusions(path, spec.attackers)
    check_scenario_inputs(path, spec)
    enrolled = {s.name: enrolled_speakers(path, s) for s in spec.systems}
    if fit_calibrators:
        probe_calibrators(path, spec.calibrators, built_calibrators, spec.znorm_ddof, progress=progress)
    probe_priors(path, spec.priors, built_priors, enrolled)
    return spec
