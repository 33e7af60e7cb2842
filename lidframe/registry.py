"""Registries of attackers, calibrators and priors: built-ins, plugins, and your own.

Three kinds of component -- ``"attacker"``, ``"calibrator"``, ``"prior"`` -- are looked
up by name.  Each registry is fed by

* lidframe's built-ins,
* entry points of installed distributions in the groups ``lidframe.attackers``,
  ``lidframe.calibrators`` and ``lidframe.priors`` (``name = "package.module:Class"``),
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
(``logistic?weighting=prior&C=0.5``), ``%xx`` escapes decoded.  Each value is converted
by the type of the parameter it is given to -- the annotation of ``from_params`` or
``__init__`` (and of the base class for ``**options`` forwarded to it), else the attrs
field's converter or type, else the type of the default: ``str`` and path parameters
keep the text exactly (``watchlist?ids=007`` keeps the id ``"007"``, ``ids=1e3`` stays
``"1e3"``), ``int``/``float``/``bool`` parse it (``true``/``false``/``1``/``0``),
``none``/``null`` is None where None is allowed (and text is not), sequences split on commas
(``ecapa?channels=128,128,128,128,384``).  Only where nothing states the type is the
value guessed from its text: ``true``/``false`` booleans, ``none``/``null`` None,
numbers int or float, comma-separated values lists, anything else a string.
Parameters cannot be combined with a ready instance (:func:`create` raises).
"""

from __future__ import annotations

import collections.abc
import copy
import functools
import inspect
import os
import re
import sys
import types
import typing
import warnings
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path, PurePath
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload
from urllib.parse import parse_qsl

import attrs

from lidframe.data.fileio import check_input_file
from lidframe.errors import InputError, quote

if TYPE_CHECKING:
    import numpy as np

    from lidframe.data.scoreset import ScoreSet
    from lidframe.data.utterance import Utterance

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
    "accepted_params",
    "parse_spec",
    "check_contract",
    "check_all",
    "resolve_calibrator",
    "resolve_prior",
    "describe_component",
    "SpecInputs",
    "spec_inputs",
    "CalibratorLike",
    "PriorLike",
    "AttackerLike",
]

KINDS = ("attacker", "calibrator", "prior")
#: Entry-point group of each kind.
GROUPS = {"attacker": "lidframe.attackers", "calibrator": "lidframe.calibrators", "prior": "lidframe.priors"}

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
CONTRACTS: dict[str, dict[str, tuple[tuple[str, ...], str]]] = {
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
    version : str
        What identifies the code behind it, for cache keys (:func:`spec_inputs`):
        ``"lidframe VERSION"`` for a built-in, ``"NAME VERSION"`` of the distribution
        that declares an entry point; empty for ``register()`` entries (found from the
        target's module when asked).
    """

    kind: str
    name: str
    target: str
    origin: str
    version: str = ""


# ------------------------------------------------------- the contracts as types
class CalibratorLike(Protocol):
    """What a calibrator provides (:data:`CONTRACTS`): ``fit`` on 1-D scores and 0/1 labels, then ``llr``.

    Calibrators may also have ``fit_rows(z, true_index)``, ``llr_map()``, ``describe()``
    and an ``input_scale`` attribute; callers look for those with ``getattr``.
    """

    def fit(self, scores: np.ndarray, labels: np.ndarray) -> Any:
        """Fit on 1-D z-scores and 0/1 mated labels; return the fitted calibrator (or None: fitted in place)."""
        ...

    def llr(self, scores: np.ndarray) -> np.ndarray:
        """Natural-log LLRs of *scores*, same shape, non-decreasing."""
        ...


class PriorLike(Protocol):
    """What a prior provides (:data:`CONTRACTS`): natural-log prior probabilities of the enrolled speakers."""

    def log_prior(self, enrolled: np.ndarray) -> np.ndarray:
        """Shape (N,), in the order of *enrolled*, summing to one in probability."""
        ...


class AttackerLike(Protocol):
    """What an attacker provides (:data:`CONTRACTS`): embeddings of utterances, scores of trials."""

    def embed(self, utterances: Sequence[Utterance]) -> np.ndarray:
        """An (n, d) array, one row per utterance."""
        ...

    def score(self, trials: Sequence[Utterance], enrolment: Mapping[str, Sequence[Utterance]]) -> ScoreSet:
        """Every trial against every enrolled speaker (enrolment: speaker -> utterances)."""
        ...


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
    from lidframe._version import __version__

    builtin = f"lidframe {__version__}"
    found = {k: {n: Entry(k, n, t, "built-in", builtin) for n, t in _BUILTINS[k].items()} for k in KINDS}
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
            version = f"{dist.name} {dist.version}" if dist is not None else ""
            found[kind][ep.name] = Entry(kind, ep.name, ep.value, origin, version)
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


def load(kind: str, name: str) -> Any:
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
    status: dict[tuple[str, str], str | None] = {}
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


def check_contract(kind: str, obj: object, *, label: str | None = None) -> None:
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
_NONE_WORDS = ("none", "null")
_BOOL_WORDS = {"true": True, "false": False, "1": True, "0": False}
_NO_HINT = object()  # nothing says the type: literal guessing


def _parse_value(text: str):
    """Today's literal guess, for parameters whose type nothing states (module docstring)."""
    if "," in text:  # a list: channels=512,512,512,512,1536
        return [_parse_value(part) for part in text.split(",") if part != ""]
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in _NONE_WORDS:
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _split_query(spec) -> tuple[str, list[tuple[str, str]]]:
    """``"NAME?k=v&..."`` -> ``(NAME, [(k, raw text), ...])``, percent-escapes decoded."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"a component spec must be a non-empty string, got {spec!r}")
    name, _, query = spec.strip().partition("?")
    pairs: list[tuple[str, str]] = []
    if query:
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
        except ValueError:
            raise InputError(f"spec {spec!r}: parameters must look like key=value&key=value") from None
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise InputError(f"spec {spec!r}: parameter {key!r} given twice")
            seen.add(key)
    return name, pairs


def _builder(factory):
    """What a spec's parameters are passed to: ``Class.from_params`` if it exists, else *factory*."""
    return getattr(factory, "from_params", factory) if inspect.isclass(factory) else factory


def _signature(factory) -> inspect.Signature | None:
    try:
        return inspect.signature(_builder(factory))
    except (TypeError, ValueError):
        return None


def _namespace(factory) -> dict:
    """The globals of *factory*'s module, to evaluate its string annotations in."""
    module = sys.modules.get(getattr(factory, "__module__", None) or "")
    return dict(vars(module)) if module is not None else {}


def _evaluated(annotation, namespace: dict):
    """A string annotation evaluated in *namespace* (``_NO_HINT`` if it names something unknown)."""
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, namespace)  # the component's own annotation text, as typing does
    except Exception:
        return _NO_HINT


def _resolved_hints(factory) -> dict:
    """Annotations of the builder's parameters, string annotations evaluated where possible."""
    build = _builder(factory)
    function = build.__init__ if inspect.isclass(build) else build
    namespace = _namespace(factory)
    try:
        return typing.get_type_hints(function, globalns=namespace)
    except Exception:  # an annotation names something unimportable: evaluate them one by one
        pass
    hints = {}
    for name, parameter in (_signature(factory) or inspect.Signature()).parameters.items():
        if parameter.annotation is not inspect.Parameter.empty:
            hint = _evaluated(parameter.annotation, namespace)
            if hint is not _NO_HINT:
                hints[name] = hint
    return hints


def _attrs_field_hint(factory, name: str):
    """The converter (a builtin type) or declared type of *factory*'s attrs field *name*."""
    if not (inspect.isclass(factory) and attrs.has(factory)):
        return _NO_HINT
    field = getattr(attrs.fields(factory), name, None)
    if field is None:
        return _NO_HINT
    if field.converter in (str, int, float, bool):
        return field.converter
    return _NO_HINT if field.type is None else _evaluated(field.type, _namespace(factory))


def _default_hint(default):
    """A type read off a default value: ``10.0`` -> float, ``(512, 512)`` -> tuple[int, ...]."""
    if default is inspect.Parameter.empty or default is None:
        return _NO_HINT
    if isinstance(default, bool):
        return bool
    if isinstance(default, int):
        return int | float  # an int default does not forbid a float
    if isinstance(default, (float, str)):
        return type(default)
    if isinstance(default, (tuple, list)) and default:
        kinds = {type(x) for x in default}
        if len(kinds) == 1 and kinds <= {int, float, str, bool}:
            element = kinds.pop()
            if isinstance(default, tuple):
                return types.GenericAlias(tuple, (element, ...))
            return types.GenericAlias(list, (element,))
    return _NO_HINT


def _parameter_hints(factory) -> dict:
    """``{parameter: type hint}`` for the parameters whose type something states.

    In order: the builder's annotation; for an attrs class built directly, the field's
    converter (``str``, ``int``, ``float``, ``bool``) or declared type; the type of the
    default value.  Parameters with none of these are left out (literal guessing).
    """
    signature = _signature(factory)
    if signature is None:
        return {}
    annotated = _resolved_hints(factory)
    direct = _builder(factory) is factory
    hints = {}
    forwards_keywords = False
    for name, parameter in signature.parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            forwards_keywords = True
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        hint = annotated.get(name, _NO_HINT)
        if hint is _NO_HINT and direct:
            hint = _attrs_field_hint(factory, name)
        if hint is _NO_HINT:
            hint = _default_hint(parameter.default)
        if hint is not _NO_HINT and hint is not typing.Any and hint is not object:
            hints[name] = hint
    if forwards_keywords and direct and inspect.isclass(factory):
        # ``__init__(self, *, own..., **options)`` passing options to the base class:
        # the bases' parameters type them
        for base in factory.__mro__[1:]:
            if "__init__" in vars(base) and base is not object:
                for name, hint in _parameter_hints(base).items():
                    hints.setdefault(name, hint)
                break
    return hints


def _alternatives(hint) -> list:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return list(typing.get_args(hint))
    return [hint]


def _is_text_type(hint) -> bool:
    return hint is str or (inspect.isclass(hint) and issubclass(hint, (os.PathLike, PurePath)))


_SEQUENCE_ORIGINS = (list, tuple, collections.abc.Sequence, collections.abc.Collection, collections.abc.Iterable)


def _convert_one(text: str, hint):
    """*text* as a value of type *hint*; raises ValueError when it is not one."""
    if _is_text_type(hint):
        return text
    if hint is bool:
        if text.lower() in _BOOL_WORDS:
            return _BOOL_WORDS[text.lower()]
        raise ValueError
    if hint is int:
        return int(text)
    if hint is float:
        return float(text)
    if hint is type(None):
        if text.lower() in _NONE_WORDS:
            return None
        raise ValueError
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        for choice in typing.get_args(hint):
            if str(choice) == text:
                return choice
        raise ValueError
    if _is_sequence_type(hint):
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        parts = [part for part in text.split(",") if part != ""]
        items = [_convert(part, args[0]) if args else _parse_value(part) for part in parts]
        return tuple(items) if (hint is tuple or origin is tuple) else items
    if origin in (typing.Union, types.UnionType):
        return _convert(text, hint)
    return _parse_value(text)  # a class lidframe cannot build from text: the literal guess


def _is_sequence_type(hint) -> bool:
    return hint in (list, tuple) or typing.get_origin(hint) in _SEQUENCE_ORIGINS


def _convert(text: str, hint):
    """Convert *text* by *hint*, trying a union's members in their written order.

    A text with a comma tries the union's sequence members first (``ids=a,b`` to a
    ``str | Sequence[str]`` parameter gives ``["a", "b"]``, ``ids=007`` gives ``"007"``).
    ``none``/``null`` is None only where None is allowed and text is not: a parameter
    that takes text keeps the word (leave it out to get its None default).
    """
    alternatives = _alternatives(hint)
    takes_text = any(_is_text_type(alternative) for alternative in alternatives)
    if type(None) in alternatives and not takes_text and text.lower() in _NONE_WORDS:
        return None
    if "," in text:
        alternatives.sort(key=lambda alternative: not _is_sequence_type(alternative))
    for alternative in alternatives:
        if alternative is type(None):
            continue
        try:
            return _convert_one(text, alternative)
        except (TypeError, ValueError):
            continue
    raise ValueError


def _describe_hint(hint) -> str:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):  # "bool | 'auto'", not "Union"
        return " | ".join(_describe_hint(alternative) for alternative in typing.get_args(hint))
    if typing.get_origin(hint) is typing.Literal:
        return " | ".join(repr(choice) for choice in typing.get_args(hint))
    if hint is type(None):
        return "None"
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def parse_spec(spec: str, factory: Callable[..., Any] | None = None) -> tuple[str, dict]:
    """Split ``"NAME?key=value&..."`` into ``(NAME, {key: value})``.

    Parameters
    ----------
    spec : str
        A component spec (module docstring).
    factory : class or callable, optional
        What the parameters are passed to (a class with ``from_params`` is built through
        it).  Each value is converted by the type of the parameter it is given to: its
        annotation, else the attrs field's converter or type, else the type of its default.
        ``str`` and path parameters keep the text exactly (``ids=007`` stays ``"007"``),
        sequences split on commas, ``none``/``null`` is None where None is allowed and
        text is not.
        Without *factory*, or for a parameter whose type nothing states, the literal guess
        of the module docstring applies.

    Raises
    ------
    InputError
        Malformed query, a parameter given twice, or a value that is not of its
        parameter's type.
    """
    name, pairs = _split_query(spec)
    hints = _parameter_hints(factory) if factory is not None else {}
    params = {}
    for key, text in pairs:
        if key not in hints:
            params[key] = _parse_value(text)
            continue
        try:
            params[key] = _convert(text, hints[key])
        except ValueError:
            raise InputError(
                f"spec {spec!r}: parameter {key!r} takes {_describe_hint(hints[key])}, got {text!r}"
            ) from None
    return name, params


def _accepted_params(factory) -> list[str] | None:
    """Parameter names *factory* takes; None when it takes any (``**options`` that go nowhere known).

    A class built directly whose ``__init__`` forwards ``**options`` to its base class
    (``EcapaTdnn(**options)`` -> ``NeuralAttacker``) takes its own and the base's.
    """
    signature = _signature(factory)
    if signature is None:
        return None
    own = [
        n
        for n, p in signature.parameters.items()
        if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        return own
    if not (inspect.isclass(factory) and _builder(factory) is factory):
        return None
    for base in factory.__mro__[1:]:
        if "__init__" in vars(base) and base is not object:
            inherited = _accepted_params(base)
            return None if inherited is None else own + [n for n in inherited if n not in own]
    return None


def accepted_params(kind: str, spec: object) -> tuple[str, ...] | None:
    """The keyword parameters the component of *spec* takes, without building it.

    Parameters
    ----------
    kind : {"attacker", "calibrator", "prior"}
    spec : str, class or object
        A spec string (``NAME?k=v``; its own parameters are checked as :func:`create`
        checks them), a class, or an instance (its class).

    Returns
    -------
    tuple of str or None
        The parameter names of its builder (``from_params`` or the constructor, with those
        of a base class that ``**options`` are forwarded to); None when it takes any
        keyword (``**options`` that go nowhere lidframe can see).

    Raises
    ------
    InputError
        An unknown component, or a spec parameter it does not take.

    Examples
    --------
    >>> "device" in accepted_params("attacker", "random")
    False
    """
    kind = _check_kind(kind)
    if isinstance(spec, str):
        _, factory, _ = _factory_and_params(kind, spec)
    else:
        factory = spec if inspect.isclass(spec) else type(spec)
        check_contract(kind, factory)
    accepted = _accepted_params(factory)
    return None if accepted is None else tuple(accepted)


@overload
def create(kind: Literal["calibrator"], spec: object, **params: Any) -> CalibratorLike: ...
@overload
def create(kind: Literal["prior"], spec: object, **params: Any) -> PriorLike: ...
@overload
def create(kind: Literal["attacker"], spec: object, **params: Any) -> AttackerLike: ...
@overload
def create(kind: str, spec: object, **params: Any) -> Any: ...
def create(kind: str, spec: object, **params: Any) -> Any:
    """Build a component from a spec string (``NAME?k=v``) or a class, or pass an instance through.

    Parameters
    ----------
    kind : {"attacker", "calibrator", "prior"}
    spec : str, class or object
        A spec string, a class (called with *params*), or an instance (returned
        unchanged after a contract check).
    **params
        Extra keyword parameters, overriding those in the spec; passed as they are (no
        text conversion).

    Raises
    ------
    InputError
        An unknown name or parameter, a value not of its parameter's type, or
        *params* given together with an instance (they could not be applied).

    Notes
    -----
    A class with a ``from_params(**params)`` classmethod is built through it (e.g. a
    watch-list prior reading its ids from ``file=``); otherwise ``Class(**params)``.
    Spec values are converted by the parameter types of that builder (:func:`parse_spec`).
    """
    kind = _check_kind(kind)
    if not isinstance(spec, str):
        if inspect.isclass(spec):
            check_contract(kind, spec)
            return spec(**params)
        if params:
            raise InputError(
                f"{kind} parameters {', '.join(map(repr, params))} were given with a ready "
                f"{type(spec).__name__} instance, which cannot take them; pass a spec string or a class"
            )
        check_contract(kind, spec)
        return spec
    name, factory, spec_params = _factory_and_params(kind, spec)
    spec_params.update(params)
    try:
        return _builder(factory)(**spec_params)
    except TypeError as exc:
        raise InputError(f"{kind} {name!r}: {exc}") from None


def _factory_and_params(kind: str, spec: str) -> tuple[str, Any, dict]:
    """``(NAME, class or factory, converted parameters)`` of a spec string, checked but not built."""
    name, _ = _split_query(spec)
    if ":" in name:
        factory = _import_target(name, f"{kind} {name!r}")
        check_contract(kind, factory, label=f"{kind} {name!r}")
    else:
        factory = load(kind, name)
    _, spec_params = parse_spec(spec, factory)
    accepted = _accepted_params(factory)
    if accepted is not None:
        unknown = [k for k in spec_params if k not in accepted]
        if unknown:
            raise InputError(
                f"{kind} {name!r} has no parameter {', '.join(map(repr, unknown))}; "
                f"it takes {', '.join(accepted) or 'no parameters'}"
            )
    return name, factory, spec_params


@attrs.frozen
class SpecInputs:
    """What a component spec reads and which code runs it: what a cached result must be keyed by.

    Attributes
    ----------
    files : tuple of pathlib.Path
        Absolute paths of the files the component reads (see :func:`spec_inputs`).
    version : str
        The code behind it: ``"lidframe VERSION"`` (built-ins), ``"DIST VERSION"`` of the
        distribution that provides it, or ``"module M sha256:..."`` of a module that no
        installed distribution owns (a local ``module:Class``).
    reads_audio : bool
        Whether it reads the audio files of the utterances it is given (an attacker's
        ``reads_audio`` class attribute; True when it does not say).
    """

    files: tuple[Path, ...]
    version: str
    reads_audio: bool


def spec_inputs(kind: str, spec: str) -> SpecInputs:
    """The input files and code version of a component spec, without building it.

    Parameters
    ----------
    kind : {"attacker", "calibrator", "prior"}
    spec : str
        ``NAME?key=value&...`` (module docstring).

    Returns
    -------
    SpecInputs

    Raises
    ------
    InputError
        An unknown component or parameter, a value not of its parameter's type, or a
        file the component declares that does not exist.

    Notes
    -----
    The files are found two ways, and both count:

    * every parameter value -- or comma-separated part of one -- that names an existing
      regular file, relative to the working directory (``watchlist?file=ids.txt``,
      ``precomputed?path=emb.npz``, ``ecapa?checkpoint=model.ckpt``);
    * a component may declare more with a classmethod ``input_files(params)``, which
      gets the converted parameters and returns the paths it will read (e.g. the
      ``.ids`` file beside a ``.npy`` of embeddings); each must exist.
    """
    name, factory, params = _factory_and_params(_check_kind(kind), spec)
    files: dict[str, Path] = {}
    declared = getattr(factory, "input_files", None)
    if callable(declared):
        for item in declared(dict(params)):
            if not os.path.lexists(item):
                raise InputError(f"{kind} {quote(spec)}: input file {quote(item)} does not exist")
            try:  # a folder, a FIFO or a device is named as what it is
                check_input_file(item, f"a file {kind} {quote(spec)} reads")
            except InputError as exc:
                raise InputError(f"{kind} {quote(spec)}: input file {exc}") from None
            files.setdefault(os.path.abspath(item), Path(os.path.abspath(item)))
    for value in params.values():
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, (str, os.PathLike)) and str(item) and os.path.isfile(item):
                files.setdefault(os.path.abspath(item), Path(os.path.abspath(item)))
    return SpecInputs(
        files=tuple(files.values()),
        version=_code_version(kind, name),
        reads_audio=bool(getattr(factory, "reads_audio", True)),
    )


def _code_version(kind: str, name: str) -> str:
    """See :attr:`SpecInputs.version`."""
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
    import importlib.metadata

    return importlib.metadata.packages_distributions()


def _module_version(module: str) -> str:
    import importlib.metadata
    import importlib.util

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


# -- turning what users pass for a calibrator or a prior into a ready component --
def resolve_calibrator(spec: str | CalibratorLike | type[CalibratorLike]) -> CalibratorLike:
    """Return an unfitted calibrator: built from a spec string, or a clone of an instance."""
    calibrator = create("calibrator", spec)
    if isinstance(spec, str):
        return calibrator
    from sklearn.base import clone

    try:
        return clone(calibrator)
    except TypeError:  # not a scikit-learn style estimator: fall back to a deep copy
        return copy.deepcopy(calibrator)


def resolve_prior(spec: str | PriorLike | type[PriorLike]) -> PriorLike:
    """Return a prior object (anything with ``log_prior(enrolled)``) from a spec or an instance."""
    return create("prior", spec)


def describe_component(component: object) -> str:
    """Its ``describe()`` (name with non-default parameters), else its class name."""
    describe = getattr(component, "describe", None)
    return describe() if callable(describe) else type(component).__name__
