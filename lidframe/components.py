"""Turn what users pass for a calibrator or a prior into a ready component.

A component may be given as an instance, a built-in name (``"logistic"``,
``"uniform"``) or an import target ``"package.module:Class"``.
"""

from __future__ import annotations

import copy
import importlib

from lidframe.errors import InputError

__all__ = ["BUILTIN_CALIBRATORS", "BUILTIN_PRIORS", "resolve_calibrator", "resolve_prior", "load_target"]

#: Built-in calibrators by name, as import targets (loaded only when asked for).
BUILTIN_CALIBRATORS = {"logistic": "lidframe.calibrators.logistic:Logistic"}
#: Built-in parameter-free priors by name.
BUILTIN_PRIORS = {"uniform": "lidframe.priors:Uniform"}


def load_target(target: str):
    """Import ``"package.module:Attribute"`` and return the attribute."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"{target!r} is not an import target; expected 'package.module:Class'")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"cannot import {module_name!r} for {target!r}: {exc}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise InputError(f"module {module_name!r} has no attribute {attr!r}") from None
    return obj


def _from_spec(spec, builtins: dict, kind: str):
    if spec in builtins:
        return load_target(builtins[spec])()
    if ":" in spec:
        return load_target(spec)()
    raise InputError(f"unknown {kind} {spec!r}; available: {', '.join(sorted(builtins))}, or 'package.module:Class'")


def resolve_calibrator(spec):
    """Return an unfitted calibrator: a fresh instance for a name, a clone of an instance."""
    if isinstance(spec, str):
        calibrator = _from_spec(spec, BUILTIN_CALIBRATORS, "calibrator")
    else:
        calibrator = spec
    missing = [m for m in ("fit", "llr") if not callable(getattr(calibrator, m, None))]
    if missing:
        raise InputError(
            f"{type(calibrator).__name__} is not a calibrator: it lacks {', '.join(missing)}() "
            "(fit(scores, labels) -> self and llr(scores) -> ndarray of natural-log LLRs)"
        )
    if isinstance(spec, str):
        return calibrator
    try:
        from sklearn.base import clone

        return clone(calibrator)
    except TypeError:  # not a scikit-learn style estimator: fall back to a deep copy
        return copy.deepcopy(calibrator)


def resolve_prior(spec):
    """Return a prior object (anything with ``log_prior(enrolled)``)."""
    prior = _from_spec(spec, BUILTIN_PRIORS, "prior") if isinstance(spec, str) else spec
    if not callable(getattr(prior, "log_prior", None)):
        raise InputError(
            f"{type(prior).__name__} is not a prior: it lacks log_prior(enrolled) -> ndarray (N,) of log-probabilities"
        )
    return prior
