"""Registered components: lidframe's built-ins, entry points of installed packages, ``register()`` calls.

Discovery is lazy, as in xarray's backend registry: nothing is read until the first
lookup, the result is cached (:func:`refresh` rereads it), and targets are kept as
``"package.module:Class"`` strings, so a module -- and torch behind an attacker -- is
imported only when that component is asked for (docs/plugins.md, "How discovery behaves").
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import re
import warnings
from collections.abc import Mapping
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import Any

import attrs

from lidframe.errors import InputError
from lidframe.registry.capabilities import target_of
from lidframe.registry.contracts import KINDS, check_contract, check_kind

__all__ = [
    "GROUPS",
    "BUILTINS",
    "Entry",
    "PluginError",
    "entries",
    "attackers",
    "calibrators",
    "priors",
    "recognisers",
    "refresh",
    "register",
    "unregister",
    "import_target",
    "load",
    "check_all",
    "code_version",
]

#: Entry-point group of each kind.
GROUPS = MappingProxyType(
    {
        "attacker": "lidframe.attackers",
        "calibrator": "lidframe.calibrators",
        "prior": "lidframe.priors",
        "recogniser": "lidframe.recognisers",
    }
)

#: lidframe's own components, ``kind -> {name: "package.module:Class"}``: add a built-in here.
BUILTINS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "attacker": MappingProxyType(
            {
                "random": "lidframe.attackers.random:RandomAttacker",
                "precomputed": "lidframe.attackers.precomputed:PrecomputedEmbeddings",
                "ecapa": "lidframe.attackers.ecapa:EcapaTdnn",
                "xvector": "lidframe.attackers.xvector:XVector",
                "ge2e": "lidframe.attackers.ge2e:Ge2e",
            }
        ),
        "calibrator": MappingProxyType(
            {
                "logistic": "lidframe.calibrators.logistic:Logistic",
                "isotonic": "lidframe.calibrators.isotonic:Isotonic",
                "beta": "lidframe.calibrators.beta:Beta",
                "gaussian": "lidframe.calibrators.gaussian:GaussianBackend",
                "temperature": "lidframe.calibrators.temperature:Temperature",
                "identity": "lidframe.calibrators.identity:Identity",
            }
        ),
        "prior": MappingProxyType(
            {
                "uniform": "lidframe.core.priors:Uniform",
                "watchlist": "lidframe.core.priors:WatchList",
                "explicit": "lidframe.core.priors:Explicit",
            }
        ),
        "recogniser": MappingProxyType({"pocketsphinx": "lidframe.utility.pocketsphinx:PocketSphinx"}),
    }
)

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


class PluginError(InputError):
    """A registered component cannot be imported or does not meet its contract."""


@attrs.frozen
class Entry:
    """One registered component.

    Attributes
    ----------
    kind : {"attacker", "calibrator", "prior", "recogniser"}
    name : str
        The lookup name.
    target : str
        ``"package.module:Class"`` (for objects registered directly, where they live).
    origin : str
        ``"built-in"``, ``"distribution NAME VERSION"`` or ``"register()"``.
    version : str
        What identifies the code behind it, for cache keys
        (:func:`~lidframe.registry.spec_inputs`): ``"lidframe VERSION"`` for a built-in,
        ``"NAME VERSION"`` of the distribution that declares an entry point; empty for
        ``register()`` entries (found from the target's module when asked).
    """

    kind: str
    name: str
    target: str
    origin: str
    version: str = ""


# ----------------------------------------------------------------------- state
_discovered: dict | None = None  # kind -> {name: Entry}, built-ins + entry points
_registered: dict = {k: {} for k in KINDS}  # kind -> {name: Entry} from register()
_objects: dict = {}  # (kind, name) -> object given to register()
_loaded: dict = {}  # (kind, name) -> loaded and checked object


def _entry_point_entries(kind: str, found: dict[str, Entry]) -> None:
    """Add the entry points of *kind*'s group to *found* (built-ins and earlier claims win, with a warning)."""
    group = GROUPS[kind]
    for ep in entry_points(group=group):
        dist = getattr(ep, "dist", None)
        origin = f"distribution {dist.name} {dist.version}" if dist is not None else "entry point"
        label = f"entry point {ep.name!r} in group {group!r} ({origin})"
        if not _NAME.match(ep.name) or ":" not in ep.value:
            warnings.warn(
                f"lidframe: ignoring {label}: expected name = 'package.module:Class', got {ep.value!r}",
                stacklevel=3,
            )
            continue
        taken = found.get(ep.name)
        if taken is not None:
            if taken.target != ep.value:
                warnings.warn(
                    f"lidframe: ignoring {label} -> {ep.value}: {kind} name {ep.name!r} is already "
                    f"taken by {taken.target} ({taken.origin})",
                    stacklevel=3,
                )
            continue
        version = f"{dist.name} {dist.version}" if dist is not None else ""
        found[ep.name] = Entry(kind, ep.name, ep.value, origin, version)


def _discover() -> dict:
    global _discovered
    if _discovered is not None:
        return _discovered
    from lidframe._version import __version__

    builtin = f"lidframe {__version__}"
    found = {k: {n: Entry(k, n, t, "built-in", builtin) for n, t in BUILTINS[k].items()} for k in KINDS}
    for kind in KINDS:
        _entry_point_entries(kind, found[kind])
    _discovered = found
    return found


def entries(kind: str) -> MappingProxyType:
    """Read-only view ``name -> Entry`` of one kind (discovers plugins on first use; imports nothing)."""
    kind = check_kind(kind)
    merged = dict(_discover()[kind])
    merged.update(_registered[kind])
    return MappingProxyType(dict(sorted(merged.items())))


def attackers() -> MappingProxyType:
    """Registered attackers, ``name -> Entry``."""
    return entries("attacker")


def calibrators() -> MappingProxyType:
    """Registered calibrators, ``name -> Entry``."""
    return entries("calibrator")


def priors() -> MappingProxyType:
    """Registered priors, ``name -> Entry``."""
    return entries("prior")


def recognisers() -> MappingProxyType:
    """Registered recognisers, ``name -> Entry``."""
    return entries("recogniser")


def refresh() -> None:
    """Forget discovered entry points, installed distributions and loaded classes (registrations stay).

    Call it after installing or removing a package in the running process: the next
    lookup reads the entry points again, and code versions (:func:`code_version`) see
    the distributions installed now.
    """
    global _discovered
    _discovered = None
    _loaded.clear()
    _distributions_of.cache_clear()


def register(kind: str, name: str, target: str | type, *, replace: bool = False) -> Entry:
    """Register a component under *name* in this process.

    Parameters
    ----------
    kind : {"attacker", "calibrator", "prior"}
    name : str
        Letters, digits, ``_``, ``.``, ``-``; starting with a letter.
    target : str or class
        ``"package.module:Class"`` (imported and checked on first use) or the class
        itself (checked now).
    replace : bool
        Allow taking a name that is already registered with a different target.

    Returns
    -------
    Entry

    Raises
    ------
    InputError
        For a malformed name or target, a taken name (unless *replace*), or an object
        that lacks the methods of its kind (the message lists what is missing).
    """
    kind = check_kind(kind)
    if not isinstance(name, str) or not _NAME.match(name):
        raise InputError(f"invalid {kind} name {name!r}: use letters, digits, '_', '.', '-', starting with a letter")
    if isinstance(target, str):
        if ":" not in target:
            raise InputError(f"{kind} target {target!r} must be 'package.module:Class'")
        target_str, obj = target, None
    elif not inspect.isclass(target):
        raise InputError(f"register a class or a 'package.module:Class' string as {kind} {name!r}, got {target!r}")
    else:
        check_contract(kind, target, label=f"{kind} {name!r}")
        target_str, obj = target_of(target), target
    current = entries(kind).get(name)
    if current is not None and not replace:
        same = current.target == target_str and (obj is None or _objects.get((kind, name), obj) is obj)
        if same:
            return current
        raise InputError(
            f"{kind} name {name!r} is already registered to {current.target} ({current.origin}); "
            "pass replace=True to override it"
        )
    entry = Entry(kind, name, target_str, "register()")
    _registered[kind][name] = entry
    _loaded.pop((kind, name), None)
    if obj is None:
        _objects.pop((kind, name), None)
    else:
        _objects[(kind, name)] = obj
    return entry


def unregister(kind: str, name: str) -> None:
    """Remove an in-process registration (built-ins and entry points cannot be removed)."""
    kind = check_kind(kind)
    if name not in _registered[kind]:
        raise InputError(f"{kind} {name!r} was not registered in this process")
    del _registered[kind][name]
    _objects.pop((kind, name), None)
    _loaded.pop((kind, name), None)


def import_target(target: str, label: str) -> Any:
    """Import ``"package.module:Class"`` (``Class`` may be dotted); a :class:`PluginError` naming *label* if it fails."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise PluginError(f"{label}: target {target!r} is not 'package.module:Class'")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # noqa: BLE001  # any failure of third-party import code is reported, not raised raw
        raise PluginError(f"{label}: cannot load {target} ({type(exc).__name__}: {exc})") from None
    return obj


def load(kind: str, name: str) -> Any:
    """Return the class (or factory) registered as *name*, importing and checking it once.

    Raises
    ------
    InputError
        Unknown name (the message lists what is available).
    PluginError
        The target cannot be imported or lacks the methods of its kind.
    """
    kind = check_kind(kind)
    key = (kind, name)
    if key in _loaded:
        return _loaded[key]
    available = entries(kind)
    entry = available.get(name)
    if entry is None:
        raise InputError(
            f"unknown {kind} {name!r}; available: {', '.join(available) or 'none'} (or 'package.module:Class')"
        )
    label = f"{kind} {name!r} from {entry.origin}"
    obj = _objects.get(key)
    if obj is None:
        obj = import_target(entry.target, label)
        try:
            check_contract(kind, obj, label=label)
        except InputError as exc:
            raise PluginError(str(exc)) from None
    _loaded[key] = obj
    return obj


def check_all(kind: str | None = None) -> dict:
    """Import every registered component (of *kind*, or all); warn for each that fails.

    Returns
    -------
    dict
        ``(kind, name) -> None`` when it loads and meets its contract, else the error message.
    """
    status: dict[tuple[str, str], str | None] = {}
    for k in KINDS if kind is None else (check_kind(kind),):
        for name in entries(k):
            try:
                load(k, name)
                status[(k, name)] = None
            except InputError as exc:
                warnings.warn(f"lidframe: {exc}", stacklevel=2)
                status[(k, name)] = str(exc)
    return status


# ----------------------------------------------------------- code versions
def code_version(kind: str, name: str) -> str:
    """What identifies the code behind a registered name or a ``module:Class`` target.

    ``"lidframe VERSION"`` (built-ins), ``"DIST VERSION"`` of the distribution that
    provides it, or ``"module M sha256:..."`` of a module that no installed distribution
    owns (see :attr:`lidframe.registry.SpecInputs.version`).
    """
    if ":" not in name:
        entry = entries(kind)[name]
        if entry.version:
            return entry.version
        module = entry.target.partition(":")[0]
    else:
        module = name.partition(":")[0]
    return _module_version(module)


@functools.cache
def _distributions_of() -> Mapping[str, list[str]]:
    """``importlib.metadata.packages_distributions()``, read once (it scans every installed distribution)."""
    return importlib.metadata.packages_distributions()


def _module_version(module: str) -> str:
    top = module.split(".")[0]
    if top == "lidframe":
        from lidframe._version import __version__

        return f"lidframe {__version__}"
    for dist in sorted(_distributions_of().get(top, [])):
        try:
            return f"{dist} {importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    origin = getattr(found, "origin", None)
    if origin and os.path.isfile(origin):
        from lidframe.data.fileio import file_sha256

        return f"module {module} sha256:{file_sha256(origin)[:16]}"
    return f"module {module} (version unknown)"
