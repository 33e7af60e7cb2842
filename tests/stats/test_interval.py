"""The one interval record: its stored forms read back, and Clopper-Pearson's against scipy's exact interval."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from lidframe.stats.interval import Interval, bounds_pair
from lidframe.stats.proportion import CLOPPER_PEARSON, clopper_pearson_interval

ends = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False, width=64))
metric_names = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@given(low=ends, high=ends, level=st.floats(0.01, 0.99), method=st.sampled_from(["bca", "percentile", ""]))
def test_the_json_form_reads_back_with_none_as_nan(low, high, level, method):
    interval = Interval.from_bounds([low, high], estimate=0.5, level=level, method=method)
    want_low = math.nan if low is None else low
    want_high = math.nan if high is None else high
    assert _same(interval.low, want_low) and _same(interval.high, want_high)
    assert (interval.estimate, interval.level, interval.method) == (0.5, level, method)
    stored = interval.to_dict()
    assert stored["low"] == low and stored["high"] == high  # NaN written as None
    assert all(_same(a, b) for a, b in zip(bounds_pair([stored["low"], stored["high"]]), interval.bounds))


@given(metric=metric_names, value=ends, low=ends, high=ends)
def test_the_table_form_is_two_columns_named_after_the_metric(metric, value, low, high):
    row = {metric: value, f"{metric}_low": low, f"{metric}_high": high}
    found = Interval.from_columns(row, metric, level=0.9, method="bca")
    if low is None and high is None:
        assert found is None  # a table without intervals
        return
    assert found is not None
    assert _same(found.estimate, math.nan if value is None else value)
    assert found.columns(metric) == {f"{metric}_low": found.low, f"{metric}_high": found.high}
    assert _same(found.low, math.nan if low is None else low) and _same(found.high, math.nan if high is None else high)
    assert Interval.from_columns({metric: 1.0}, metric) is None


@given(n=st.integers(1, 400), data=st.data(), level=st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_clopper_pearson_interval_is_scipys_exact_binomial_interval(n, data, level):
    k = data.draw(st.integers(0, n))
    interval = clopper_pearson_interval(k, n, level=level)
    want = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    assert interval.low == pytest.approx(want.low, abs=1e-12)
    assert interval.high == pytest.approx(want.high, abs=1e-12)
    assert interval.estimate == k / n and interval.level == level and interval.method == CLOPPER_PEARSON


def test_clopper_pearson_interval_of_no_trials_is_nan():
    interval = clopper_pearson_interval(0, 0)
    assert np.isnan([interval.estimate, interval.low, interval.high]).all()


def test_every_interval_is_the_one_class():
    from lidframe.report import Interval as ReportInterval
    from lidframe.stats.bootstrap import Interval as BootstrapInterval

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ReportInterval is Interval and BootstrapInterval is Interval
