"""The CMC curve with its chance levels: identification numbers an auditor can read against chance.

The cumulative match characteristic (CMC) of an evaluation is its top-k identification rate
for k = 1..N: the share of enrolled trials whose true speaker the attacker ranks k-th or
better (rank-1 is its first point), from the ranks every evaluation computes
(:attr:`lidframe.core.result.Result.true_rank`; ties count for the attacker).  Each point
carries

``chance``
    k/N, the top-k rate of an attacker without information about the voice
    (:mod:`lidframe.metrics.identification`, "Chance").  It is the chance level under any
    prior: the ranks are of the attacker's scores, which the prior does not enter.  An
    attacker that ignored the voice but knew a non-uniform prior, and ranked the enrolled
    speakers by it, would reach the prior mass of its k most probable speakers -- if the
    trial speakers were drawn from that prior; that attacker is not the one these ranks
    measure, and what the prior tells it is what LID discounts (``docs/metrics.md``, "Chance beside every identification number");
``p_chance``
    P(Binomial(T, k/N) >= hits): how often an attacker at chance would do as well on T
    trials (exact for such an attacker, whose trials are independent even within a speaker);
``interval``
    with a bootstrap, the rate's :class:`~lidframe.stats.interval.Interval` from
    resampling speakers (or trials, as the :class:`~lidframe.stats.bootstrap.Bootstrap`
    says; :func:`lidframe.stats.bootstrap.ratio_ci`, every point from the same resamples).

:func:`cmc_curve` computes the curve from ranks, :func:`result_cmc` from an evaluation's
:class:`~lidframe.core.result.Result` (its enrolled trials).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.fileio import json_clean
from lidframe.data.records import as_rows
from lidframe.errors import InputError
from lidframe.metrics.aggregates import nan_for_none
from lidframe.metrics.identification import chance_p_values, cmc_ks, top_k_rates
from lidframe.stats.bootstrap import Bootstrap, ratio_ci
from lidframe.stats.interval import Interval

if TYPE_CHECKING:
    import pandas as pd

    from lidframe.core.result import Result

__all__ = ["CMCPoint", "CMCCurve", "cmc_curve", "result_cmc"]


@attrs.frozen(kw_only=True)
class CMCPoint:
    """One point of a :class:`CMCCurve`.

    Attributes
    ----------
    k : int
        The rank, 1..N.
    top_k_rate : float
        The share of trials whose true speaker ranks k-th or better.
    hits : int
        Those trials.
    chance : float
        k/N, the top-k rate of an attacker without information (module docstring).
    p_chance : float
        P(Binomial(T, k/N) >= hits), one-sided: how often an attacker at chance does as well.
    interval : Interval or None
        The rate's bootstrap interval; None without a bootstrap.
    """

    k: int
    top_k_rate: float
    hits: int
    chance: float
    p_chance: float
    interval: Interval | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{k, top_k_rate, top_k_rate_low, top_k_rate_high, chance, hits, p_chance}`` (NaN as None).

        The ends are the interval's (:meth:`Interval.columns <lidframe.stats.interval.Interval.columns>`),
        None without one.
        """
        ends: Mapping[str, float | None] = {"top_k_rate_low": None, "top_k_rate_high": None}
        if self.interval is not None:
            ends = self.interval.columns("top_k_rate")
        return json_clean(
            {
                "k": self.k,
                "top_k_rate": self.top_k_rate,
                **ends,
                "chance": self.chance,
                "hits": self.hits,
                "p_chance": self.p_chance,
            }
        )


@attrs.frozen(kw_only=True)
class CMCCurve:
    """A CMC curve with chance levels and, with a bootstrap, intervals (module docstring).

    Attributes
    ----------
    points : tuple of CMCPoint
        Ascending k; the first is rank-1 where k = 1 was asked for (the default grid has it).
    n_trials : int
        T, the enrolled trials ranked.
    n_enrolled : int
        N.
    n_speakers : int
        Speakers of those trials.
    bootstrap : Bootstrap or None
        The intervals' settings (their level, method, unit and seed); None without intervals.
    """

    points: tuple[CMCPoint, ...] = attrs.field(converter=as_rows)
    n_trials: int
    n_enrolled: int
    n_speakers: int
    bootstrap: Bootstrap | None = None

    @property
    def rank1(self) -> CMCPoint | None:
        """The point k = 1 (rank-1 rate and its chance 1/N); None when the curve has none."""
        return next((p for p in self.points if p.k == 1), None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: the sizes, the bootstrap's settings (or None) and the points (:meth:`CMCPoint.to_dict`)."""
        return {
            "n_trials": self.n_trials,
            "n_enrolled": self.n_enrolled,
            "n_speakers": self.n_speakers,
            "bootstrap": None if self.bootstrap is None else self.bootstrap.to_dict(),
            "points": [p.to_dict() for p in self.points],
        }

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> CMCCurve:
        """The curve :meth:`to_dict` wrote (a None number read as NaN; an interval's estimate is its point's rate)."""
        boot = None if stored.get("bootstrap") is None else Bootstrap.from_stored(stored["bootstrap"])
        points = []
        for p in stored["points"]:
            interval = None
            if boot is not None:
                interval = Interval.from_columns(p, "top_k_rate", level=boot.level, method=boot.method)
            points.append(
                CMCPoint(
                    k=int(p["k"]),
                    top_k_rate=nan_for_none(p["top_k_rate"]),
                    hits=int(p["hits"]),
                    chance=nan_for_none(p["chance"]),
                    p_chance=nan_for_none(p["p_chance"]),
                    interval=interval,
                )
            )
        return cls(
            points=points,
            n_trials=int(stored["n_trials"]),
            n_enrolled=int(stored["n_enrolled"]),
            n_speakers=int(stored["n_speakers"]),
            bootstrap=boot,
        )

    def to_frame(self) -> pd.DataFrame:
        """The points as a table: ``k, top_k_rate, top_k_rate_low, top_k_rate_high, chance, hits, p_chance``."""
        import pandas as pd

        return pd.DataFrame([p.to_dict() for p in self.points])


def cmc_curve(
    ranks: ArrayLike,
    n_enrolled: int,
    *,
    speakers: ArrayLike | None = None,
    ks: ArrayLike | None = None,
    bootstrap: Bootstrap | None = None,
) -> CMCCurve:
    """The CMC curve of true-speaker ranks, with chance levels, p-values and (with *bootstrap*) intervals.

    Parameters
    ----------
    ranks : array_like of int, shape (T,)
        True-speaker ranks in 1..N of the enrolled trials (T >= 1).
    n_enrolled : int
        N.
    speakers : array_like of str, shape (T,), optional
        Each trial's speaker: counted in ``n_speakers``, and the resampling units of a
        speaker bootstrap (required for one).
    ks : array_like of int, optional
        The k to report (each in 1..N); default :func:`~lidframe.metrics.identification.cmc_ks`'s grid.
    bootstrap : Bootstrap, optional
        Intervals of every point from the same resamples (:func:`lidframe.stats.bootstrap.ratio_ci`);
        None: none.

    Returns
    -------
    CMCCurve

    Raises
    ------
    InputError
        Ranks outside 1..N or none, a bad k, speakers of another length, or a bootstrap
        with fewer than two units.

    Examples
    --------
    >>> curve = cmc_curve([1, 2, 1, 4], 4)
    >>> [(p.k, p.top_k_rate, p.chance) for p in curve.points]
    [(1, 0.5, 0.25), (2, 0.75, 0.5), (3, 0.75, 0.75), (4, 1.0, 1.0)]
    """
    ks_used = cmc_ks(n_enrolled, ks)
    ranks = np.asarray(ranks).ravel()
    if ranks.size == 0 or not np.issubdtype(ranks.dtype, np.integer) or ranks.min() < 1 or ranks.max() > n_enrolled:
        raise InputError(f"a CMC curve needs at least one true-speaker rank, each a whole number in 1..{n_enrolled}")
    if bootstrap is not None and not isinstance(bootstrap, Bootstrap):
        raise InputError(f"bootstrap must be None or a Bootstrap record, got {type(bootstrap).__name__}")
    codes = _speaker_codes(speakers, ranks.size)
    hits, rates = top_k_rates(ranks, ks_used)
    chance = ks_used / float(n_enrolled)
    p_values = chance_p_values(hits, ranks.size, chance)
    intervals = [None] * ks_used.size if bootstrap is None else _intervals(ranks, ks_used, codes, bootstrap)
    points = [
        CMCPoint(k=int(k), top_k_rate=float(r), hits=int(h), chance=float(c), p_chance=float(p), interval=interval)
        for k, r, h, c, p, interval in zip(ks_used, rates, hits, chance, p_values, intervals, strict=True)
    ]
    return CMCCurve(
        points=points,
        n_trials=int(ranks.size),
        n_enrolled=int(n_enrolled),
        n_speakers=int(codes.max()) + 1 if codes is not None else int(ranks.size),
        bootstrap=bootstrap,
    )


def _speaker_codes(speakers: ArrayLike | None, n_trials: int) -> np.ndarray | None:
    """Each trial's speaker as 0..S-1 (sorted ids), checked against the trial count; None without speakers."""
    if speakers is None:
        return None
    ids = np.asarray(speakers)
    if ids.shape != (n_trials,):
        raise InputError(f"speakers must hold one id per rank ({n_trials}), got shape {ids.shape}")
    return np.unique(ids, return_inverse=True)[1].ravel()


def _intervals(ranks: np.ndarray, ks: np.ndarray, codes: np.ndarray | None, bootstrap: Bootstrap) -> list[Interval]:
    """The bootstrap :class:`Interval` of each top-k rate, every k from the same resamples.

    A speaker bootstrap resamples speakers, so each speaker's hits and trials are summed
    first (the same draws as resampling its trials; K sums per speaker, not per trial).
    """
    if bootstrap.unit == "speaker":
        if codes is None:
            raise InputError("a speaker bootstrap of the CMC curve needs the trials' speakers")
        n_units = int(codes.max()) + 1
        trials = np.bincount(codes, minlength=n_units).astype(np.float64)
        parts = {
            str(k): (np.bincount(codes, weights=(ranks <= k).astype(np.float64), minlength=n_units), trials) for k in ks
        }
        found = ratio_ci(parts, bootstrap, speakers=np.arange(n_units))
    else:
        ones = np.ones(ranks.size)
        found = ratio_ci({str(k): ((ranks <= k).astype(np.float64), ones) for k in ks}, bootstrap)
    return [found[str(k)] for k in ks]


def result_cmc(result: Result, *, ks: ArrayLike | None = None, bootstrap: Bootstrap | None = None) -> CMCCurve:
    """The CMC curve of an evaluation: its enrolled trials' ranks (:func:`cmc_curve`).

    Parameters
    ----------
    result : Result
        What :func:`lidframe.evaluate` returned (closed or open set: the outsider trials,
        which have no true enrolled speaker to rank, are left out, as from ``rank1_rate``).
    ks, bootstrap
        As for :func:`cmc_curve`; the bootstrap resamples the trials' speakers (or trials).

    Returns
    -------
    CMCCurve
        Its rank-1 point's ``top_k_rate`` is ``result.summary.rank1_rate``.

    Examples
    --------
    >>> from lidframe import evaluate
    >>> from lidframe.data.simulate import simulate_system
    >>> result = evaluate(*simulate_system(leakage=0.5, seed=0))
    >>> result_cmc(result).rank1.top_k_rate == result.summary.rank1_rate
    True
    """
    enrolled = ~np.asarray(result.is_outsider, dtype=bool)
    return cmc_curve(
        np.asarray(result.true_rank)[enrolled],
        int(np.asarray(result.enrolled).size),
        speakers=np.asarray(result.trial_speakers)[enrolled],
        ks=ks,
        bootstrap=bootstrap,
    )
