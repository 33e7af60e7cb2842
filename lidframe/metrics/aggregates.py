"""Aggregates of per-trial LID (bits): the average and the tails it can hide.

With LID_1..LID_T the disclosures of the T closed-set trials:

* ``alid``     ALID = mean LID
* ``pdr``      positive disclosure rate, share of trials with LID > 0
* ``ndr``      negative disclosure rate, share with LID <= 0 (= 1 - PDR)
* ``lid_pos``  LID+ = mean of the positive LIDs (NaN when none)
* ``lid_neg``  LID- = mean of the non-positive LIDs (NaN when none)
* ``lid_max``, ``lid_min``, and the quantiles ``lid_q50``, ``lid_q90``, ``lid_q99``
  (linear interpolation, numpy's default)

so that ALID = PDR * LID+ + NDR * LID-, where an empty side's term counts as 0
(:func:`alid_decomposition` evaluates the right-hand side with that convention).

A LID of exactly 0 (the evidence left the posterior at the prior) is no disclosure: it
counts in NDR and LID-, never in PDR.  The LID engines return exactly 0.0 for a trial
whose LLRs are all equal (:mod:`lidframe.core.lid`), so rounding cannot move such a
trial into PDR; no tolerance is applied here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError

__all__ = ["LID_QUANTILES", "LIDAggregates", "lid_summary", "alid_decomposition", "nan_for_none"]

#: Quantile levels reported as ``lid_q50``, ``lid_q90``, ``lid_q99``.
LID_QUANTILES = (0.5, 0.9, 0.99)


def nan_for_none(value: Any) -> Any:
    """NaN for None, else *value* as it is: a number that JSON wrote as null (:func:`lidframe.data.fileio.json_clean`), read back."""
    return math.nan if value is None else value


def _check_lid(lid_bits: ArrayLike) -> np.ndarray:
    lid = np.asarray(lid_bits, dtype=np.float64).ravel()
    if lid.size == 0:
        raise InputError("no closed-set trials: LID aggregates need at least one trial whose speaker is enrolled")
    if np.isnan(lid).any():
        raise InputError("LID values contain NaN; drop outsider trials (speaker not enrolled) first")
    return lid


def lid_summary(lid_bits: ArrayLike) -> dict:
    """Summary statistics of per-trial LID values.

    Parameters
    ----------
    lid_bits : array_like, shape (T,)
        LID of closed-set trials in bits (no NaN).

    Returns
    -------
    dict
        ``alid, pdr, ndr, lid_pos, lid_neg, lid_max, lid_min, lid_q50, lid_q90, lid_q99``
        as Python floats (bits or fractions); ``lid_pos``/``lid_neg`` are NaN when their
        side is empty.
    """
    lid = _check_lid(lid_bits)
    positive = lid > 0
    n_pos = int(np.count_nonzero(positive))
    n = lid.size
    quantiles = np.quantile(lid, LID_QUANTILES)
    out = {
        "alid": float(lid.mean()),
        "pdr": n_pos / n,
        "ndr": (n - n_pos) / n,
        "lid_pos": float(lid[positive].mean()) if n_pos else float("nan"),
        "lid_neg": float(lid[~positive].mean()) if n_pos < n else float("nan"),
        "lid_max": float(lid.max()),
        "lid_min": float(lid.min()),
    }
    for level, value in zip(LID_QUANTILES, quantiles):
        out[f"lid_q{round(level * 100)}"] = float(value)
    return out


@attrs.frozen(kw_only=True)
class LIDAggregates:
    """The aggregates of :func:`lid_summary` of one group of trials, and its size.

    The open set (:mod:`lidframe.core.openset`) reports one for the enrolled trials, one
    for the outsider trials and one for the membership disclosure of the enrolled trials.

    Attributes
    ----------
    n_trials : int
        Trials in the group.
    alid, pdr, ndr, lid_pos, lid_neg, lid_max, lid_min, lid_q50, lid_q90, lid_q99 : float
        As :func:`lid_summary` (bits or fractions).
    """

    n_trials: int
    alid: float
    pdr: float
    ndr: float
    lid_pos: float
    lid_neg: float
    lid_max: float
    lid_min: float
    lid_q50: float
    lid_q90: float
    lid_q99: float

    @classmethod
    def of(cls, lid_bits: ArrayLike) -> LIDAggregates | None:
        """The aggregates of *lid_bits* (bits, no NaN); None for an empty group."""
        values = np.asarray(lid_bits, dtype=np.float64).ravel()
        if values.size == 0:
            return None
        return cls(n_trials=int(values.size), **lid_summary(values))

    def __getitem__(self, key: str) -> float:
        """``group["pdr"]``: the field, so that :func:`alid_decomposition` reads a group as a summary."""
        return getattr(self, key)

    def to_dict(self) -> dict:
        """The fields as a JSON-able dict (NaN kept; :func:`lidframe.data.fileio.json_clean` writes it as null)."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> LIDAggregates:
        """The group that :meth:`to_dict` wrote, a None (JSON's null) read back as NaN."""
        return cls(**{field.name: nan_for_none(stored[field.name]) for field in attrs.fields(cls)})


def alid_decomposition(summary: Mapping[str, float] | LIDAggregates) -> float:
    """PDR * LID+ + NDR * LID-, an empty side's term counting as 0 (equals ALID).

    *summary* has ``pdr``, ``ndr``, ``lid_pos`` and ``lid_neg``: as keys (the dict of
    :func:`lid_summary`) or as attributes (an evaluation's
    :class:`~lidframe.core.summary.Summary`, a :class:`LIDAggregates` group).
    """
    names = ("pdr", "ndr", "lid_pos", "lid_neg")
    if hasattr(summary, "pdr"):  # a record (a Summary is also a deprecated mapping: read its attributes)
        pdr, ndr, lid_pos, lid_neg = (getattr(summary, k) for k in names)
    else:
        pdr, ndr, lid_pos, lid_neg = (summary[k] for k in names)
    pos = pdr * lid_pos if pdr > 0 else 0.0
    neg = ndr * lid_neg if ndr > 0 else 0.0
    return pos + neg
