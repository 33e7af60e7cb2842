"""The one confidence-interval record of lidframe, :class:`Interval`, and its two stored forms.

Every interval lidframe computes is an :class:`Interval`: a bootstrap's
(:func:`lidframe.stats.bootstrap.bootstrap_ci`, BCa or percentile), a ratio's
(:func:`lidframe.stats.bootstrap.ratio_ci`, the WER of the utility wing), a proportion's
(:func:`lidframe.stats.proportion.clopper_pearson_interval`), a per-speaker row's, a DP audit's,
the longitudinal attacker's, and the intervals the report shows.  It is stored in two forms,
one per kind of file:

* in a JSON record, as its ends under the metric's key (``"intervals": {"alid": [low, high]}``),
  the level and method once beside them in the settings that produced them
  (:meth:`Interval.from_bounds` reads it back);
* in a table (a CSV, a grid's tidy ``table.csv``, a record's rows), as two columns
  ``<metric>_low`` and ``<metric>_high`` (:meth:`Interval.columns`, :meth:`Interval.from_columns`).

A bound that is not known (too few trials, a JSON ``null``) is NaN in the record.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from lidframe.data.fileio import json_clean

__all__ = ["Interval", "bounds_pair"]


@attrs.frozen
class Interval:
    """A point estimate with its confidence interval (every bound in the metric's unit).

    Attributes
    ----------
    estimate : float
        The metric's value on the data; NaN where the record that held the interval keeps
        the value elsewhere (a summary's field of the metric's name).
    low, high : float
        The interval's ends, NaN where not known.
    level : float
        Its nominal coverage in (0, 1) (0.95), NaN where the source does not say.
    method : str
        How it was computed: ``"bca"``, ``"percentile"``, ``"clopper-pearson"``; ``""``
        where the source does not say.
    """

    estimate: float
    low: float
    high: float
    level: float = math.nan
    method: str = ""

    @property
    def bounds(self) -> tuple[float, float]:
        """``(low, high)``."""
        return (self.low, self.high)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able record (NaN as None)."""
        return json_clean(attrs.asdict(self))

    def columns(self, metric: str) -> dict[str, float]:
        """The interval as a table's two columns: ``{"<metric>_low": low, "<metric>_high": high}``."""
        return {f"{metric}_low": self.low, f"{metric}_high": self.high}

    @classmethod
    def from_bounds(
        cls, bounds: Sequence[float | None], *, estimate: float = math.nan, level: float = math.nan, method: str = ""
    ) -> Interval:
        """The interval of a JSON record's ``[low, high]`` (a None end NaN)."""
        low, high = bounds_pair(bounds)
        return cls(float(estimate), low, high, float(level), method)

    @classmethod
    def from_columns(
        cls, row: Mapping[str, Any], metric: str, *, level: float = math.nan, method: str = ""
    ) -> Interval | None:
        """The interval of *metric* in a table row (``<metric>_low`` / ``<metric>_high``, the estimate ``row[metric]``).

        None where the row has neither end (a table without intervals); a missing or None
        end alone is NaN.
        """
        low, high = row.get(f"{metric}_low"), row.get(f"{metric}_high")
        if low is None and high is None:
            return None
        value = row.get(metric)
        return cls(_float(value), _float(low), _float(high), float(level), method)


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


def bounds_pair(bounds: Sequence[float | None]) -> tuple[float, float]:
    """``(low, high)`` of a stored ``[low, high]`` as floats (None as NaN)."""
    low, high = bounds
    return _float(low), _float(high)
