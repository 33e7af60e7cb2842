"""The tiled LID engine against a dense float64 reference, and its invariances."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lidframe.core.lid import lid_from_llr, lid_from_scores, log_posterior
from lidframe.core.znorm import row_znorm
from lidframe.errors import InputError
from lidframe.metrics.aggregates import lid_summary
from tests.reference import dense_lid, dense_pipeline, dense_znorm
from tests.strategies import closed_set_cases, log_priors, priors_of_every_kind


def affine(slope, intercept):
    return lambda z: slope * z + intercept


def test_worked_example_of_the_docs():
    # docs/theory.md: N = 6, true = 4th, ddof = 0, slope 1.5 -> about 0.90 bit.
    scores = np.array([[0.9, 0.7, 0.4, 1.1, 1.2, 0.4]])
    lid = lid_from_scores(scores, np.array([3]), affine(1.5, 0.0), np.full(6, -math.log(6)), znorm_ddof=0)
    # by hand: z = (s - 0.78333) / 0.31314; p_true = e^{1.5 z_4} / sum_j e^{1.5 z_j} = 0.3110
    assert lid[0] == pytest.approx(math.log2(6 * 0.311015), abs=2e-5)
    assert round(lid[0], 2) == 0.90


@given(closed_set_cases(max_trials=30, max_enrolled=12), st.floats(0.1, 5.0), st.floats(-3, 3), st.integers(1, 7))
def test_tiled_engine_matches_dense_reference(case, slope, intercept, tile_rows):
    scores, true_index = case
    n = scores.shape[1]
    log_prior = np.full(n, -math.log(n))
    for ddof in (0, 1):
        got = lid_from_scores(
            scores, true_index, affine(slope, intercept), log_prior, znorm_ddof=ddof, tile_rows=tile_rows
        )
        want = dense_pipeline(scores, true_index, slope, intercept, log_prior, ddof)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)


@given(closed_set_cases(max_trials=20, max_enrolled=9), st.data())
def test_nonuniform_prior_matches_dense_reference_and_bound(case, data):
    scores, true_index = case
    n = scores.shape[1]
    log_prior = data.draw(log_priors(n))
    llr = 2.0 * dense_znorm(scores, 1) - 0.5
    got = lid_from_llr(llr, log_prior, true_index, tile_rows=3)
    np.testing.assert_allclose(got, dense_lid(llr, log_prior, true_index), rtol=0, atol=1e-10)
    # LID <= -log2 prior(true): the posterior is at most 1
    assert (got <= -log_prior[true_index] / math.log(2) + 1e-12).all()


@given(closed_set_cases(max_enrolled=10))
def test_lid_bounded_by_log2_n_under_uniform_prior(case):
    scores, true_index = case
    n = scores.shape[1]
    lid = lid_from_scores(scores, true_index, affine(50.0, 0.0), np.full(n, -math.log(n)))
    assert (lid <= math.log2(n) + 1e-12).all()


@given(closed_set_cases(), st.data())
def test_permuting_enrolled_columns_leaves_lid_unchanged(case, data):
    scores, true_index = case
    n = scores.shape[1]
    log_prior = data.draw(log_priors(n))
    perm = np.array(data.draw(st.permutations(range(n))))
    inverse = np.argsort(perm)
    base = lid_from_scores(scores, true_index, affine(1.7, 0.3), log_prior)
    permuted = lid_from_scores(scores[:, perm], inverse[true_index], affine(1.7, 0.3), log_prior[perm])
    np.testing.assert_allclose(permuted, base, rtol=0, atol=1e-11)


@given(closed_set_cases(), st.data())
def test_per_row_positive_affine_transform_leaves_lid_unchanged(case, data):
    scores, true_index = case
    t = scores.shape[0]
    scale = np.array(data.draw(st.lists(st.floats(0.1, 10.0), min_size=t, max_size=t)))
    shift = np.array(data.draw(st.lists(st.floats(-100.0, 100.0), min_size=t, max_size=t)))
    n = scores.shape[1]
    log_prior = np.full(n, -math.log(n))
    base = lid_from_scores(scores, true_index, affine(2.0, 0.0), log_prior)
    moved = lid_from_scores(scores * scale[:, None] + shift[:, None], true_index, affine(2.0, 0.0), log_prior)
    np.testing.assert_allclose(moved, base, rtol=0, atol=1e-8)


@given(closed_set_cases(), st.floats(-50, 50))
def test_constant_llr_offset_cancels_under_uniform_prior(case, offset):
    scores, true_index = case
    n = scores.shape[1]
    llr = 1.3 * dense_znorm(scores, 1)
    log_prior = np.full(n, -math.log(n))
    np.testing.assert_allclose(
        lid_from_llr(llr + offset, log_prior, true_index), lid_from_llr(llr, log_prior, true_index), rtol=0, atol=1e-10
    )


@pytest.mark.slow
@given(st.data(), st.integers(1, 30), st.integers(2, 40), st.integers(1, 7))
def test_constant_llr_rows_give_exactly_zero_lid_under_any_prior(data, n_trials, n_enrolled, tile_rows):
    # rows drawn constant (each its own value) or free, mixed in one matrix; a constant
    # row leaves the posterior at the prior, so its LID is 0 in exact arithmetic
    kind, log_prior = data.draw(priors_of_every_kind(n_enrolled), label="prior")
    constant = data.draw(arrays(np.bool_, n_trials), label="constant rows")
    values = data.draw(arrays(np.float64, n_trials, elements=st.floats(-1e3, 1e3)), label="constants")
    free = data.draw(arrays(np.float64, (n_trials, n_enrolled), elements=st.floats(-30, 30)), label="free rows")
    true_index = data.draw(arrays(np.intp, n_trials, elements=st.integers(0, n_enrolled - 1)), label="true_index")
    llr = np.where(constant[:, None], values[:, None], free)
    lid = lid_from_llr(llr, log_prior, true_index, tile_rows=tile_rows)
    flat = llr.max(axis=1) == llr.min(axis=1)  # the drawn constant rows, and free rows that came out flat
    assert (lid[flat] == 0.0).all() and not np.signbit(lid[flat]).any(), (kind, lid[flat])
    want = np.where(flat, 0.0, dense_lid(llr, log_prior, true_index))  # no evidence: exactly 0 (DESIGN.md)
    np.testing.assert_allclose(lid[~flat], want[~flat], rtol=0, atol=1e-10)
    if not (np.abs(want[~flat]) < 1e-9).any():  # PDR counts LID > 0 only: the flat rows are in NDR
        summary = lid_summary(lid)
        assert (summary["pdr"], summary["ndr"]) == (np.mean(want > 0), np.mean(want <= 0)), kind
    if flat.all():
        summary = lid_summary(lid)
        assert summary["alid"] == 0.0 and summary["pdr"] == 0.0 and summary["ndr"] == 1.0
        assert summary["lid_max"] == summary["lid_min"] == summary["lid_neg"] == 0.0
        assert math.isnan(summary["lid_pos"])


@given(closed_set_cases(max_trials=20), st.data(), st.floats(-50, 50), st.integers(1, 7))
def test_slope_zero_calibration_gives_zero_lid_and_no_disclosure(case, data, intercept, tile_rows):
    # a calibrator that found no evidence (Logistic's fallback, Temperature at a = 0)
    scores, true_index = case
    kind, log_prior = data.draw(priors_of_every_kind(scores.shape[1]), label="prior")
    lid = lid_from_scores(scores, true_index, affine(0.0, intercept), log_prior, tile_rows=tile_rows)
    assert np.array_equal(lid, np.zeros(len(lid))) and not np.signbit(lid).any(), (kind, lid)
    summary = lid_summary(lid)
    assert (summary["alid"], summary["pdr"], summary["ndr"], summary["lid_max"]) == (0.0, 0.0, 1.0, 0.0)


def test_outsider_rows_get_nan_and_others_unaffected():
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(6, 5))
    true_index = np.array([0, -1, 2, 3, -1, 4])
    log_prior = np.full(5, -math.log(5))
    lid = lid_from_scores(scores, true_index, affine(1.0, 0.0), log_prior, tile_rows=2)
    assert np.isnan(lid[[1, 4]]).all()
    keep = true_index >= 0
    np.testing.assert_allclose(
        lid[keep], dense_pipeline(scores[keep], true_index[keep], 1.0, 0.0, log_prior), atol=1e-12
    )


def test_pair_llr_buffers_hold_every_mated_and_non_mated_pair():
    rng = np.random.default_rng(4)
    scores = rng.normal(size=(7, 4))
    true_index = np.array([0, 1, -1, 3, 2, 2, 0])
    keep = true_index >= 0
    mated, non_mated = np.empty(keep.sum()), np.empty(keep.sum() * 3)
    lid_from_scores(
        scores, true_index, affine(2.0, 1.0), np.full(4, -math.log(4)), tile_rows=3, pair_llr_out=(mated, non_mated)
    )
    llr = 2.0 * dense_znorm(scores[keep], 1) + 1.0
    mask = np.zeros(llr.shape, bool)
    mask[np.arange(keep.sum()), true_index[keep]] = True
    np.testing.assert_allclose(mated, llr[mask], atol=1e-12)
    np.testing.assert_allclose(non_mated, llr[~mask], atol=1e-12)


def test_log_posterior_rows_are_normalised():
    llr = np.random.default_rng(0).normal(size=(5, 7)) * 10
    lp = log_posterior(llr, np.full(7, -math.log(7)))
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, atol=1e-12)


def test_znorm_matches_scipy_zscore():
    from scipy.stats import zscore

    scores = np.random.default_rng(1).normal(size=(9, 6)) * 3 + 2
    for ddof in (0, 1):
        np.testing.assert_allclose(row_znorm(scores, ddof), zscore(scores, axis=1, ddof=ddof), atol=1e-12)


def test_znorm_names_constant_rows_and_rejects_bad_ddof():
    scores = np.array([[1.0, 2.0, 3.0], [4.0, 4.0, 4.0], [0.0, 0.0, 0.0]])
    with pytest.raises(InputError, match=r"2 trials whose scores are all equal: 'b', 'c'"):
        row_znorm(scores, 1, row_names=["a", "b", "c"])
    with pytest.raises(InputError, match="ddof must be 0"):
        row_znorm(scores[:1], 2)


def test_unnormalised_prior_and_non_finite_llr_are_rejected():
    with pytest.raises(InputError, match="normalised"):
        lid_from_llr(np.zeros((2, 3)), np.zeros(3), np.array([0, 1]))
    llr = np.zeros((2, 3))
    llr[1, 2] = np.inf
    with pytest.raises(InputError, match="row 1"):
        lid_from_llr(llr, np.full(3, -math.log(3)), np.array([0, 1]))
