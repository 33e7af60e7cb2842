"""The row z-norm: a row's numbers do not depend on the rows tiled with it, and equal rows are found as before.

NumPy's ``einsum`` sums a lone row of more than 8,192 values in another order than the same
row among others, so a tile of one row (``tile_rows=1``, the last tile of a matrix, a
single trial) got other last bits than the row has in any other tile:
:func:`lidframe.core.znorm.row_sum_of_squares` sums it as among others, checked here against
the dense float64 reference of ``test_affine_in_place`` (whole matrices).  And
:func:`~lidframe.core.znorm.row_znorm_parts` reads a row's smallest score only where its std
and mean leave open whether its scores are all equal (:func:`~lidframe.core.znorm.surely_varying`):
checked against the rule written out with every row's largest |score|.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lidframe.calibrators.maps import AffineMap
from lidframe.core.lid import lid_from_scores
from lidframe.core.znorm import constant_std, row_sum_of_squares, row_znorm_parts, surely_varying
from lidframe.errors import InputError
from tests.core.test_affine_in_place import dense_reference, run_engine, same_bits


@pytest.mark.parametrize("n_enrolled", [8193, 20001])
def test_a_row_has_the_same_bits_in_a_tile_of_one_row_as_in_any_other(n_enrolled):
    rng = np.random.default_rng(n_enrolled)
    scores = rng.standard_normal((5, n_enrolled)) * 7.0 + 3.0
    true_index = np.array([0, 5, 17, -1, 8000])
    log_prior = np.full(n_enrolled, -math.log(n_enrolled))
    form = AffineMap(1.7, -0.4)
    want = dense_reference(scores, true_index, form.slope, form.intercept, log_prior)
    for tile_rows in (1, 2, 5):
        for threads in (1, 2):
            got = run_engine(scores, true_index, form, log_prior, tile_rows=tile_rows, threads=threads)
            for name, a, b in zip(("lid", "log_evidence", "log_top"), got[:3], want, strict=True):
                assert same_bits(a, b), (name, tile_rows, threads)
    # and a single trial, scored alone
    alone = lid_from_scores(scores[:1], true_index[:1], form, log_prior)
    assert same_bits(alone, want[0][:1])


def test_a_lone_row_sums_its_squares_as_among_others():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((4, 9000))
    together = np.einsum("ij,ij->i", z, z)
    assert [row_sum_of_squares(z[i : i + 1])[0] for i in range(4)] == together.tolist()


def old_rule(rows: np.ndarray, ddof: int) -> np.ndarray:
    """Rows of equal scores as the z-norm found them before: std <= 16 ulps of every row's largest |score|."""
    z = rows - rows.mean(axis=1, keepdims=True)
    std = np.sqrt(np.einsum("ij,ij->i", z, z) / (rows.shape[1] - ddof))
    return std <= 16.0 * np.finfo(np.float64).eps * np.maximum(rows.max(axis=1), -rows.min(axis=1))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.integers(2, 30),
    st.lists(st.tuples(st.integers(-320, 300), st.one_of(st.integers(-17, -13), st.integers(-40, 5))), min_size=2),
    st.data(),
    st.sampled_from([0, 1]),
)
def test_the_z_norm_refuses_the_rows_it_refused_before(n_enrolled, exponents, data, ddof):
    rows = []
    for offset_exponent, relative_exponent in exponents:
        unit = data.draw(arrays(np.float64, n_enrolled, elements=st.floats(-1.0, 1.0)))
        with np.errstate(all="ignore"):
            rows.append(10.0**offset_exponent + unit * 10.0 ** (offset_exponent + relative_exponent))
    scores = np.array(rows)
    with np.errstate(all="ignore"):
        refused = np.flatnonzero(old_rule(scores, ddof))
        if refused.size:
            with pytest.raises(InputError, match=f"z-norm is undefined for {refused.size} rows"):
                row_znorm_parts(scores, ddof)
        else:
            row_znorm_parts(scores, ddof)


# ---------------------------------------------------------------- deciding "not constant" without the smallest score


def row_statistics(rows: np.ndarray, ddof: int):
    """(std, mean, exact largest |score|) of each row, computed as row_znorm_parts computes them."""
    mean = rows.mean(axis=1, keepdims=True)
    z = rows - mean
    std = np.sqrt(row_sum_of_squares(z) / (rows.shape[1] - ddof))
    return std, mean[:, 0], np.maximum(rows.max(axis=1), -rows.min(axis=1))


@settings(max_examples=400, deadline=None)
@given(
    st.integers(2, 40),
    st.integers(-320, 300),
    st.one_of(st.integers(-17, -13), st.integers(-40, 5)),  # spread / offset about the threshold (2^-48), or any
    st.data(),
    st.sampled_from([0, 1]),
)
def test_surely_varying_rows_are_not_constant(n_enrolled, offset_exponent, relative_exponent, data, ddof):
    """Where the bound decides, the row's exact largest |score| agrees: such a row is not constant."""
    unit = data.draw(arrays(np.float64, (3, n_enrolled), elements=st.floats(-1.0, 1.0)))
    sign = data.draw(st.sampled_from([1.0, -1.0]))
    with np.errstate(all="ignore"):
        rows = sign * 10.0**offset_exponent + unit * 10.0 ** (offset_exponent + relative_exponent)
        rows[1, : data.draw(st.integers(0, n_enrolled))] = data.draw(st.sampled_from([0.0, 5e-324, 1e308, math.nan]))
        std, mean, scale = row_statistics(rows, ddof)
        decided = surely_varying(std, mean, n_enrolled)
        assert not (decided & constant_std(std, scale)).any(), (rows, std, mean, scale)


def test_surely_varying_decides_ordinary_rows_and_leaves_the_rest_open():
    with np.errstate(all="ignore"):
        rows = np.array(
            [
                [0.1, 0.5, -0.3, 0.2],  # ordinary: decided
                [1e16, 1e16 + 2.0, 1e16, 1e16 + 2.0],  # std ~ 1e-16 of the scores: open
                [3.0, 3.0, 3.0, 3.0],  # constant: open
                [1e-160, -1e-160, 0.0, 1e-160],  # squares underflow: open
                [1e300, -1e300, 1e300, 0.0],  # squares overflow: open
                [math.nan, 1.0, 2.0, 3.0],  # open
            ]
        )
        std, mean, _ = row_statistics(rows, 1)
        assert surely_varying(std, mean, 4).tolist() == [True, False, False, False, False, False]


def test_the_z_scores_may_not_overwrite_the_scores_they_are_read_from():
    # the smallest scores of the undecided rows are read after z is written: an out over the scores would
    # decide from z-scores
    scores = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]])
    with pytest.raises(ValueError, match="must not share memory"):
        row_znorm_parts(scores, 1, out=scores)
