"""The bootstrap draws its resamples a block at a time: memory does not grow with resamples x trials.

:func:`~lidframe.stats.bootstrap.resample_weight_blocks` must give exactly the draws of one
``rng.multinomial(..., size=n_boot)`` call (so every interval stays what it was when all
resamples were held at once) and leave the generator where that call left it (the
jackknife draws after them).
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe.stats.bootstrap import Bootstrap, bootstrap_ci


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
