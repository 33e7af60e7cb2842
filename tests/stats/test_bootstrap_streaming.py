"""The bootstrap draws its resamples a block at a time: memory does not grow with resamples x trials.

:func:`~lidframe.stats.bootstrap.resample_weight_blocks` must give exactly the draws of one
``rng.multinomial(..., size=n_boot)`` call and leave the generator where that call left it
(the jackknife draws after them); :func:`~lidframe.stats.bootstrap.trial_weight_blocks`
must lay each block's trial weights out as the rows of the one (n_boot, T) matrix were.
Then every interval stays, bit for bit, what it was when all resamples were held at once:
the tests below compare :func:`~lidframe.stats.bootstrap.bootstrap_ci` with that old
algorithm, written out here, on enough trials that the BLAS products take their blocked
paths (``tests/analyses/test_compare.py`` does the same for the paired comparison).
"""

from __future__ import annotations

import math
import time
import tracemalloc

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from lidframe.stats.bootstrap import Bootstrap, bootstrap_ci, resampling_units
from lidframe.stats.weighted import lid_metrics_weighted


@settings(max_examples=40, deadline=None)
@given(
    n_units=st.integers(2, 60),
    n_boot=st.integers(1, 700),
    block=st.integers(1, 300),
    seed=st.integers(0, 2**32 - 1),
)
def test_weight_blocks_are_the_draws_of_one_multinomial_call(n_units, n_boot, block, seed):
    from lidframe.stats.bootstrap import resample_weight_blocks

    whole = np.random.default_rng(seed)
    expected = whole.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_boot)
    blocks = np.random.default_rng(seed)
    starts, rows = [], []
    for start, weights in resample_weight_blocks(blocks, n_units, n_boot, block=block):
        assert weights.dtype == np.float64 and 1 <= weights.shape[0] <= block
        starts.append(start)
        rows.append(weights)
    assert starts == list(range(0, n_boot, block))
    assert np.array_equal(np.concatenate(rows), expected)
    assert blocks.bit_generator.state == whole.bit_generator.state  # the next draws (jackknife) are the same


@settings(max_examples=25, deadline=None)
@given(n_trials=st.integers(2, 80), n_boot=st.integers(100, 400), seed=st.integers(0, 2**32 - 1))
def test_trial_weight_blocks_hold_the_rows_of_one_draw_in_one_column_major_buffer(n_trials, n_boot, seed):
    """Every block is a view of one (128, T) column-major buffer: the layout of the rows of a
    (n_boot, T) matrix made by fancy indexing, whatever the block's size."""
    from lidframe.stats.bootstrap import trial_weight_blocks
    from lidframe.stats.weighted import RESAMPLE_BLOCK

    speakers = np.random.default_rng(seed).integers(0, max(2, n_trials // 3), size=n_trials).astype(str)
    unit_of_trial, n_units = resampling_units(n_trials, speakers, "speaker")
    whole = np.random.default_rng(seed)
    expected = whole.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_boot).astype(np.float64)
    expected = expected[:, unit_of_trial]
    blocks = np.random.default_rng(seed)
    starts, buffers = [], set()
    for start, weights in trial_weight_blocks(blocks, unit_of_trial, n_units, n_boot):
        assert weights.strides == (8, 8 * RESAMPLE_BLOCK) and weights.dtype == np.float64
        assert np.array_equal(weights, expected[start : start + RESAMPLE_BLOCK])
        starts.append(start)
        buffers.add(weights.__array_interface__["data"][0])
    assert starts == list(range(0, n_boot, RESAMPLE_BLOCK)) and len(buffers) == 1
    assert blocks.bit_generator.state == whole.bit_generator.state


def test_bootstrap_memory_does_not_grow_with_resamples_times_trials():
    """2000 resamples of 2000 trials: all weights at once are 32 MiB (their draws as much again); a block is 2 MiB."""
    lid = np.random.default_rng(0).normal(size=2000)
    tracemalloc.start()
    started = time.monotonic()
    try:
        intervals = bootstrap_ci(lid, Bootstrap(n_boot=2000, unit="trial", method="percentile", seed=1))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"peak {peak / 2**20:.1f} MiB"
    assert time.monotonic() - started < 30
    ci = intervals["alid"]
    assert ci.low < lid.mean() < ci.high  # a sane interval around the estimate


# ------------------------------------------------------------------ intervals, bit for bit
#: Trials of the bit-identity tests: enough that the BLAS products of a block take their
#: blocked (vectorised) paths, whose rounding depends on how the block's weights are laid out.
BIG_T = 10_000


def big_lid(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """BIG_T LID values of either sign, of 97 speakers with unequal numbers of trials."""
    rng = np.random.default_rng(seed)
    lid = rng.normal(0.3, 1.5, size=BIG_T)
    speakers = np.array([f"spk{k:03d}" for k in rng.integers(0, 97, size=BIG_T)])
    return lid, speakers


def one_draw_of_every_resample(rng: np.random.Generator, unit_of_trial: np.ndarray, n_units: int, n_boot: int):
    """The old (lidframe 98cc24d) draw: one multinomial call of every resample, fancy-indexed into one
    (n_boot, T) matrix of trial weights (numpy makes it column-major)."""
    unit_weights = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_boot).astype(np.float64)
    return unit_weights[:, unit_of_trial]


def level_ending_at(values: np.ndarray, index: int) -> float:
    """A confidence level whose percentile interval over *values* has ``values[index]`` as one end.

    A resample's value shows in an interval only when an end is read from it; here the
    last resample -- the one a last block of one row computes -- is made that one, so an
    interval compared bit for bit shows every bit of it.
    """
    finite = values[~np.isnan(values)]
    rank = int(np.sum(finite < values[index]))
    assert np.sum(finite == values[index]) == 1, "a tie: take other data"
    middle = (finite.size - 1) / 2
    assert rank != middle, "the median: take other data"
    return 2 * rank / (finite.size - 1) - 1 if rank > middle else 1 - 2 * rank / (finite.size - 1)


def percentile_written_out(boot: np.ndarray, level: float) -> tuple[float, float]:
    """The old percentile interval: numpy's quantiles of the non-NaN values."""
    boot = boot[~np.isnan(boot)]
    low, high = np.quantile(boot, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(low), float(high)


def bca_written_out(estimate: float, boot: np.ndarray, jack: np.ndarray, level: float) -> tuple[float, float]:
    """The old BCa interval (lidframe 98cc24d, ``_bca``)."""
    boot = boot[~np.isnan(boot)]
    jack = jack[~np.isnan(jack)]
    if boot.size == 0 or math.isnan(estimate):
        return float("nan"), float("nan")
    share = (np.sum(boot < estimate) + 0.5 * np.sum(boot == estimate)) / boot.size
    if not 0 < share < 1 or jack.size < 2:
        return percentile_written_out(boot, level)
    z0 = norm.ppf(share)
    d = jack.mean() - jack
    denom = 6.0 * np.sum(d**2) ** 1.5
    accel = float(np.sum(d**3) / denom) if denom > 0 else 0.0
    z = norm.ppf([(1 - level) / 2, 1 - (1 - level) / 2])
    low, high = np.quantile(boot, norm.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z))))
    return float(low), float(high)


@pytest.mark.parametrize("n_boot", [129, 257])  # the last block holds one resample
def test_bootstrap_ci_gives_the_intervals_of_one_draw_of_every_resample_bit_for_bit(n_boot):
    """bootstrap_ci evaluates its resamples a block at a time; each interval (percentile, at a level
    whose end is the last resample's value, and BCa) equals bit for bit the old algorithm's."""
    from lidframe.stats.bootstrap import jackknife_weights

    lid, speakers = big_lid()
    unit_of_trial, n_units = resampling_units(lid.size, speakers, "speaker")
    rng = np.random.default_rng(3)
    boot = lid_metrics_weighted(lid, one_draw_of_every_resample(rng, unit_of_trial, n_units, n_boot))
    jack = lid_metrics_weighted(lid, jackknife_weights(rng, n_units)[:, unit_of_trial])
    estimate = {k: float(v[0]) for k, v in lid_metrics_weighted(lid, np.ones((1, lid.size))).items()}
    plain = Bootstrap(n_boot=n_boot, method="percentile", seed=3)
    for options in (attrs.evolve(plain, level=level_ending_at(boot["lid_pos"], -1)), attrs.evolve(plain, method="bca")):
        for metric, interval in bootstrap_ci(lid, options, speakers=speakers).items():
            if options.method == "bca" and metric != "lid_max":
                want = bca_written_out(estimate[metric], boot[metric], jack[metric], options.level)
            else:
                want = percentile_written_out(boot[metric], options.level)
            assert interval.estimate == estimate[metric], metric
            assert (interval.low, interval.high) == want, (options.method, options.level, metric)
