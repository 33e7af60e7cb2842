"""The records a :class:`~lidframe.core.summary.Summary` nests: the binary view and the open set's view.

:class:`BinaryView` holds the binary view of the closed-set eval pairs (exact or binned;
:mod:`lidframe.metrics.binary_view`, :mod:`lidframe.metrics.binned`), and
:func:`binary_entries` lays it out under the summary mapping's binary keys
(:meth:`BinaryView.from_entries` reads them back).  :class:`OpenSetView` holds what an
open-set evaluation adds (:mod:`lidframe.core.openset`).  Both are importable from
:mod:`lidframe.core.summary` too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from lidframe.core.membership import MembershipDetection
from lidframe.core.openset import OpenSetTrials
from lidframe.errors import InputError
from lidframe.metrics.aggregates import LIDAggregates, nan_for_none
from lidframe.metrics.binary_view import BINARY_KEYS, BINARY_TEXT_KEYS, binary_summary, check_operating_point
from lidframe.metrics.binned import BinnedPairs, binned_summary
from lidframe.metrics.detection import OperatingPoint

__all__ = ["BinaryView", "OpenSetView", "binary_entries"]


@attrs.frozen(kw_only=True)
class BinaryView:
    """The binary view of the closed-set eval pairs (:mod:`lidframe.metrics.binary_view`).

    Attributes
    ----------
    eer : float
        ROCCH equal error rate (fraction).
    eer_threshold : float
        Step-ROC single-threshold EER (fraction).
    cllr, min_cllr : float
        Cllr of the LLRs and after PAV (bits).
    min_dcf, act_dcf : float
        Normalised detection cost at its best threshold, and at the LLRs' Bayes threshold
        (:func:`~lidframe.metrics.detection.min_dcf`, :func:`~lidframe.metrics.detection.act_dcf`),
        at ``operating_point``.
    dece_bits : float
        ZEBRA D_ECE (bits).
    max_abs_llr_log10 : float
        ZEBRA max ``|LLR|`` (log10).
    zebra_tag : str
        Its category, ``"0"`` or ``"A"`` to ``"F"``.
    dsys : float
        Linkability D_sys.
    dsys_method : str
        How D_sys was integrated (``"reference"``).
    method : {"exact", "binned"}
        Every pair's LLR sorted, or counted into bins in the streaming pass
        (:mod:`lidframe.metrics.binned`).
    n_bins : int or None
        Bins per class (binned), else None.
    error_bounds : dict or None
        Bounds on ``|binned - exact|`` per metric (binned,
        :meth:`~lidframe.metrics.binned.BinnedPairs.error_bounds`), else None.  Read
        ``act_dcf``'s before the value: where a bin straddles the Bayes threshold it is
        about 99 times that bin's non-mated share (P_target = 0.01), up to 95 on a
        coarse grid.
    operating_point : OperatingPoint
        Where ``min_dcf`` and ``act_dcf`` are measured (default P_target = 0.01,
        C_miss = C_fa = 1; in the mapping view ``binary_operating_point``, a dict).
    """

    eer: float
    eer_threshold: float
    cllr: float
    min_cllr: float
    min_dcf: float
    act_dcf: float
    dece_bits: float
    max_abs_llr_log10: float
    zebra_tag: str
    dsys: float
    dsys_method: str
    method: str
    n_bins: int | None = None
    error_bounds: dict[str, float] | None = None
    operating_point: OperatingPoint = attrs.field(factory=OperatingPoint)

    @classmethod
    def from_pair_llrs(
        cls,
        mated_llr: np.ndarray,
        non_mated_llr: np.ndarray,
        *,
        overwrite: bool = False,
        operating_point: OperatingPoint | None = None,
    ) -> BinaryView:
        """The exact view of every pair's LLR (*overwrite*: sort the buffers in place, see :func:`binary_summary`).

        Parameters
        ----------
        mated_llr : ndarray, shape (n_mated,)
        non_mated_llr : ndarray, shape (n_non_mated,)
            Natural-log LLRs of the mated and non-mated pairs.
        overwrite : bool, default False
        operating_point : OperatingPoint, optional
            Of ``min_dcf`` and ``act_dcf`` (default ``OperatingPoint()``).
        """
        point = check_operating_point(operating_point)
        metrics = binary_summary(mated_llr, non_mated_llr, overwrite=overwrite, operating_point=point)
        return cls(**metrics, method="exact", operating_point=point)

    @classmethod
    def from_binned(cls, pairs: BinnedPairs, *, operating_point: OperatingPoint | None = None) -> BinaryView:
        """The binned view of per-class LLR histograms, with its error bounds (*operating_point*: of the DCFs)."""
        point = check_operating_point(operating_point)
        return cls(
            **binned_summary(pairs, operating_point=point),
            method="binned",
            n_bins=pairs.grid.n_bins,
            error_bounds=pairs.error_bounds(operating_point=point),
            operating_point=point,
        )

    @classmethod
    def from_entries(cls, entries: Mapping[str, Any]) -> BinaryView | None:
        """The view that :func:`binary_entries` wrote into a summary's mapping (None: it was skipped).

        *entries* holds the keys of :data:`~lidframe.metrics.binary_view.BINARY_KEYS` and
        ``binary_method``, ``binary_bins``, ``binary_error_bounds`` and
        ``binary_operating_point``, NaN as None (:meth:`Summary.to_dict
        <lidframe.core.summary.Summary.to_dict>`); a metric's None is read as NaN.
        """
        if entries["binary_method"] is None:
            return None
        bounds = entries["binary_error_bounds"]
        return cls(
            **{k: entries[k] if k in BINARY_TEXT_KEYS else nan_for_none(entries[k]) for k in BINARY_KEYS},
            method=entries["binary_method"],
            n_bins=entries["binary_bins"],
            error_bounds=None if bounds is None else {k: nan_for_none(v) for k, v in bounds.items()},
            operating_point=OperatingPoint(**entries["binary_operating_point"]),
        )


@attrs.frozen(kw_only=True)
class OpenSetView:
    """What an open-set evaluation adds (:mod:`lidframe.core.openset`): disclosures by group, misattribution.

    Attributes
    ----------
    outside : float
        π_∅, the prior mass of "nobody enrolled" the posterior used.
    outside_source : {"given", "auto"}
        ``"auto"``: estimated as the share of outsider trials in the dev set (the
        attacker's belief, not a fact about the eval set).
    enrolled : LIDAggregates
        LID of the enrolled trials (identification disclosure, bits).
    outsider : LIDAggregates or None
        LID of the outsider trials (membership disclosure, bits); None when the eval set
        has no outsider trial.
    membership_enrolled : LIDAggregates
        Membership disclosure of the enrolled trials, log2 p(enrolled | s) / (1 - π_∅) (bits).
    misattribution_rate : float
        Share of outsider trials whose top enrolled posterior max_j p(j | s) exceeds 0.5:
        linked to the wrong person more likely than not (NaN without outsider trials).
    misattribution_threshold : float
        The second, chosen threshold.
    misattribution_rate_at_threshold : float
        Share of outsider trials whose top enrolled posterior exceeds it.
    membership_detection : MembershipDetection or None
        Enrolled-against-outsider detection by the membership posterior: TPR at FPR 1 % and
        0.1 % with Clopper-Pearson intervals, and the ROC (:mod:`lidframe.core.membership`);
        None without outsider trials (no FPR to measure), and in a summary written before it
        existed (then not a key of :meth:`to_dict`).
    """

    outside: float
    outside_source: str
    enrolled: LIDAggregates
    outsider: LIDAggregates | None
    membership_enrolled: LIDAggregates
    misattribution_rate: float
    misattribution_threshold: float
    misattribution_rate_at_threshold: float
    membership_detection: MembershipDetection | None = None

    @classmethod
    def of(
        cls,
        trials: OpenSetTrials,
        *,
        outside_source: str,
        misattribution_threshold: float,
        membership_detection: MembershipDetection | None = None,
    ) -> OpenSetView:
        """The view of every trial's open-set disclosure (*trials*, :func:`lidframe.core.openset.open_set_trials`).

        *membership_detection* (:func:`lidframe.core.membership.membership_detection` of
        the same trials) is kept as it is.
        """
        enrolled, outsider = ~trials.is_outsider, trials.is_outsider
        aggregates = LIDAggregates.of(trials.lid_bits[enrolled])
        membership = LIDAggregates.of(trials.membership_bits[enrolled])
        if aggregates is None or membership is None:
            raise InputError("an open-set evaluation needs at least one trial whose speaker is enrolled")
        top = trials.top_posterior[outsider]
        with np.errstate(invalid="ignore"):
            rate = float(np.mean(top > 0.5)) if top.size else math.nan
            rate_at = float(np.mean(top > misattribution_threshold)) if top.size else math.nan
        return cls(
            outside=trials.outside,
            outside_source=outside_source,
            enrolled=aggregates,
            outsider=LIDAggregates.of(trials.lid_bits[outsider]),
            membership_enrolled=membership,
            misattribution_rate=rate,
            misattribution_threshold=float(misattribution_threshold),
            misattribution_rate_at_threshold=rate_at,
            membership_detection=membership_detection,
        )

    def to_dict(self) -> dict[str, Any]:
        """The record as a dict (groups as dicts; NaN kept; ``membership_detection`` only where there is one)."""
        out = {
            "outside": self.outside,
            "outside_source": self.outside_source,
            "enrolled": self.enrolled.to_dict(),
            "outsider": None if self.outsider is None else self.outsider.to_dict(),
            "membership_enrolled": self.membership_enrolled.to_dict(),
            "misattribution_rate": self.misattribution_rate,
            "misattribution_threshold": self.misattribution_threshold,
            "misattribution_rate_at_threshold": self.misattribution_rate_at_threshold,
        }
        if self.membership_detection is not None:
            out["membership_detection"] = self.membership_detection.to_dict()
        return out

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> OpenSetView:
        """The view that :meth:`to_dict` wrote (NaN as None: a number's None is read as NaN)."""
        outsider, detection = stored["outsider"], stored.get("membership_detection")
        return cls(
            outside=nan_for_none(stored["outside"]),
            outside_source=stored["outside_source"],
            enrolled=LIDAggregates.from_dict(stored["enrolled"]),
            outsider=None if outsider is None else LIDAggregates.from_dict(outsider),
            membership_enrolled=LIDAggregates.from_dict(stored["membership_enrolled"]),
            misattribution_rate=nan_for_none(stored["misattribution_rate"]),
            misattribution_threshold=nan_for_none(stored["misattribution_threshold"]),
            misattribution_rate_at_threshold=nan_for_none(stored["misattribution_rate_at_threshold"]),
            membership_detection=None if detection is None else MembershipDetection.from_dict(detection),
        )


def binary_entries(binary: BinaryView | None, status: str) -> dict[str, Any]:
    """The binary keys of the mapping view: the metrics (NaN, or None for text, when skipped), then how."""
    if binary is None:
        metrics: dict[str, Any] = {k: (None if k in BINARY_TEXT_KEYS else math.nan) for k in BINARY_KEYS}
        method = n_bins = bounds = point = None
    else:
        metrics = {k: getattr(binary, k) for k in BINARY_KEYS}
        method, n_bins = binary.method, binary.n_bins
        bounds = None if binary.error_bounds is None else dict(binary.error_bounds)
        point = binary.operating_point.to_dict()
    return {
        **metrics,
        "binary_metrics": status,
        "binary_method": method,
        "binary_bins": n_bins,
        "binary_error_bounds": bounds,
        "binary_operating_point": point,
    }
