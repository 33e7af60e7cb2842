"""ratio_ci: bootstrap intervals of a ratio of sums, against the bootstrap written out in the test."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe import InputError
from lidframe.stats.bootstrap import Bootstrap, ratio_ci


@st.composite
def counted_items(draw):
    """Per item: errors, reference words and a speaker (at least two speakers)."""
    n = draw(st.integers(2, 25))
    words = np.array(draw(st.lists(st.integers(1, 20), min_size=n, max_size=n)), dtype=float)
    errors = np.array([draw(st.integers(0, int(2 * w))) for w in words], dtype=float)
    speakers = np.array(draw(st.lists(st.sampled_from("abcdef"), min_size=n, max_size=n)))
    if len(set(speakers)) < 2:
        speakers[0], speakers[-1] = "a", "b"
    return errors, words, speakers


def _percentile_by_hand(errors, words, speakers, *, n_boot, seed, level):
    """The documented draws (one multinomial call over the units) spread to items, then numpy quantiles."""
    units, unit_of_item = np.unique(speakers, return_inverse=True)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(units.size, [1 / units.size] * units.size, size=n_boot)
    ratios = []
    for row in counts:
        w = row[unit_of_item]
        den = (w * words).sum()
        if den > 0:
            ratios.append((w * errors).sum() / den)
    low, high = np.quantile(ratios, [(1 - level) / 2, 1 - (1 - level) / 2])
    return low, high


@settings(max_examples=40, deadline=None)
@given(counted_items(), st.integers(0, 2**16), st.sampled_from([0.8, 0.95]))
def test_percentile_interval_is_the_bootstrap_written_out(items, seed, level):
    errors, words, speakers = items
    boot = Bootstrap(n_boot=200, method="percentile", seed=seed, level=level)
    interval = ratio_ci({"wer": (errors, words)}, boot, speakers=speakers)["wer"]
    assert interval.estimate == errors.sum() / words.sum()
    low, high = _percentile_by_hand(errors, words, speakers, n_boot=200, seed=seed, level=level)
    assert interval.low == pytest.approx(low, rel=1e-12, abs=1e-15)
    assert interval.high == pytest.approx(high, rel=1e-12, abs=1e-15)
    assert interval.method == "percentile" and interval.level == level


@settings(max_examples=30, deadline=None)
@given(counted_items(), st.integers(0, 2**16))
def test_trial_unit_resamples_items_and_bca_brackets_the_estimate(items, seed):
    errors, words, speakers = items
    by_item = ratio_ci({"wer": (errors, words)}, Bootstrap(n_boot=200, unit="trial", method="percentile", seed=seed))
    # the trial unit is each item in order: ids of one width sort as the items do
    ids = np.array([f"{k:03d}" for k in range(errors.size)])
    low, high = _percentile_by_hand(errors, words, ids, n_boot=200, seed=seed, level=0.95)
    assert by_item["wer"].low == pytest.approx(low, rel=1e-12, abs=1e-15)
    assert by_item["wer"].high == pytest.approx(high, rel=1e-12, abs=1e-15)
    bca = ratio_ci({"wer": (errors, words)}, Bootstrap(n_boot=200, seed=seed), speakers=speakers)["wer"]
    assert bca.method == "bca" and bca.low <= bca.high


def test_a_mean_over_a_subset_ignores_the_items_outside_it():
    values = np.array([0.5, np.nan, 0.7, 0.9, np.nan, 0.1])
    inside = ~np.isnan(values)
    parts = {"rho": (np.where(inside, values, 0.0), inside.astype(float))}
    interval = ratio_ci(parts, Bootstrap(n_boot=100), speakers=list("aabbcc"))["rho"]
    assert interval.estimate == pytest.approx(np.nanmean(values))


@pytest.mark.parametrize(
    ("parts", "speakers", "message"),
    [
        ({"wer": ([1.0, 2.0], [3.0])}, ["a", "b"], "of one length"),
        ({"wer": ([1.0, 2.0], [3.0, 4.0])}, ["a", "a"], "at least two of them, got 1"),
    ],
)
def test_bad_parts_are_one_line_errors(parts, speakers, message):
    with pytest.raises(InputError, match=message):
        ratio_ci(parts, Bootstrap(n_boot=100), speakers=speakers)
