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

What is resampled
-----------------
A calibrator fitted on a dev set is itself an estimate: a handful of dev speakers leaves
its slope uncertain, and every LID moves with it.  ``resample="dev+eval"`` (default)
draws the dev set's units too, independently of the eval set's, and evaluates each
resample under the calibrator refitted on its dev resample (the caller says how:
:class:`DevResampling`, built by :mod:`lidframe.core.refit` for ``evaluate``), so the
interval covers the calibrator's uncertainty as well as the eval sample's.
``resample="eval"`` holds the calibrator fixed (the interval of lidframe before 0.3.0):
it answers "how much would ALID move on other eval speakers, under *this* calibrator".
A call without a :class:`DevResampling` resamples the eval set only, whatever the
option says; the records that hold such intervals say ``"eval"``
(:meth:`Bootstrap.held_fixed`).

Intervals
---------
``method="bca"`` (default) gives bias-corrected and accelerated intervals (Efron 1987);
the acceleration comes from a delete-a-group jackknife over at most 100 groups of
units (in both sets with a dev resampling: their empirical influences pooled, as
for a two-sample statistic).  ``method="percentile"`` gives plain percentile intervals.  The maximum
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

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
    DevResampling,
    EvalSample,
    PairLLRs,
    binary_metrics_weighted,
    group_means_weighted,
    lid_metrics_weighted,
    metrics_of_sample,
    metrics_of_samples,
)

__all__ = [
    "Bootstrap",
    "DevResampling",
    "EvalSample",
    "RESAMPLES",
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
#: What a bootstrap resamples: the dev set too (its calibrator refitted per resample), or the eval set only.
RESAMPLES = ("dev+eval", "eval")


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


def _check_resample(_record, _attribute, resample) -> None:
    if resample not in RESAMPLES:
        raise InputError(
            f"bootstrap resample must be 'dev+eval' (refit the calibrator on resampled dev speakers) or 'eval' "
            f"(hold it fixed), got {resample!r}"
        )


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
    resample : {"dev+eval", "eval"}, default "dev+eval"
        What is resampled (module docstring): the dev set too, the calibrator refitted on
        each dev resample, so that the interval covers the calibrator's uncertainty; or
        the eval set only, the calibrator held fixed (the interval before 0.3.0).

    Raises
    ------
    InputError
        On construction, for a value outside the above.

    Examples
    --------
    >>> Bootstrap(n_boot=500, unit="trial").to_dict()
    {'n_boot': 500, 'level': 0.95, 'unit': 'trial', 'method': 'bca', 'seed': 0, 'resample': 'dev+eval'}
    """

    n_boot: int = attrs.field(default=1000, validator=_check_n_boot)
    level: float = attrs.field(default=0.95, converter=check_level)
    unit: str = attrs.field(default="speaker", validator=_check_unit)
    method: str = attrs.field(default="bca", validator=_check_method)
    seed: int = attrs.field(default=0, validator=_check_seed)
    resample: str = attrs.field(default="dev+eval", validator=_check_resample)

    def to_dict(self) -> dict:
        """The settings as a JSON-able dict (how ``Summary.bootstrap`` shows as ``summary["bootstrap"]``)."""
        return attrs.asdict(self)

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any]) -> Bootstrap:
        """The record of a stored :meth:`to_dict`; one written before 0.3.0 (no ``resample``) held the calibrator fixed."""
        return cls(**{"resample": "eval", **stored})

    def covers(self, *, brief: bool = False) -> str:
        """What intervals drawn with these settings cover, in words (the console and the page say it).

        *brief*: the few words a headline card gives it ("calibrator refitted on resampled dev speakers").
        """
        if brief:
            return (
                f"calibrator refitted on resampled dev {self.unit}s"
                if self.resample == "dev+eval"
                else ("calibrator held fixed")
            )
        if self.resample == "dev+eval":
            return (
                f"eval and dev {self.unit}s resampled, the calibrator refitted on each dev resample: "
                "they include the calibrator's uncertainty"
            )
        return f"eval {self.unit}s resampled, the calibrator held fixed: they leave out its uncertainty"

    def held_fixed(self) -> Bootstrap:
        """This record with ``resample="eval"``: what an interval computed without refitting the calibrator covers."""
        return attrs.evolve(self, resample="eval")


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


def jackknife_weights(rng, n_units: int, max_groups: int = 100) -> np.ndarray:
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


def _bca(estimate: float, boot: np.ndarray, jacks: Sequence[np.ndarray], level: float):
    """BCa interval; the acceleration from the jackknife values of each sample (eval, dev), their deviations pooled."""
    boot = boot[~np.isnan(boot)]
    jacks = [jack[~np.isnan(jack)] for jack in jacks]
    if boot.size == 0 or math.isnan(estimate):
        return float("nan"), float("nan")
    share = (np.sum(boot < estimate) + 0.5 * np.sum(boot == estimate)) / boot.size
    if not 0 < share < 1 or jacks[0].size < 2:
        return percentile_interval(boot, level)
    z0 = norm.ppf(share)
    d = np.concatenate([jack.mean() - jack for jack in jacks if jack.size >= 2])
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
    dev: DevResampling | None = None,
) -> dict[str, Interval]:
    """Bootstrap confidence intervals of the LID summary (and EER, Cllr with *pairs*).

    Parameters
    ----------
    lid : array_like, shape (T,)
        Per-trial LID of the closed-set trials (bits).
    bootstrap : Bootstrap, optional
        Resamples, level, unit, interval method, seed and what is resampled (default ``Bootstrap()``).
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
    dev : DevResampling, optional
        With ``bootstrap.resample == "dev+eval"``, each resample also draws the dev units
        (from a second stream of the seed, independent of the eval draws) and takes the
        eval values under the calibrator refitted on them (module docstring); the eval
        draws are those of ``resample="eval"``.  None, or ``resample="eval"``: the eval
        set only, *lid*, *pairs* and *group_means* as given.

    Returns
    -------
    dict
        metric -> :class:`Interval`.
    """
    options = Bootstrap() if bootstrap is None else bootstrap
    if not isinstance(options, Bootstrap):
        raise InputError(f"bootstrap must be a Bootstrap record, got {type(options).__name__}")
    lid = np.asarray(lid, dtype=np.float64)
    if lid.ndim != 1 or lid.size < 2 or np.isnan(lid).any():
        raise InputError("bootstrap needs at least two LID values and no NaN")
    unit_of_trial, n_units = _checked_units(lid.size, speakers, options.unit, "")
    rng = np.random.default_rng(options.seed)

    def compute(sample: EvalSample, weights: np.ndarray) -> dict[str, np.ndarray]:
        return metrics_of_sample(sample, weights, pair_rows)

    def compute_samples(samples: Sequence[EvalSample], weights: np.ndarray) -> dict[str, np.ndarray]:
        return metrics_of_samples(samples, weights, pair_rows)

    base = EvalSample(lid, pairs, group_means)
    if dev is not None and options.resample == "dev+eval":
        boot, dev_jack = _two_sample_resamples(compute_samples, lid.size, rng, unit_of_trial, n_units, dev, options)
    else:
        # Resamples are drawn and evaluated a block at a time (the same draws, and the same
        # bits, as one call of n_boot rows): what is held grows with n_boot by the metric values only.
        boot, dev_jack = {}, None
        for start, weights in trial_weight_blocks(rng, unit_of_trial, n_units, options.n_boot):
            _store(boot, compute(base, weights), start, options.n_boot)
    jack_w = jackknife_weights(rng, n_units)[:, unit_of_trial]  # drawn after every resample, as before
    estimate, jack = compute(base, np.ones((1, lid.size))), compute(base, jack_w)
    jacks = {metric: [values] if dev_jack is None else [values, dev_jack[metric]] for metric, values in jack.items()}
    return intervals_from_values(estimate, boot, jacks, method=options.method, level=options.level)


def _checked_units(n_trials: int, speakers: ArrayLike | None, unit: str, which: str) -> tuple[np.ndarray, int]:
    """:func:`resampling_units`, refused with fewer than two units (*which*: ``""`` or ``"dev "``)."""
    unit_of_trial, n_units = resampling_units(n_trials, speakers, unit)
    if n_units < 2:
        way_out = " (resample='eval' holds the calibrator fixed instead)" if which else ""
        raise InputError(f"bootstrap over {which}{unit}s needs at least two of them, got {n_units}{way_out}")
    return unit_of_trial, n_units


def _store(boot: dict[str, np.ndarray], values: Mapping[str, np.ndarray], start: int, n_boot: int) -> None:
    """Write a block's metric *values* into *boot* (metric -> (n_boot,)) from resample *start* on."""
    for metric, block in values.items():
        boot.setdefault(metric, np.empty(n_boot))[start : start + block.size] = block


def _two_sample_resamples(
    compute_samples: Callable[[Sequence[EvalSample], np.ndarray], dict[str, np.ndarray]],
    n_trials: int,
    rng: np.random.Generator,
    unit_of_trial: np.ndarray,
    n_units: int,
    dev: DevResampling,
    options: Bootstrap,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(resampled metric values (B,), dev jackknife values (G,)) of a bootstrap over the eval and the dev units.

    Resample b weights the eval trials by the eval draws of *rng* (those of the eval-only
    bootstrap) and takes the eval values under the calibrator refitted on dev draw b,
    drawn from a second stream of the seed; the dev jackknife deletes a group of dev units
    at a time, the eval trials all weighted 1 (none for percentile intervals).
    """
    dev_units, n_dev_units = _checked_units(len(dev.speakers), dev.speakers, options.unit, "dev ")
    dev_rng = np.random.default_rng([options.seed, 1])
    boot: dict[str, np.ndarray] = {}
    dev_blocks = trial_weight_blocks(dev_rng, dev_units, n_dev_units, options.n_boot)
    for (start, weights), (_, dev_weights) in zip(
        trial_weight_blocks(rng, unit_of_trial, n_units, options.n_boot), dev_blocks, strict=True
    ):
        _store(boot, compute_samples(dev.evaluate(dev_weights), weights), start, options.n_boot)
    if options.method == "percentile":  # no acceleration to estimate: no dev jackknife (its refits)
        return boot, {metric: np.empty(0) for metric in boot}
    dev_jack_w = jackknife_weights(dev_rng, n_dev_units)[:, dev_units]
    ones = np.ones((dev_jack_w.shape[0], n_trials))
    dev_jack: dict[str, np.ndarray] = {}
    _store(dev_jack, compute_samples(dev.evaluate(dev_jack_w), ones), 0, dev_jack_w.shape[0])
    return boot, dev_jack


def intervals_from_values(
    estimate: Mapping[str, np.ndarray],
    boot: Mapping[str, np.ndarray],
    jacks: Mapping[str, Sequence[np.ndarray]],
    *,
    method: str,
    level: float,
) -> dict[str, Interval]:
    """Each metric's :class:`Interval` from its estimate (1,), resampled (B,) and jackknife values (G,) per sample."""
    out = {}
    for metric in estimate:
        est = float(estimate[metric][0])
        if method == "bca" and metric != "lid_max":
            low, high = _bca(est, boot[metric], jacks[metric], level)
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
    return _checked_units(n_items, speakers, bootstrap.unit, "")


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
        _store(boot, compute(weights), start, options.n_boot)
    jack_w = jackknife_weights(rng, n_units)[:, unit_of_item]
    estimate, jack = compute(np.ones((1, n_items))), compute(jack_w)
    jacks = {metric: [values] for metric, values in jack.items()}
    return intervals_from_values(estimate, boot, jacks, method=options.method, level=options.level)
