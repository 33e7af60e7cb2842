"""What a component may declare beyond its contract: its capabilities, typed, with defaults.

A component's contract (:mod:`lidframe.registry.contracts`) is the methods it must have.
Beyond them it may declare capabilities -- a calibrator's ``absolute_llr``, an
attacker's ``reads_audio``, a prior's ``outside``, a recogniser's ``sample_rate``, hooks
such as ``fit_rows`` or ``describe`` -- and leave out any of them: a plugin need not
derive from a base class.  Each kind's capabilities are a frozen record here
(:class:`AttackerCapabilities`, :class:`CalibratorCapabilities`,
:class:`PriorCapabilities`, :class:`RecogniserCapabilities`) whose field defaults say
what leaving one out means; the base classes declare them as class attributes with the
same defaults.  lidframe reads them only through :func:`capabilities_of` (one
capability: :func:`capability_of`, :func:`outside_of`, :func:`describe_component`),
which checks each declared value, so a capability is read the same way everywhere and a
value of the wrong type is an error that names it (docs/plugins.md, "Capabilities").
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from os import PathLike
from types import MappingProxyType
from typing import Any, Literal, ParamSpec, TypeVar, overload

import attrs
import numpy as np

from lidframe.errors import InputError
from lidframe.registry.ranges import Range, check_options

__all__ = [
    "ComponentCapabilities",
    "AttackerCapabilities",
    "CalibratorCapabilities",
    "PriorCapabilities",
    "RecogniserCapabilities",
    "CAPABILITIES",
    "capabilities_of",
    "capability_of",
    "capability_problems",
    "describe_component",
    "OUTSIDE_AUTO",
    "check_outside",
    "outside_of",
    "target_of",
    "InputFiles",
    "range_checked",
    "component_label",
    "NO_RANGES",
]

#: The ``outside`` value that asks for π_∅ to be estimated from the dev set.
OUTSIDE_AUTO = "auto"


def check_outside(value: object) -> float | str:
    """*value* as a prior's ``outside``: a float in [0, 1), or :data:`OUTSIDE_AUTO`.

    Text is read as a number (``"0.2"``) or ``"auto"``; anything else is an InputError
    that says what was expected.

    Examples
    --------
    >>> check_outside("0.2"), check_outside(0), check_outside("auto")
    (0.2, 0.0, 'auto')
    """
    if isinstance(value, str):
        text = value.strip()
        if text == OUTSIDE_AUTO:
            return OUTSIDE_AUTO
        try:
            value = float(text)
        except ValueError:
            raise InputError(f"outside = {value!r}: expected a number in [0, 1) or 'auto'") from None
    if isinstance(value, bool) or (not isinstance(value, (int, float)) and not hasattr(value, "__float__")):
        raise InputError(f"outside = {value!r}: expected a number in [0, 1) or 'auto'")
    number = float(value)
    if not 0.0 <= number < 1.0:
        raise InputError(f"outside = {number!r}: the prior mass of 'nobody enrolled' must be in [0, 1) (or 'auto')")
    return number


def target_of(obj: object) -> str:
    """``"module:QualName"`` of a class or function, or of an instance's class."""
    module = getattr(obj, "__module__", None) or type(obj).__module__
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}:{qualname}"


# Each capability is a field whose default says what leaving it out means, and whose metadata
# "check" turns a declared value into the field's type, or raises an InputError saying why not.
def _flag(name: str, value: object) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InputError(f"{name} must be True or False, got {value!r}")


def _method(name: str, value: object) -> Any:
    if value is None or callable(value):
        return value
    raise InputError(f"{name} must be a method (or None, for none), got {value!r}")


def _input_scale(name: str, value: object) -> str:
    if isinstance(value, str) and value in ("znorm", "raw"):
        return value
    raise InputError(f"{name} must be 'znorm' or 'raw', got {value!r}")


def _sample_rate(name: str, value: object) -> int:
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and value > 0:
        return int(value)
    raise InputError(f"{name} must be a positive integer (Hz), got {value!r}")


def _outside(name: str, value: object) -> float | str:
    return check_outside(value)


def _option_ranges(name: str, value: object) -> Mapping[str, Range]:
    if isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, Range) for k, v in value.items()):
        return MappingProxyType(dict(value))
    raise InputError(f"{name} must map option names to lidframe.registry.Range records, got {value!r}")


#: The ``option_ranges`` of a component that declares none: no option's range is checked.
NO_RANGES: Mapping[str, Range] = MappingProxyType({})


#: The type of the ``input_files`` hook: converted spec parameters in, the paths read out.
InputFiles = Callable[[dict[str, Any]], Iterable[str | PathLike[str]]]


@attrs.frozen
class ComponentCapabilities:
    """The capabilities every kind has; each field's default is what it means to leave it out.

    Attributes
    ----------
    input_files : classmethod ``input_files(params) -> iterable of path``, or None
        The files a spec with these (converted) parameters reads besides those named in
        its parameters, e.g. the ``.ids`` beside a ``.npy``; each must exist, and a
        grid's cache keys follow them (:func:`lidframe.registry.spec_inputs`).  None:
        only the files its parameters name.
    describe : method ``describe() -> str``, or None
        Its name with settings, for tables and JSON (:func:`describe_component`); None:
        the class name.
    option_ranges : mapping of str to Range, default empty
        The values each numeric option of its constructor takes, ``{option:
        Range(...)}`` (:mod:`lidframe.registry.ranges`): checked when a spec is read and,
        where the constructor is :func:`range_checked`, when it is called.  A subclass
        declares ``{**Base.option_ranges, ...}`` to keep its base's.
    """

    input_files: InputFiles | None = attrs.field(default=None, metadata={"check": _method})
    describe: Callable[[], str] | None = attrs.field(default=None, metadata={"check": _method})
    option_ranges: Mapping[str, Range] = attrs.field(default=NO_RANGES, metadata={"check": _option_ranges})


@attrs.frozen
class AttackerCapabilities(ComponentCapabilities):
    """What an attacker may declare beyond :class:`~lidframe.registry.AttackerLike` (and :class:`ComponentCapabilities`).

    Attributes
    ----------
    reads_audio : bool, default True
        Whether it reads the audio files of the utterances it is given: a grid's cache
        keys follow those files only where it does (``precomputed`` and ``random`` say
        False).
    build_model : method ``build_model() -> torch.nn.Module``, or None
        Its encoder as a torch module to train (``lidframe train-attacker --arch``);
        None: not trainable.
    output_layer, output_layer_inputs, window_features : methods, or None
        The hooks that adapt only its output layer (``train-attacker --layers output``):
        ``output_layer(model) -> module``, ``output_layer_inputs(model, windows) -> tensor``
        and ``window_features(frontend, waveform) -> tensor``; None (any of them): no
        separate output layer, it is trained whole.
    """

    reads_audio: bool = attrs.field(default=True, metadata={"check": _flag})
    build_model: Callable[[], Any] | None = attrs.field(default=None, metadata={"check": _method})
    output_layer: Callable[..., Any] | None = attrs.field(default=None, metadata={"check": _method})
    output_layer_inputs: Callable[..., Any] | None = attrs.field(default=None, metadata={"check": _method})
    window_features: Callable[..., Any] | None = attrs.field(default=None, metadata={"check": _method})


@attrs.frozen
class CalibratorCapabilities(ComponentCapabilities):
    """What a calibrator may declare beyond :class:`~lidframe.registry.CalibratorLike` (and :class:`ComponentCapabilities`).

    Attributes
    ----------
    input_scale : {"znorm", "raw"}, default "znorm"
        What it is fitted on and maps: row z-scores, or the attacker's raw scores (for
        scores that already are LLRs, :class:`~lidframe.calibrators.Identity`).
    absolute_llr : bool, default True
        Whether its LLRs are likelihood ratios, not only right up to a constant per row
        (:class:`~lidframe.calibrators.Temperature` says False): the open set refuses a
        calibrator without them, and ``sensitivity`` with an open prior leaves it out of
        its default list.
    fit_rows : method ``fit_rows(z, true_index) -> self``, or None
        Fit on the (T, N) z-normed dev rows and each row's true column instead of on
        pairs (``fit``).  None: fitted on pairs.
    llr_map : method ``llr_map() -> map``, or None
        The fitted map in closed form (:mod:`lidframe.calibrators.maps`), which the
        engines run on tiles.  None: ``llr`` wrapped in a ``CallbackMap``.
    to_dict : method ``to_dict() -> dict``, or None
        A JSON record of the fit, written as ``calibrator_fit`` by ``Result.to_dict``.
        None: no record is written.
    refit_weighted : method ``refit_weighted(scores, labels, sample_weight) -> fitted copy``, or None
        On a fitted calibrator: a copy fitted on other weighted pairs as ``fit`` fits them,
        faster from this fit's state (a warm start); the bootstrap that refits the
        calibrator on resampled dev speakers calls it per resample
        (:mod:`lidframe.core.refit`).  None: a clone is fitted by ``fit``.
    """

    input_scale: Literal["znorm", "raw"] = attrs.field(default="znorm", metadata={"check": _input_scale})
    absolute_llr: bool = attrs.field(default=True, metadata={"check": _flag})
    fit_rows: Callable[..., Any] | None = attrs.field(default=None, metadata={"check": _method})
    llr_map: Callable[[], Any] | None = attrs.field(default=None, metadata={"check": _method})
    to_dict: Callable[[], dict[str, Any]] | None = attrs.field(default=None, metadata={"check": _method})
    refit_weighted: Callable[..., Any] | None = attrs.field(default=None, metadata={"check": _method})


@attrs.frozen
class PriorCapabilities(ComponentCapabilities):
    """What a prior may declare beyond :class:`~lidframe.registry.PriorLike` (and :class:`ComponentCapabilities`).

    Attributes
    ----------
    outside : float in [0, 1) or "auto", default 0.0
        The prior mass π_∅ of "nobody enrolled" (the open set); 0 is the closed set
        (:func:`outside_of`, :func:`check_outside`).
    """

    outside: float | str = attrs.field(default=0.0, metadata={"check": _outside})


@attrs.frozen
class RecogniserCapabilities(ComponentCapabilities):
    """What a recogniser may declare beyond :class:`~lidframe.registry.RecogniserLike` (and :class:`ComponentCapabilities`).

    Attributes
    ----------
    sample_rate : int, default 16000
        Hz: lidframe resamples the audio to it before calling ``transcribe``.
    """

    sample_rate: int = attrs.field(default=16000, metadata={"check": _sample_rate})


#: The capabilities record of each kind, ``kind -> record class``.
CAPABILITIES: Mapping[str, type] = MappingProxyType(
    {
        "attacker": AttackerCapabilities,
        "calibrator": CalibratorCapabilities,
        "prior": PriorCapabilities,
        "recogniser": RecogniserCapabilities,
    }
)

_ABSENT = object()


def _declared(obj: object, name: str) -> object:
    """*obj*'s value of *name*, or ``_ABSENT``; on a class, a value only its instances hold is absent too."""
    if inspect.isclass(obj):
        static = inspect.getattr_static(obj, name, _ABSENT)
        if static is _ABSENT or hasattr(type(static), "__set__"):
            return _ABSENT  # a slot or a property (a data descriptor): its value is an instance's
    return getattr(obj, name, _ABSENT)


def _record(kind: str) -> type:
    """The capabilities record of *kind*; an InputError naming the kinds for any other."""
    if kind not in CAPABILITIES:
        raise InputError(f"unknown component kind {kind!r}; expected one of {', '.join(CAPABILITIES)}")
    return CAPABILITIES[kind]


def capability_problems(kind: str, obj: object) -> tuple[dict[str, Any], list[str]]:
    """The checked values *obj* declares of *kind*'s capabilities, and what is wrong with the others.

    Returns
    -------
    values : dict
        Capability name -> checked value, for each declared well.
    problems : list of str
        One sentence per capability declared with a value of the wrong type.
    """
    values: dict[str, Any] = {}
    problems = []
    for field in attrs.fields(_record(kind)):
        value = _declared(obj, field.name)
        if value is _ABSENT:
            continue
        try:
            values[field.name] = field.metadata["check"](field.name, value)
        except InputError as exc:
            problems.append(str(exc))
    return values, problems


@overload
def capabilities_of(kind: Literal["attacker"], obj: object) -> AttackerCapabilities: ...
@overload
def capabilities_of(kind: Literal["calibrator"], obj: object) -> CalibratorCapabilities: ...
@overload
def capabilities_of(kind: Literal["prior"], obj: object) -> PriorCapabilities: ...
@overload
def capabilities_of(kind: Literal["recogniser"], obj: object) -> RecogniserCapabilities: ...
@overload
def capabilities_of(kind: str, obj: object) -> Any: ...
def capabilities_of(kind: str, obj: object) -> Any:
    """What *obj* declares of *kind*'s capabilities, checked, with the defaults for the rest.

    The one place lidframe reads a component's optional attributes and hooks: a plugin
    need not derive from a base class, so any of them may be absent.

    Parameters
    ----------
    kind : {"attacker", "calibrator", "prior", "recogniser"}
    obj : class or object
        A component; on a class, a value that only its instances hold (an attrs field,
        a property) reads as the default.

    Returns
    -------
    AttackerCapabilities, CalibratorCapabilities, PriorCapabilities or RecogniserCapabilities
        The record of *kind* (:data:`CAPABILITIES`).

    Raises
    ------
    InputError
        Naming each capability declared with a value of the wrong type, and what it must be.

    Examples
    --------
    >>> from lidframe.calibrators import Logistic, Temperature
    >>> capabilities_of("calibrator", Temperature()).absolute_llr
    False
    >>> capabilities_of("calibrator", Logistic()).fit_rows is None
    True
    """
    values, problems = capability_problems(kind, obj)
    if problems:
        raise InputError(f"{kind} {target_of(obj)}: " + "; ".join(problems))
    return _record(kind)(**values)


def capability_of(kind: str, obj: object, name: str) -> Any:
    """One capability of *obj*: its declared value, checked, or the default of *kind*'s record.

    Raises
    ------
    InputError
        If the value declared is not of the capability's type (the message names it), or
        *kind* has no capability *name*.

    Examples
    --------
    >>> capability_of("recogniser", object(), "sample_rate")
    16000
    """
    fields = attrs.fields_dict(_record(kind))
    if name not in fields:
        raise InputError(f"a {kind} has no capability {name!r}; its capabilities are {', '.join(fields)}")
    value = _declared(obj, name)
    return fields[name].default if value is _ABSENT else fields[name].metadata["check"](name, value)


_Params = ParamSpec("_Params")
_Returned = TypeVar("_Returned")


def range_checked(kind: str) -> Callable[[Callable[_Params, _Returned]], Callable[_Params, _Returned]]:
    """Decorate a component's ``__init__`` (or ``from_params``): its arguments are checked against ``option_ranges`` first.

    Each argument of the call (defaults included) that the class declares a
    :class:`~lidframe.registry.ranges.Range` for is checked before the body runs; an
    option out of range is one :class:`InputError` line naming the component, e.g.
    ``attacker 'ge2e': rate must be a number in [0.625, 100], got 0``.  An argument that
    ``**options`` forwards to a base class is checked there, where the base's
    ``__init__`` is decorated too.

    Parameters
    ----------
    kind : {"attacker", "calibrator", "prior", "recogniser"}
        The component's kind, for the message (with its ``name`` attribute, else its class).

    Examples
    --------
    >>> class Echo:
    ...     name = "echo"
    ...     option_ranges = {"repeat": Range(1, 10, integer=True)}
    ...
    ...     @range_checked("recogniser")
    ...     def __init__(self, *, repeat: int = 1):
    ...         self.repeat = repeat
    >>> Echo(repeat=0)
    Traceback (most recent call last):
    ...
    lidframe.errors.InputError: recogniser 'echo': repeat must be an integer in [1, 10], got 0
    """
    _record(kind)

    def decorate(function: Callable[_Params, _Returned]) -> Callable[_Params, _Returned]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def checked(*args: _Params.args, **kwargs: _Params.kwargs) -> _Returned:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:  # a missing or unknown argument: the function says so itself
                return function(*args, **kwargs)
            bound.apply_defaults()
            owner = args[0] if inspect.isclass(args[0]) else type(args[0])
            ranges = capability_of(kind, owner, "option_ranges")
            check_options(component_label(kind, owner), ranges, bound.arguments)
            return function(*args, **kwargs)

        return checked

    return decorate


def component_label(kind: str, component: object) -> str:
    """``"attacker 'ge2e'"``: the kind and the ``name`` a component declares (its class's name otherwise)."""
    declared = getattr(component, "name", None)
    name = (
        declared if isinstance(declared, str) and declared else getattr(component, "__name__", type(component).__name__)
    )
    return f"{kind} {name!r}"


def outside_of(prior: object) -> float | str:
    """The prior's ``outside`` (π_∅, or ``"auto"``), checked; 0.0 for a prior without one (the closed set)."""
    outside: float | str = capability_of("prior", prior, "outside")
    return outside


def describe_component(component: object) -> str:
    """Its ``describe()`` (name with non-default parameters), else its class name.

    Raises
    ------
    InputError
        If *component* has a ``describe`` that is not a method.
    """
    declared = _declared(component, "describe")
    describe = None if declared is _ABSENT else _method("describe", declared)
    return describe() if describe is not None else type(component).__name__
