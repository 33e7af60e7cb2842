"""Grid specs: systems x attackers x calibrators x priors x seeds, in TOML.

```toml
[grid]
calibrators = ["logistic", "isotonic"]        # component specs, NAME?key=value
priors = ["uniform", "watchlist?ids=spk1,spk2&weight=5"]
attackers = ["ecapa?checkpoint=ckpt/embedding_model.ckpt"]   # for data-dir systems only
mechanisms = ["gaussian?mu=0.5", "gaussian?mu=2"]   # optional DP release of trial embeddings
seeds = [0]                                   # bootstrap seeds (one cell per seed)
znorm_ddof = 1

[grid.longitudinal]                           # optional: k-utterance attackers (uniform-prior cells)
k = [1, 4, "all"]
fusions = ["sum", "temperature"]

[grid.bootstrap]                              # optional: bootstrap intervals per cell
n_boot = 1000
level = 0.95
unit = "speaker"

[systems.plain]                               # score-set files (.npz or long .csv)
dev = "scores/plain_dev.npz"
eval = "scores/plain_eval.npz"

[systems.b3]                                  # data dirs, scored by every attacker
dev = { enrol = "data/libri_dev_enrolls_b3", trials = ["data/libri_dev_trials_f_b3", "data/libri_dev_trials_m_b3"] }
eval = { enrol = "data/libri_test_enrolls_b3", trials = ["data/libri_test_trials_f_b3", "data/libri_test_trials_m_b3"] }
```

File paths in ``[systems]`` are relative to the spec file; paths inside component specs
(``checkpoint=``, ``file=``) are relative to the working directory.  Every error names
the TOML key at fault.  Every axis -- ``calibrators``, ``priors``, ``attackers``,
``mechanisms``, ``seeds`` and ``[grid.longitudinal]``'s ``k`` and ``fusions`` -- is a
TOML list, even of one entry: a single value (``calibrators = "logistic"``,
``seeds = 0``) is refused, naming the key and the list it should be.

``[grid.bootstrap]`` was called ``[grid.ci]`` before: for one release a spec with
``[grid.ci]`` is still read, with a :class:`FutureWarning` naming the new table (both
tables in one spec is an error).  The name does not identify a cell -- its
:class:`~lidframe.stats.bootstrap.Bootstrap` settings do -- so renaming the table
recomputes nothing.

Validation reads what the cells will read, so that bad input stops the grid before any
cell runs: every score-set file is loaded, every data directory's ``wav.scp`` and
``utt2spk`` are read (a piped ``wav.scp`` entry is refused), every component spec's
parameters are converted and checked, each calibrator is
fitted once on a small simulated dev set (a parameter it refuses at fit time, such as
``logistic?C=-1``, is found here), and each prior is applied to every system's enrolled
eval speakers (a watch-list id that is not enrolled is found here).  Fitting each
calibrator is the slow part of checking a spec of many calibrators (about 10 ms each);
a spec read only to compare a finished grid's inputs (``lidframe report``) skips it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tomllib
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypedDict

import attrs
import numpy as np

from lidframe.data.fileio import StrPath, check_input_file
from lidframe.errors import InputError, quote, shorten
from lidframe.stats.bootstrap import Bootstrap

__all__ = ["GridSpec", "SystemSpec", "DataDirSource", "load_grid_spec", "NOTE_CELLS"]

#: A spec of at least this many cells says what it checks and plans (checking it takes seconds).
NOTE_CELLS = 1000

_GRID_KEYS = {
    "calibrators",
    "priors",
    "attackers",
    "mechanisms",
    "seeds",
    "znorm_ddof",
    "bootstrap",
    "ci",
    "longitudinal",
}
#: The keys of ``[grid.bootstrap]``: :class:`~lidframe.stats.bootstrap.Bootstrap`'s, but its seed (one per cell).
_BOOTSTRAP_KEYS = {"n_boot", "level", "unit", "method"}


class DataDirSource(TypedDict):
    """A system split given as Kaldi data dirs (absolute paths): one enrolment dir, one or more trial dirs."""

    enrol: str
    trials: list[str]


@attrs.frozen
class SystemSpec:
    """One system: dev and eval sources, each a score-set path or ``{"enrol": dir, "trials": [dirs]}``."""

    name: str
    dev: str | DataDirSource
    eval: str | DataDirSource

    @property
    def needs_attacker(self) -> bool:
        """True when the sources are data dirs, which an attacker must score first."""
        return isinstance(self.dev, dict)


@attrs.frozen
class GridSpec:
    """A validated grid spec (see the module docstring).

    Attributes
    ----------
    path : pathlib.Path
        The TOML file.
    digest : str
        SHA-256 of its bytes.
    systems : tuple of SystemSpec
        Source paths absolute.
    calibrators, priors, attackers, mechanisms : tuple of str
        Component specs (``attackers`` and ``mechanisms`` empty when not given).
    seeds : tuple of int
        Bootstrap seeds, one cell each.
    znorm_ddof : {0, 1}
    bootstrap : Bootstrap or None
        ``[grid.bootstrap]`` (each cell's seed replaces its ``seed``); None: no intervals.
    longitudinal : dict or None
        ``[grid.longitudinal]``: ``{"k": [...], "fusions": [...], "groups": int}``.
    """

    path: Path
    digest: str
    systems: tuple[SystemSpec, ...]
    calibrators: tuple[str, ...]
    priors: tuple[str, ...]
    attackers: tuple[str, ...]
    mechanisms: tuple[str, ...]
    seeds: tuple[int, ...]
    znorm_ddof: int
    bootstrap: Bootstrap | None
    longitudinal: dict[str, Any] | None = None

    def n_cells(self) -> int:
        """Number of cells the grid expands to (attacker x mechanism pairs only for data-dir systems)."""
        return _count_cells(self.systems, self.attackers, self.mechanisms, self.calibrators, self.priors, self.seeds)


def _count_cells(systems, attackers, mechanisms, calibrators, priors, seeds) -> int:
    with_attacker = sum(1 for s in systems if s.needs_attacker)
    per_system = len(attackers) * max(1, len(mechanisms))
    pairs = with_attacker * per_system + (len(systems) - with_attacker)
    return pairs * len(calibrators) * len(priors) * len(seeds)


def _shape(systems, attackers, mechanisms, calibrators, priors, seeds) -> str:
    """The axes in words: ``"3 systems x 2 calibrators x 2 priors x 1 seed"`` (attackers and mechanisms when given)."""
    axes = [("system", systems), ("attacker", attackers), ("mechanism", mechanisms)]
    axes += [("calibrator", calibrators), ("prior", priors), ("seed", seeds)]
    return " x ".join(
        f"{len(v)} {name}{'' if len(v) == 1 else 's'}" for name, v in axes if v or name not in ("attacker", "mechanism")
    )


def _fail(path: Path, key: str, message: str) -> NoReturn:
    raise InputError(f"{path}: [{key}] {message}")


def _shown(value: object, limit: int = 80) -> str:
    """``repr(value)``, cut to *limit* characters."""
    return shorten(repr(value), limit)


def _axis(
    path: Path,
    key: str,
    value: object,
    *,
    what: str,
    example: str,
    item: type | tuple[type, ...],
    required: bool = True,
) -> list[Any]:
    """*value* when it is a TOML list; one rule for every axis of the grid: a single value is refused.

    A single value of the axis's *item* type is shown as the list of one it should be.
    """
    if not isinstance(value, list):
        hint = ""
        if isinstance(value, item) and not isinstance(value, bool) and len(repr(value)) <= 80:
            shown = f'"{value}"' if isinstance(value, str) and '"' not in value and "\\" not in value else repr(value)
            hint = f"; write [{shown}] for one"
        kind = "a non-empty list" if required else "a list"
        _fail(path, key, f"must be {kind} of {what}, e.g. {example}, even of one entry; got {_shown(value)}{hint}")
    return value


def _string_list(path: Path, key: str, value: object, *, required: bool = True, example: str) -> tuple[str, ...]:
    if value is None:
        if required:
            _fail(path, key, "is missing; expected a list of component specs")
        return ()
    value = _axis(path, key, value, what="component specs", example=example, item=str, required=required)
    if not all(isinstance(v, str) and v.strip() for v in value):
        _fail(path, key, f"must be a list of non-empty strings, got {_shown(value)}")
    if required and not value:
        _fail(path, key, "is empty; expected at least one component spec")
    if len(set(value)) != len(value):
        _fail(path, key, f"has repeated entries: {value}")
    return tuple(value)


def _source(path: Path, key: str, value: object) -> str | DataDirSource:
    folder = path.parent
    if isinstance(value, str):
        file = (folder / value) if not Path(value).is_absolute() else Path(value)
        if file.suffix.lower() not in (".npz", ".csv"):
            _fail(path, key, f"{quote(value)}: expected a .npz or .csv score-set file")
        if not os.path.lexists(file):
            _fail(path, key, f"{quote(value)}: no such file ({shorten(str(file))})")
        try:  # a folder, a FIFO, a device or a symlink loop is named as what it is
            check_input_file(file, "a score-set file (.npz or .csv)")
        except InputError as exc:
            _fail(path, key, f"{quote(value)}: {exc}")
        return str(file)
    if isinstance(value, dict):
        unknown = set(value) - {"enrol", "trials"}
        if unknown or "enrol" not in value or "trials" not in value:
            _fail(path, key, f"a data-dir source needs exactly 'enrol' and 'trials', got {sorted(value)}")
        enrol = value["enrol"]
        trials = value["trials"] if isinstance(value["trials"], list) else [value["trials"]]
        dirs = []
        for sub, d in [("enrol", enrol)] + [(f"trials[{i}]", t) for i, t in enumerate(trials)]:
            if not isinstance(d, str):
                _fail(path, f"{key}.{sub}", f"must be a path string, got {d!r}")
            full = (folder / d) if not Path(d).is_absolute() else Path(d)
            if not full.is_dir():
                exists = full.exists()
                problem = (
                    f"{full} is not a folder; expected a data directory"
                    if exists
                    else f"no such data directory ({full})"
                )
                _fail(path, f"{key}.{sub}", f"{d!r}: {problem}")
            dirs.append(str(full))
        return {"enrol": dirs[0], "trials": dirs[1:]}
    _fail(path, key, f"must be a score-set path or a table {{enrol = DIR, trials = [DIRS]}}, got {_shown(value)}")


def _check_components(path: Path, key: str, kind: str, specs: tuple[str, ...]) -> list[Any]:
    """Check each spec's parameters (and declared files); build calibrators and priors (not attackers).

    Returns the :class:`~lidframe.registry.SpecInputs` of each attacker, or each built
    calibrator or prior.
    """
    from lidframe import registry

    out = []
    for i, spec in enumerate(specs):
        try:
            found = registry.spec_inputs(kind, spec)  # imports the class, converts and checks the parameters
            out.append(found if kind == "attacker" else registry.create(kind, spec))
        except InputError as exc:
            _fail(path, f"{key}[{i}]", f"{spec!r}: {exc}")
        except Exception as exc:  # a plugin's constructor refusing its parameters its own way
            _fail(path, f"{key}[{i}]", f"{spec!r}: {type(exc).__name__}: {exc}")
    return out


@functools.cache
def _probe_dev() -> Any:
    """A small simulated dev score set that any calibrator should fit (8 speakers, 32 trials)."""
    from lidframe.data.simulate import simulate_system

    return simulate_system(leakage=0.5, n_enrolled=8, trials_per_speaker=4, seed=0)[0]


def _probe_calibrators(
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
                _fail(path, f"grid.calibrators[{i}]", f"{spec!r} (fitted once on simulated scores to check it): {exc}")
            except Exception:  # not a parameter problem: the real dev set decides, in its cell
                pass
            advance(1)


def _speakers(path: Path, system: SystemSpec) -> np.ndarray:
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
                _fail(path, key, str(exc))
            if split == "eval":
                enrolled = np.asarray(scores.enrolled)
            continue
        for sub, folder in [("enrol", source["enrol"])] + [(f"trials[{i}]", t) for i, t in enumerate(source["trials"])]:
            try:
                utterances = read_data_dir(folder)
            except InputError as exc:
                _fail(path, f"{key}.{sub}", str(exc))
            if split == "eval" and sub == "enrol":
                enrolled = np.array(list(dict.fromkeys(u.speaker for u in utterances)), dtype=str)
    return enrolled


def _probe_priors(path: Path, specs: tuple[str, ...], priors: list[Any], enrolled: dict[str, np.ndarray]) -> None:
    """Apply each prior to every system's enrolled eval speakers (non-enrolled watch-list ids show up here)."""
    for i, (spec, prior) in enumerate(zip(specs, priors)):
        for system, ids in enrolled.items():
            try:
                prior.log_prior(ids)
            except InputError as exc:
                _fail(path, f"grid.priors[{i}]", f"{spec!r} on system {system!r}: {exc}")


def _read_toml(path: Path) -> tuple[bytes, dict[str, Any]]:
    """The spec file's bytes and its TOML document, checked to hold only ``[grid]`` and ``[systems]``."""
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected a grid spec file (TOML)")
    if not path.is_file():
        raise InputError(f"{path}: no such grid spec")
    raw = path.read_bytes()
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None
    unknown = set(doc) - {"grid", "systems"}
    if unknown:
        _fail(path, sorted(unknown)[0], "is not a grid spec section; expected [grid] and [systems.NAME]")
    return raw, doc


def _grid_table(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    grid = doc.get("grid", {})
    if not isinstance(grid, dict):
        _fail(path, "grid", "must be a table")
    unknown = set(grid) - _GRID_KEYS
    if unknown:
        _fail(path, f"grid.{sorted(unknown)[0]}", f"unknown key; expected one of {sorted(_GRID_KEYS - {'ci'})}")
    return grid


def _mechanisms(path: Path, grid: dict[str, Any]) -> tuple[str, ...]:
    mechanisms = _string_list(
        path, "grid.mechanisms", grid.get("mechanisms"), required=False, example='["gaussian?mu=1"]'
    )
    for i, spec in enumerate(mechanisms):
        from lidframe.privacy.mechanism import GaussianSpeakerMechanism

        try:
            GaussianSpeakerMechanism.from_spec(spec)
        except InputError as exc:
            _fail(path, f"grid.mechanisms[{i}]", str(exc))
    return mechanisms


def _seeds(path: Path, grid: dict[str, Any]) -> tuple[int, ...]:
    seeds = _axis(
        path, "grid.seeds", grid.get("seeds", [0]), what="integers (bootstrap seeds)", example="[0]", item=int
    )
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        _fail(path, "grid.seeds", f"must be a non-empty list of integers, got {seeds!r}")
    if any(s < 0 for s in seeds):
        _fail(path, "grid.seeds", f"must be non-negative integers (numpy seeds), got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        _fail(path, "grid.seeds", f"has repeated entries: {seeds}")
    return tuple(seeds)


def _znorm_ddof(path: Path, grid: dict[str, Any]) -> int:
    ddof = grid.get("znorm_ddof", 1)
    if ddof not in (0, 1) or isinstance(ddof, bool):
        _fail(path, "grid.znorm_ddof", f"must be 0 or 1, got {ddof!r}")
    return int(ddof)


def _bootstrap(path: Path, grid: dict[str, Any]) -> Bootstrap | None:
    """``[grid.bootstrap]`` (or, with a FutureWarning, its old name ``[grid.ci]``) as a Bootstrap; None without."""
    if "ci" in grid and "bootstrap" in grid:
        _fail(path, "grid.ci", "is the old name of [grid.bootstrap]; give one of the two tables (grid.bootstrap)")
    name = "grid.ci" if "ci" in grid else "grid.bootstrap"
    table = grid.get("ci", grid.get("bootstrap"))
    if table is None:
        return None
    if not isinstance(table, dict) or set(table) - _BOOTSTRAP_KEYS:
        _fail(path, name, f"must be a table with keys among {sorted(_BOOTSTRAP_KEYS)}")
    if "level" in table and not isinstance(table["level"], float):
        _fail(path, f"{name}.level", f"must be a number in (0, 1), got {table['level']!r}")
    for key, value in table.items():  # one key at a time, so that the error names it
        try:
            Bootstrap(**{key: value})
        except InputError as exc:
            _fail(path, f"{name}.{key}", str(exc))
    if name == "grid.ci":  # read as it was, said once the table is valid (a refused spec says one line)
        warnings.warn(
            f"{path}: [grid.ci] is now called [grid.bootstrap]; rename the table (the old name is read "
            "for one more release)",
            FutureWarning,
            stacklevel=4,
        )
    return Bootstrap(**table)  # the library's defaults fill the keys left out; seeds come per cell


def _longitudinal(path: Path, grid: dict[str, Any]) -> dict[str, Any] | None:
    longitudinal = grid.get("longitudinal")
    if longitudinal is None:
        return None
    if not isinstance(longitudinal, dict) or set(longitudinal) - {"k", "fusions", "groups"}:
        _fail(path, "grid.longitudinal", "must be a table with keys among ['fusions', 'groups', 'k']")
    ks = _axis(
        path,
        "grid.longitudinal.k",
        longitudinal.get("k", [1, 2, 4, 8, "all"]),
        what="positive integers or 'all'",
        example='[1, 4, "all"]',
        item=(int, str),
    )
    if not ks or not all((isinstance(k, int) and not isinstance(k, bool) and k >= 1) or k == "all" for k in ks):
        _fail(path, "grid.longitudinal.k", f"must be a list of positive integers or 'all', got {ks!r}")
    fusions = _string_list(path, "grid.longitudinal.fusions", longitudinal.get("fusions", ["sum"]), example='["sum"]')
    bad = [f for f in fusions if f not in ("sum", "mean", "temperature")]
    if bad:
        _fail(path, "grid.longitudinal.fusions", f"unknown fusion {bad[0]!r}; expected sum, mean or temperature")
    groups = longitudinal.get("groups", 10)
    if not isinstance(groups, int) or groups < 1:
        _fail(path, "grid.longitudinal.groups", f"must be a positive integer, got {groups!r}")
    return {"k": ks, "fusions": list(fusions), "groups": groups}


def _systems(path: Path, systems_doc: object) -> tuple[SystemSpec, ...]:
    if not isinstance(systems_doc, dict) or not systems_doc:
        _fail(path, "systems", "needs at least one [systems.NAME] table with dev and eval")
    systems = []
    for name, body in systems_doc.items():
        key = f"systems.{name}"
        if not name.strip() or any(not c.isprintable() for c in name):
            _fail(path, f"systems.{name!r}", "a system name must be non-empty printable text")
        if not isinstance(body, dict) or set(body) != {"dev", "eval"}:
            _fail(
                path,
                key,
                f"needs exactly the keys dev and eval, got {sorted(body) if isinstance(body, dict) else body!r}",
            )
        dev = _source(path, f"{key}.dev", body["dev"])
        ev = _source(path, f"{key}.eval", body["eval"])
        if isinstance(dev, dict) != isinstance(ev, dict):
            _fail(path, key, "dev and eval must both be score-set files or both data-dir tables")
        systems.append(SystemSpec(name, dev, ev))
    return tuple(systems)


def _parse(path: Path) -> GridSpec:
    """The spec as the TOML says it, each key checked on its own (the components are not built yet)."""
    raw, doc = _read_toml(path)
    grid = _grid_table(path, doc)
    spec = GridSpec(
        path=path,
        digest=hashlib.sha256(raw).hexdigest(),
        calibrators=_string_list(
            path, "grid.calibrators", grid.get("calibrators", ["logistic"]), example='["logistic"]'
        ),
        priors=_string_list(path, "grid.priors", grid.get("priors", ["uniform"]), example='["uniform"]'),
        attackers=_string_list(
            path, "grid.attackers", grid.get("attackers"), required=False, example='["ecapa?checkpoint=model.ckpt"]'
        ),
        mechanisms=_mechanisms(path, grid),
        seeds=_seeds(path, grid),
        znorm_ddof=_znorm_ddof(path, grid),
        bootstrap=_bootstrap(path, grid),
        longitudinal=_longitudinal(path, grid),
        systems=_systems(path, doc.get("systems")),
    )
    if any(s.needs_attacker for s in spec.systems) and not spec.attackers:
        _fail(path, "grid.attackers", "data-dir systems need at least one attacker spec")
    if spec.mechanisms and not any(s.needs_attacker for s in spec.systems):
        _fail(path, "grid.mechanisms", "mechanisms transform embeddings: they need data-dir systems and an attacker")
    return spec


def _say_what_is_checked(spec: GridSpec, note: Callable[[str], Any], *, progress: bool, fit_calibrators: bool) -> None:
    """The one line of a large spec (or with *progress*): its cells, and that they are checked and planned."""
    n_cells = spec.n_cells()
    if progress or n_cells >= NOTE_CELLS:
        shape = _shape(spec.systems, spec.attackers, spec.mechanisms, spec.calibrators, spec.priors, spec.seeds)
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
        beside ``[grid.bootstrap]``.

    Warns
    -----
    FutureWarning
        A spec with ``[grid.ci]``, the old name of ``[grid.bootstrap]``.
    """
    path = Path(path)
    spec = _parse(path)
    if note is not None:
        _say_what_is_checked(spec, note, progress=progress, fit_calibrators=fit_calibrators)
    built_calibrators = _check_components(path, "grid.calibrators", "calibrator", spec.calibrators)
    built_priors = _check_components(path, "grid.priors", "prior", spec.priors)
    _check_components(path, "grid.attackers", "attacker", spec.attackers)
    enrolled = {s.name: _speakers(path, s) for s in spec.systems}
    if fit_calibrators:
        _probe_calibrators(path, spec.calibrators, built_calibrators, spec.znorm_ddof, progress=progress)
    _probe_priors(path, spec.priors, built_priors, enrolled)
    return spec
