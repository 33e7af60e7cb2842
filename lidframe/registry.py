"""Registries of attackers, calibrators and priors: built-ins, plugins, and your own.

Three kinds of component -- ``"attacker"``, ``"calibrator"``, ``"prior"`` -- are looked
up by name.  Each registry is fed by

* lidframe's built-ins,
* entry points of installed distributions in the groups ``lidframe.attackers``,
  ``lidframe.calibrators`` and ``lidframe.core.priors`` (``name = "package.module:Class"``),
* :func:`register` calls in the running process (notebooks, tests).

Discovery is lazy, as in xarray's backend registry: nothing is read until the first
lookup, the result is cached (:func:`refresh` rereads it), and targets are kept as
``"package.module:Class"`` strings, so a module -- and torch behind an attacker -- is
imported only when that component is asked for.

Component specs
---------------
Wherever lidframe accepts a component (``evaluate``, CLI flags, grid specs) it takes an
instance, or a string ``NAME[?key=value&key=value...]`` where NAME is a registered name
or an import target ``package.module:Class``; the query part holds keyword parameters
(``logistic?weighting=prior&C=0.5``).  Values ``true``/``false`` become booleans,
``none``/``null`` None, numbers int or float, comma-separated values lists
(``ecapa?channels=128,128,128,128,384``), anything else stays a string; ``%xx``
escapes are decoded.
"""

from __future__ import annotations

import copy
import inspect
import re
import warnings
from importlib.metadata import entry_points
from types import MappingProxyType
from urllib.parse import parse_qsl

import attrs

from lidframe.errors import InputError

__all__ = [
    "KINDS",
    "Entry",
    "PluginError",
    "attackers",
    "calibrators",
    "priors",
    "entries",
    "register",
    "unregister",
    "refresh",
    "load",
    "create",
    "parse_spec",
    "check_contract",
    "check_all",
    "resolve_calibrator",
    "resolve_prior",
    "describe_component",
]

KINDS = ("attacker", "calibrator", "prior")
#: Entry-point group of each kind.
GROUPS = {"attacker": "lidframe.attackers", "calibrator": "lidframe.calibrators", "prior": "lidframe.core.priors"}

_BUILTINS = {
    "attacker": {
        "random": "lidframe.attackers.random:RandomAttacker",
        "precomputed": "lidframe.attackers.precomputed:PrecomputedEmbeddings",
        "ecapa": "lidframe.attackers.ecapa:EcapaTdnn",
        "xvector": "lidframe.attackers.xvector:XVector",
    },
    "calibrator": {
        "logistic": "lidframe.calibrators.logistic:Logistic",
        "isotonic": "lidframe.calibrators.isotonic:Isotonic",
        "beta": "lidframe.calibrators.beta:Beta",
        "gaussian": "lidframe.calibrators.gaussian:GaussianBackend",
        "temperature": "lidframe.calibrators.temperature:Temperature",
        "identity": "lidframe.calibrators.identity:Identity",
    },
    "prior": {
        "uniform": "lidframe.core.priors:Uniform",
        "watchlist": "lidframe.core.priors:WatchList",
        "explicit": "lidframe.core.priors:Explicit",
    },
}

#: Methods each kind must have: name -> (positional arguments it is called with, what it returns).
CONTRACTS = {
    "calibrator": {
        "fit": (("scores", "labels"), "self, fitted on 1-D z-scores and 0/1 mated labels"),
        "llr": (("scores",), "an ndarray of natural-log LLRs, same shape as scores, non-decreasing"),
    },
    "prior": {
        "log_prior": (("enrolled",), "an ndarray (N,) of natural-log probabilities summing to 1"),
    },
    "attacker": {
        "embed": (("utterances",), "an ndarray (n, d) of embeddings, one row per utterance"),
        "score": (("trials", "enrolment"), "a lidframe.ScoreSet of every trial against every enrolled speaker"),
    },
}

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


class PluginError(InputError):
    """A registered component cannot be imported or does not meet its contract."""


@attrs.frozen
class Entry:
    """One registered component.

    Attributes
    ----------
    kind : {"attacker", "calibrator", "prior"}
    name : str
        The lookup name.
    target : str
        ``"package.module:Class"`` (for objects registered directly, where they live).
    origin : str
        ``"built-in"``, ``"distribution NAME VERSION"`` or ``"register()"``.
    """

    kind: str
    name: str
    target: str
    origin: str


# ----------------------------------------------------------------------- state
_discovered: dict | None = None  # kind -> {name: Entry}, built-ins + entry points
_registered: dict = {k: {} for k in KINDS}  # kind -> {name: Entry} from register()
_objects: dict = {}  # (kind, name) -> object given to register()
_loaded: dict = {}  # (kind, name) -> loaded and checked object


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InputError(f"unknown component kind {kind!r}; expected one of {', '.join(KINDS)}")
    return kind


def _discover() -> dict:
    global _discovered
    if _discovered is not None:
        return _discovered
    found = {k: {n: Entry(k, n, t, "built-in") for n, t in _BUILTINS[k].items()} for k in KINDS}
    for kind in KINDS:
        group = GROUPS[kind]
        for ep in entry_points(group=group):
            dist = getattr(ep, "dist", None)
            origin = f"distribution {dist.name} {dist.version}" if dist is not None else "entry point"
            label = f"entry point {ep.name!r} in group {group!r} ({origin})"
            if not _NAME.match(ep.name) or ":" not in ep.value:
                warnings.warn(
                    f"lidframe: ignoring {label}: expected name = 'package.module:Class', got {ep.value!r}",
                    stacklevel=2,
                )
                continue
            taken = found[kind].get(ep.name)
            if taken is not None:
                if taken.target != ep.value:
                    warnings.warn(
                        f"lidframe: ignoring {label} -> {ep.value}: {kind} name {ep.name!r} is already "
                        f"taken by {taken.target} ({taken.origin})",
                        stacklevel=2,
                    )
                continue
            found[kind][ep.name] = Entry(kind, ep.name, ep.value, origin)
    _discovered = found
    return found


def entries(kind: str) -> MappingProxyType:
    """Read-only view ``name -> Entry`` of one kind (discovers plugins on first use; imports nothing)."""
    kind = _check_kind(kind)
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


def refresh() -> None:
    """Forget discovered entry points and loaded classes (in-process registrations stay)."""
    global _discovered
    _discovered = None
    _loaded.clear()


def _target_of(obj) -> str:
    module = getattr(obj, "__module__", None) or type(obj).__module__
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}:{qualname}"


def register(kind: str, name: str, target, *, replace: bool = False) -> Entry:
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
    kind = _check_kind(kind)
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
        target_str, obj = _target_of(target), target
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
    kind = _check_kind(kind)
    if name not in _registered[kind]:
        raise InputError(f"{kind} {name!r} was not registered in this process")
    del _registered[kind][name]
    _objects.pop((kind, name), None)
    _loaded.pop((kind, name), None)


def _import_target(target: str, label: str):
    import importlib

    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise PluginError(f"{label}: target {target!r} is not 'package.module:Class'")
    try:
        obj = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # any failure of third-party import code is reported, not raised raw
        raise PluginError(f"{label}: cannot load {target} ({type(exc).__name__}: {exc})") from None
    return obj


def load(kind: str, name: str):
    """Return the class (or factory) registered as *name*, importing and checking it once.

    Raises
    ------
    InputError
        Unknown name (the message lists what is available).
    PluginError
        The target cannot be imported or lacks the methods of its kind.
    """
    kind = _check_kind(kind)
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
        obj = _import_target(entry.target, label)
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
    status = {}
    for k in KINDS if kind is None else (_check_kind(kind),):
        for name in entries(k):
            try:
                load(k, name)
                status[(k, name)] = None
            except InputError as exc:
                warnings.warn(f"lidframe: {exc}", stacklevel=2)
                status[(k, name)] = str(exc)
    return status


# ------------------------------------------------------------------ contracts
def _callable_with(func, n_args: int) -> bool:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # builtins without a signature: trust them
        return True
    try:
        signature.bind(*([None] * n_args))
    except TypeError:
        return False
    return True


def check_contract(kind: str, obj, *, label: str | None = None) -> None:
    """Check that *obj* (a class or an instance) has the methods of *kind*.

    Raises
    ------
    InputError
        Listing every missing method or unusable signature, and what each should return.
    """
    kind = _check_kind(kind)
    label = label or f"{kind} {_target_of(obj)}"
    problems = []
    for method, (args, returns) in CONTRACTS[kind].items():
        func = getattr(obj, method, None)
        wanted = f"{method}({', '.join(args)}) returning {returns}"
        if not callable(func):
            problems.append(f"missing {wanted}")
            continue
        # on a class, methods are plain functions that also take self
        bound = not (inspect.isclass(obj) and inspect.isfunction(inspect.getattr_static(obj, method, None)))
        if not _callable_with(func, len(args) + (0 if bound else 1)):
            problems.append(f"{method}{inspect.signature(func)} cannot be called as {wanted}")
    if problems:
        raise InputError(f"{label} is not a {kind}: " + "; ".join(problems))


# ---------------------------------------------------------------- specs
def _parse_value(text: str):
    if "," in text:  # a list: channels=512,512,512,512,1536
        return [_parse_value(part) for part in text.split(",") if part != ""]
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_spec(spec: str) -> tuple[str, dict]:
    """Split ``"NAME?key=value&..."`` into ``(NAME, {key: value})`` (see the module docstring)."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"a component spec must be a non-empty string, got {spec!r}")
    name, _, query = spec.strip().partition("?")
    params = {}
    if query:
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
        except ValueError:
            raise InputError(f"spec {spec!r}: parameters must look like key=value&key=value") from None
        for key, value in pairs:
            if key in params:
                raise InputError(f"spec {spec!r}: parameter {key!r} given twice")
            params[key] = _parse_value(value)
    return name, params


def _accepted_params(factory) -> list[str] | None:
    try:
        signature = inspect.signature(getattr(factory, "from_params", factory))
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        return None
    return [n for n, p in signature.parameters.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL]


def create(kind: str, spec, **params):
    """Build a component from a spec string (``NAME?k=v``), or pass an instance through.

    Parameters
    ----------
    kind : {"attacker", "calibrator", "prior"}
    spec : str or object
        A spec string, or an instance (returned unchanged after a contract check).
    **params
        Extra keyword parameters, overriding those in the spec.

    Notes
    -----
    A class with a ``from_params(**params)`` classmethod is built through it (e.g. a
    watch-list prior reading its ids from ``file=``); otherwise ``Class(**params)``.
    """
    kind = _check_kind(kind)
    if not isinstance(spec, str):
        if inspect.isclass(spec):
            check_contract(kind, spec)
            return spec(**params)
        check_contract(kind, spec)
        return spec
    name, spec_params = parse_spec(spec)
    spec_params.update(params)
    if ":" in name:
        factory = _import_target(name, f"{kind} {name!r}")
        check_contract(kind, factory, label=f"{kind} {name!r}")
    else:
        factory = load(kind, name)
    build = getattr(factory, "from_params", factory) if inspect.isclass(factory) else factory
    accepted = _accepted_params(factory)
    if accepted is not None:
        unknown = [k for k in spec_params if k not in accepted]
        if unknown:
            raise InputError(
                f"{kind} {name!r} has no parameter {', '.join(map(repr, unknown))}; "
                f"it takes {', '.join(accepted) or 'no parameters'}"
            )
    try:
        return build(**spec_params)
    except TypeError as exc:
        raise InputError(f"{kind} {name!r}: {exc}") from None


# -- turning what users pass for a calibrator or a prior into a ready component --
def resolve_calibrator(spec):
    """Return an unfitted calibrator: built from a spec string, or a clone of an instance."""
    calibrator = create("calibrator", spec)
    if isinstance(spec, str):
        return calibrator
    from sklearn.base import clone

    try:
        return clone(calibrator)
    except TypeError:  # not a scikit-learn style estimator: fall back to a deep copy
        return copy.deepcopy(calibrator)


def resolve_prior(spec):
    """Return a prior object (anything with ``log_prior(enrolled)``) from a spec or an instance."""
    return create("prior", spec)


def describe_component(component) -> str:
    """Its ``describe()`` (name with non-default parameters), else its class name."""
    describe = getattr(component, "describe", None)
    return describe() if callable(describe) else type(component).__name__
