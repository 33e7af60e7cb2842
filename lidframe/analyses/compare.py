"""Paired comparison of systems evaluated on the same trials.

For two systems A and B with per-trial LIDs on the same trials (the enrolled trials of a
closed-set evaluation; every trial of an open-set one, an outsider trial's LID being its
membership disclosure),
:func:`paired_comparison` gives, for each LID metric, metric(A) - metric(B) with a
paired percentile bootstrap interval (the same resampled units for both systems) and a
two-sided paired permutation p-value (A and B swapped within each unit at random; for
ALID this is the sign-flip test of the mean difference).  The unit is the speaker by
default, as for :func:`lidframe.stats.bootstrap.bootstrap_ci`.  :func:`compare_systems` runs all
pairs of several systems and adjusts the p-values of each metric with Holm's method
(statsmodels ``multipletests``).  They return the frozen records
:class:`PairedComparisonResult` and :class:`ComparisonResult` (one row per metric, or per
pair and metric; ``to_dict()`` / ``to_frame()``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.records import RowRecord, TableRecord, as_rows
from lidframe.errors import InputError, mismatch
from lidframe.metrics import catalogue
from lidframe.stats.bootstrap import Bootstrap, percentile_interval, resampling_units, trial_weight_blocks
from lidframe.stats.weighted import RESAMPLE_BLOCK, lid_metrics_weighted

__all__ = [
    "COMPARED_METRICS",
    "PAIRED_BOOTSTRAP",
    "PairedComparisonRow",
    "PairedComparisonResult",
    "ComparisonRow",
    "ComparisonResult",
    "paired_comparison",
    "compare_systems",
]

#: Bootstrap settings of a paired comparison unless told otherwise: percentile intervals
#: (the only kind the paired bootstrap gives) from 2000 resamples of speakers.
PAIRED_BOOTSTRAP = Bootstrap(n_boot=2000, method="percentile")


@attrs.frozen(eq=False, kw_only=True)
class PairedComparisonRow(RowRecord):
    """One metric of a paired comparison of systems A and B (a row of :class:`PairedComparisonResult`).

    Also a read-only mapping of its fields (``row["diff"]``,
    :class:`~lidframe.data.records.RowRecord`).  Values are in the metric's unit: bits for
    the LID metrics, a share of trials for PDR; NaN where the metric is undefined (LID+
    without a positive LID).

    Attributes
    ----------
    metric : str
        ``alid``, ``pdr``, ``lid_pos``, ``lid_neg``, ``lid_q99`` or ``lid_max``.
    a, b : float
        The metric of system A and of system B.
    diff : float
        ``a - b``.
    low, high : float
        Paired percentile bootstrap interval of ``diff``.
    p_value : float
        Two-sided paired permutation p-value of ``diff``, in [1 / (1 + n_perm), 1]; NaN
        when ``diff`` is.
    """

    metric: str
    a: float
    b: float
    diff: float
    low: float
    high: float
    p_value: float


@attrs.frozen(eq=False, kw_only=True)
class ComparisonRow(RowRecord):
    """One (pair of systems, metric) of :func:`compare_systems` (a row of :class:`ComparisonResult`).

    Also a read-only mapping of its fields (:class:`~lidframe.data.records.RowRecord`);
    values in the metric's unit (bits, or a share of trials for PDR).

    Attributes
    ----------
    a, b : str
        The names of the two systems (A is the earlier one in the input).
    metric : str
        The LID metric compared.
    value_a, value_b : float
        The metric of system A and of system B.
    diff : float
        ``value_a - value_b``.
    low, high : float
        Paired percentile bootstrap interval of ``diff``.
    p_value : float
        Two-sided paired permutation p-value.
    p_holm : float
        ``p_value`` adjusted by Holm's method within the metric (over all pairs).
    """

    a: str
    b: str
    metric: str
    value_a: float
    value_b: float
    diff: float
    low: float
    high: float
    p_value: float
    p_holm: float


@attrs.frozen(eq=False)
class PairedComparisonResult(TableRecord):
    """Outcome of :func:`paired_comparison`: one row per LID metric.

    ``result["alid"]`` is the row of one metric; ``to_dict()`` (JSON-able: ``rows``; NaN
    as None) and ``to_frame()`` come from :class:`~lidframe.data.records.TableRecord`.

    Attributes
    ----------
    rows : tuple of PairedComparisonRow
        One per metric, in the order ``alid``, ``pdr``, ``lid_pos``, ``lid_neg``,
        ``lid_q99``, ``lid_max``.
    """

    rows: tuple[PairedComparisonRow, ...] = attrs.field(converter=as_rows)

    def __getitem__(self, metric: str) -> PairedComparisonRow:
        """The row of *metric*."""
        for row in self.rows:
            if row.metric == metric:
                return row
        raise KeyError(f"no metric {metric!r}; have {[r.metric for r in self.rows]}")


@attrs.frozen(eq=False)
class ComparisonResult(TableRecord):
    """Outcome of :func:`compare_systems`: one row per (pair of systems, metric).

    ``to_dict()`` (JSON-able: ``rows``; NaN as None) and ``to_frame()`` come from
    :class:`~lidframe.data.records.TableRecord`.

    Attributes
    ----------
    rows : tuple of ComparisonRow
        Pairs in input order, the metrics of each pair in the order asked for.
    """

    rows: tuple[ComparisonRow, ...] = attrs.field(converter=as_rows)


#: The metrics a paired comparison measures (the metric catalogue's ``compare`` table).
COMPARED_METRICS: tuple[str, ...] = catalogue.TABLES["compare"]


def _metrics_of_values(values: np.ndarray) -> dict:
    """LID metrics of each row of a (R, T) value matrix (equal trial weights)."""
    positive = values > 0
    n_pos = positive.sum(axis=1)
    n = values.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "alid": values.mean(axis=1),
            "pdr": n_pos / n,
            "lid_pos": np.where(n_pos > 0, np.where(positive, values, 0).sum(axis=1) / n_pos, np.nan),
            "lid_neg": np.where(n_pos < n, np.where(positive, 0, values).sum(axis=1) / (n - n_pos), np.nan),
            "lid_q99": np.quantile(values, 0.99, axis=1),
            "lid_max": values.max(axis=1),
        }


def _permutation_exceedances(
    a: np.ndarray,
    b: np.ndarray,
    observed: dict[str, float],
    unit_of_trial: np.ndarray,
    n_units: int,
    n_perm: int,
    rng: np.random.Generator,
) -> dict[str, int]:
    """metric -> how many of *n_perm* random swaps of A and B within units give |diff| >= the observed |diff|."""
    exceed = dict.fromkeys(observed, 0)
    done = 0
    while done < n_perm:
        count = min(RESAMPLE_BLOCK * 4, n_perm - done)
        swap = rng.random((count, n_units)) < 0.5
        swap_t = swap[:, unit_of_trial]
        perm_a = np.where(swap_t, b, a)
        perm_b = np.where(swap_t, a, b)
        ma, mb = _metrics_of_values(perm_a), _metrics_of_values(perm_b)
        for k in exceed:
            diff = ma[k] - mb[k]
            exceed[k] += int(np.sum(np.abs(diff) >= abs(observed[k]) - 1e-12))
        done += count
    return exceed


def paired_comparison(
    lid_a: ArrayLike,
    lid_b: ArrayLike,
    *,
    speakers: ArrayLike | None = None,
    bootstrap: Bootstrap = PAIRED_BOOTSTRAP,
    n_perm: int = 5000,
) -> PairedComparisonResult:
    """Compare two systems on the same trials: metric(A) - metric(B) with CI and p-value.

    The interval is a paired percentile bootstrap (the same resampled units for both
    systems); the p-value is a two-sided paired permutation test that swaps the two
    systems' LIDs within each unit (a sign flip of the difference for ALID).

    Parameters
    ----------
    lid_a, lid_b : array_like, shape (T,)
        Per-trial LID of the same trials (those with a LID: the enrolled trials in the
        closed set, every trial in the open set), in the same order.
    speakers : array_like, shape (T,), optional
        Needed for ``unit="speaker"`` (swaps and resamples whole speakers).
    bootstrap : Bootstrap, default :data:`PAIRED_BOOTSTRAP`
        Resamples, interval level, unit (of the resamples and of the swaps) and seed (of
        both); ``method`` must be ``"percentile"``.
    n_perm : int
        Random swaps of the permutation test.

    Returns
    -------
    PairedComparisonResult
        One row per metric: ``metric, a, b, diff, low, high, p_value``;
        ``result["alid"]`` is the row of ALID.
    """
    a = np.asarray(lid_a, dtype=np.float64)
    b = np.asarray(lid_b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise InputError(f"paired comparison needs two LID vectors of the same length >= 2, got {a.shape}, {b.shape}")
    if np.isnan(a).any() or np.isnan(b).any():
        raise InputError(
            "paired comparison: LID values contain NaN (drop the outsider trials of a closed-set evaluation, "
            "which have no LID)"
        )
    if not isinstance(bootstrap, Bootstrap):
        raise InputError(f"bootstrap must be a Bootstrap record, got {type(bootstrap).__name__}")
    if bootstrap.method != "percentile":
        raise InputError(
            f"a paired comparison gives percentile intervals; pass a Bootstrap with method='percentile', "
            f"not {bootstrap.method!r}"
        )
    n_boot, level = bootstrap.n_boot, bootstrap.level
    unit_of_trial, n_units = resampling_units(a.size, speakers, bootstrap.unit)
    rng = np.random.default_rng(bootstrap.seed)
    # the resamples of one multinomial draw, a block at a time (memory does not grow with
    # n_boot x T), in the layout that gives the bits of one draw of every resample
    boot_a: dict[str, np.ndarray] = {}
    boot_b: dict[str, np.ndarray] = {}
    for start, weights in trial_weight_blocks(rng, unit_of_trial, n_units, n_boot):
        for boot, lid in ((boot_a, a), (boot_b, b)):
            for metric, values in lid_metrics_weighted(lid, weights).items():
                boot.setdefault(metric, np.empty(n_boot))[start : start + values.size] = values
    est_a = {k: float(v[0]) for k, v in _metrics_of_values(a[None, :]).items()}
    est_b = {k: float(v[0]) for k, v in _metrics_of_values(b[None, :]).items()}
    observed = {k: est_a[k] - est_b[k] for k in est_a}
    exceed = _permutation_exceedances(a, b, observed, unit_of_trial, n_units, n_perm, rng)
    rows = []
    for k in est_a:
        low, high = percentile_interval(boot_a[k] - boot_b[k], level)
        p = (1 + exceed[k]) / (1 + n_perm) if not math.isnan(observed[k]) else float("nan")
        rows.append(
            PairedComparisonRow(metric=k, a=est_a[k], b=est_b[k], diff=observed[k], low=low, high=high, p_value=p)
        )
    return PairedComparisonResult(rows)


def compare_systems(
    systems: dict, *, metrics: Sequence[str] = ("alid", "pdr", "lid_q99"), **kwargs: Any
) -> ComparisonResult:
    """All pairwise paired comparisons of several systems, Holm-adjusted per metric.

    Parameters
    ----------
    systems : dict
        name -> ``(trial_ids (T,), speakers (T,), lid (T,))``; all systems must have the
        same set of trial ids (order may differ).
    metrics : sequence of str
        Metrics to test, among :data:`COMPARED_METRICS` (each a family for the Holm correction).
    **kwargs
        Passed to :func:`paired_comparison` (``bootstrap``, ``n_perm``).

    Returns
    -------
    ComparisonResult
        One row per (pair, metric): ``a, b, metric, value_a, value_b, diff, low, high,
        p_value, p_holm``.
    """
    from statsmodels.stats.multitest import multipletests

    unknown = [m for m in metrics if m not in COMPARED_METRICS]
    if unknown:
        raise InputError(f"cannot compare {unknown[0]!r}: the metrics compared are {', '.join(COMPARED_METRICS)}")
    names = list(systems)
    if len(names) < 2:
        raise InputError("compare needs at least two systems")
    ref_ids, ref_spk, _ = systems[names[0]]
    ref_ids = np.asarray(ref_ids, dtype=str)
    position = {t: i for i, t in enumerate(ref_ids)}
    aligned = {}
    for name in names:
        ids, spk, lid = (np.asarray(x) for x in systems[name])
        ids = ids.astype(str)
        missing = sorted(set(ref_ids.tolist()) - set(ids.tolist()))
        extra = sorted(set(ids.tolist()) - set(ref_ids.tolist()))
        if missing or extra:
            raise InputError(
                f"system {name!r} has other trials than {names[0]!r}: {mismatch('missing', missing, 'extra', extra)}"
            )
        order = np.array([position[t] for t in ids])
        lid_aligned = np.empty(ref_ids.size)
        lid_aligned[order] = lid.astype(np.float64)
        spk_aligned = np.empty(ref_ids.size, dtype=object)
        spk_aligned[order] = spk
        if not np.array_equal(spk_aligned.astype(str), np.asarray(ref_spk, dtype=str)):
            raise InputError(f"system {name!r} gives some trials another speaker than {names[0]!r}")
        aligned[name] = lid_aligned
    pairs: list[tuple[str, str, PairedComparisonRow]] = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            result = paired_comparison(
                aligned[names[i]], aligned[names[j]], speakers=np.asarray(ref_spk, dtype=str), **kwargs
            )
            pairs.extend((names[i], names[j], result[metric]) for metric in metrics)
    p_holm = np.empty(len(pairs))
    for metric in metrics:
        idx = [k for k, (_, _, r) in enumerate(pairs) if r.metric == metric]
        p = np.array([pairs[k][2].p_value for k in idx])
        p_holm[idx] = multipletests(p, method="holm")[1] if p.size else p
    return ComparisonResult(
        ComparisonRow(
            a=name_a,
            b=name_b,
            metric=r.metric,
            value_a=r.a,
            value_b=r.b,
            diff=r.diff,
            low=r.low,
            high=r.high,
            p_value=r.p_value,
            p_holm=float(q),
        )
        for (name_a, name_b, r), q in zip(pairs, p_holm)
    )
