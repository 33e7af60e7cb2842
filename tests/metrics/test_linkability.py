"""Linkability D_sys against the published algorithm (Gomez-Barrero et al.; VoicePrivacy code), re-implemented here."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe import InputError
from lidframe.metrics.binary_view import binary_summary
from lidframe.metrics.linkability import DSYS_METHODS, dsys, linkability_bins, local_linkability


def published_linkability(mated, non_mated, omega=1.0, n_bins=None):
    """D_sys as the ``anonymization_metrics`` / VoicePrivacy ``linkability`` function defines it.

    nBins = min(int(len(mated) / 10), 100); nBins + 1 equal-spaced edges from the smallest
    to the largest of all scores; histogram densities (bins closed on the left, the last
    one on both sides); LR = y1 / y2 where y2 != 0, else 1; D = 2 omega LR / (1 + omega LR) - 1,
    D = 0 where omega LR <= 1, D = 1 where y2 == 0 and y1 != 0; D_sys = trapezoid rule of
    D * y1 over the bin centres.  Counting, densities and the trapezoid are written out
    here rather than taken from numpy's histogram / trapezoid.
    """
    mated = [float(v) for v in mated]
    non_mated = [float(v) for v in non_mated]
    n_bins = min(int(len(mated) / 10), 100) if n_bins is None else n_bins
    if n_bins == 0:  # one edge: no bin, an empty histogram, a trapezoid over nothing
        return 0.0
    low, high = min(mated + non_mated), max(mated + non_mated)
    edges = np.linspace(low, high, num=n_bins + 1)  # the published code's edges

    def density(values):
        counts = [0] * n_bins
        for v in values:
            b = int(np.searchsorted(edges, v, side="right")) - 1  # edges[b] <= v < edges[b + 1]
            counts[min(b, n_bins - 1)] += 1  # the top edge belongs to the last bin
        return [c / (len(values) * (edges[b + 1] - edges[b])) for b, c in enumerate(counts)]

    y1, y2 = density(mated), density(non_mated)
    integrand = []
    for p_mated, p_non_mated in zip(y1, y2):
        lr = p_mated / p_non_mated if p_non_mated != 0 else 1.0
        d = 2 * (omega * lr / (1 + omega * lr)) - 1
        if omega * lr <= 1:
            d = 0.0
        if p_non_mated == 0 and p_mated != 0:
            d = 1.0
        integrand.append(d * p_mated)
    centres = [(edges[b] + edges[b + 1]) / 2 for b in range(n_bins)]
    return sum((centres[b + 1] - centres[b]) * (integrand[b] + integrand[b + 1]) / 2 for b in range(n_bins - 1))


# scores on a 1/8 grid: ties, scores on bin edges and empty bins are common
grid_scores = st.lists(st.integers(-40, 40).map(lambda k: k / 8), min_size=1, max_size=300)
omegas = st.sampled_from([0.25, 1.0, 3.0])


@st.composite
def score_pairs(draw, max_mated=120):
    """(mated, non_mated) of drawn grid scores, not all equal; mated counts cross the 10-per-bin steps."""
    mated = np.array(draw(st.lists(st.integers(-40, 40), min_size=1, max_size=max_mated))) / 8
    non_mated = np.array(draw(grid_scores))
    if np.r_[mated, non_mated].min() == np.r_[mated, non_mated].max():
        non_mated = np.r_[non_mated, non_mated[0] + 1.0]  # give it a spread by construction
    return mated, non_mated


@settings(max_examples=150)
@given(score_pairs(), omegas)
def test_reference_method_is_the_published_algorithm(pair, omega):
    mated, non_mated = pair
    want = published_linkability(mated, non_mated, omega)
    assert dsys(mated, non_mated, omega=omega) == pytest.approx(want, abs=1e-12)
    assert dsys(mated, non_mated, omega=omega, method="reference") == pytest.approx(want, abs=1e-12)


@given(score_pairs(), omegas, st.integers(1, 12))
def test_reference_method_with_explicit_bins(pair, omega, n_bins):
    mated, non_mated = pair
    want = published_linkability(mated, non_mated, omega, n_bins=n_bins)
    assert dsys(mated, non_mated, omega=omega, n_bins=n_bins) == pytest.approx(want, abs=1e-12)


@given(score_pairs(), omegas)
def test_bin_sum_is_the_mated_mean_of_local_linkability(pair, omega):
    # independent: integral p(s | mated) D(s) ds over a histogram = mean of D(bin of s) over the mated scores
    mated, non_mated = pair
    edges, _, d = local_linkability(mated, non_mated, omega=omega)
    bins = np.minimum(np.searchsorted(edges, mated, side="right") - 1, d.size - 1)
    assert dsys(mated, non_mated, omega=omega, method="bin-sum") == pytest.approx(d[bins].mean(), abs=1e-12)


@given(score_pairs(), omegas)
def test_the_two_methods_differ_by_the_outer_half_bins(pair, omega):
    # trapezoid over centres = w (sum f - f_1 / 2 - f_B / 2): reference <= bin-sum, both in [0, 1]
    mated, non_mated = pair
    edges, density_mated, d = local_linkability(mated, non_mated, omega=omega)
    f, width = density_mated * d, edges[1] - edges[0]
    reference = dsys(mated, non_mated, omega=omega)
    bin_sum = dsys(mated, non_mated, omega=omega, method="bin-sum")
    assert 0.0 <= reference <= bin_sum + 1e-12 <= 1.0 + 2e-12
    if f.size >= 2:
        assert bin_sum - reference == pytest.approx(width * (f[0] + f[-1]) / 2, abs=1e-12)
    else:
        assert reference == 0.0  # one bin centre: nothing to integrate over


def test_perfect_separation_in_three_bins_and_the_small_sample_rules():
    mated, non_mated = np.linspace(2.0, 3.0, 30), np.linspace(0.0, 0.9, 300)
    # 3 bins over [0, 3]: all mated in the top one (D = 1), all non-mated below;
    # f = (0, 0, 1 / w): bin-sum w f_3 = 1, reference w f_3 / 2 = 1/2
    assert linkability_bins(30) == 3
    assert dsys(mated, non_mated, method="bin-sum") == pytest.approx(1.0)
    assert dsys(mated, non_mated) == pytest.approx(0.5)
    # fewer than 20 mated scores: at most one bin, the reference integrates over no interval
    assert dsys(mated[:19], non_mated) == 0.0
    assert published_linkability(mated[:19], non_mated) == 0.0 and published_linkability(mated[:9], non_mated) == 0.0
    assert dsys(mated[:9], non_mated, method="bin-sum") == 0.0  # one bin: LR = 1 links nothing at omega = 1


def test_bad_input_names_what_was_expected():
    with pytest.raises(InputError, match="method must be one of"):
        dsys([1.0, 2.0], [0.0], method="trapz")
    with pytest.raises(InputError, match="omega"):
        dsys([1.0, 2.0], [0.0], omega=0.0)
    with pytest.raises(InputError, match="at least one histogram bin"):
        dsys([1.0, 2.0], [0.0], n_bins=0)
    with pytest.raises(InputError, match="finite"):
        dsys([1.0, math.inf], [0.0])


def test_binary_view_reports_the_reference_number_and_names_the_method():
    rng = np.random.default_rng(4)
    mated, non_mated = rng.normal(2.0, 1.0, 50), rng.normal(0.0, 1.0, 50 * 28)
    summary = binary_summary(mated, non_mated)
    assert summary["dsys_method"] == "reference" == DSYS_METHODS[0]
    assert summary["dsys"] == pytest.approx(published_linkability(mated, non_mated), abs=1e-12)
