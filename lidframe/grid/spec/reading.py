"""Reading a grid spec: its TOML file, and the ``[grid]`` table's axes and settings, each key checked on its own.

:func:`read_toml` reads the file (only ``[grid]`` and ``[systems]`` sections);
:func:`grid_axes` checks every key of ``[grid]`` -- the axes ``calibrators``, ``priors``,
``attackers``, ``mechanisms``, ``scenarios`` and ``seeds``, ``znorm_ddof``,
``[grid.bootstrap]`` (or its old name ``[grid.ci]``), ``[grid.longitudinal]`` and
``legal`` -- in that order.  Every error names the file and the TOML key at fault (:func:`fail`); every
axis is a TOML list, even of one entry (:func:`axis_list`).  The ``[systems]`` tables are
:mod:`lidframe.grid.spec.systems`'s.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, NoReturn

from lidframe.core.options import EvaluateOptions
from lidframe.data.documents import read_toml as read_toml_document
from lidframe.data.scenario import SCENARIOS, check_scenario
from lidframe.errors import InputError, shorten
from lidframe.metrics.detection import OperatingPoint
from lidframe.stats.bootstrap import Bootstrap

__all__ = ["MAX_SPEC_BYTES", "read_toml", "grid_axes", "fail", "shown_value", "axis_list", "string_list", "spec_folder"]

#: The largest grid spec read (bytes, 16 MB): a spec is a few kB, written by hand or a
#: script; 16 MB holds some 50,000 systems.
MAX_SPEC_BYTES = 16_000_000

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
    "evaluate",
    "legal",
}


#: The keys of ``[grid.bootstrap]``: :class:`~lidframe.stats.bootstrap.Bootstrap`'s, but its seed (one per cell).
_BOOTSTRAP_KEYS = {"n_boot", "level", "unit", "method", "resample"}


def fail(path: Path, key: str, message: str) -> NoReturn:
    """Raise the :class:`~lidframe.errors.InputError` of a spec's key: ``PATH: [KEY] MESSAGE``."""
    raise InputError(f"{path}: [{key}] {message}")


def shown_value(value: object, limit: int = 80) -> str:
    """``repr(value)``, cut to *limit* characters."""
    return shorten(repr(value), limit)


def axis_list(
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
        fail(path, key, f"must be {kind} of {what}, e.g. {example}, even of one entry; got {shown_value(value)}{hint}")
    return value


def string_list(path: Path, key: str, value: object, *, required: bool = True, example: str) -> tuple[str, ...]:
    """An axis of component specs: a list of distinct non-empty strings (non-empty when *required*)."""
    if value is None:
        if required:
            fail(path, key, "is missing; expected a list of component specs")
        return ()
    value = axis_list(path, key, value, what="component specs", example=example, item=str, required=required)
    if not all(isinstance(v, str) and v.strip() for v in value):
        fail(path, key, f"must be a list of non-empty strings, got {shown_value(value)}")
    if required and not value:
        fail(path, key, "is empty; expected at least one component spec")
    if len(set(value)) != len(value):
        fail(path, key, f"has repeated entries: {value}")
    return tuple(value)


def spec_folder(path: Path) -> Path:
    """The folder relative ``[systems]`` paths are resolved against: the spec file's, absolute and without symlinks.

    As ``OUT/grid.json`` records the spec (resolved), so that a grid run with a relative
    spec path (``lidframe grid grid.toml``) keys its data dirs as the report that plans it
    again from ``grid.json`` does.
    """
    return path.resolve().parent


def read_toml(path: Path) -> tuple[bytes, dict[str, Any]]:
    """The spec file's bytes and its TOML document, checked to hold only ``[grid]`` and ``[systems]``.

    The file is read through the one opener (a FIFO is never waited on, a device never
    read), at most :data:`MAX_SPEC_BYTES`; TOML nested too deeply for :mod:`tomllib` (a
    ``RecursionError``) is one line.
    """
    if not os.path.lexists(path):
        raise InputError(f"{path}: no such grid spec")
    what = "a grid spec file (TOML)"
    raw, doc = read_toml_document(path, what, max_bytes=MAX_SPEC_BYTES)
    unknown = set(doc) - {"grid", "systems"}
    if unknown:
        fail(path, sorted(unknown)[0], "is not a grid spec section; expected [grid] and [systems.NAME]")
    return raw, doc


def grid_axes(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """The ``[grid]`` table of *doc*, each key checked on its own: :class:`~lidframe.grid.spec.records.GridSpec`'s fields.

    Returns ``calibrators``, ``priors``, ``attackers``, ``mechanisms``, ``scenarios``,
    ``seeds``, ``evaluate`` (``znorm_ddof``, ``[grid.bootstrap]`` and ``[grid.evaluate]`` in
    one :class:`~lidframe.core.options.EvaluateOptions`), ``longitudinal`` and ``legal``, checked in
    that order (the first key at fault is the one named); the components are not built yet.
    """
    grid = _grid_table(path, doc)
    return {
        "calibrators": string_list(
            path, "grid.calibrators", grid.get("calibrators", ["logistic"]), example='["logistic"]'
        ),
        "priors": string_list(path, "grid.priors", grid.get("priors", ["uniform"]), example='["uniform"]'),
        "attackers": string_list(
            path, "grid.attackers", grid.get("attackers"), required=False, example='["ecapa?checkpoint=model.ckpt"]'
        ),
        "mechanisms": _mechanisms(path, grid),
        "scenarios": _scenarios(path, grid),
        "seeds": _seeds(path, grid),
        "evaluate": _evaluate(path, grid),
        "longitudinal": _longitudinal(path, grid),
        "legal": _legal(path, grid),
    }


def _legal(path: Path, grid: dict[str, Any]) -> bool:
    """``[grid] legal``: whether every cell computes the law's criteria (docs/legal.md); true when not given."""
    value = grid.get("legal", True)
    if not isinstance(value, bool):
        fail(path, "grid.legal", f"must be true or false (a TOML boolean, unquoted), got {shown_value(value)}")
    return value


def _grid_table(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """``[grid]``: a table of known keys (empty when not given)."""
    grid = doc.get("grid", {})
    if not isinstance(grid, dict):
        fail(path, "grid", "must be a table")
    unknown = set(grid) - _GRID_KEYS
    if unknown:
        fail(path, f"grid.{sorted(unknown)[0]}", f"unknown key; expected one of {sorted(_GRID_KEYS - {'ci'})}")
    return grid


def _mechanisms(path: Path, grid: dict[str, Any]) -> tuple[str, ...]:
    mechanisms = string_list(
        path, "grid.mechanisms", grid.get("mechanisms"), required=False, example='["gaussian?mu=1"]'
    )
    for i, spec in enumerate(mechanisms):
        from lidframe.privacy.mechanism import GaussianSpeakerMechanism

        try:
            GaussianSpeakerMechanism.from_spec(spec)
        except InputError as exc:
            fail(path, f"grid.mechanisms[{i}]", str(exc))
    return mechanisms


def _scenarios(path: Path, grid: dict[str, Any]) -> tuple[str, ...]:
    """``[grid] scenarios``: names of :data:`~lidframe.data.scenario.SCENARIOS`, in the order given; () when not given."""
    value = grid.get("scenarios")
    if value is None:
        return ()
    names = axis_list(
        path, "grid.scenarios", value, what="scenario names", example='["ignorant", "lazy-informed"]', item=str
    )
    if not names:
        fail(path, "grid.scenarios", f"is empty; expected at least one of {', '.join(SCENARIOS)} (or no key)")
    for i, name in enumerate(names):
        try:
            check_scenario(name)
        except InputError as exc:
            fail(path, f"grid.scenarios[{i}]", str(exc).removeprefix("scenario: "))
    if len(set(names)) != len(names):
        fail(path, "grid.scenarios", f"has repeated entries: {names}")
    return tuple(names)


def _seeds(path: Path, grid: dict[str, Any]) -> tuple[int, ...]:
    seeds = axis_list(
        path, "grid.seeds", grid.get("seeds", [0]), what="integers (bootstrap seeds)", example="[0]", item=int
    )
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        fail(path, "grid.seeds", f"must be a non-empty list of integers, got {seeds!r}")
    if any(s < 0 for s in seeds):
        fail(path, "grid.seeds", f"must be non-negative integers (numpy seeds), got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        fail(path, "grid.seeds", f"has repeated entries: {seeds}")
    return tuple(seeds)


def _znorm_ddof(path: Path, grid: dict[str, Any]) -> int:
    ddof = grid.get("znorm_ddof", 1)
    if ddof not in (0, 1) or isinstance(ddof, bool):
        fail(path, "grid.znorm_ddof", f"must be 0 or 1, got {ddof!r}")
    return int(ddof)


def _bootstrap(path: Path, grid: dict[str, Any]) -> Bootstrap | None:
    """``[grid.bootstrap]`` (or, with a FutureWarning, its old name ``[grid.ci]``) as a Bootstrap; None without."""
    if "ci" in grid and "bootstrap" in grid:
        fail(path, "grid.ci", "is the old name of [grid.bootstrap]; give one of the two tables (grid.bootstrap)")
    name = "grid.ci" if "ci" in grid else "grid.bootstrap"
    table = grid.get("ci", grid.get("bootstrap"))
    if table is None:
        return None
    if not isinstance(table, dict) or set(table) - _BOOTSTRAP_KEYS:
        fail(path, name, f"must be a table with keys among {sorted(_BOOTSTRAP_KEYS)}")
    if "level" in table and not isinstance(table["level"], float):
        fail(path, f"{name}.level", f"must be a number in (0, 1), got {table['level']!r}")
    for key, value in table.items():  # one key at a time, so that the error names it
        try:
            Bootstrap(**{key: value})
        except InputError as exc:
            fail(path, f"{name}.{key}", str(exc))
    if name == "grid.ci":  # read as it was, said once the table is valid (a refused spec says one line)
        warnings.warn(
            f"{path}: [grid.ci] is now called [grid.bootstrap]; rename the table (the old name is read "
            "for one more release)",
            FutureWarning,
            stacklevel=6,  # the caller of load_grid_spec (load_grid_spec, _parse, grid_axes, _evaluate, _bootstrap)
        )
    return Bootstrap(**table)  # the library's defaults fill the keys left out; seeds come per cell


#: The keys of ``[grid.evaluate]``: the :class:`~lidframe.core.options.EvaluateOptions` a grid can set there
#: (``znorm_ddof`` and ``[grid.bootstrap]`` have their own places; the engine follows the machine).
EVALUATE_KEYS = ("binary_metrics", "misattribution_threshold", "operating_point")
_OPERATING_POINT_KEYS = ("p_target", "c_miss", "c_fa")


def _evaluate(path: Path, grid: dict[str, Any]) -> EvaluateOptions:
    """``znorm_ddof``, ``[grid.bootstrap]`` and ``[grid.evaluate]`` as the cells' EvaluateOptions (each key checked)."""
    ddof, bootstrap = _znorm_ddof(path, grid), _bootstrap(path, grid)
    table = grid.get("evaluate", {})
    if not isinstance(table, dict) or set(table) - set(EVALUATE_KEYS):
        fail(path, "grid.evaluate", f"must be a table with keys among {list(EVALUATE_KEYS)}")
    point = table.get("operating_point", {})
    if not isinstance(point, dict) or set(point) - set(_OPERATING_POINT_KEYS):
        fail(path, "grid.evaluate.operating_point", f"must be a table with keys among {list(_OPERATING_POINT_KEYS)}")
    for key, value in point.items():  # one key at a time, so that the error names it
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail(path, f"grid.evaluate.operating_point.{key}", f"must be a number, got {value!r}")
        _checked(path, f"grid.evaluate.operating_point.{key}", lambda: OperatingPoint(**{key: value}))
    for key in ("binary_metrics", "misattribution_threshold"):
        if key in table:
            _checked(path, f"grid.evaluate.{key}", lambda: EvaluateOptions(**{key: table[key]}))
    kwargs = {k: v for k, v in table.items() if k != "operating_point"}
    return EvaluateOptions(znorm_ddof=ddof, bootstrap=bootstrap, operating_point=OperatingPoint(**point), **kwargs)


def _checked(path: Path, key: str, make: Any) -> None:
    try:
        make()
    except InputError as exc:
        fail(path, key, str(exc))


def _longitudinal(path: Path, grid: dict[str, Any]) -> dict[str, Any] | None:
    longitudinal = grid.get("longitudinal")
    if longitudinal is None:
        return None
    if not isinstance(longitudinal, dict) or set(longitudinal) - {"k", "fusions", "groups"}:
        fail(path, "grid.longitudinal", "must be a table with keys among ['fusions', 'groups', 'k']")
    ks = axis_list(
        path,
        "grid.longitudinal.k",
        longitudinal.get("k", [1, 2, 4, 8, "all"]),
        what="positive integers or 'all'",
        example='[1, 4, "all"]',
        item=(int, str),
    )
    if not ks or not all((isinstance(k, int) and not isinstance(k, bool) and k >= 1) or k == "all" for k in ks):
        fail(path, "grid.longitudinal.k", f"must be a list of positive integers or 'all', got {ks!r}")
    fusions = string_list(path, "grid.longitudinal.fusions", longitudinal.get("fusions", ["sum"]), example='["sum"]')
    bad = [f for f in fusions if f not in ("sum", "mean", "temperature")]
    if bad:
        fail(path, "grid.longitudinal.fusions", f"unknown fusion {bad[0]!r}; expected sum, mean or temperature")
    groups = longitudinal.get("groups", 10)
    if not isinstance(groups, int) or groups < 1:
        fail(path, "grid.longitudinal.groups", f"must be a positive integer, got {groups!r}")
    return {"k": ks, "fusions": list(fusions), "groups": groups}
