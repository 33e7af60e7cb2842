"""The ``[systems.NAME]`` tables of a grid spec: each system's sources, ``adapted`` checkpoints and ``utility`` file.

A system's ``dev`` and ``eval`` are score-set files (``.npz`` or long ``.csv``) or
data-dir tables (``{enrol = DIR, trials = [DIRS], original_enrol = DIR}``), paths relative
to the spec file made absolute (:func:`~lidframe.grid.spec.reading.spec_folder`), and maybe
``wav_paths = "cwd"`` or ``"data-dir"``: how relative audio paths in their ``wav.scp`` are
resolved (:data:`lidframe.data.kaldi.WAV_PATHS`; against the current folder by default, as Kaldi does);
``[systems.NAME.adapted]`` names, per attacker, its checkpoint adapted on the system's
anonymised speech; ``utility`` the system's utility file (:func:`utility_file`), which
``lidframe report`` reads again from the spec alone (:func:`spec_utility`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lidframe.data.fileio import StrPath, check_input_file
from lidframe.data.runpaths import check_input_dir
from lidframe.errors import InputError, quote, shorten
from lidframe.grid.spec.reading import fail, read_toml, shown_value, spec_folder
from lidframe.grid.spec.records import DataDirSource, SystemSpec

if TYPE_CHECKING:
    from lidframe.data.kaldi import WavPaths
    from lidframe.utility import Utility

__all__ = ["read_systems", "utility_file", "spec_utility"]

#: The keys a ``[systems.NAME]`` table may have (``dev`` and ``eval`` it must).
_SYSTEM_KEYS = {"dev", "eval", "adapted", "utility"}


def read_systems(path: Path, systems_doc: object) -> tuple[SystemSpec, ...]:
    """``[systems]``: one :class:`~lidframe.grid.spec.records.SystemSpec` per ``[systems.NAME]`` table, in order."""
    if not isinstance(systems_doc, dict) or not systems_doc:
        fail(path, "systems", "needs at least one [systems.NAME] table with dev and eval")
    systems = []
    for name, body in systems_doc.items():
        key = f"systems.{name}"
        if not name.strip() or any(not c.isprintable() for c in name):
            fail(path, f"systems.{name!r}", "a system name must be non-empty printable text")
        if not isinstance(body, dict) or not {"dev", "eval"} <= set(body) <= _SYSTEM_KEYS:
            fail(
                path,
                key,
                "needs exactly the keys dev and eval (and may have the table adapted and the key utility), "
                f"got {sorted(body) if isinstance(body, dict) else body!r}",
            )
        dev = _source(path, f"{key}.dev", body["dev"])
        ev = _source(path, f"{key}.eval", body["eval"])
        if isinstance(dev, dict) != isinstance(ev, dict):
            fail(path, key, "dev and eval must both be score-set files or both data-dir tables")
        adapted = _adapted(path, f"{key}.adapted", body.get("adapted"), data_dirs=isinstance(dev, dict))
        utility = utility_file(path, name, body["utility"])[0] if "utility" in body else None
        systems.append(SystemSpec(name, dev, ev, adapted, utility))
    return tuple(systems)


def _source(path: Path, key: str, value: object) -> str | DataDirSource:
    """A system's ``dev`` or ``eval``: a score-set file, or a data-dir table; its paths absolute and checked."""
    if isinstance(value, str):
        return _score_file(path, key, value)
    if isinstance(value, dict):
        return _data_dirs(path, key, value)
    fail(path, key, f"must be a score-set path or a table {{enrol = DIR, trials = [DIRS]}}, got {shown_value(value)}")


def _score_file(path: Path, key: str, value: str) -> str:
    """A score-set source: the absolute path of an existing ``.npz`` or ``.csv`` file."""
    folder = spec_folder(path)
    file = (folder / value) if not Path(value).is_absolute() else Path(value)
    if file.suffix.lower() not in (".npz", ".csv"):
        fail(path, key, f"{quote(value)}: expected a .npz or .csv score-set file")
    if not os.path.lexists(file):
        fail(path, key, f"{quote(value)}: no such file ({shorten(str(file))})")
    try:  # a folder, a FIFO, a device or a symlink loop is named as what it is
        check_input_file(file, "a score-set file (.npz or .csv)")
    except InputError as exc:
        fail(path, key, f"{quote(value)}: {exc}")
    return str(file)


def _data_dirs(path: Path, key: str, value: dict[str, Any]) -> DataDirSource:
    """A data-dir source: ``enrol``, ``trials`` (one or a list) and maybe ``original_enrol``, each an existing folder,
    and maybe ``wav_paths``."""
    folder = spec_folder(path)
    unknown = set(value) - {"enrol", "trials", "original_enrol", "wav_paths"}
    if unknown or "enrol" not in value or "trials" not in value:
        fail(
            path,
            key,
            f"a data-dir source needs exactly 'enrol' and 'trials' (and may have 'original_enrol' and 'wav_paths'), "
            f"got {sorted(value)}",
        )
    wav_paths = _wav_paths(path, key, value)
    enrol = value["enrol"]
    trials = value["trials"] if isinstance(value["trials"], list) else [value["trials"]]
    dirs = []
    original = [("original_enrol", value["original_enrol"])] if "original_enrol" in value else []
    for sub, d in [("enrol", enrol)] + [(f"trials[{i}]", t) for i, t in enumerate(trials)] + original:
        if not isinstance(d, str):
            fail(path, f"{key}.{sub}", f"must be a path string, got {d!r}")
        full = (folder / d) if not Path(d).is_absolute() else Path(d)
        try:  # missing, a file or a symlink loop: named as what it is
            check_input_dir(full)
        except InputError as exc:
            fail(path, f"{key}.{sub}", f"{d!r}: {exc}")
        dirs.append(str(full))
    source: DataDirSource = {"enrol": dirs[0], "trials": dirs[1:]}
    if original:
        source = {"enrol": dirs[0], "trials": dirs[1:-1], "original_enrol": dirs[-1]}
    if wav_paths is not None:  # only where given: a source without it keys the score cache as before
        source["wav_paths"] = wav_paths
    return source


def _wav_paths(path: Path, key: str, value: dict[str, Any]) -> WavPaths | None:
    """A data-dir source's ``wav_paths`` (:data:`lidframe.data.kaldi.WAV_PATHS`), None where not given."""
    from lidframe.data.kaldi import check_wav_paths

    if "wav_paths" not in value:
        return None
    try:
        return check_wav_paths(value["wav_paths"])
    except InputError as exc:
        fail(path, f"{key}.wav_paths", str(exc).removeprefix("wav_paths: "))


def _adapted(path: Path, key: str, value: object, *, data_dirs: bool) -> dict[str, str]:
    """``[systems.NAME.adapted]``: attacker name -> checkpoint path (relative to the spec file; made absolute)."""
    if value is None:
        return {}
    if not data_dirs:
        fail(
            path,
            key,
            "applies to data-dir systems (the checkpoints their attackers score with); this system has score-set files",
        )
    if not isinstance(value, dict):
        fail(path, key, f"must be a table of attacker name = checkpoint path, got {shown_value(value)}")
    adapted = {}
    for name, checkpoint in value.items():
        if not isinstance(checkpoint, str) or not checkpoint.strip():
            fail(path, f"{key}.{name}", f"must be a checkpoint path, got {shown_value(checkpoint)}")
        file = Path(checkpoint) if Path(checkpoint).is_absolute() else spec_folder(path) / checkpoint
        if not os.path.lexists(file):
            fail(path, f"{key}.{name}", f"{quote(checkpoint)}: no such checkpoint ({shorten(str(file))})")
        try:
            check_input_file(file, "a checkpoint file")
        except InputError as exc:
            fail(path, f"{key}.{name}", f"{quote(checkpoint)}: {exc}")
        adapted[name] = str(file)
    return adapted


def utility_file(path: Path, system: str, value: object) -> tuple[str, Utility]:
    """``[systems.NAME] utility``: its absolute path and the :class:`~lidframe.utility.Utility` it holds.

    Parameters
    ----------
    path : pathlib.Path
        The spec file (a relative *value* is relative to its folder, as ``dev`` and ``eval`` are).
    system : str
        The system's name (for the TOML key in errors).
    value : object
        The TOML value: a path string.

    Returns
    -------
    tuple of (str, Utility)
        The absolute path, and the record read from it now.

    Raises
    ------
    InputError
        One line naming the spec, the key ``systems.NAME.utility`` and the file: not a
        path string, no such file, not a file, or not the JSON of ``lidframe utility --json``
        (:func:`lidframe.utility.read_utility`'s reason).
    """
    from lidframe.utility import read_utility

    key = f"systems.{system}.utility"
    if not isinstance(value, str) or not value.strip():
        fail(path, key, f"must be the path of a utility file (lidframe utility --json), got {shown_value(value)}")
    file = Path(value) if Path(value).is_absolute() else spec_folder(path) / value
    if not os.path.lexists(file):
        fail(path, key, f"{quote(value)}: no such utility file ({file})")
    try:
        check_input_file(file, "a utility file (the JSON of lidframe utility --json)")
        utility = read_utility(file)
    except InputError as exc:
        fail(path, key, f"{quote(value)}: {' '.join(str(exc).split())}")
    return str(file), utility


def spec_utility(path: StrPath) -> dict[str, tuple[str, Utility]] | None:
    """The utility file of each system of the spec at *path* that names one, each read now.

    Only the ``[systems.NAME] utility`` keys are read (what ``lidframe report`` needs to
    show the utility beside cells the spec may no longer plan as they were); the rest of
    the spec is not checked here.

    Parameters
    ----------
    path : str or os.PathLike
        A grid spec.

    Returns
    -------
    dict or None
        ``system -> (absolute path, Utility)``, in the spec's order (empty when no system
        names one); None when *path* is not a readable TOML file with a ``[systems]`` table
        of tables (then the spec's own problems are reported elsewhere).

    Raises
    ------
    InputError
        A system's ``utility`` is not a path, or its file is missing or not a utility
        record (:func:`utility_file`).
    """
    path = Path(path)
    try:
        _, doc = read_toml(path)
    except (InputError, OSError):
        return None
    systems = doc.get("systems")
    if not isinstance(systems, dict) or not all(isinstance(body, dict) for body in systems.values()):
        return None
    return {name: utility_file(path, name, body["utility"]) for name, body in systems.items() if "utility" in body}
