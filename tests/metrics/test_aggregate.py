"""LID aggregates: definitions and the ALID decomposition."""

import math
import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe import InputError
from lidframe.metrics.aggregates import alid_decomposition, lid_summary
from tests.strategies import lid_grid_values

lids = st.lists(st.floats(-20, 5, allow_nan=False), min_size=1, max_size=200)


@given(lids)
def test_alid_decomposes_into_positive_and_negative_sides(values):
    s = lid_summary(values)
    assert s["alid"] == pytest.approx(alid_decomposition(s), abs=1e-12)
    assert s["pdr"] + s["ndr"] == pytest.approx(1.0)
    assert s["lid_min"] <= s["lid_q50"] <= s["lid_q90"] <= s["lid_q99"] <= s["lid_max"]


@given(st.lists(lid_grid_values, min_size=1, max_size=200))
def test_aggregates_equal_plain_python_with_exact_zeros(values):
    # LIDs on a 0.01-bit grid, so exact zeros (no disclosure) are common: they count in
    # NDR and LID-, never in PDR; every number here from Python's statistics module
    positive = [v for v in values if v > 0]
    rest = [v for v in values if v <= 0]
    n = len(values)
    s = lid_summary(values)
    assert (s["pdr"], s["ndr"]) == (len(positive) / n, len(rest) / n)
    lid_pos = statistics.fmean(positive) if positive else math.nan
    lid_neg = statistics.fmean(rest) if rest else math.nan
    for got, want in ((s["lid_pos"], lid_pos), (s["lid_neg"], lid_neg)):
        assert math.isnan(got) if math.isnan(want) else got == pytest.approx(want, abs=1e-12)
    assert s["alid"] == pytest.approx(statistics.fmean(values), abs=1e-12)
    sides = len(positive) / n * (lid_pos if positive else 0.0) + len(rest) / n * (lid_neg if rest else 0.0)
    assert s["alid"] == pytest.approx(sides, abs=1e-12)
    assert alid_decomposition(s) == pytest.approx(sides, abs=1e-12)
    assert (s["lid_max"], s["lid_min"]) == (max(values), min(values))


def test_hand_example():
    s = lid_summary([2.0, 1.0, 0.0, -1.0])
    assert s["alid"] == 0.5
    assert s["pdr"] == 0.5 and s["ndr"] == 0.5  # LID = 0 counts as non-positive
    assert s["lid_pos"] == 1.5 and s["lid_neg"] == -0.5
    assert s["lid_max"] == 2.0
    assert s["lid_q50"] == 0.5


def test_empty_sides_are_nan_and_count_as_zero():
    s = lid_summary([1.0, 2.0])
    assert math.isnan(s["lid_neg"]) and s["ndr"] == 0.0
    assert alid_decomposition(s) == 1.5
    s = lid_summary([-1.0, 0.0])
    assert math.isnan(s["lid_pos"]) and alid_decomposition(s) == -0.5


def test_errors():
    with pytest.raises(InputError, match="no closed-set trials"):
        lid_summary([])
    with pytest.raises(InputError, match="NaN"):
        lid_summary([1.0, np.nan])
