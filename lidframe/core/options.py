"""How an evaluation measures: :class:`EvaluateOptions`, the one record of an evaluation's settings.

:func:`lidframe.evaluate`, :func:`lidframe.evaluate_fitted`, ``lidframe evaluate`` and a
grid's ``[grid.evaluate]`` table all take (or build) this record, so its defaults are the
library's and every value is checked once, here, when the record is made.  The settings
of *what* is evaluated (the calibrator, the prior) and *where* it runs (a dask scheduler)
are not in it: the record says how the numbers are measured, and it is part of every grid
cell's key (a cell whose options changed is computed again).

Examples
--------
>>> from lidframe.core.options import EvaluateOptions
>>> from lidframe.metrics.detection import OperatingPoint
>>> options = EvaluateOptions(operating_point=OperatingPoint(p_target=0.05), misattribution_threshold=0.95)
>>> options.to_dict()["operating_point"]
{'p_target': 0.05, 'c_miss': 1.0, 'c_fa': 1.0}
>>> EvaluateOptions.from_dict(options.to_dict()) == options
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs
import numpy as np

from lidframe.core.engine import Engine, check_engine
from lidframe.core.summary import check_misattribution_threshold
from lidframe.core.znorm import check_ddof
from lidframe.errors import InputError
from lidframe.metrics.binary_view import check_operating_point
from lidframe.metrics.detection import OperatingPoint
from lidframe.stats.bootstrap import Bootstrap

__all__ = ["EvaluateOptions", "check_evaluate_options"]


def _binary_metrics(value: object) -> bool | Literal["auto"]:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if value != "auto":
        raise InputError(f"binary_metrics must be 'auto', True or False, got {value!r}")
    return "auto"


def _bootstrap(value: object) -> Bootstrap | None:
    """*value*, a Bootstrap record or None (no intervals); else an InputError naming ``bootstrap``."""
    if value is not None and not isinstance(value, Bootstrap):
        raise InputError(f"bootstrap must be None or a record of type Bootstrap, got {type(value).__name__}")
    return value


@attrs.frozen(kw_only=True)
class EvaluateOptions:
    """How an evaluation measures (one record, one set of defaults; module docstring).

    Attributes
    ----------
    znorm_ddof : {0, 1}, default 1
        Row z-norm degrees of freedom (1 = the reference code, 0 = the paper's example).
    binary_metrics : {"auto", True, False}, default "auto"
        The binary view over the closed-set eval pairs: ``"auto"`` exact or binned by size,
        True always, False none (:func:`lidframe.evaluate`).
    bootstrap : Bootstrap or None, default None
        The settings of the bootstrap intervals; None: no intervals.
    engine : Engine, default ``Engine()``
        Where and how the LID engine runs (None is read as ``Engine()``).
    misattribution_threshold : float, default 0.9
        Open set: the chosen posterior threshold of the misattribution rate, in [0.5, 1).
    operating_point : OperatingPoint, default ``OperatingPoint()``
        Where minDCF and actDCF are measured (None is read as ``OperatingPoint()``).

    Raises
    ------
    InputError
        On construction, for a value outside the above, naming it.
    """

    znorm_ddof: int = attrs.field(default=1, converter=check_ddof)
    binary_metrics: bool | Literal["auto"] = attrs.field(default="auto", converter=_binary_metrics)
    bootstrap: Bootstrap | None = attrs.field(default=None, converter=_bootstrap)
    engine: Engine = attrs.field(factory=Engine, converter=check_engine)
    misattribution_threshold: float = attrs.field(default=0.9, converter=check_misattribution_threshold)
    operating_point: OperatingPoint = attrs.field(factory=OperatingPoint, converter=check_operating_point)

    def to_dict(self) -> dict[str, Any]:
        """The options as a JSON-able dict (nested records as dicts; no bootstrap: None)."""
        return {
            "znorm_ddof": self.znorm_ddof,
            "binary_metrics": self.binary_metrics,
            "bootstrap": None if self.bootstrap is None else self.bootstrap.to_dict(),
            "engine": self.engine.to_dict(),
            "misattribution_threshold": self.misattribution_threshold,
            "operating_point": self.operating_point.to_dict(),
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> EvaluateOptions:
        """The record of :meth:`to_dict`'s dict (a missing key takes its default).

        Raises
        ------
        InputError
            For a key that is no option, or a value an option refuses.
        """
        unknown = sorted(set(values) - {f.name for f in attrs.fields(cls)})
        if unknown:
            raise InputError(f"not an evaluation option: {', '.join(map(repr, unknown))}")
        kwargs = dict(values)
        for name, record in (("bootstrap", Bootstrap), ("engine", Engine), ("operating_point", OperatingPoint)):
            if isinstance(kwargs.get(name), Mapping):
                kwargs[name] = record(**kwargs[name])
        return cls(**kwargs)


def check_evaluate_options(options: object, given: Mapping[str, Any]) -> EvaluateOptions:
    """The options an evaluation runs with: *options*, or the record of the keywords *given*.

    Parameters
    ----------
    options : EvaluateOptions or None
        ``options=`` as the caller gave it.
    given : mapping
        The evaluation's keyword settings (``znorm_ddof=``, ...), each as the caller gave it
        (its default where not given).

    Raises
    ------
    InputError
        If *options* is not an EvaluateOptions, or is given beside a keyword setting that
        is not at its default (one place for a setting, not two).
    """
    if options is None:
        return EvaluateOptions(**given)
    if not isinstance(options, EvaluateOptions):
        raise InputError(f"options must be None or a record of type EvaluateOptions, got {type(options).__name__}")
    defaults = EvaluateOptions()
    both = [name for name, value in given.items() if not _is_default(name, value, defaults)]
    if both:
        raise InputError(
            f"give the evaluation's settings in options= or as keywords, not both: {', '.join(both)} "
            "(set it in the EvaluateOptions record)"
        )
    return options


def _is_default(name: str, value: object, defaults: EvaluateOptions) -> bool:
    """Whether the keyword *name* = *value* is its default (None stands for a record's default)."""
    if value is None and name in ("engine", "operating_point", "bootstrap"):
        return True
    default = getattr(defaults, name)
    return type(value) is type(default) and value == default
