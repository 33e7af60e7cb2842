"""Intervals of each group's mean and maximum, the groups' trials resampled within them and the dev set shared: :func:`group_intervals`.

A per-speaker table (:mod:`lidframe.analyses.per_speaker`) gives each speaker the
interval of its own trials' ALID and LIDmax: resample b of group j draws the group's
n_j trials with replacement (the only unit inside one speaker), from the group's own
seed, exactly as :func:`~lidframe.stats.bootstrap.bootstrap_ci` with ``unit="trial"``
would::

    ALID_jb   = sum_t w_jbt LID_bt / n_j          (sum_t w_jbt = n_j)
    LIDmax_jb = max {LID_bt : w_jbt > 0}

With a :class:`~lidframe.stats.bootstrap.DevResampling` (the dev side of the bootstrap of
``evaluate``, :mod:`lidframe.core.refit`), ``LID_bt`` is trial t's LID under the calibrator
refitted on dev resample b, and the dev resamples are those of the headline's bootstrap:
drawn from the second stream of ``bootstrap.seed`` over the dev units of
``bootstrap.unit``, one per resample b and **shared by every group**, so that the refits
and the passes over the eval scores are made once for the whole table, not once per
group.  Without it, ``LID_bt`` is the trial's LID under the calibrator held fixed.

BCa intervals take their acceleration from a jackknife of each sample, as
:func:`~lidframe.stats.bootstrap.bootstrap_ci` does: the group's trials deleted a group
at a time (the LIDs under the dev fit) and, with a dev resampling, the dev units
deleted a group at a time (the group's trials all weighted 1), their empirical
influences pooled.  LIDmax gets a percentile interval (biased low, as any bootstrap of a
maximum).

The same pass counts, for every dev resample b, each group's trials with LID > 0 (all
trials weighted 1): ``positives[j, b]``, from which
:func:`~lidframe.stats.proportion.clopper_pearson_mixture` gives the group's PDR an
interval that includes the calibrator's uncertainty.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import numpy as np

from lidframe.errors import InputError
from lidframe.stats.bootstrap import (
    Bootstrap,
    intervals_from_values,
    jackknife_weights,
    resampling_units,
    trial_weight_blocks,
)
from lidframe.stats.interval import Interval
from lidframe.stats.weighted import DevResampling

__all__ = ["GROUP_METRICS", "GroupIntervals", "group_intervals"]

#: The metrics of each group that get an interval: its mean and its maximum.
GROUP_METRICS = ("alid", "lid_max")


@attrs.frozen(eq=False)
class GroupIntervals:
    """What :func:`group_intervals` returns.

    Attributes
    ----------
    intervals : list of (dict of str to Interval) or None
        Per group, :data:`GROUP_METRICS` -> its :class:`~lidframe.stats.interval.Interval`;
        None for a group of fewer than two trials.
    positives : ndarray of int64, shape (n_groups, n_boot), or None
        With a dev resampling: each group's trials with LID > 0 under the calibrator of
        each dev resample (every trial weighted 1); None without.
    """

    intervals: list[dict[str, Interval] | None]
    positives: np.ndarray | None


def group_intervals(
    lid: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    bootstrap: Bootstrap,
    *,
    seeds: list[int],
    dev: DevResampling | None = None,
    dev_rows: np.ndarray | None = None,
) -> GroupIntervals:
    """Each group's ALID and LIDmax intervals, its trials resampled within it (module docstring).

    Parameters
    ----------
    lid : ndarray, shape (T,)
        Per-trial LID (bits) under the fitted calibrator: the point estimates.
    group : ndarray of int, shape (T,)
        Each trial's group, in [0, n_groups).
    n_groups : int
    bootstrap : Bootstrap
        Resamples, level, method; its seed seeds the dev resamples and its ``unit`` is the
        dev set's resampling unit (inside a group the unit is the trial).
    seeds : list of int, length n_groups
        The seed of each group's trial draws.
    dev : DevResampling, optional
        The calibrator refitted on each dev resample; None: held fixed.
    dev_rows : ndarray of int, shape (T,), optional
        With *dev*: the index of each trial in the LIDs that ``dev.evaluate`` gives (default
        the identity).

    Returns
    -------
    GroupIntervals
    """
    if len(seeds) != n_groups:
        raise InputError(f"group_intervals needs one seed per group, got {len(seeds)} for {n_groups}")
    members = _members(group, n_groups)
    rngs = [np.random.default_rng(seed) for seed in seeds]
    boot = [{m: np.empty(bootstrap.n_boot) for m in GROUP_METRICS} for _ in members]
    positives, dev_jack = None, None
    if dev is None:
        for j, idx in enumerate(members):
            for start, w in _blocks(rngs[j], idx.size, bootstrap.n_boot):
                _put(boot[j], _values(np.broadcast_to(lid[idx], w.shape), w), start)
    else:
        rows = np.arange(lid.size) if dev_rows is None else np.asarray(dev_rows)
        positives, dev_jack = _refit_resamples(members, rngs, boot, bootstrap, dev, rows)
    intervals: list[dict[str, Interval] | None] = []
    for j, idx in enumerate(members):
        if idx.size < 2:
            intervals.append(None)
            continue
        jack_w = jackknife_weights(rngs[j], idx.size)  # drawn after every resample, as bootstrap_ci draws it
        eval_jack = _values(np.broadcast_to(lid[idx], jack_w.shape), jack_w)
        jacks = {m: [eval_jack[m]] + ([] if dev_jack is None else [dev_jack[j][m]]) for m in GROUP_METRICS}
        estimate = _values(lid[idx][None, :], np.ones((1, idx.size)))
        intervals.append(
            intervals_from_values(estimate, boot[j], jacks, method=bootstrap.method, level=bootstrap.level)
        )
    return GroupIntervals(intervals, positives)


def _refit_resamples(
    members: list[np.ndarray],
    rngs: list[np.random.Generator],
    boot: list[dict[str, np.ndarray]],
    bootstrap: Bootstrap,
    dev: DevResampling,
    rows: np.ndarray,
) -> tuple[np.ndarray, list[dict[str, np.ndarray]] | None]:
    """Fill *boot* under the refitted calibrators; (positives (n_groups, n_boot), each group's dev jackknife values or None).

    Every dev resample's LIDs are computed once and read by every group; the dev jackknife
    (its refits) only for BCa intervals.
    """
    positives = np.zeros((len(members), bootstrap.n_boot), dtype=np.int64)
    dev_units, n_dev_units = resampling_units(len(dev.speakers), dev.speakers, bootstrap.unit)
    if n_dev_units < 2:
        raise InputError(f"bootstrap over dev {bootstrap.unit}s needs at least two of them, got {n_dev_units}")
    dev_rng = np.random.default_rng([bootstrap.seed, 1])  # the headline's dev resamples
    eval_blocks = [_blocks(rngs[j], idx.size, bootstrap.n_boot) for j, idx in enumerate(members)]
    for start, dev_w in trial_weight_blocks(dev_rng, dev_units, n_dev_units, bootstrap.n_boot):
        refitted = _refitted_lids(dev, dev_w, rows)
        for j, idx in enumerate(members):
            in_group = refitted[:, idx]
            positives[j, start : start + in_group.shape[0]] = np.count_nonzero(in_group > 0, axis=1)
            if idx.size >= 2:
                _put(boot[j], _values(in_group, next(eval_blocks[j])[1]), start)
    if bootstrap.method != "bca":  # no acceleration to estimate: no jackknife refits
        return positives, None
    jack_w = jackknife_weights(dev_rng, n_dev_units)[:, dev_units]
    jack_lids = _refitted_lids(dev, jack_w, rows)
    # a group of fewer than two trials has no interval (group_intervals): no jackknife values either
    return positives, [
        _values(jack_lids[:, idx], np.ones((jack_lids.shape[0], idx.size))) if idx.size >= 2 else {} for idx in members
    ]


def _members(group: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """The trial indices of each group, in trial order."""
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group, minlength=n_groups)
    return np.split(order, np.cumsum(counts)[:-1])


def _blocks(rng: np.random.Generator, n_trials: int, n_boot: int) -> Iterator[tuple[int, np.ndarray]]:
    """A group's trial weights (start, (b, n_trials)) a block at a time, from its own *rng*; none for fewer than two trials."""
    if n_trials < 2:
        return iter(())
    return trial_weight_blocks(rng, np.arange(n_trials), n_trials, n_boot)


def _refitted_lids(dev: DevResampling, dev_weights: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(b, T) LIDs of the trials (*rows* of the evaluated ones) under the calibrator refitted on each row of *dev_weights*."""
    return np.stack([np.asarray(sample.lid)[rows] for sample in dev.evaluate(dev_weights)])


def _values(lids: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """ALID and LIDmax of each row: the weighted mean and the largest LID of weight > 0, shape (b,)."""
    alid = np.einsum("bt,bt->b", weights, lids) / weights.sum(axis=1)
    lid_max = np.where(weights > 0, lids, -np.inf).max(axis=1)
    return {"alid": alid, "lid_max": lid_max}


def _put(boot: dict[str, np.ndarray], values: dict[str, np.ndarray], start: int) -> None:
    """Write a block's *values* into *boot* from resample *start* on."""
    for metric, block in values.items():
        boot[metric][start : start + block.size] = block
