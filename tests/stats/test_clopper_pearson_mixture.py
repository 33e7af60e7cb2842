"""Clopper-Pearson intervals averaged over refitted calibrators (issue 41), against brentq on the definition."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.stats import beta

from lidframe.errors import InputError
from lidframe.stats.proportion import clopper_pearson, clopper_pearson_mixture


def _by_brentq(k: list[int], n: int, level: float) -> tuple[float, float]:
    """low: mean_b P(Beta(k_b, n - k_b + 1) <= low) = tail; high: mean_b P(Beta(k_b + 1, n - k_b) > high) = tail."""
    tail = (1 - level) / 2
    below = lambda x: np.mean([1.0 if kb == 0 else beta.cdf(x, kb, n - kb + 1) for kb in k]) - tail  # noqa: E731
    above = lambda x: np.mean([1.0 if kb == n else beta.sf(x, kb + 1, n - kb) for kb in k]) - tail  # noqa: E731
    low = 0.0 if below(0.0) >= 0 else brentq(below, 0.0, 1.0, xtol=1e-14)
    high = 1.0 if above(1.0 - 1e-15) >= 0 else brentq(above, 0.0, 1.0, xtol=1e-14)
    return low, high


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 40),
    data=st.data(),
    level=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_the_interval_solves_its_definition(n, data, level):
    k = data.draw(st.lists(st.integers(0, n), min_size=1, max_size=30))
    low, high = clopper_pearson_mixture([k], [n], level=level)
    want_low, want_high = _by_brentq(k, n, level)
    assert low[0] == pytest.approx(want_low, abs=1e-9) and high[0] == pytest.approx(want_high, abs=1e-9)
    # it lies between the Clopper-Pearson intervals of the smallest and the largest count
    cp_low, _ = clopper_pearson(min(k), n, level=level)
    _, cp_high = clopper_pearson(max(k), n, level=level)
    assert cp_low - 1e-9 <= low[0] <= high[0] <= cp_high + 1e-9


@given(n=st.integers(1, 60), data=st.data())
def test_with_one_count_it_is_clopper_pearson(n, data):
    k = data.draw(st.integers(0, n))
    low, high = clopper_pearson_mixture([[k] * 7], [n])
    want_low, want_high = clopper_pearson(k, n)
    assert low[0] == pytest.approx(float(want_low), abs=1e-10) and high[0] == pytest.approx(float(want_high), abs=1e-10)


def test_no_trials_gives_nan_and_bad_counts_are_refused():
    low, high = clopper_pearson_mixture([[0, 0], [1, 2]], [0, 3])
    assert np.isnan(low[0]) and np.isnan(high[0]) and 0 < low[1] < high[1] < 1
    with pytest.raises(InputError, match="0 <= successes <= trials"):
        clopper_pearson_mixture([[4]], [3])
    with pytest.raises(InputError, match=r"successes \(S, B\) and trials \(S,\)"):
        clopper_pearson_mixture([1, 2], [3, 3])
