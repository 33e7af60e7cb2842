"""Bootstrap confidence intervals of LID summaries and of binary-view metrics.

:class:`Bootstrap` is the one record of the bootstrap settings (resamples, level, unit,
method, seed) that :func:`bootstrap_ci`, ``evaluate`` and the analyses take;
:class:`~lidframe.stats.interval.Interval` (lidframe's one interval record) is one estimate with its interval.  Every metric is evaluated for a
block of resamples at once, each given as trial weights (:mod:`lidframe.stats.weighted`;
:mod:`lidframe.analyses.compare` reuses them).

Resampling unit
---------------
Trials of one speaker are not independent (one voice, one enrolment profile), so the
default unit is the **speaker**: a cluster bootstrap draws speakers with replacement
and takes all their trials.  ``unit="trial"`` resamples trials independently, which
is right only when every trial has its own speaker and understates the uncertainty
otherwise.

Intervals
---------
``method="bca"`` (default) gives bias-corrected and accelerated intervals (Efron 1987);
the acceleration comes from a delete-a-group jackknife over at most 100 groups of
units.  ``method="percentile"`` gives plain percentile intervals.  The maximum
(``lid_max``) always gets a percentile interval, and even that is unreliable: a
resample can never exceed the observed maximum, so the bootstrap distribution of a
maximum piles up at the observed value and its interval is biased low.  Report the
99th percentile ``lid_q99`` with its interval for the tail instead.

Everything is vectorised: a resample is a row of unit weights, and every metric is
computed for a block of resamples at once (``bench/bootstrap_cpu.py`` measures it).
Paired comparisons of systems are in :mod:`lidframe.analyses.compare`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

import attrs
import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import norm

from lidframe.errors import InputError
from lidframe.stats.interval import Interval
from lidframe.stats.weighted import (
    BINARY_METRICS,
    LID_METRICS,
    RESAMPLE_BLOCK,
    PairLLRs,
    binary_metrics_weighted,
    group_means_weighted,
    lid_metrics_weighted,
)

__all__ = [
    "Bootstrap",
    "LID_METRICS",
    "BINARY_METRICS",
    "Interval",
    "PairLLRs",
    "bootstrap_ci",
    "resample_weight_blocks",
    "lid_metrics_weighted",
    "binary_metrics_weighted",
    "group_means_weighted",
    "ratio_ci",
    "ratio_units",
]


# -------------------------------------------------------------------- options
UNITS = ("speaker", "trial")
METHODS = ("bca", "percentile")


def check_level(level: float) -> float:
    """*level* as float if it is in (0, 1), else :class:`InputError`."""
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise InputError(f"confidence level must be in (0, 1), got {level}")
    return float(level)


#: Fewest and most bootstrap resamples a :class:`Bootstrap` takes.  Past a million the
#: Monte-Carlo error of a 95 % interval's ends is far below the sampling error they state,
#: while the time (and the resampled values that the intervals are read from, 8 bytes per
#: metric and resample, several metrics, per speaker with per-speaker intervals) keeps growing.
N_BOOT_MIN, N_BOOT_MAX = 100, 1_000_000


def _check_n_boot(_record, _attribute, n_boot) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < N_BOOT_MIN:
        raise InputError(f"n_boot (--n-boot) must be an integer >= {N_BOOT_MIN}, got {n_boot!r}")
    if n_boot > N_BOOT_MAX:
        n_metrics = len(LID_METRICS) + len(BINARY_METRICS)
        raise InputError(
            f"n_boot (--n-boot) must be at most {N_BOOT_MAX} bootstrap resamples, got {n_boot}: their values "
            f"alone would take {_gib(n_boot * 8 * n_metrics)} ({n_metrics} metrics x 8 bytes each), and intervals "
            "from more resamples are no more precise"
        )


def _gib(n_bytes: float) -> str:
    """*n_bytes* as ``'4.8 GiB'`` (or MiB)."""
    return f"{n_bytes / 2**30:.1f} GiB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:.1f} MiB"


def _check_unit(_record, _attribute, unit) -> None:
    if unit not in UNITS:
        raise InputError(f"resampling unit must be 'speaker' or 'trial', got {unit!r}")


def _check_method(_record, _attribute, method) -> None:
    if method not in METHODS:
        raise InputError(f"interval method must be 'bca' or 'percentile', got {method!r}")


def _check_seed(_record, _attribute, seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"bootstrap seed must be a non-negative integer, got {seed!r}")


@attrs.frozen(kw_only=True)
class Bootstrap:
    """How bootstrap confidence intervals are drawn: the one record of the bootstrap settings.

    :func:`bootstrap_ci`, :func:`lidframe.evaluate` (``bootstrap=``), the analyses, the
    grid's ``[grid.bootstrap]`` table and the commands' ``--bootstrap`` flags all take (or
    build) this record, so its defaults are the library's.

    Attributes
    ----------
    n_boot : int, default 1000
        Bootstrap resamples (at least 100).
    level : float, default 0.95
        Confidence level of the intervals, in (0, 1).
    unit : {"speaker", "trial"}, default "speaker"
        Resampling unit (module docstring): whole speakers (cluster bootstrap) or trials.
    method : {"bca", "percentile"}, default "bca"
        Interval type; ``lid_max`` always gets a percentile interval.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``: the same seed gives the same intervals.

    Raises
    ------
    InputError
        On construction, for a value outside the above.

    Examples
    --------
    >>> Bootstrap(n_boot=500, unit="trial").to_dict()
    {'n_boot': 500, 'level': 0.95, 'unit': 'trial', 'method': 'bca', 'seed': 0}
    """

    n_boot: int = attrs.field(default=1000, validator=_check_n_boot)
    level: float = attrs.field(default=0.95, converter=check_level)
    unit: str = attrs.field(default="speaker", validator=_check_unit)
    method: str = attrs.field(default="bca", validator=_check_method)
    seed: int = attrs.field(default=0, validator=_check_seed)

    def to_dict(self) -> dict:
        """The settings as a JSON-able dict (how ``Summary.bootstrap`` shows as ``summary["bootstrap"]``)."""
        return attrs.asdict(self)


# ------------------------------------------------------------- units, weights
def resampling_units(n_trials: int, speakers, unit: str):
    """(unit index of each trial (T,), number of units) for ``unit`` "trial" or "speaker"."""
    if unit == "trial":
        return np.arange(n_trials), n_trials
    if unit == "speaker":
        if speakers is None:
            raise InputError("unit='speaker' needs the trial speakers")
        speakers = np.asarray(speakers)
        if speakers.shape != (n_trials,):
            raise InputError(f"speakers must have shape ({n_trials},), got {speakers.shape}")
        codes, uniques = _factorize(speakers)
        return codes, uniques
    raise InputError(f"resampling unit must be 'speaker' or 'trial', got {unit!r}")


def _factorize(values):
    uniques, codes = np.unique(values, return_inverse=True)
    return codes.ravel(), uniques.size


def resample_weight_blocks(
    rng: np.random.Generator, n_units: int, n_boot: int, *, block: int = RESAMPLE_BLOCK
) -> Iterator[tuple[int, np.ndarray]]:
    """The unit weights of *n_boot* bootstrap resamples, drawn *block* resamples at a time.

    Yields ``(start, weights)``: *weights* (at most *block*, n_units) float64 are the
    resample counts of resamples ``start, start + 1, ...``.  The draws are those of one
    ``rng.multinomial(n_units, [1 / n_units] * n_units, size=n_boot)`` call, in order, and
    leave *rng* in the same state, but no more than one block is held at a time.
    """
    probabilities = np.full(n_units, 1.0 / n_units)
    for start in range(0, n_boot, block):
        yield start, rng.multinomial(n_units, probabilities, size=min(block, n_boot - start)).astype(np.float64)


def trial_weight_blocks(
    rng: np.random.Generator, unit_of_trial: np.ndarray, n_units: int, n_boot: int
) -> Iterator[tuple[int, np.ndarray]]:
    """The trial weights of *n_boot* bootstrap resamples, :data:`RESAMPLE_BLOCK` resamples at a time.

    The one way the bootstrap of :func:`bootstrap_ci` and the paired bootstrap of
    :func:`lidframe.analyses.compare.paired_comparison` draw their resamples: the unit
    weights of :func:`resample_weight_blocks` (the draws of one multinomial call of
    *n_boot* rows), each spread to its units' trials.

    Parameters
    ----------
    rng : numpy.random.Generator
        Left where one multinomial call of *n_boot* rows leaves it.
    unit_of_trial : ndarray of int, shape (T,)
        The resampling unit of each trial (:func:`resampling_units`).
    n_units : int
        Number of units.
    n_boot : int
        Number of resamples.

    Yields
    ------
    start : int
        Index of the block's first resample.
    weights : ndarray, shape (at most RESAMPLE_BLOCK, T)
        Trial weights (resample counts) of resamples ``start, start + 1, ...``: a view of
        one column-major (RESAMPLE_BLOCK, T) buffer that the next block overwrites (use
        it, or copy it, before asking for the next).

    Notes
    -----
    The layout is that of the rows of the (n_boot, T) matrix ``unit_weights[:, unit_of_trial]``
    that numpy makes when every resample is held at once (column-major: a trial's weights
    are adjacent, trials further apart than the block's rows).  The BLAS products of
    :func:`lid_metrics_weighted` choose their kernels (and so their rounding) by layout,
    so a block laid out otherwise -- a last block of one row copied C-ordered, say --
    could change the last bits of an interval.  In this layout the intervals are, bit
    for bit, those of one draw of every resample (``tests/stats/test_bootstrap_streaming.py``).
    """
    buffer = np.empty((RESAMPLE_BLOCK, unit_of_trial.size), order="F")
    for start, unit_weights in resample_weight_blocks(rng, n_units, n_boot):
        weights = buffer[: unit_weights.shape[0]]
        weights[...] = unit_weights[:, unit_of_trial]
        yield start, weights


def _jackknife_weights(rng, n_units: int, max_groups: int = 100) -> np.ndarray:
    """(G, U) weights of a delete-a-group jackknife (each unit in exactly one group)."""
    groups = min(n_units, max_groups)
    assignment = np.empty(n_units, dtype=np.intp)
    assignment[rng.permutation(n_units)] = np.arange(n_units) % groups
    weights = np.ones((groups, n_units))
    weights[assignment, np.arange(n_units)] = 0.0
    return weights


# ------------------------------------------------------------------ intervals
def percentile_interval(boot: np.ndarray, level: float):
    """(low, high) percentile interval of the non-NaN bootstrap values at *level*."""
    boot = boot[~np.isnan(boot)]
    if boot.size == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(boot, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(low), float(high)


def _bca(estimate: float, boot: np.ndarray, jack: np.ndarray, level: float):
    boot = boot[~np.isnan(boot)]
    jack = jack[~np.isnan(jack)]
    if boot.size == 0 or math.isnan(estimate):
        return float("nan"), float("nan")
    share = (np.sum(boot < estimate) + 0.5 * np.sum(boot == estimate)) / boot.size
    if not 0 < share < 1 or jack.size < 2:
        return percentile_interval(boot, level)
    z0 = norm.ppf(share)
    d = jack.mean() - jack
    denom = 6.0 * np.sum(d**2) ** 1.5
    accel = float(np.sum(d**3) / denom) if denom > 0 else 0.0
    z = norm.ppf([(1 - level) / 2, 1 - (1 - level) / 2])
    adjusted = norm.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))
    low, high = np.quantile(boot, adjusted)
    return float(low), float(high)


def bootstrap_ci(
    lid: ArrayLike,
    bootstrap: Bootstrap | None = None,
    *,
    speakers: ArrayLike | None = None,
    pairs: PairLLRs | None = None,
    pair_rows: np.ndarray | None = None,
    group_means: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> dict[str, Interval]:
    """Bootstrap confidence intervals of the LID summary (and EER, Cllr with *pairs*).

    Parameters
    ----------
    lid : array_like, shape (T,)
        Per-trial LID of the closed-set trials (bits).
    bootstrap : Bootstrap, optional
        Resamples, level, unit, interval method and seed (default ``Bootstrap()``).
    speakers : array_like of str, shape (T,), optional
        Trial speakers; needed for ``unit="speaker"``.
    pairs : PairLLRs, optional
        Pair LLRs of the same trials (or of the trials *pair_rows*), to add ``eer``
        (ROCCH) and ``cllr``.
    pair_rows : ndarray of int, optional
        The rows of *lid* that *pairs* belong to (the enrolled trials of an open-set
        evaluation); default every row.
    group_means : mapping of str to (values, member), optional
        More metrics, each the mean of per-trial values over a group of trials
        (:func:`group_means_weighted`; the open set's enrolled and outsider ALID, say).

    Returns
    -------
    dict
        metric -> :class:`Interval`.
    """
    options = Bootstrap() if bootstrap is None else bootstrap
    if not isinstance(options, Bootstrap):
        raise InputError(f"bootstrap must be a Bootstrap record, got {type(options).__name__}")
    n_boot, level, unit, method, seed = options.n_boot, options.level, options.unit, options.method, options.seed
    lid = np.asarray(lid, dtype=np.float64)
    if lid.ndim != 1 or lid.size < 2 or np.isnan(lid).any():
        raise InputError("bootstrap needs at least two LID values and no NaN")
    unit_of_trial, n_units = resampling_units(lid.size, speakers, unit)
    if n_units < 2:
        raise InputError(f"bootstrap over {unit}s needs at least two of them, got {n_units}")
    rng = np.random.default_rng(seed)

    def compute(weights):
        values = lid_metrics_weighted(lid, weights)
        if pairs is not None:
            values.update(binary_metrics_weighted(pairs, weights if pair_rows is None else weights[:, pair_rows]))
        if group_means:
            values.update(group_means_weighted(group_means, weights))
        return values

    # Resamples are drawn and evaluated a block at a time (the same draws, and the same
    # bits, as one call of n_boot rows): what is held grows with n_boot by the metric values only.
    boot: dict[str, np.ndarray] = {}
    for start, weights in trial_weight_blocks(rng, unit_of_trial, n_units, n_boot):
        for metric, values in compute(weights).items():
            boot.setdefault(metric, np.empty(n_boot))[start : start + values.size] = values
    jack_w = _jackknife_weights(rng, n_units)[:, unit_of_trial]  # drawn after every resample, as before
    estimate, jack = compute(np.ones((1, lid.size))), compute(jack_w)
    return _intervals(estimate, boot, jack, method=method, level=level)


def _intervals(
    estimate: Mapping[str, np.ndarray],
    boot: Mapping[str, np.ndarray],
    jack: Mapping[str, np.ndarray],
    *,
    method: str,
    level: float,
) -> dict[str, Interval]:
    """Each metric's :class:`Interval` from its estimate (1,), resampled (B,) and jackknife (G,) values."""
    out = {}
    for metric in estimate:
        est = float(estimate[metric][0])
        if method == "bca" and metric != "lid_max":
            low, high = _bca(est, boot[metric], jack[metric], level)
            used = "bca"
        else:
            low, high = percentile_interval(boot[metric], level)
            used = "percentile"
        out[metric] = Interval(est, low, high, level, used)
    return out


def ratio_units(bootstrap: object, n_items: int, speakers: ArrayLike | None = None) -> tuple[np.ndarray, int]:
    """The resampling units of :func:`ratio_ci` (unit index of each item, number of units), checked.

    A caller with costly items to measure (a recogniser's utterances) calls it first, so
    that a bootstrap :func:`ratio_ci` would refuse is refused before the work.

    Raises
    ------
    InputError
        A bootstrap that is no :class:`Bootstrap`, or fewer than two units.
    """
    if not isinstance(bootstrap, Bootstrap):
        raise InputError(f"bootstrap must be a Bootstrap record, got {type(bootstrap).__name__}")
    unit_of_item, n_units = resampling_units(n_items, speakers, bootstrap.unit)
    if n_units < 2:
        raise InputError(f"bootstrap over {bootstrap.unit}s needs at least two of them, got {n_units}")
    return unit_of_item, n_units


def ratio_ci(
    parts: Mapping[str, tuple[ArrayLike, ArrayLike]],
    bootstrap: Bootstrap | None = None,
    *,
    speakers: ArrayLike | None = None,
) -> dict[str, Interval]:
    """Bootstrap confidence intervals of ratios of sums over units (a word error rate, a mean over some units).

    Each metric is ``sum(numerator) / sum(denominator)`` over the items (utterances, say),
    and a resample weights each item by its unit's resample count, exactly as
    :func:`bootstrap_ci` resamples trials (the same draws for the same seed and units).

    Parameters
    ----------
    parts : mapping of str to (numerator (T,), denominator (T,))
        Per metric, each item's numerator and denominator (float; a mean over a subset of
        items is numerator = value inside the subset and 0 outside, denominator = 1 inside
        and 0 outside).
    bootstrap : Bootstrap, optional
        Resamples, level, unit, interval method and seed (default ``Bootstrap()``).
    speakers : array_like of str, shape (T,), optional
        Each item's speaker; needed for ``unit="speaker"``.

    Returns
    -------
    dict
        metric -> :class:`Interval`; a resample whose denominator sums to 0 is left out
        of the interval (NaN), and the interval is NaN where every one is.

    Raises
    ------
    InputError
        Parts of different lengths, fewer than two units, or a bootstrap that is no :class:`Bootstrap`.
    """
    options = Bootstrap() if bootstrap is None else bootstrap
    if not isinstance(options, Bootstrap):
        raise InputError(f"bootstrap must be a Bootstrap record, got {type(options).__name__}")
    arrays = {
        metric: (np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64))
        for metric, (num, den) in parts.items()
    }
    sizes = {array.shape for pair in arrays.values() for array in pair}
    if len(sizes) != 1 or len(next(iter(sizes))) != 1:
        raise InputError(f"ratio_ci needs 1-d numerators and denominators of one length, got shapes {sorted(sizes)}")
    (n_items,) = next(iter(sizes))
    unit_of_item, n_units = ratio_units(options, n_items, speakers)
    rng = np.random.default_rng(options.seed)

    def compute(weights: np.ndarray) -> dict[str, np.ndarray]:
        with np.errstate(invalid="ignore", divide="ignore"):
            return {metric: (weights @ num) / (weights @ den) for metric, (num, den) in arrays.items()}

    boot: dict[str, np.ndarray] = {}
    for start, weights in trial_weight_blocks(rng, unit_of_item, n_units, options.n_boot):
        for metric, values in compute(weights).items():
            boot.setdefault(metric, np.empty(options.n_boot))[start : start + values.size] = values
    jack_w = _jackknife_weights(rng, n_units)[:, unit_of_item]
    estimate, jack = compute(np.ones((1, n_items))), compute(jack_w)
    return _intervals(estimate, boot, jack, method=options.method, level=options.level)
