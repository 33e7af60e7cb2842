"""The summary of an evaluation as a typed record, :class:`Summary`, which :meth:`Summary.from_dict` reads back.

:attr:`lidframe.core.evaluation.Result.summary` is a :class:`Summary`
(:func:`lidframe.core.summarise.summarise` makes it): the LID aggregates
(:mod:`lidframe.metrics.aggregates`), the identification metrics
(:mod:`lidframe.metrics.identification`), the binary view (a
:class:`~lidframe.core.summary_views.BinaryView`, None when skipped), the bootstrap
intervals and their settings, and the settings that produced it, as typed attributes
(``summary.alid``, ``summary.binary.eer``).

A summary is also, **deprecated** (a :class:`FutureWarning`, :data:`MAPPING_DEPRECATION`; removed in
lidframe 0.4.0), a read-only mapping, the dict that ``Result.summary`` was before:
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
:meth:`Summary.from_dict` rebuilds the record from the dict of :meth:`Summary.to_dict` (with
``earlier``, also from one an earlier lidframe wrote with fewer keys: lidframe 0.2.0 wrote no
detection costs).
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import numpy as np

from lidframe.core.engine_result import EngineUsed
from lidframe.core.summary_views import BinaryView, OpenSetView, binary_entries
from lidframe.data.fileio import json_clean
from lidframe.errors import InputError
from lidframe.metrics import catalogue
from lidframe.metrics.aggregates import nan_for_none
from lidframe.metrics.binary_view import BINARY_KEYS
from lidframe.metrics.detection import OperatingPoint
from lidframe.stats.bootstrap import Bootstrap
from lidframe.stats.interval import Interval

__all__ = [
    "Summary",
    "BinaryView",
    "EngineUsed",
    "OpenSetView",
    "OPEN_SET_INTERVALS",
    "check_misattribution_threshold",
    "RENAMED_KEYS",
    "MAPPING_DEPRECATION",
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


def _caller_level(depth: int = 2) -> int:
    """The ``stacklevel`` that points a warning at the user's line, from *depth* frames below (2: a dunder's caller).

    ``summary["ci"]`` calls ``__getitem__`` directly; ``summary.get("ci")`` and ``"ci" in
    summary`` go through :class:`~collections.abc.Mapping`'s ``get`` or our ``__contains__`` first.
    """
    frame = sys._getframe(depth)
    level = depth
    while frame is not None and frame.f_code.co_filename in (__file__, _MAPPING_FILE):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


#: What the mapping view's :class:`FutureWarning` says (lidframe 0.3.0 deprecates it; 0.4.0 removes it).
MAPPING_DEPRECATION = (
    "Summary's mapping view (summary[key], summary.get(key), key in summary, dict(summary)) is deprecated and "
    "will be removed in lidframe 0.4.0: read its attributes (summary.alid, summary.binary.eer), "
    "summary.value(key) for a metric of the catalogue by its key, or summary.to_dict() for the JSON form"
)


def _warn_mapping() -> None:
    """The mapping view's deprecation warning, pointed at the user's line (called by a dunder of :class:`Summary`)."""
    warnings.warn(MAPPING_DEPRECATION, FutureWarning, stacklevel=_caller_level(3))


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


#: The LID aggregates, in the order of :func:`lidframe.metrics.aggregates.lid_summary`: the metric catalogue's
#: LID group (:mod:`lidframe.metrics.catalogue`).
LID_FIELDS = tuple(m.key for m in catalogue.metrics_of("lid"))
_COUNTS = ("n_enrolled_trials", "n_enrolled", "n_outsider_trials")
_COUNT_FIELDS = (*_COUNTS, "log2_n")
_IDENTIFICATION_FIELDS = tuple(m.key for m in catalogue.metrics_of("identification"))
_SETTING_FIELDS = (
    "calibrator",
    "prior",
    "znorm_ddof",
    "n_dev_enrolled_trials",
    "n_dev_enrolled",
    "n_dev_outsider_trials",
    "lidframe_version",
)
#: The summary's numbers that NaN can take (written as None by :meth:`Summary.to_dict`).
_NUMBER_FIELDS = ("log2_n", *LID_FIELDS, *_IDENTIFICATION_FIELDS)
#: The keys :meth:`Summary.to_dict` writes for every summary.
_ALWAYS_WRITTEN = (
    *_COUNT_FIELDS,
    *LID_FIELDS,
    *_IDENTIFICATION_FIELDS,
    *BINARY_KEYS,
    "binary_metrics",
    "binary_method",
    "binary_bins",
    "binary_error_bounds",
    "binary_operating_point",
    *_SETTING_FIELDS,
)

#: The keys :meth:`Summary.value` reads from the binary view, and those it reads as fields.
_BINARY_ENTRY_KEYS = (*BINARY_KEYS, "binary_method", "binary_bins")
_VALUE_FIELDS = (
    *_COUNT_FIELDS,
    *LID_FIELDS,
    *_IDENTIFICATION_FIELDS,
    "binary_metrics",
    *_SETTING_FIELDS,
    "scheduler",
    "n_blocks",
)


#: The open set's metrics with bootstrap intervals, besides those of :data:`~lidframe.stats.weighted.LID_METRICS`.
OPEN_SET_INTERVALS = (
    "alid_enrolled",
    "alid_outsider",
    "membership_enrolled",
    "misattribution_rate",
    "misattribution_rate_at_threshold",
)


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
        entries.update(binary_entries(self.binary, self.binary_metrics))
        entries.update({name: getattr(self, name) for name in _SETTING_FIELDS})
        if self.engine is not None:
            entries["engine"] = self.engine.to_dict()
        if self.scheduler is not None:
            entries.update(scheduler=self.scheduler, n_blocks=self.n_blocks)
        return entries

    def value(self, key: str) -> Any:
        """The value under *key*, read from the attributes: a metric of :mod:`lidframe.metrics.catalogue` or a setting.

        A field of the summary (``"alid"``, ``"n_enrolled"``, ``"calibrator"``), or of its
        binary view (``"eer"``, ``"min_dcf"``; NaN, or None for a text, when the binary
        metrics were skipped), raw (NaN stays NaN).  The console's and the demos' tables read
        the catalogue's keys through it.

        Raises
        ------
        KeyError
            *key* names no metric or setting of a summary (a nested record, ``"open_set"``,
            is read as its attribute).
        """
        if key in _BINARY_ENTRY_KEYS:
            return binary_entries(self.binary, self.binary_metrics)[key]
        if key in _VALUE_FIELDS:
            return getattr(self, key)
        raise KeyError(key)

    def __bool__(self) -> bool:
        return True  # a record, never empty (and no mapping deprecation for ``if summary``)

    def __getitem__(self, key: str) -> Any:
        _warn_mapping()
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
                    stacklevel=_caller_level(),  # the rename's own warning
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
        _warn_mapping()
        return iter(self._entries())

    def __len__(self) -> int:
        _warn_mapping()
        return len(self._entries())

    def to_dict(self) -> dict[str, Any]:
        """The mapping view as a JSON-able dict (NaN written as None), as JSON files and grid stores hold it."""
        return json_clean(self._entries())

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any], *, earlier: bool = False) -> Summary:
        """The summary that :meth:`to_dict` wrote: ``Summary.from_dict(s.to_dict()).to_dict() == s.to_dict()``.

        Parameters
        ----------
        stored : mapping
            A summary as :meth:`to_dict` writes it (NaN as None), by this release or, under
            the old keys of :data:`RENAMED_KEYS`, the one before (:func:`with_current_keys`).
            Keys that are not the summary's (``calibrator_fit`` of
            :meth:`Result.to_dict <lidframe.core.evaluation.Result.to_dict>`) are ignored.
        earlier : bool, default False
            Also read a summary that an earlier lidframe wrote with fewer keys (a grid store
            keeps them): a key it lacks is a missing value, NaN for a number and None
            otherwise.  lidframe 0.2.0 wrote no ``min_dcf``, ``act_dcf`` and
            ``binary_operating_point``: the costs are NaN (printed as not computed) and the
            binary view's ``operating_point`` the default
            :class:`~lidframe.metrics.detection.OperatingPoint`, at which nothing was
            measured.  A summary without ``binary_method`` has an exact binary view where
            its ``eer`` is a number (none was binned before).  The counts and settings that
            every lidframe wrote (``n_enrolled``, ``calibrator``, ...) are None only in a
            summary no lidframe wrote (a store row made by hand), whatever their type.

        Returns
        -------
        Summary
            A None read back as NaN where the field is a number; the nested records
            (:class:`BinaryView`, :class:`OpenSetView`, :class:`Bootstrap`,
            :class:`EngineUsed`, ...) rebuilt.  An interval is stored as its ends: its
            ``estimate`` comes back NaN (the summary's field of that name holds the value),
            its ``level`` and ``method`` are the bootstrap's (``lid_max``: percentile).

        Raises
        ------
        InputError
            A key that :meth:`to_dict` always writes is missing.
        """
        entries = with_current_keys(stored)
        if earlier:
            entries = _with_earlier_keys(entries)
        missing = [key for key in _ALWAYS_WRITTEN if key not in entries]
        if missing:
            raise InputError(f"not a summary as Summary.to_dict writes it: no {', '.join(map(repr, missing))}")
        bootstrap = None if entries.get("bootstrap") is None else Bootstrap.from_stored(entries["bootstrap"])
        engine, open_set = entries.get("engine"), entries.get("open_set")
        return cls(
            **{name: entries[name] for name in (*_COUNTS, *_SETTING_FIELDS, "binary_metrics")},
            **{name: nan_for_none(entries[name]) for name in _NUMBER_FIELDS},
            binary=BinaryView.from_entries(entries),
            intervals=_stored_intervals(entries.get("intervals"), bootstrap),
            bootstrap=bootstrap,
            engine=None if engine is None else EngineUsed(**engine),
            scheduler=entries.get("scheduler"),
            n_blocks=entries.get("n_blocks"),
            open_set=None if open_set is None else OpenSetView.from_dict(open_set),
        )


def _with_earlier_keys(entries: dict[str, Any]) -> dict[str, Any]:
    """*entries* with each key of :data:`_ALWAYS_WRITTEN` an earlier summary lacks, missing (:meth:`Summary.from_dict`)."""
    missing = [key for key in _ALWAYS_WRITTEN if key not in entries]
    if not missing:
        return entries
    filled = {**dict.fromkeys(missing), **entries}
    if "binary_method" in missing and filled["eer"] is not None:
        filled["binary_method"] = "exact"  # before the binned view, a binary view sorted every pair
    if "binary_operating_point" in missing and filled["binary_method"] is not None:
        filled["binary_operating_point"] = OperatingPoint().to_dict()  # 0.2.0 measured no cost at any point
    return filled


def _stored_intervals(stored: Mapping[str, Any] | None, bootstrap: Bootstrap | None) -> dict[str, Interval] | None:
    """The intervals of :meth:`Summary.from_dict` from their stored ends (the estimate NaN, level and method the bootstrap's)."""
    if stored is None:
        return None
    level = math.nan if bootstrap is None else bootstrap.level
    method = "" if bootstrap is None else bootstrap.method
    return {
        metric: Interval(
            math.nan,
            nan_for_none(low),
            nan_for_none(high),
            level,
            "percentile" if metric == "lid_max" and bootstrap is not None else method,
        )
        for metric, (low, high) in stored.items()
    }
