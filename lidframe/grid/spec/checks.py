"""What a grid spec's cells will read, checked before any cell runs.

Each component spec's parameters are converted and checked and its calibrators and
priors built (:func:`check_components`); each calibrator is fitted once on a small
simulated dev set (:func:`probe_calibrators`); every score-set file is loaded and every
data directory read (:func:`enrolled_speakers`); each prior is applied to every system's
enrolled eval speakers (:func:`probe_priors`); and each scenario finds what it needs of
each data-dir system (:func:`check_scenario_inputs`); each fusion entry of the
attackers names attackers of the list (:func:`check_fusions`).  Every error names the
spec and its TOML key (:func:`~lidframe.grid.spec.reading.fail`).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from lidframe.errors import InputError, mismatch
from lidframe.grid.spec.fusion import fused_attacker, is_fusion
from lidframe.grid.spec.reading import fail
from lidframe.grid.spec.records import CHECKPOINT, GridSpec, SystemSpec, attacker_name, source_wav_paths

__all__ = [
    "check_components",
    "check_fusions",
    "probe_calibrators",
    "enrolled_speakers",
    "probe_priors",
    "check_scenario_inputs",
]


def check_components(path: Path, key: str, kind: str, specs: tuple[str, ...]) -> list[Any]:
    """Check each spec's parameters (and declared files); build calibrators and priors (not attackers).

    Returns the :class:`~lidframe.registry.SpecInputs` of each attacker (None for a fusion
    entry, which :func:`check_fusions` checks), or each built calibrator or prior.
    """
    from lidframe import registry

    out: list[Any] = []
    for i, spec in enumerate(specs):
        if kind == "attacker" and is_fusion(spec):  # not a registered component
            out.append(None)
            continue
        try:
            found = registry.spec_inputs(kind, spec)  # imports the class, converts and checks the parameters
            out.append(found if kind == "attacker" else registry.create(kind, spec))
        except InputError as exc:
            fail(path, f"{key}[{i}]", f"{spec!r}: {exc}")
        except Exception as exc:  # noqa: BLE001 - a plugin's constructor may refuse its parameters its own way: named by key
            fail(path, f"{key}[{i}]", f"{spec!r}: {type(exc).__name__}: {exc}")
    return out


def check_fusions(path: Path, attackers: tuple[str, ...]) -> None:
    """Each ``fusion?of=...`` entry of *attackers* reads, and names at least two other attackers of the list.

    (:func:`lidframe.grid.spec.fusion.fused_attacker`; an error names the spec and ``grid.attackers[i]``.)
    """
    for i, spec in enumerate(attackers):
        if is_fusion(spec):
            try:
                fused_attacker(spec, attackers)
            except InputError as exc:
                fail(path, f"grid.attackers[{i}]", f"{spec!r}: {exc}")


@functools.cache
def _probe_dev() -> Any:
    """A small simulated dev score set that any calibrator should fit (8 speakers, 32 trials)."""
    from lidframe.data.simulate import simulate_system

    return simulate_system(leakage=0.5, n_enrolled=8, trials_per_speaker=4, seed=0)[0]


def probe_calibrators(
    path: Path, specs: tuple[str, ...], built: list[Any], znorm_ddof: int, *, progress: bool = False
) -> None:
    """Fit each calibrator (*built* from *specs*) once on :func:`_probe_dev`: parameters refused at fit time show up."""
    from lidframe.core import evaluation
    from lidframe.grid.progress import progress_bar

    try:
        from sklearn.utils._param_validation import InvalidParameterError
    except ImportError:  # pragma: no cover - older or newer scikit-learn
        InvalidParameterError = InputError
    with progress_bar(len(specs), "checking calibrators", "fit", enabled=progress) as advance:
        for i, (spec, calibrator) in enumerate(zip(specs, built)):
            try:
                evaluation.fit_calibrator(_probe_dev(), calibrator, znorm_ddof=znorm_ddof)  # fits a copy
            except (InputError, InvalidParameterError) as exc:
                fail(path, f"grid.calibrators[{i}]", f"{spec!r} (fitted once on simulated scores to check it): {exc}")
            except Exception:  # noqa: BLE001 - not a parameter problem: the real dev set decides, in its cell
                pass
            advance(1)


def enrolled_speakers(path: Path, system: SystemSpec) -> np.ndarray:
    """Read what the system's cells will read; return its enrolled eval speaker ids."""
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.scoreset import ScoreSet

    enrolled = np.array([], dtype=str)
    for split in ("dev", "eval"):
        source = getattr(system, split)
        key = f"systems.{system.name}.{split}"
        if isinstance(source, str):
            try:
                scores = ScoreSet.load(source)
            except InputError as exc:
                fail(path, key, str(exc))
            if split == "eval":
                enrolled = np.asarray(scores.enrolled)
            continue
        folders = [("enrol", source["enrol"])] + [(f"trials[{i}]", t) for i, t in enumerate(source["trials"])]
        folders += [("original_enrol", source["original_enrol"])] if "original_enrol" in source else []
        speakers: dict[str, list[str]] = {}
        for sub, folder in folders:
            try:
                utterances = read_data_dir(folder, wav_paths=source_wav_paths(source))
            except InputError as exc:
                fail(path, f"{key}.{sub}", str(exc))
            speakers[sub] = list(dict.fromkeys(u.speaker for u in utterances))
            if split == "eval" and sub == "enrol":
                enrolled = np.array(speakers[sub], dtype=str)
        if "original_enrol" in speakers and set(speakers["original_enrol"]) != set(speakers["enrol"]):
            only_original = [s for s in speakers["original_enrol"] if s not in set(speakers["enrol"])]
            only_enrol = [s for s in speakers["enrol"] if s not in set(speakers["original_enrol"])]
            fail(
                path,
                f"{key}.original_enrol",
                "must enrol the speakers of enrol (their original speech): "
                + mismatch("not in enrol:", only_original, "missing:", only_enrol),
            )
    return enrolled


def probe_priors(path: Path, specs: tuple[str, ...], priors: list[Any], enrolled: dict[str, np.ndarray]) -> None:
    """Apply each prior to every system's enrolled eval speakers (non-enrolled watch-list ids show up here)."""
    for i, (spec, prior) in enumerate(zip(specs, priors)):
        for system, ids in enrolled.items():
            try:
                prior.log_prior(ids)
            except InputError as exc:
                fail(path, f"grid.priors[{i}]", f"{spec!r} on system {system!r}: {exc}")


def check_scenario_inputs(path: Path, spec: GridSpec) -> None:
    """What each scenario of the grid needs of each data-dir system, and that ``adapted`` names a model attacker.

    ``ignorant`` needs each split's ``original_enrol``; ``semi-informed`` an ``adapted``
    checkpoint for each attacker that takes a checkpoint (its default or given weights
    are those of a model trained on clear speech).  An ``adapted`` entry must name an
    attacker of ``[grid] attackers`` that takes a checkpoint.
    """
    from lidframe.registry import accepted_params

    takes = {attacker_name(a): accepted_params("attacker", a) for a in spec.attackers if not is_fusion(a)}
    for system in spec.systems:
        _check_adapted(path, system, takes)
        if system.needs_attacker:
            _check_scenario_needs(path, spec, system, takes)


def _check_adapted(path: Path, system: SystemSpec, takes: dict[str, tuple[str, ...] | None]) -> None:
    """Each ``[systems.NAME.adapted]`` entry names an attacker of the grid that takes a checkpoint.

    *takes* is each attacker name's parameters (None: any).
    """
    key = f"systems.{system.name}"
    for name in system.adapted:
        if name not in takes:
            fail(
                path,
                f"{key}.adapted.{name}",
                f"no attacker named {name!r} in grid.attackers (attacker names: {', '.join(map(repr, takes)) or 'none'})",
            )
        params = takes[name]
        if params is not None and CHECKPOINT not in params:
            fail(path, f"{key}.adapted.{name}", f"attacker {name!r} takes no checkpoint: it has no model to adapt")


def _check_scenario_needs(
    path: Path, spec: GridSpec, system: SystemSpec, takes: dict[str, tuple[str, ...] | None]
) -> None:
    """What the grid's scenarios need of one data-dir *system*: ``original_enrol``, ``adapted`` checkpoints."""
    key = f"systems.{system.name}"
    if "ignorant" in spec.scenarios:
        for split in ("dev", "eval"):
            if "original_enrol" not in getattr(system, split):
                fail(
                    path,
                    f"{key}.{split}.original_enrol",
                    "is missing: the ignorant scenario enrols the speakers' original (clear) speech; give the "
                    "data dir of the same speakers' original enrolment utterances",
                )
    if "semi-informed" in spec.scenarios:
        for attacker in (a for a in spec.attackers if not is_fusion(a)):  # a fusion scores with its members
            name = attacker_name(attacker)
            params = takes[name]
            if params is not None and CHECKPOINT in params and name not in system.adapted:
                fail(
                    path,
                    f"{key}.adapted.{name}",
                    f"is missing: the semi-informed scenario scores with attacker {attacker!r} adapted on this "
                    "system's anonymised training speech; give its checkpoint (a path relative to the spec file)",
                )
