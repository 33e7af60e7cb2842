"""Cohort score normalisation (issue 42): S-norm and AS-norm against the formula written out here.

The reference is plain Python loops over a small cohort in float64: for each side, the
top-K cohort scores by sorting, their mean and sample standard deviation (ddof 1), then
s' = ½ [(s − μ_e) / σ_e + (s − μ_t) / σ_t] pair by pair.  lidframe's vectorised,
blocked code must agree with it, and must not hold a second T x N matrix when it
normalises in place.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import lidframe.core.cohort as cohort_module
from lidframe.core.cohort import DEFAULT_TOP_K, CohortNorm, cohort_normalise, cohort_stats
from lidframe.errors import InputError


def _top_stats(row: list[float], k: int) -> tuple[float, float]:
    """Mean and sample standard deviation of the k largest values of *row*, by loops."""
    top = sorted(row, reverse=True)[:k]
    mean = sum(top) / k
    return mean, math.sqrt(sum((x - mean) ** 2 for x in top) / (k - 1))


def reference(scores, trial_cohort, enrolled_cohort, k):
    """s'_ij = ½ [(s_ij − μ_e(j)) / σ_e(j) + (s_ij − μ_t(i)) / σ_t(i)], pair by pair."""
    trial = [_top_stats(list(map(float, row)), k) for row in trial_cohort]
    enrolled = [_top_stats(list(map(float, row)), k) for row in enrolled_cohort]
    out = np.empty(np.shape(scores))
    for i, (mu_t, sd_t) in enumerate(trial):
        for j, (mu_e, sd_e) in enumerate(enrolled):
            s = float(scores[i][j])
            out[i, j] = 0.5 * ((s - mu_e) / sd_e + (s - mu_t) / sd_t)
    return out


values = st.floats(-1.0, 1.0, allow_nan=False, width=64)
#: cohort scores on a grid of 1/64: distinct values differ by 1/64 at least, so every row has a spread
grid_values = st.integers(-64, 64).map(lambda x: x / 64)


@st.composite
def cases(draw):
    """(scores (T, N), trial cohort scores (T, C), enrolled cohort scores (N, C), K)."""
    n_trials, n_enrolled, n_cohort = draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(2, 9))
    scores = draw(arrays(np.float64, (n_trials, n_enrolled), elements=values))
    trial = draw(arrays(np.float64, (n_trials, n_cohort), elements=grid_values, unique=True))
    enrolled = draw(arrays(np.float64, (n_enrolled, n_cohort), elements=grid_values, unique=True))
    return scores, trial, enrolled, draw(st.integers(2, n_cohort))


@settings(max_examples=200, deadline=None)
@given(case=cases())
def test_asnorm_is_the_formula(case):
    scores, trial, enrolled, k = case
    got = cohort_normalise(scores, trial, enrolled, CohortNorm(method="asnorm", top_k=k))
    expected = reference(scores, trial, enrolled, k)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(case=cases())
def test_snorm_is_the_formula_with_every_cohort_score(case):
    scores, trial, enrolled, _ = case
    got = cohort_normalise(scores, trial, enrolled, CohortNorm(method="snorm"))
    np.testing.assert_allclose(got, reference(scores, trial, enrolled, trial.shape[1]), rtol=1e-9, atol=1e-9)


@settings(max_examples=50, deadline=None)
@given(case=cases())
def test_asnorm_with_k_the_cohort_size_is_snorm(case):
    scores, trial, enrolled, _ = case
    everyone = CohortNorm(method="asnorm", top_k=trial.shape[1])
    np.testing.assert_array_equal(
        cohort_normalise(scores, trial, enrolled, everyone), cohort_normalise(scores, trial, enrolled, CohortNorm())
    )


@settings(max_examples=50, deadline=None)
@given(case=cases(), block=st.integers(1, 12))
def test_blocks_of_any_size_give_the_same_numbers_in_place(case, block):
    scores, trial, enrolled, k = case
    norm = CohortNorm(method="asnorm", top_k=k)
    whole = cohort_normalise(scores, trial, enrolled, norm)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cohort_module, "BLOCK_VALUES", block)
        in_place = scores.copy()
        returned = cohort_normalise(in_place, trial, enrolled, norm, out=in_place)
    assert returned is in_place
    np.testing.assert_array_equal(in_place, whole)


def test_the_top_k_are_the_largest_scores_of_each_row():
    # the two largest of each row: (9, 7) and (4, 3), whatever their places
    stats = cohort_stats(np.array([[1.0, 9.0, 7.0, -2.0], [4.0, 0.0, 3.0, 1.0]]), 2)
    np.testing.assert_allclose(stats.mean, [8.0, 3.5])
    np.testing.assert_allclose(stats.sd, [math.sqrt(2.0), math.sqrt(0.5)])


def test_normalising_in_place_holds_no_second_score_matrix():
    """At T = N = 2,048 (32 MiB of scores) the extra memory is the blocks', not another T x N matrix."""
    rng = np.random.default_rng(0)
    n, n_cohort = 2048, 300
    scores = rng.normal(size=(n, n))
    trial, enrolled = rng.normal(size=(n, n_cohort)), rng.normal(size=(n, n_cohort))
    expected = reference(scores[:3, :4], trial[:3], enrolled[:4], 50)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cohort_module, "BLOCK_VALUES", 1 << 18)  # 2 MiB blocks
        tracemalloc.start()
        cohort_normalise(scores, trial, enrolled, CohortNorm(method="asnorm", top_k=50), out=scores)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < scores.nbytes / 4, f"peak {peak / 2**20:.1f} MiB for {scores.nbytes / 2**20:.0f} MiB of scores"
    np.testing.assert_allclose(scores[:3, :4], expected, rtol=1e-9, atol=1e-9)


# -- bad input ----------------------------------------------------------------------------------------------
def test_a_cohort_smaller_than_k_is_refused_naming_both():
    rng = np.random.default_rng(1)
    with pytest.raises(InputError, match=r"^cohort: 5 cohort speakers; asnorm needs at least cohort_top_k = 6 \(given"):
        cohort_normalise(
            rng.normal(size=(2, 3)),
            rng.normal(size=(2, 5)),
            rng.normal(size=(3, 5)),
            CohortNorm(method="asnorm", top_k=6),
        )
    with pytest.raises(InputError, match=f"asnorm needs at least cohort_top_k = {DEFAULT_TOP_K} \\(the default"):
        CohortNorm(method="asnorm").k(DEFAULT_TOP_K - 1)
    with pytest.raises(InputError, match="1 cohort speakers; snorm needs at least 2"):
        CohortNorm().k(1)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"method": "znorm"}, "score_norm must be one of none, snorm, asnorm"),
        ({"method": "none"}, "score_norm must be one of"),
        ({"method": "snorm", "top_k": 10}, "cohort_top_k=10 applies to score_norm='asnorm' only"),
        ({"method": "asnorm", "top_k": 1}, "cohort_top_k must be an integer >= 2"),
        ({"method": "asnorm", "top_k": True}, "cohort_top_k must be an integer >= 2"),
        ({"method": "asnorm", "top_k": 2.5}, "cohort_top_k must be an integer >= 2"),
    ],
)
def test_bad_options_are_refused_on_construction(options, words):
    with pytest.raises(InputError, match=words):
        CohortNorm(**options)


def test_a_side_whose_top_k_cohort_scores_are_equal_is_named():
    trial = np.array([[0.1, 0.2, 0.3], [0.5, 0.5, 0.1]])  # trial 'u2': its top 2 are equal
    enrolled = np.array([[0.3, 0.1, 0.2]])
    with pytest.raises(InputError, match=r"top 2 cohort scores of trials 'u2' are all equal"):
        cohort_normalise(
            np.zeros((2, 1)), trial, enrolled, CohortNorm(method="asnorm", top_k=2), trial_ids=["u1", "u2"]
        )
    # with all three the row has a spread
    assert np.isfinite(cohort_normalise(np.zeros((2, 1)), trial, enrolled, CohortNorm())).all()


def test_shapes_that_do_not_fit_are_refused():
    rng = np.random.default_rng(2)
    with pytest.raises(InputError, match=r"trial cohort scores \(T, C\) and enrolled cohort scores \(N, C\) needed"):
        cohort_normalise(rng.normal(size=(2, 3)), rng.normal(size=(2, 5)), rng.normal(size=(3, 4)), CohortNorm())
    with pytest.raises(InputError, match=r"scores \(3, 2\) do not fit cohort statistics of 2 trials and 3 enrolled"):
        cohort_normalise(rng.normal(size=(3, 2)), rng.normal(size=(2, 5)), rng.normal(size=(3, 5)), CohortNorm())
    with pytest.raises(InputError, match="hold NaN or inf"):
        cohort_normalise(np.zeros((1, 1)), [[0.1, np.nan, 0.3]], [[0.1, 0.2, 0.3]], CohortNorm())


@settings(max_examples=50, deadline=None)
@given(case=cases())
def test_after_the_row_znorm_snorm_is_the_raw_score_plus_the_weighted_column_correction(case):
    """docs/theory.md: up to each row's shift and scale, s' = s + (σ_t(i) / σ_e(j)) (s − μ_e(j)); T-norm alone is nothing."""
    from lidframe.core.znorm import row_znorm

    scores, trial, enrolled, _ = case
    if scores.shape[1] < 2 or (scores.std(axis=1) < 0.05).any():
        return  # a row the row z-norm refuses
    mu_t, sd_t = trial.mean(axis=1), trial.std(axis=1, ddof=1)
    mu_e, sd_e = enrolled.mean(axis=1), enrolled.std(axis=1, ddof=1)
    written_out = scores + (sd_t[:, None] / sd_e[None, :]) * (scores - mu_e[None, :])
    snormed = cohort_normalise(scores, trial, enrolled, CohortNorm())
    np.testing.assert_allclose(row_znorm(snormed), row_znorm(written_out), rtol=1e-7, atol=1e-7)
    t_normed = (scores - mu_t[:, None]) / sd_t[:, None]
    np.testing.assert_allclose(row_znorm(t_normed), row_znorm(scores), rtol=1e-7, atol=1e-7)
