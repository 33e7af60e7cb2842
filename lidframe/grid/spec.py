"""Grid specs: systems x attackers x calibrators x priors x seeds, in TOML.

```toml
[grid]
calibrators = ["logistic", "isotonic"]        # component specs, NAME?key=value
priors = ["uniform", "watchlist?ids=spk1,spk2&weight=5"]
attackers = ["ecapa?checkpoint=ckpt/embedding_model.ckpt"]   # for data-dir systems only
mechanisms = ["gaussian?mu=0.5", "gaussian?mu=2"]   # optional DP release of trial embeddings
scenarios = ["ignorant", "lazy-informed", "semi-informed"]   # optional threat-model ladder (data dirs)
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
dev = { enrol = "data/libri_dev_enrolls_b3", trials = ["data/libri_dev_trials_f_b3", "data/libri_dev_trials_m_b3"],
        original_enrol = "data/libri_dev_enrolls" }        # the same speakers' clear speech (ignorant)
eval = { enrol = "data/libri_test_enrolls_b3", trials = ["data/libri_test_trials_f_b3", "data/libri_test_trials_m_b3"],
         original_enrol = "data/libri_test_enrolls" }

[systems.b3.adapted]                          # attacker name -> checkpoint adapted on b3's output (semi-informed)
ecapa = "asv/ecapa_adapted_b3.ckpt"
```

A system may also name its utility, ``utility = "b3_utility.json"`` (what ``lidframe utility
--json`` writes: WER and rho_F0 of its speech, :func:`lidframe.utility.read_utility`): it is
checked when the spec is read, but it is no input of any cell (no cell is recomputed, or
stale, when it changes); ``lidframe report`` reads it again each time
(:mod:`lidframe.grid.utility`).

File paths in ``[systems]`` are relative to the spec file; paths inside component specs
(``checkpoint=``, ``file=``) are relative to the working directory.  Every error names
the TOML key at fault.  Every axis -- ``calibrators``, ``priors``, ``attackers``,
``mechanisms``, ``scenarios``, ``seeds`` and ``[grid.longitudinal]``'s ``k`` and
``fusions`` -- is a TOML list, even of one entry: a single value (``calibrators =
"logistic"``, ``seeds = 0``) is refused, naming the key and the list it should be.

``scenarios`` (:data:`lidframe.data.scenario.SCENARIOS`) applies to data-dir systems: an
``ignorant`` cell scores the anonymised trials against the split's ``original_enrol``
(required, with the speakers of ``enrol``), a ``lazy-informed`` cell against ``enrol``,
and a ``semi-informed`` cell like a lazy-informed one with each attacker that takes a
checkpoint given the system's ``[systems.NAME.adapted]`` checkpoint for it (required).
Without the axis neither is used and every cell is keyed as before it.

``[grid.bootstrap]`` was called ``[grid.ci]`` before: for one release a spec with
``[grid.ci]`` is still read, with a :class:`FutureWarning` naming the new table (both
tables in one spec is an error).  The name does not identify a cell -- its
:class:`~lidframe.stats.bootstrap.Bootstrap` settings do -- so renaming the table
recomputes nothing.

Validation reads what the cells will read, so that bad input stops the grid before any
cell runs: every score-set file is loaded, every ``utility`` file read, every data directory's ``wav.scp`` and
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
from typing import TYPE_CHECKING, Any, NoReturn, NotRequired, TypedDict
from urllib.parse import quote as url_quote

import attrs
import numpy as np

from lidframe.data.fileio import StrPath, check_input_file
from lidframe.data.scenario import SCENARIOS, check_scenario
from lidframe.errors import InputError, mismatch, quote, shorten
from lidframe.stats.bootstrap import Bootstrap

if TYPE_CHECKING:
    from lidframe.utility import Utility

__all__ = ["GridSpec", "SystemSpec", "DataDirSource", "load_grid_spec", "spec_utility", "utility_file", "NOTE_CELLS"]

#: A spec of at least this many cells says what it checks and plans (checking it takes seconds).
NOTE_CELLS = 1000

_GRID_KEYS = {
    "calibrators",
    "priors",
    "attackers",
    "mechanisms",
    "scenarios",
    "seeds",
    "znorm_ddof",
    "bootstrap",
    "ci",
    "longitudinal",
}
#: The keys a ``[systems.NAME]`` table may have (``dev`` and ``eval`` it must).
_SYSTEM_KEYS = {"dev", "eval", "adapted", "utility"}
#: The keys of ``[grid.bootstrap]``: :class:`~lidframe.stats.bootstrap.Bootstrap`'s, but its seed (one per cell).
_BOOTSTRAP_KEYS = {"n_boot", "level", "unit", "method"}


class DataDirSource(TypedDict):
    """A system split given as Kaldi data dirs (absolute paths): one enrolment dir, one or more trial dirs.

    ``original_enrol``, where given, is the clear-speech enrolment of the same speakers,
    which the ``ignorant`` scenario enrols.
    """

    enrol: str
    trials: list[str]
    original_enrol: NotRequired[str]


#: The parameter of an attacker that names its model's weights (what ``[systems.NAME.adapted]`` replaces).
CHECKPOINT = "checkpoint"


def attacker_name(spec: str) -> str:
    """The name of an attacker spec, as ``[systems.NAME.adapted]`` keys it: ``"ecapa"`` for ``"ecapa?device=cpu"``."""
    return spec.partition("?")[0].strip()


def with_checkpoint(spec: str, checkpoint: str) -> str:
    """The attacker *spec* with its ``checkpoint`` parameter set to *checkpoint* (replaced, or added last).

    Examples
    --------
    >>> with_checkpoint("ecapa?checkpoint=clear.ckpt&device=cpu", "/m/adapted b3.ckpt")
    'ecapa?checkpoint=/m/adapted%20b3.ckpt&device=cpu'
    >>> with_checkpoint("xvector", "/m/x.ckpt")
    'xvector?checkpoint=/m/x.ckpt'
    """
    from lidframe.registry.coercion import split_query

    name, pairs = split_query(spec)
    pairs = [(k, checkpoint if k == CHECKPOINT else v) for k, v in pairs]
    if all(k != CHECKPOINT for k, _ in pairs):
        pairs.append((CHECKPOINT, checkpoint))
    return name + "?" + "&".join(f"{url_quote(k, safe='')}={url_quote(v, safe='/,:')}" for k, v in pairs)


@attrs.frozen
class SystemSpec:
    """One system: dev and eval sources, each a score-set path or ``{"enrol": dir, "trials": [dirs]}``.

    Attributes
    ----------
    name : str
    dev, eval : str or DataDirSource
        Absolute paths.
    adapted : dict
        ``[systems.NAME.adapted]``: attacker name -> absolute path of its checkpoint adapted on
        this system's anonymised training speech (the ``semi-informed`` scenario); empty
        when not given.
    utility : str or None
        The absolute path of the system's utility file (``utility =``, the JSON of
        ``lidframe utility --json``), checked when the spec is read; None when not given.
        No cell reads it (it is no cell input): ``lidframe report`` reads it afresh.
    """

    name: str
    dev: str | DataDirSource
    eval: str | DataDirSource
    adapted: dict[str, str] = attrs.field(factory=dict)
    utility: str | None = None

    @property
    def needs_attacker(self) -> bool:
        """True when the sources are data dirs, which an attacker must score first."""
        return isinstance(self.dev, dict)

    def scored_source(self, split: str, scenario: str | None) -> DataDirSource:
        """The data dirs a data-dir *split* is scored from in *scenario* (None: the grid has no scenarios).

        The ``ignorant`` scenario enrols the split's ``original_enrol``; the others (and no
        scenario) its ``enrol``; the trials are the split's in each.
        """
        source = getattr(self, split)
        enrol = source["original_enrol"] if scenario is not None and SCENARIOS[scenario].original_enrolment else None
        return {"enrol": enrol or source["enrol"], "trials": list(source["trials"])}

    def scoring_attacker(self, attacker: str, scenario: str | None) -> str:
        """The attacker spec that scores in *scenario*: *attacker*, or for ``semi-informed`` with its adapted checkpoint.

        An attacker without an entry in :attr:`adapted` (one that has no model: validation
        requires one for every attacker that takes a checkpoint) scores as it is.
        """
        if scenario is None or not SCENARIOS[scenario].adapted_model:
            return attacker
        checkpoint = self.adapted.get(attacker_name(attacker))
        return attacker if checkpoint is None else with_checkpoint(attacker, checkpoint)


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
    scenarios : tuple of str
        Threat-model scenarios (names of :data:`lidframe.data.scenario.SCENARIOS`) of the
        data-dir systems' cells; empty when not given (the cells have none).
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
    scenarios: tuple[str, ...] = ()

    def n_cells(self) -> int:
        """Number of cells the grid expands to (attacker x mechanism x scenario only for data-dir systems)."""
        return _count_cells(
            self.systems, self.attackers, self.mechanisms, self.calibrators, self.priors, self.seeds, self.scenarios
        )


def _count_cells(systems, attackers, mechanisms, calibrators, priors, seeds, scenarios=()) -> int:
    with_attacker = sum(1 for s in systems if s.needs_attacker)
    per_system = len(attackers) * max(1, len(mechanisms)) * max(1, len(scenarios))
    pairs = with_attacker * per_system + (len(systems) - with_attacker)
    return pairs * len(calibrators) * len(priors) * len(seeds)


def _shape(systems, attackers, mechanisms, calibrators, priors, seeds, scenarios=()) -> str:
    """The axes in words: ``"3 systems x 2 calibrators x 2 priors x 1 seed"`` (attackers, mechanisms, scenarios when given)."""
    axes = [("system", systems), ("attacker", attackers), ("mechanism", mechanisms), ("scenario", scenarios)]
    axes += [("calibrator", calibrators), ("prior", priors), ("seed", seeds)]
    optional = ("attacker", "mechanism", "scenario")
    return " x ".join(f"{len(v)} {name}{'' if len(v) == 1 else 's'}" for name, v in axes if v or name not in optional)


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


def _spec_folder(path: Path) -> Path:
    """The folder relative ``[systems]`` paths are resolved against: the spec file's, absolute and without symlinks.

    As ``OUT/grid.json`` records the spec (resolved), so that a grid run with a relative
    spec path (``lidframe grid grid.toml``) keys its data dirs as the report that plans it
    again from ``grid.json`` does.
    """
    return path.resolve().parent


def _source(path: Path, key: str, value: object) -> str | DataDirSource:
    folder = _spec_folder(path)
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
        unknown = set(value) - {"enrol", "trials", "original_enrol"}
        if unknown or "enrol" not in value or "trials" not in value:
            _fail(
                path,
                key,
                f"a data-dir source needs exactly 'enrol' and 'trials' (and may have 'original_enrol'), "
                f"got {sorted(value)}",
            )
        enrol = value["enrol"]
        trials = value["trials"] if isinstance(value["trials"], list) else [value["trials"]]
        dirs = []
        original = [("original_enrol", value["original_enrol"])] if "original_enrol" in value else []
        for sub, d in [("enrol", enrol)] + [(f"trials[{i}]", t) for i, t in enumerate(trials)] + original:
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
        if original:
            return {"enrol": dirs[0], "trials": dirs[1:-1], "original_enrol": dirs[-1]}
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
        folders = [("enrol", source["enrol"])] + [(f"trials[{i}]", t) for i, t in enumerate(source["trials"])]
        folders += [("original_enrol", source["original_enrol"])] if "original_enrol" in source else []
        speakers: dict[str, list[str]] = {}
        for sub, folder in folders:
            try:
                utterances = read_data_dir(folder)
            except InputError as exc:
                _fail(path, f"{key}.{sub}", str(exc))
            speakers[sub] = list(dict.fromkeys(u.speaker for u in utterances))
            if split == "eval" and sub == "enrol":
                enrolled = np.array(speakers[sub], dtype=str)
        if "original_enrol" in speakers and set(speakers["original_enrol"]) != set(speakers["enrol"]):
            only_original = [s for s in speakers["original_enrol"] if s not in set(speakers["enrol"])]
            only_enrol = [s for s in speakers["enrol"] if s not in set(speakers["original_enrol"])]
            _fail(
                path,
                f"{key}.original_enrol",
                "must enrol the speakers of enrol (their original speech): "
                + mismatch("not in enrol:", only_original, "missing:", only_enrol),
            )
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
        if not isinstance(body, dict) or not {"dev", "eval"} <= set(body) <= _SYSTEM_KEYS:
            _fail(
                path,
                key,
                "needs exactly the keys dev and eval (and may have the table adapted and the key utility), "
                f"got {sorted(body) if isinstance(body, dict) else body!r}",
            )
        dev = _source(path, f"{key}.dev", body["dev"])
        ev = _source(path, f"{key}.eval", body["eval"])
        if isinstance(dev, dict) != isinstance(ev, dict):
            _fail(path, key, "dev and eval must both be score-set files or both data-dir tables")
        adapted = _adapted(path, f"{key}.adapted", body.get("adapted"), data_dirs=isinstance(dev, dict))
        utility = utility_file(path, name, body["utility"])[0] if "utility" in body else None
        systems.append(SystemSpec(name, dev, ev, adapted, utility))
    return tuple(systems)


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
        _fail(path, key, f"must be the path of a utility file (lidframe utility --json), got {_shown(value)}")
    file = Path(value) if Path(value).is_absolute() else _spec_folder(path) / value
    if not os.path.lexists(file):
        _fail(path, key, f"{quote(value)}: no such utility file ({file})")
    try:
        check_input_file(file, "a utility file (the JSON of lidframe utility --json)")
        utility = read_utility(file)
    except InputError as exc:
        _fail(path, key, f"{quote(value)}: {' '.join(str(exc).split())}")
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
        _, doc = _read_toml(path)
    except (InputError, OSError):
        return None
    systems = doc.get("systems")
    if not isinstance(systems, dict) or not all(isinstance(body, dict) for body in systems.values()):
        return None
    return {name: utility_file(path, name, body["utility"]) for name, body in systems.items() if "utility" in body}


def _adapted(path: Path, key: str, value: object, *, data_dirs: bool) -> dict[str, str]:
    """``[systems.NAME.adapted]``: attacker name -> checkpoint path (relative to the spec file; made absolute)."""
    if value is None:
        return {}
    if not data_dirs:
        _fail(
            path,
            key,
            "applies to data-dir systems (the checkpoints their attackers score with); this system has score-set files",
        )
    if not isinstance(value, dict):
        _fail(path, key, f"must be a table of attacker name = checkpoint path, got {_shown(value)}")
    adapted = {}
    for name, checkpoint in value.items():
        if not isinstance(checkpoint, str) or not checkpoint.strip():
            _fail(path, f"{key}.{name}", f"must be a checkpoint path, got {_shown(checkpoint)}")
        file = Path(checkpoint) if Path(checkpoint).is_absolute() else _spec_folder(path) / checkpoint
        if not os.path.lexists(file):
            _fail(path, f"{key}.{name}", f"{quote(checkpoint)}: no such checkpoint ({shorten(str(file))})")
        try:
            check_input_file(file, "a checkpoint file")
        except InputError as exc:
            _fail(path, f"{key}.{name}", f"{quote(checkpoint)}: {exc}")
        adapted[name] = str(file)
    return adapted


def _scenarios(path: Path, grid: dict[str, Any]) -> tuple[str, ...]:
    """``[grid] scenarios``: names of :data:`~lidframe.data.scenario.SCENARIOS`, in the order given; () when not given."""
    value = grid.get("scenarios")
    if value is None:
        return ()
    names = _axis(
        path, "grid.scenarios", value, what="scenario names", example='["ignorant", "lazy-informed"]', item=str
    )
    if not names:
        _fail(path, "grid.scenarios", f"is empty; expected at least one of {', '.join(SCENARIOS)} (or no key)")
    for i, name in enumerate(names):
        try:
            check_scenario(name)
        except InputError as exc:
            _fail(path, f"grid.scenarios[{i}]", str(exc).removeprefix("scenario: "))
    if len(set(names)) != len(names):
        _fail(path, "grid.scenarios", f"has repeated entries: {names}")
    return tuple(names)


def _check_scenario_inputs(path: Path, spec: GridSpec) -> None:
    """What each scenario of the grid needs of each data-dir system, and that ``adapted`` names a model attacker.

    ``ignorant`` needs each split's ``original_enrol``; ``semi-informed`` an ``adapted``
    checkpoint for each attacker that takes a checkpoint (its default or given weights
    are those of a model trained on clear speech).  An ``adapted`` entry must name an
    attacker of ``[grid] attackers`` that takes a checkpoint.
    """
    from lidframe.registry import accepted_params

    takes = {attacker_name(a): accepted_params("attacker", a) for a in spec.attackers}
    for system in spec.systems:
        key = f"systems.{system.name}"
        for name in system.adapted:
            if name not in takes:
                _fail(
                    path,
                    f"{key}.adapted.{name}",
                    f"no attacker named {name!r} in grid.attackers (attacker names: {', '.join(map(repr, takes)) or 'none'})",
                )
            params = takes[name]
            if params is not None and CHECKPOINT not in params:
                _fail(path, f"{key}.adapted.{name}", f"attacker {name!r} takes no checkpoint: it has no model to adapt")
        if not system.needs_attacker:
            continue
        if "ignorant" in spec.scenarios:
            for split in ("dev", "eval"):
                if "original_enrol" not in getattr(system, split):
                    _fail(
                        path,
                        f"{key}.{split}.original_enrol",
                        "is missing: the ignorant scenario enrols the speakers' original (clear) speech; give the "
                        "data dir of the same speakers' original enrolment utterances",
                    )
        if "semi-informed" in spec.scenarios:
            for attacker in spec.attackers:
                name = attacker_name(attacker)
                params = takes[name]
                if params is not None and CHECKPOINT in params and name not in system.adapted:
                    _fail(
                        path,
                        f"{key}.adapted.{name}",
                        f"is missing: the semi-informed scenario scores with attacker {attacker!r} adapted on this "
                        "system's anonymised training speech; give its checkpoint (a path relative to the spec file)",
                    )


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
        scenarios=_scenarios(path, grid),
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
    if spec.scenarios and not any(s.needs_attacker for s in spec.systems):
        _fail(
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
        missing or not a utility record (naming the system and the file).

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
    _check_scenario_inputs(path, spec)
    enrolled = {s.name: _speakers(path, s) for s in spec.systems}
    if fit_calibrators:
        _probe_calibrators(path, spec.calibrators, built_calibrators, spec.znorm_ddof, progress=progress)
    _probe_priors(path, spec.priors, built_priors, enrolled)
    return spec
