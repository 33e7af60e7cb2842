"""Turn what users pass for a calibrator or a prior into a ready component.

A component may be given as an instance or as a spec string understood by
:func:`lidframe.registry.create`: a registered name or ``"package.module:Class"``,
optionally with parameters, ``"logistic?weighting=prior&C=0.5"``.
"""

from __future__ import annotations

import copy

from lidframe import registry

__all__ = ["resolve_calibrator", "resolve_prior", "describe_component"]


def resolve_calibrator(spec):
    """Return an unfitted calibrator: built from a spec string, or a clone of an instance."""
    calibrator = registry.create("calibrator", spec)
    if isinstance(spec, str):
        return calibrator
    from sklearn.base import clone

    try:
        return clone(calibrator)
    except TypeError:  # not a scikit-learn style estimator: fall back to a deep copy
        return copy.deepcopy(calibrator)


def resolve_prior(spec):
    """Return a prior object (anything with ``log_prior(enrolled)``) from a spec or an instance."""
    return registry.create("prior", spec)


def describe_component(component) -> str:
    """Its ``describe()`` (name with non-default parameters), else its class name."""
    describe = getattr(component, "describe", None)
    return describe() if callable(describe) else type(component).__name__
