"""Component specs to components: build, inspect and resolve what users pass for a component.

A spec is an instance, a class, or a string ``NAME[?key=value&...]`` (the grammar:
docs/plugins.md, "Component specs").
"""

from __future__ import annotations

import copy
import inspect
import os
from pathlib import Path
from typing import Any, Literal, overload

import attrs

from lidframe.data.fileio import check_input_file
from lidframe.errors import InputError, quote, quote_path
from lidframe.registry.capabilities import (
    capabilities_of,
    capability_of,
    check_outside,
    component_label,
    describe_component,
)
from lidframe.registry.coercion import builder, builder_params, numeric_parameters, parse_spec, split_query
from lidframe.registry.contracts import AttackerLike, CalibratorLike, PriorLike, check_contract, check_kind
from lidframe.registry.discovery import code_version, import_target, load
from lidframe.registry.ranges import check_options

__all__ = [
    "accepted_params",
    "create",
    "SpecInputs",
    "spec_inputs",
    "resolve_calibrator",
    "resolve_prior",
    "WithOutside",
    "with_outside",
    "range_problems",
]

#: The one parameter every prior takes, whether or not its builder does (:class:`WithOutside`).
OUTSIDE_PARAM = "outside"


@attrs.frozen
class WithOutside:
    """A prior given an ``outside`` mass π_∅ that it does not take itself (a plugin's).

    ``log_prior`` is the wrapped prior's (the prior given enrolment); ``outside`` is the
    mass of "nobody enrolled" (:class:`~lidframe.registry.contracts.PriorLike`).

    Attributes
    ----------
    prior : prior
        Any object with ``log_prior(enrolled)``.
    outside : float or "auto"
    """

    prior: Any
    outside: float | str = attrs.field(converter=check_outside)

    def log_prior(self, enrolled: Any) -> Any:
        """The wrapped prior's ``log_prior(enrolled)``."""
        return self.prior.log_prior(enrolled)

    def describe(self) -> str:
        """The wrapped prior's description with ``(outside=...)``."""
        return f"{describe_component(self.prior)}(outside={_outside_text(self.outside)})"


def _outside_text(outside: float | str) -> str:
    return outside if isinstance(outside, str) else f"{outside:g}"


def with_outside(prior: Any, outside: float | str) -> Any:
    """*prior* with prior mass *outside* on "nobody enrolled".

    A prior that has an ``outside`` field (the built-ins, attrs records) gets a copy with
    it set; any other is wrapped in :class:`WithOutside`.  ``outside`` 0 returns a prior
    without open-set mass (the closed set).

    Examples
    --------
    >>> from lidframe.core.priors import Uniform
    >>> with_outside(Uniform(), 0.2)
    Uniform(outside=0.2)
    """
    outside = check_outside(outside)
    if attrs.has(type(prior)) and OUTSIDE_PARAM in attrs.fields_dict(type(prior)):
        return attrs.evolve(prior, outside=outside)
    if isinstance(prior, WithOutside):
        prior = prior.prior
    return prior if outside == 0.0 else WithOutside(prior, outside)


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
    kind = check_kind(kind)
    if isinstance(spec, str):
        _, factory, _ = _factory_and_params(kind, spec)
    else:
        factory = spec if inspect.isclass(spec) else type(spec)
        check_contract(kind, factory)
    accepted = builder_params(factory)
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
        An unknown name or parameter, a value not of its parameter's type or out of its
        declared range (the ``option_ranges`` capability, :mod:`lidframe.registry.ranges`),
        or *params* given together with an instance (they could not be applied).

    Notes
    -----
    A class with a ``from_params(**params)`` classmethod is built through it (e.g. a
    watch-list prior reading its ids from ``file=``); otherwise ``Class(**params)``.
    Spec values are converted by the parameter types of that builder (:func:`parse_spec`).
    """
    kind = check_kind(kind)
    if not isinstance(spec, str):
        if inspect.isclass(spec):
            check_contract(kind, spec)
            check_options(component_label(kind, spec), capability_of(kind, spec, "option_ranges"), params)
            return spec(**params)
        if params:
            raise InputError(
                f"{kind} parameters {', '.join(map(repr, params))} were given with a ready "
                f"{type(spec).__name__} instance, which cannot take them; pass a spec string or a class"
            )
        check_contract(kind, spec)
        return spec
    name, factory, spec_params = _factory_and_params(kind, spec)
    check_options(f"{kind} {name!r}", capability_of(kind, factory, "option_ranges"), params)
    spec_params.update(params)
    outside = _outside_to_wrap(kind, factory, spec_params)
    try:
        built = builder(factory)(**spec_params)
    except TypeError as exc:
        raise InputError(f"{kind} {name!r}: {exc}") from None
    if kind == "prior" and outside is None and OUTSIDE_PARAM in spec_params:
        # a builder that takes **options may have swallowed outside: the prior must carry what was asked
        asked = check_outside(spec_params[OUTSIDE_PARAM])
        if capabilities_of("prior", built).outside != asked:
            outside = asked
    return built if outside is None else with_outside(built, outside)


def _takes_outside(kind: str, factory: Any) -> bool:
    """Whether a prior's builder takes ``outside`` itself (else a spec's ``outside`` wraps what it builds)."""
    accepted = builder_params(factory)
    return kind == "prior" and (accepted is None or OUTSIDE_PARAM in accepted)


def _outside_to_wrap(kind: str, factory: Any, spec_params: dict) -> float | str | None:
    """Pop and check a prior spec's ``outside`` when the builder does not take it itself."""
    if kind != "prior" or OUTSIDE_PARAM not in spec_params or _takes_outside(kind, factory):
        return None
    try:
        return check_outside(spec_params.pop(OUTSIDE_PARAM))
    except InputError as exc:
        raise InputError(f"prior {getattr(factory, '__name__', factory)!r}: {exc}") from None


def _factory_and_params(kind: str, spec: str) -> tuple[str, Any, dict]:
    """``(NAME, class or factory, converted parameters)`` of a spec string, checked but not built.

    The parameters are known to the builder, of their types, and in their declared
    ranges (``option_ranges``): a grid spec is refused here, before any cell runs.
    """
    name, _ = split_query(spec)
    if ":" in name:
        factory = import_target(name, f"{kind} {name!r}")
        check_contract(kind, factory, label=f"{kind} {name!r}")
    else:
        factory = load(kind, name)
    _, spec_params = parse_spec(spec, factory)
    accepted = builder_params(factory)
    if accepted is not None:
        wrapped = {OUTSIDE_PARAM} if kind == "prior" else set()  # every prior takes outside (WithOutside)
        unknown = [k for k in spec_params if k not in accepted and k not in wrapped]
        if unknown:
            raise InputError(
                f"{kind} {name!r} has no parameter {', '.join(map(repr, unknown))}; "
                f"it takes {', '.join(accepted) or 'no parameters'}"
            )
    check_options(f"{kind} {name!r}", capability_of(kind, factory, "option_ranges"), spec_params)
    return name, factory, spec_params


def range_problems(kind: str, component: object) -> list[str]:
    """What is wrong with how *component*'s constructor keeps its numeric options' declared ranges.

    Every numeric option of its builder (:func:`~lidframe.registry.coercion.numeric_parameters`)
    must have a range in its ``option_ranges``, and the builder, called with a value just
    outside an option's range (:meth:`~lidframe.registry.ranges.Range.outside`; in a list,
    for a list option), must raise :class:`InputError`.  The other arguments of each call
    are its required parameters, read from the attributes of the same name of *component*.

    Parameters
    ----------
    kind : {"attacker", "calibrator", "prior", "recogniser"}
    component : object
        An instance (its class is rebuilt) or a class.

    Returns
    -------
    list of str
        One sentence per problem; empty when it keeps its ranges.
    """
    factory = component if inspect.isclass(component) else type(component)
    ranges = capability_of(kind, factory, "option_ranges")
    undeclared = [name for name in numeric_parameters(factory) if name not in ranges]
    problems = []
    if undeclared:
        problems.append(
            f"numeric options without a declared range: {', '.join(undeclared)} (declare option_ranges = "
            "{option: lidframe.registry.Range(...)})"
        )
    build = builder(factory)
    required = _required_arguments(component, build)
    if isinstance(required, str):
        return [*problems, required]
    for name, allowed in ranges.items():
        current = getattr(component, name, None)
        for bad in allowed.outside():
            value: object = bad
            if allowed.sequence:
                value = [bad, *current[1:]] if isinstance(current, (list, tuple)) and current else [bad]
            problem = _taken(build, {**required, name: value}, f"{name}={value!r}", allowed)
            if problem:
                problems.append(problem)
                break  # one problem per option
    return problems


def _required_arguments(component: object, build: Any) -> dict[str, Any] | str:
    """The parameters *build* cannot do without, from *component*'s attributes of their names; or why they cannot be."""
    required = {}
    for name, parameter in inspect.signature(build).parameters.items():
        if parameter.default is parameter.empty and parameter.kind in (
            parameter.KEYWORD_ONLY,
            parameter.POSITIONAL_OR_KEYWORD,
        ):
            if not hasattr(component, name):
                return f"cannot rebuild it to try its options: no attribute {name!r} (a required parameter)"
            required[name] = getattr(component, name)
    return required


def _taken(build: Any, arguments: dict[str, Any], call: str, allowed: Any) -> str | None:
    """None if ``build(**arguments)`` raises an InputError (an option out of range refused); else the problem."""
    try:
        build(**arguments)
    except InputError:
        return None
    except Exception as exc:  # noqa: BLE001 - what it raised instead is the problem reported
        return f"{call} raised {type(exc).__name__} ({exc}), not an InputError"
    return f"{call} was taken, outside its declared range ({allowed.describe()})"


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
        ``NAME?key=value&...`` (docs/plugins.md).

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
    name, factory, params = _factory_and_params(check_kind(kind), spec)
    files: dict[str, Path] = {}
    declared = capabilities_of(kind, factory).input_files
    if callable(declared):
        for item in declared(dict(params)):
            if not os.path.lexists(item):
                raise InputError(f"{kind} {quote(spec)}: input file {quote_path(item)} does not exist")
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
        version=code_version(kind, name),
        reads_audio=capabilities_of("attacker", factory).reads_audio if kind == "attacker" else True,
    )


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
