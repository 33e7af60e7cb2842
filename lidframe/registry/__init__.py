"""Registries of attackers, calibrators, priors and recognisers: built-ins, plugins, and your own.

Components are looked up by kind (``"attacker"``, ``"calibrator"``, ``"prior"``, ``"recogniser"``) and
name, and built from specs ``NAME[?key=value&...]``; docs/plugins.md is the guide and
the one statement of the spec grammar.  The wing has four rooms:

:mod:`~lidframe.registry.contracts`
    each kind's contract, once, as a Protocol (:class:`CalibratorLike`,
    :class:`PriorLike`, :class:`AttackerLike`, :class:`RecogniserLike`), and :func:`check_contract`;
:mod:`~lidframe.registry.capabilities`
    what a component may declare beyond its contract (``absolute_llr``, ``reads_audio``,
    ``outside``, ...), typed records with defaults, read by :func:`capabilities_of`;
:mod:`~lidframe.registry.discovery`
    entries and discovery: built-ins, entry points, :func:`register`, :func:`load`;
:mod:`~lidframe.registry.coercion` and :mod:`~lidframe.registry.specs`
    spec parsing and type coercion, and building components from specs (:func:`create`);
:mod:`~lidframe.registry.ranges`
    the values each numeric option takes (:class:`Range`, declared in a component's
    ``option_ranges``), checked when a spec is read and, through :func:`range_checked`,
    when the component is constructed.
"""

from lidframe.registry.capabilities import (
    CAPABILITIES,
    OUTSIDE_AUTO,
    AttackerCapabilities,
    CalibratorCapabilities,
    PriorCapabilities,
    RecogniserCapabilities,
    capabilities_of,
    check_outside,
    describe_component,
    outside_of,
    range_checked,
)
from lidframe.registry.coercion import parse_spec
from lidframe.registry.contracts import (
    KINDS,
    PROTOCOLS,
    AttackerLike,
    CalibratorLike,
    ContractMethod,
    PriorLike,
    RecogniserLike,
    check_contract,
    contract_methods,
)
from lidframe.registry.discovery import (
    BUILTINS,
    GROUPS,
    Entry,
    PluginError,
    attackers,
    calibrators,
    check_all,
    entries,
    load,
    priors,
    recognisers,
    refresh,
    register,
    unregister,
)
from lidframe.registry.ranges import Range
from lidframe.registry.specs import (
    SpecInputs,
    WithOutside,
    accepted_params,
    create,
    resolve_calibrator,
    resolve_prior,
    spec_inputs,
    with_outside,
)

__all__ = [
    "KINDS",
    "GROUPS",
    "BUILTINS",
    "Entry",
    "PluginError",
    "attackers",
    "calibrators",
    "priors",
    "recognisers",
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
    "RecogniserLike",
    "PROTOCOLS",
    "ContractMethod",
    "contract_methods",
    "OUTSIDE_AUTO",
    "check_outside",
    "outside_of",
    "CAPABILITIES",
    "AttackerCapabilities",
    "CalibratorCapabilities",
    "PriorCapabilities",
    "RecogniserCapabilities",
    "capabilities_of",
    "WithOutside",
    "with_outside",
    "Range",
    "range_checked",
]
