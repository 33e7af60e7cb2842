"""Text to typed values: the query part of a component spec, converted by the types of its parameters.

The rules -- which type each value is converted by, and the literal guess where nothing
states one -- are written once, in docs/plugins.md ("Component specs").
"""

from __future__ import annotations

import collections.abc
import inspect
import os
import sys
import types
import typing
from collections.abc import Callable, Collection
from pathlib import PurePath
from typing import Any
from urllib.parse import parse_qsl

import attrs

from lidframe.errors import InputError

__all__ = ["parse_spec", "split_query", "builder", "builder_params", "numeric_parameters"]

_NONE_WORDS = ("none", "null")
_BOOL_WORDS = {"true": True, "false": False, "1": True, "0": False}
_NO_HINT = object()  # nothing says the type: literal guessing


def _parse_value(text: str) -> Any:
    """The literal guess, for parameters whose type nothing states (docs/plugins.md)."""
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


def split_query(spec: object) -> tuple[str, list[tuple[str, str]]]:
    """``"NAME?k=v&..."`` -> ``(NAME, [(k, raw text), ...])``, percent-escapes decoded, ``+`` kept.

    A ``+`` is a plus sign (``of=a+b``, ``1e+3``, a path), not the space of HTML form
    encoding: it is escaped to ``%2B`` before :func:`urllib.parse.parse_qsl` splits and
    decodes the query, so nothing else of its parsing changes (a space is ``%20``).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"a component spec must be a non-empty string, got {spec!r}")
    name, _, query = spec.strip().partition("?")
    pairs: list[tuple[str, str]] = []
    if query:
        try:
            pairs = parse_qsl(query.replace("+", "%2B"), keep_blank_values=True, strict_parsing=True)
        except ValueError:
            raise InputError(f"spec {spec!r}: parameters must look like key=value&key=value") from None
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise InputError(f"spec {spec!r}: parameter {key!r} given twice")
            seen.add(key)
    return name, pairs


def builder(factory: Any) -> Any:
    """What a spec's parameters are passed to: ``Class.from_params`` if it exists, else *factory*."""
    return getattr(factory, "from_params", factory) if inspect.isclass(factory) else factory


def _signature(factory: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(builder(factory))
    except (TypeError, ValueError):
        return None


def _namespace(factory: Any) -> dict[str, Any]:
    """The globals of *factory*'s module, to evaluate its string annotations in."""
    module = sys.modules.get(getattr(factory, "__module__", None) or "")
    return dict(vars(module)) if module is not None else {}


def _evaluated(annotation: Any, namespace: dict[str, Any]) -> Any:
    """A string annotation evaluated in *namespace* (``_NO_HINT`` if it names something unknown)."""
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, namespace)  # the component's own annotation text, as typing does
    # any failure to evaluate a third party's annotation text leaves the type unstated (literal guessing)
    except Exception:  # noqa: BLE001
        return _NO_HINT


def _resolved_hints(factory: Any) -> dict[str, Any]:
    """Annotations of the builder's parameters, string annotations evaluated where possible."""
    build = builder(factory)
    function = build.__init__ if inspect.isclass(build) else build
    namespace = _namespace(factory)
    try:
        return typing.get_type_hints(function, globalns=namespace)
    # an annotation names something unimportable (or fails otherwise): evaluate them one by one
    except Exception:  # noqa: BLE001
        pass
    hints = {}
    for name, parameter in (_signature(factory) or inspect.Signature()).parameters.items():
        if parameter.annotation is not inspect.Parameter.empty:
            hint = _evaluated(parameter.annotation, namespace)
            if hint is not _NO_HINT:
                hints[name] = hint
    return hints


def _attrs_field_hint(factory: Any, name: str) -> Any:
    """The converter (a builtin type) or declared type of *factory*'s attrs field *name*."""
    if not (inspect.isclass(factory) and attrs.has(factory)):
        return _NO_HINT
    field = getattr(attrs.fields(factory), name, None)
    if field is None:
        return _NO_HINT
    if field.converter in (str, int, float, bool):
        return field.converter
    return _NO_HINT if field.type is None else _evaluated(field.type, _namespace(factory))


def _default_hint(default: Any) -> Any:
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


def _parameter_hints(factory: Any) -> dict[str, Any]:
    """``{parameter: type hint}`` for the parameters whose type something states.

    In order: the builder's annotation; for an attrs class built directly, the field's
    converter (``str``, ``int``, ``float``, ``bool``) or declared type; the type of the
    default value.  Parameters with none of these are left out (literal guessing).
    """
    signature = _signature(factory)
    if signature is None:
        return {}
    annotated = _resolved_hints(factory)
    direct = builder(factory) is factory
    hints = {}
    forwards_keywords = False
    for name, parameter in signature.parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            forwards_keywords = True
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        hint = _stated_hint(factory, name, parameter, annotated.get(name, _NO_HINT), direct=direct)
        if hint is not _NO_HINT and hint is not typing.Any and hint is not object:
            hints[name] = hint
    if forwards_keywords and direct and inspect.isclass(factory):
        for name, hint in _base_init_hints(factory).items():
            hints.setdefault(name, hint)
    return hints


def _stated_hint(factory: Any, name: str, parameter: inspect.Parameter, annotation: Any, *, direct: bool) -> Any:
    """The type stated for one parameter (:func:`_parameter_hints`' order), else ``_NO_HINT``."""
    hint = annotation
    if hint is _NO_HINT and direct:
        hint = _attrs_field_hint(factory, name)
    if hint is _NO_HINT:
        hint = _default_hint(parameter.default)
    return hint


def _base_init_hints(cls: type) -> dict[str, Any]:
    """The parameter hints of the nearest base class of *cls* that defines ``__init__``.

    For ``__init__(self, *, own..., **options)`` passing options to the base class: the
    bases' parameters type them.
    """
    for base in cls.__mro__[1:]:
        if "__init__" in vars(base) and base is not object:
            return _parameter_hints(base)
    return {}


def _alternatives(hint: Any) -> list[Any]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return list(typing.get_args(hint))
    return [hint]


def _is_text_type(hint: Any) -> bool:
    return hint is str or (inspect.isclass(hint) and issubclass(hint, (os.PathLike, PurePath)))


_SEQUENCE_ORIGINS = (list, tuple, collections.abc.Sequence, collections.abc.Collection, collections.abc.Iterable)


def _convert_one(text: str, hint: Any) -> Any:
    """*text* as a value of type *hint*; raises ValueError when it is not one."""
    if _is_text_type(hint):
        return text
    if hint is bool:
        return _BOOL_WORDS[_word(text, _BOOL_WORDS)]
    if hint is int:
        return int(text)
    if hint is float:
        return float(text)
    if hint is type(None):
        _word(text, _NONE_WORDS)
        return None
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return _literal_choice(text, hint)
    if _is_sequence_type(hint):
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        parts = [part for part in text.split(",") if part != ""]
        items = [_convert(part, args[0]) if args else _parse_value(part) for part in parts]
        return tuple(items) if (hint is tuple or origin is tuple) else items
    if origin in (typing.Union, types.UnionType):
        return _convert(text, hint)
    return _parse_value(text)  # a class lidframe cannot build from text: the literal guess


def _word(text: str, words: Collection[str]) -> str:
    """*text* in lower case if it is one of *words*; raises ValueError when it is not."""
    if text.lower() in words:
        return text.lower()
    raise ValueError


def _literal_choice(text: str, hint: Any) -> Any:
    """The choice of ``Literal[...]`` *hint* written *text*; raises ValueError when none is."""
    for choice in typing.get_args(hint):
        if str(choice) == text:
            return choice
    raise ValueError


def _is_sequence_type(hint: Any) -> bool:
    return hint in (list, tuple) or typing.get_origin(hint) in _SEQUENCE_ORIGINS


def _convert(text: str, hint: Any) -> Any:
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


def _describe_hint(hint: Any) -> str:
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
        A component spec, ``NAME?key=value&...`` (docs/plugins.md).
    factory : class or callable, optional
        What the parameters are passed to (a class with ``from_params`` is built through
        it): each value is converted by the type of the parameter it is given to, by the
        rules of docs/plugins.md ("Component specs").  Without it, or for a parameter whose
        type nothing states, a value is guessed from its text, by the same rules.

    Returns
    -------
    name : str
    params : dict
        Parameter name -> converted value.

    Raises
    ------
    InputError
        Malformed query, a parameter given twice, or a value that is not of its
        parameter's type.
    """
    name, pairs = split_query(spec)
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


def builder_params(factory: Any) -> list[str] | None:
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
    if not (inspect.isclass(factory) and builder(factory) is factory):
        return None
    for base in factory.__mro__[1:]:
        if "__init__" in vars(base) and base is not object:
            inherited = builder_params(base)
            return None if inherited is None else own + [n for n in inherited if n not in own]
    return None


def _is_number_type(hint: Any) -> bool:
    """int or float (not bool), or a sequence of them (``tuple[int, ...]``, ``Sequence[int]``)."""
    if hint in (int, float):
        return True
    if _is_sequence_type(hint):
        return any(_is_number_type(arg) for arg in typing.get_args(hint) if arg is not Ellipsis)
    return False


def numeric_parameters(factory: Any) -> list[str]:
    """The parameters of *factory*'s builder that take numbers: those whose stated type is or holds int or float.

    The types are read as :func:`parse_spec` reads them (the annotation, an attrs field,
    the default's type, a base class's for forwarded ``**options``); a union counts when
    one of its members does (``int | None``, ``float | str``), a sequence when its
    elements do (``Sequence[int]``), and ``bool`` does not.  What a component's
    ``option_ranges`` should cover (:func:`lidframe.testing.check_attacker`).

    Examples
    --------
    >>> from lidframe.attackers import RandomAttacker
    >>> numeric_parameters(RandomAttacker)
    ['dim', 'seed', 'plda_dim', 'cohort_top_k']
    """
    return [
        name
        for name, hint in _parameter_hints(factory).items()
        if any(_is_number_type(alternative) for alternative in _alternatives(hint))
    ]
