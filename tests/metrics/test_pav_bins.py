"""PAV bin extraction (one implementation in lidframe.metrics.detection) against a textbook PAV.

The same helpers serve the binary metrics, the bootstrap's weighted EER
(:mod:`lidframe.stats.bootstrap`) and the isotonic calibrator, so each is checked here
against an independent computation: :func:`naive_pav` and the scipy convex-hull EER.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lidframe.calibrators import Isotonic
from lidframe.metrics.detection import eer_from_bins, pav_bins, pav_bins_from_counts, pav_blocks
from lidframe.stats.weighted import PairLLRs, binary_metrics_weighted
from tests.metrics.test_metrics import hull_eer, naive_pav
from tests.strategies import resample_weights

run_counts = st.lists(
    st.tuples(st.integers(0, 6), st.integers(0, 6)).filter(lambda c: c[0] + c[1] > 0), min_size=1, max_size=30
)


def test_pav_blocks_by_hand():
    starts, ends = pav_blocks(np.array([0.0, 0.0, 0.25, 0.5, 0.5, 0.5, 1.0]))
    np.testing.assert_array_equal(starts, [0, 2, 3, 6])
    np.testing.assert_array_equal(ends, [1, 2, 5, 6])
    starts, ends = pav_blocks(np.array([0.3]))
    np.testing.assert_array_equal(starts, [0])
    np.testing.assert_array_equal(ends, [0])


@given(run_counts)
def test_pav_bins_from_counts_equals_textbook_pav(counts):
    n_mated = np.array([c[0] for c in counts], dtype=np.float64)
    n_non_mated = np.array([c[1] for c in counts], dtype=np.float64)
    weight = n_mated + n_non_mated
    want = naive_pav(n_mated / weight, weight)  # posterior of each run
    ends, bin_mated, bin_non_mated = pav_bins_from_counts(n_mated, n_non_mated)
    assert ends[-1] == len(counts) - 1 and (np.diff(ends) > 0).all()
    assert bin_mated.sum() == n_mated.sum() and bin_non_mated.sum() == n_non_mated.sum()
    sizes = np.diff(np.r_[-1, ends])
    got = np.repeat(bin_mated / (bin_mated + bin_non_mated), sizes)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # one bin per block of the textbook fit (its runs of equal posterior)
    assert ends.size == 1 + np.count_nonzero(np.abs(np.diff(want)) > 1e-12)


weighted_run_counts = st.lists(
    st.tuples(st.integers(0, 6), st.integers(0, 6), st.sampled_from([1.0, 0.5, 1 / 3, 0.1, 7.0])).filter(
        lambda c: c[0] + c[1] > 0
    ),
    min_size=1,
    max_size=40,
)


@given(weighted_run_counts)
def test_pav_bins_from_counts_has_scikit_learns_blocks(counts):
    """SciPy's PAV (what the code calls) pools the runs into the blocks of scikit-learn's, which it replaced
    for speed; resample weights (fractional counts) included."""
    from sklearn.isotonic import isotonic_regression

    n_mated = np.array([c[0] * c[2] for c in counts])
    n_non_mated = np.array([c[1] * c[2] for c in counts])
    weight = n_mated + n_non_mated
    fitted = isotonic_regression(n_mated / weight, sample_weight=weight, increasing=True)
    want_ends = np.flatnonzero(np.r_[fitted[1:] != fitted[:-1], True])
    ends, bin_mated, bin_non_mated = pav_bins_from_counts(n_mated, n_non_mated)
    np.testing.assert_array_equal(ends, want_ends)
    starts = np.r_[0, want_ends[:-1] + 1]
    np.testing.assert_array_equal(bin_mated, np.add.reduceat(n_mated, starts))
    np.testing.assert_array_equal(bin_non_mated, np.add.reduceat(n_non_mated, starts))


scores = st.lists(st.integers(-4, 4).map(lambda k: k / 2), min_size=1, max_size=20)


@given(scores, scores)
def test_eer_from_bins_equals_convex_hull_reference(mated, non_mated):
    mated, non_mated = np.array(mated), np.array(non_mated)
    _, bin_mated, bin_non_mated = pav_bins(mated, non_mated)
    assert eer_from_bins(bin_mated, bin_non_mated) == pytest.approx(hull_eer(mated, non_mated), abs=1e-9)


half_grid = st.integers(-6, 6).map(lambda k: k / 2)  # LLRs on a 0.5 grid: ties on purpose


@st.composite
def pair_llrs_and_resamples(draw):
    """Mated (T,) and non-mated (T, N - 1) LLRs of T trials, and 3 bootstrap weight rows over the trials."""
    n_trials, n_enrolled = draw(st.integers(2, 12)), draw(st.integers(2, 5))
    mated = draw(arrays(np.float64, n_trials, elements=half_grid))
    non_mated = draw(arrays(np.float64, (n_trials, n_enrolled - 1), elements=half_grid))
    return mated, non_mated, draw(resample_weights(n_trials, 3))


@settings(max_examples=40, deadline=None)
@given(pair_llrs_and_resamples())
def test_bootstrap_weighted_eer_equals_hull_eer_of_the_expanded_resample(case):
    mated, non_mated, weights = case
    got = binary_metrics_weighted(PairLLRs(mated, non_mated), weights)["eer"]
    for b in range(3):
        w = weights[b].astype(int)
        want = hull_eer(np.repeat(mated, w), np.repeat(non_mated, w, axis=0).ravel())
        assert got[b] == pytest.approx(want, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 5), st.booleans()), min_size=4, max_size=40), st.booleans())
def test_isotonic_bins_equal_textbook_pav_of_the_dev_points(pairs, laplace):
    z = np.array([p[0] / 2 for p in pairs], dtype=np.float64)
    labels = np.array([int(p[1]) for p in pairs])
    if labels.min() == labels.max():
        labels[0] = 1 - labels[0]
    values = np.unique(z)
    n_mated = np.array([labels[z == v].sum() for v in values], dtype=np.float64)
    n_non_mated = np.array([(1 - labels[z == v]).sum() for v in values], dtype=np.float64)
    if laplace:
        n_mated, n_non_mated = np.r_[1.0, n_mated, 1.0], np.r_[1.0, n_non_mated, 1.0]
    post = naive_pav(n_mated / (n_mated + n_non_mated), n_mated + n_non_mated)
    if laplace:
        post = post[1:-1]
    cal = Isotonic(laplace=laplace)
    try:
        cal.fit(z, labels)
    except ValueError:
        assert not laplace and set(np.unique(post)) <= {0.0, 1.0}  # perfectly separated
        return
    # each bin's upper end is the largest dev score whose posterior is the bin's
    want_upper = values[np.r_[np.abs(np.diff(post)) > 1e-12, True]]
    np.testing.assert_array_equal(cal.pav_upper_, want_upper)
    np.testing.assert_allclose(cal.pav_posterior_, post[np.r_[np.abs(np.diff(post)) > 1e-12, True]], atol=1e-12)
