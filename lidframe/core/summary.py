"""The summary of an evaluation as a typed record (:class:`Summary`, :class:`BinaryView`), and :func:`summarise`.

:attr:`lidframe.core.evaluation.Result.summary` is a :class:`Summary`: the LID aggregates
(:mod:`lidframe.metrics.aggregates`), the identification metrics
(:mod:`lidframe.metrics.identification`), the binary view (a :class:`BinaryView`, None
when skipped), the bootstrap intervals and their settings, and the settings that
produced it, as typed attributes (``summary.alid``, ``summary.binary.eer``).

A summary is also a read-only mapping, the dict that ``Result.summary`` was before:
``summary["alid"]``, ``"intervals" in summary``, ``dict(summary)`` and ``summary.get(key)``
give the raw values (NaN stays NaN) under the keys of :meth:`Summary.to_dict`, in its
order; a key is the attribute's name, and is present only where that dict has it
(``intervals``, metric -> ``[low, high]``, and ``bootstrap``,
:meth:`Bootstrap.to_dict`, with a bootstrap; ``engine`` for an eval embedding set;
``scheduler`` and ``n_blocks`` on a cluster).  Six keys were renamed in this release
(:data:`RENAMED_KEYS`): for one release looking one up (``summary["ci"]``, ``.get("ci")``,
``"ci" in summary``) answers with the value under its new key and a :class:`FutureWarning`
naming it; old keys are not iterated, counted or written by :meth:`Summary.to_dict`.
:func:`with_current_keys` reads a summary stored under the old keys (a grid store written before).
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import numpy as np

from lidframe._version import __version__
from lidframe.core.engine_result import EngineResult, EngineUsed
from lidframe.core.openset import OpenSetTrials
from lidframe.core.znorm import uses_znorm
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.fileio import json_clean
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError
from lidframe.metrics.aggregates import LID_QUANTILES, LIDAggregates, lid_summary
from lidframe.metrics.binary_view import BINARY_KEYS, BINARY_TEXT_KEYS, binary_summary, check_operating_point
from lidframe.metrics.binned import BinnedPairs, binned_summary
from lidframe.metrics.detection import OperatingPoint
from lidframe.metrics.identification import cllr_multiclass, rank1_rate, rank_disclosure
from lidframe.registry import CalibratorLike, PriorLike, describe_component
from lidframe.stats.bootstrap import Bootstrap, Interval, PairLLRs, bootstrap_ci

__all__ = [
    "Summary",
    "BinaryView",
    "EngineUsed",
    "OpenSetView",
    "OPEN_SET_INTERVALS",
    "check_misattribution_threshold",
    "RENAMED_KEYS",
    "summarise",
    "with_current_keys",
]

#: The summary's keys before this release: old key -> (its key now, the attribute's name;
#: what it holds).  JSON files and grid stores written before hold the old keys.
_MAPPING_FILE = Mapping.get.__code__.co_filename  # a frame between the user and __getitem__ (Mapping.get)

RENAMED_KEYS: dict[str, tuple[str, str]] = {
    "n_trials": ("n_enrolled_trials", "trials whose speaker is enrolled"),
    "n_dev_trials": ("n_dev_enrolled_trials", "dev trials whose speaker is enrolled"),
    "ci": ("intervals", "the bootstrap intervals, metric -> [low, high]"),
    "ci_settings": ("bootstrap", "the bootstrap settings"),
    "n_impostor_trials": ("n_outsider_trials", "trials whose speaker is not enrolled"),
    "n_dev_impostor_trials": ("n_dev_outsider_trials", "dev trials whose speaker is not enrolled"),
}


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning from :meth:`Summary.__getitem__` at the user's line.

    ``summary["ci"]`` calls ``__getitem__`` directly; ``summary.get("ci")`` and ``"ci" in
    summary`` go through :class:`~collections.abc.Mapping`'s ``get`` or our ``__contains__`` first.
    """
    frame = sys._getframe(2)  # the caller of __getitem__
    level = 2
    while frame is not None and frame.f_code.co_filename in (__file__, _MAPPING_FILE):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def with_current_keys(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A summary dict with the keys of :data:`RENAMED_KEYS` under their new names, in place.

    Parameters
    ----------
    stored : mapping
        A summary as :meth:`Summary.to_dict` wrote it, by this release or an earlier one.

    Returns
    -------
    dict
        The same entries in the same order, an old key renamed (where the new key is
        also there, the new key's value is kept).
    """
    renamed: dict[str, Any] = {}
    for key, value in stored.items():
        new = RENAMED_KEYS[key][0] if key in RENAMED_KEYS else key
        if new != key and new in stored:
            continue
        renamed[new] = value
    return renamed


#: The LID aggregates, in the order of :func:`lidframe.metrics.aggregates.lid_summary`.
LID_FIELDS = (
    "alid",
    "pdr",
    "ndr",
    "lid_pos",
    "lid_neg",
    "lid_max",
    "lid_min",
    *(f"lid_q{round(level * 100)}" for level in LID_QUANTILES),
)
_COUNT_FIELDS = ("n_enrolled_trials", "n_enrolled", "n_outsider_trials", "log2_n")
_IDENTIFICATION_FIELDS = ("cllr_mc", "rank1_rate", "rank_disclosure_bits")
_SETTING_FIELDS = (
    "calibrator",
    "prior",
    "znorm_ddof",
    "n_dev_enrolled_trials",
    "n_dev_enrolled",
    "n_dev_outsider_trials",
    "lidframe_version",
)


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
        ZEBRA max |LLR| (log10).
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
        Bounds on |binned - exact| per metric (binned,
        :meth:`~lidframe.metrics.binned.BinnedPairs.error_bounds`), else None.
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


#: The open set's metrics with bootstrap intervals, besides those of :data:`~lidframe.stats.bootstrap.LID_METRICS`.
OPEN_SET_INTERVALS = (
    "alid_enrolled",
    "alid_outsider",
    "membership_enrolled",
    "misattribution_rate",
    "misattribution_rate_at_threshold",
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
    """

    outside: float
    outside_source: str
    enrolled: LIDAggregates
    outsider: LIDAggregates | None
    membership_enrolled: LIDAggregates
    misattribution_rate: float
    misattribution_threshold: float
    misattribution_rate_at_threshold: float

    @classmethod
    def of(cls, trials: OpenSetTrials, *, outside_source: str, misattribution_threshold: float) -> OpenSetView:
        """The view of every trial's open-set disclosure (*trials*, :func:`lidframe.core.openset.open_set_trials`)."""
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
        )

    def to_dict(self) -> dict[str, Any]:
        """The record as a dict (groups as dicts; NaN kept)."""
        return {
            "outside": self.outside,
            "outside_source": self.outside_source,
            "enrolled": self.enrolled.to_dict(),
            "outsider": None if self.outsider is None else self.outsider.to_dict(),
            "membership_enrolled": self.membership_enrolled.to_dict(),
            "misattribution_rate": self.misattribution_rate,
            "misattribution_threshold": self.misattribution_threshold,
            "misattribution_rate_at_threshold": self.misattribution_rate_at_threshold,
        }


def check_misattribution_threshold(value: object) -> float:
    """*value* as a probability threshold in [0.5, 1), or an InputError."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise InputError(f"misattribution_threshold must be a number in [0.5, 1), got {value!r}")
    threshold = float(value)
    if not 0.5 <= threshold < 1.0:
        raise InputError(
            f"misattribution_threshold = {threshold!r}: a posterior threshold in [0.5, 1) "
            "(above it the attacker names an enrolled speaker more likely than not)"
        )
    return threshold


def _binary_entries(binary: BinaryView | None, status: str) -> dict[str, Any]:
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


@attrs.frozen(kw_only=True, eq=False)
class Summary(Mapping[str, Any]):
    """What :func:`lidframe.evaluate` measured, and how: a record, and a read-only mapping (module docstring).

    Attributes
    ----------
    n_enrolled_trials : int
        Eval trials whose speaker is enrolled: the trials with a LID
        (:attr:`ScoreSet.n_trials <lidframe.data.scoreset.ScoreSet.n_trials>` counts every
        trial).
    n_enrolled : int
        N, the enrolled speakers of the eval set.
    n_outsider_trials : int
        Eval trials whose speaker is not enrolled (left out of LID).
    log2_n : float
        log2 N, the bound of LID under a uniform prior (bits).
    alid, pdr, ndr, lid_pos, lid_neg, lid_max, lid_min, lid_q50, lid_q90, lid_q99 : float
        LID aggregates (:func:`lidframe.metrics.aggregates.lid_summary`; bits or
        fractions; ``lid_pos`` / ``lid_neg`` NaN when their side is empty).
    cllr_mc : float
        Multiclass Cllr (bits).
    rank1_rate : float
        Share of closed-set trials whose true speaker ranks first.
    rank_disclosure_bits : float
        Rank disclosure (bits; :mod:`lidframe.metrics.identification`).
    binary_metrics : str
        ``"computed"`` or ``"skipped: <why>"``.
    binary : BinaryView or None
        The binary view; None when skipped (the mapping then shows NaN metrics).
    intervals : dict of str to Interval, or None
        Bootstrap intervals per metric (in the mapping, ``[low, high]``); None without a
        bootstrap.
    bootstrap : Bootstrap or None
        The bootstrap settings (in the mapping, :meth:`Bootstrap.to_dict`).
    calibrator, prior : str
        The fitted calibrator and the prior, described (name and non-default parameters).
    znorm_ddof : int or None
        Row z-norm degrees of freedom; None for a calibrator on raw scores.
    n_dev_enrolled_trials, n_dev_enrolled, n_dev_outsider_trials : int or None
        Dev trials whose speaker is enrolled, enrolled speakers and outsider trials; None
        when no dev set was given.
    lidframe_version : str
    engine : EngineUsed or None
        The engine that ran, for an eval embedding set; None for a score set.
    scheduler : str or None
        Address of the dask scheduler that ran the blocks; None in one process.
    n_blocks : int or None
        Blocks of trial rows run on the cluster; None in one process.
    open_set : OpenSetView or None
        The open set's groups and misattribution (in the mapping, ``open_set``, a dict);
        None in the closed set (``outside`` 0).  In the open set the LID aggregates above
        are over every trial (each has a LID), and ``cllr_mc``, ``rank1_rate`` and
        ``rank_disclosure_bits`` stay closed-set metrics of the enrolled trials.
    """

    n_enrolled_trials: int
    n_enrolled: int
    n_outsider_trials: int
    log2_n: float
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
    cllr_mc: float
    rank1_rate: float
    rank_disclosure_bits: float
    binary_metrics: str
    binary: BinaryView | None
    calibrator: str
    prior: str
    znorm_ddof: int | None
    lidframe_version: str
    intervals: dict[str, Interval] | None = None
    bootstrap: Bootstrap | None = None
    n_dev_enrolled_trials: int | None = None
    n_dev_enrolled: int | None = None
    n_dev_outsider_trials: int | None = None
    engine: EngineUsed | None = None
    scheduler: str | None = None
    n_blocks: int | None = None
    open_set: OpenSetView | None = None

    def _entries(self) -> dict[str, Any]:
        """The mapping view as a fresh dict: keys in order, raw values."""
        entries = {name: getattr(self, name) for name in (*_COUNT_FIELDS, *LID_FIELDS, *_IDENTIFICATION_FIELDS)}
        if self.open_set is not None:
            entries["open_set"] = self.open_set.to_dict()
        if self.intervals is not None:
            entries["intervals"] = {metric: [i.low, i.high] for metric, i in self.intervals.items()}
        if self.bootstrap is not None:
            entries["bootstrap"] = self.bootstrap.to_dict()
        entries.update(_binary_entries(self.binary, self.binary_metrics))
        entries.update({name: getattr(self, name) for name in _SETTING_FIELDS})
        if self.engine is not None:
            entries["engine"] = self.engine.to_dict()
        if self.scheduler is not None:
            entries.update(scheduler=self.scheduler, n_blocks=self.n_blocks)
        return entries

    def __getitem__(self, key: str) -> Any:
        entries = self._entries()
        if key in entries:
            return entries[key]
        if key in RENAMED_KEYS:  # for one release: the value under its new key, with a warning
            new, holds = RENAMED_KEYS[key]
            if new in entries:
                warnings.warn(
                    f"summary[{key!r}] is now summary[{new!r}] ({holds}); the old key will be removed "
                    "in the next release",
                    FutureWarning,
                    stacklevel=_caller_level(),
                )
                return entries[new]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        # an old key answers as its new one (with the warning of __getitem__), as .get does
        try:
            self[key]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())

    def to_dict(self) -> dict[str, Any]:
        """The mapping view as a JSON-able dict (NaN written as None), as JSON files and grid stores hold it."""
        return json_clean(self._entries())


def summarise(
    run: EngineResult,
    run_set: ScoreSet | EmbeddingSet,
    posterior_closed: np.ndarray,
    *,
    n_outsider_trials: int,
    binary_status: str,
    bootstrap: Bootstrap | None,
    fitted: CalibratorLike,
    prior: PriorLike,
    znorm_ddof: int,
    dev: ScoreSet | None,
    open_trials: OpenSetTrials | None = None,
    outside_source: str = "given",
    misattribution_threshold: float = 0.9,
    operating_point: OperatingPoint | None = None,
) -> Summary:
    """The :class:`~lidframe.core.summary.Summary` of an engine's run on the trials of *run_set*.

    Parameters
    ----------
    run : EngineResult
        LID, ranks and pair LLRs (or counts) of the T trials of *run_set*.
    run_set : ScoreSet or EmbeddingSet
        The eval trials the engine ran: those whose speaker is enrolled (closed set), or
        every trial (open set).
    posterior_closed : ndarray, shape (T_c,)
        The closed-set posterior of each enrolled trial's true speaker.
    n_outsider_trials : int
        Eval trials whose speaker is not enrolled.
    binary_status : str
        ``"computed"`` or ``"skipped: <why>"``.
    bootstrap : Bootstrap or None
        Settings of the intervals (None: none).  The exact pair LLRs of *run* are
        resampled first, then sorted in place for the binary view.
    fitted, prior, znorm_ddof, dev
        The settings recorded (dev: its sizes, or None).
    open_trials : OpenSetTrials, optional
        Every trial's open-set disclosure (:func:`lidframe.core.openset.open_set_trials`);
        None in the closed set.
    outside_source : {"given", "auto"}
    misattribution_threshold : float
        The chosen threshold of :attr:`OpenSetView.misattribution_rate_at_threshold`.
    operating_point : OperatingPoint, optional
        Of the binary view's ``min_dcf`` and ``act_dcf`` (default ``OperatingPoint()``).
    """
    n_enrolled = run_set.n_enrolled
    enrolled = np.asarray(run_set.true_index) >= 0
    n_enrolled_trials = int(enrolled.sum())
    lid_bits = run.lid_bits if open_trials is None else open_trials.lid_bits
    ranks = run.true_rank[enrolled] if open_trials is not None else run.true_rank
    aggregates = lid_summary(lid_bits)
    intervals = None
    if bootstrap is not None:
        pairs = None
        if run.pair_llr is not None:
            pairs = PairLLRs(run.pair_llr[0], run.pair_llr[1].reshape(n_enrolled_trials, n_enrolled - 1))
        intervals = bootstrap_ci(
            lid_bits,
            bootstrap,
            speakers=run_set.trial_speakers,
            pairs=pairs,
            pair_rows=None if open_trials is None else np.flatnonzero(enrolled),
            group_means=None if open_trials is None else _open_set_means(open_trials, misattribution_threshold),
        )
    binary = None
    if run.pair_llr is not None:  # after the bootstrap: this sorts the buffers in place
        binary = BinaryView.from_pair_llrs(*run.pair_llr, overwrite=True, operating_point=operating_point)
    elif run.binned_pairs is not None:
        binary = BinaryView.from_binned(run.binned_pairs, operating_point=operating_point)
    open_set = None
    if open_trials is not None:
        open_set = OpenSetView.of(
            open_trials, outside_source=outside_source, misattribution_threshold=misattribution_threshold
        )
    return Summary(
        n_enrolled_trials=n_enrolled_trials,
        n_enrolled=int(n_enrolled),
        n_outsider_trials=int(n_outsider_trials),
        log2_n=math.log2(n_enrolled),
        **aggregates,
        cllr_mc=cllr_multiclass(posterior_closed),
        rank1_rate=rank1_rate(ranks),
        rank_disclosure_bits=rank_disclosure(ranks, n_enrolled)[1],
        intervals=intervals,
        bootstrap=bootstrap,
        binary_metrics=binary_status,
        binary=binary,
        calibrator=describe_component(fitted),
        prior=describe_component(prior),
        znorm_ddof=znorm_ddof if uses_znorm(fitted) else None,
        n_dev_enrolled_trials=None if dev is None else int(dev.n_trials - dev.n_outsider_trials),
        n_dev_enrolled=None if dev is None else int(dev.n_enrolled),
        n_dev_outsider_trials=None if dev is None else int(dev.n_outsider_trials),
        lidframe_version=__version__,
        engine=run.engine,
        scheduler=run.scheduler,
        n_blocks=run.n_blocks,
        open_set=open_set,
    )


def _open_set_means(trials: OpenSetTrials, threshold: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The group means of :data:`OPEN_SET_INTERVALS` as (per-trial values, group) for the bootstrap."""
    enrolled, outsider = ~trials.is_outsider, trials.is_outsider
    means = {
        "alid_enrolled": (trials.lid_bits, enrolled),
        "alid_outsider": (trials.lid_bits, outsider),
        "membership_enrolled": (trials.membership_bits, enrolled),
        "misattribution_rate": ((trials.top_posterior > 0.5).astype(np.float64), outsider),
        "misattribution_rate_at_threshold": ((trials.top_posterior > threshold).astype(np.float64), outsider),
    }
    if not outsider.any():  # no outsider trial: nothing to resample
        for key in ("alid_outsider", "misattribution_rate", "misattribution_rate_at_threshold"):
            del means[key]
    return means
