"""The one true-index rule (lidframe.data.scoreset.check_true_index) and the callers that apply it."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe.calibrators import Temperature
from lidframe.calibrators.maps import AffineMap
from lidframe.core.engine import Engine
from lidframe.core.lid import lid_from_llr
from lidframe.core.streaming import lid_from_embeddings
from lidframe.data.scoreset import OUTSIDER, check_true_index
from lidframe.errors import InputError


def rule_accepts(values, n_enrolled: int, allow_outsider: bool) -> bool:
    """The documented rule, written out element by element."""
    return all(0 <= v < n_enrolled or (allow_outsider and v == -1) for v in values)


@st.composite
def index_cases(draw):
    n_trials = draw(st.integers(1, 12))
    n_enrolled = draw(st.integers(2, 9))
    values = draw(st.lists(st.integers(-3, n_enrolled + 2), min_size=n_trials, max_size=n_trials))
    dtype = draw(st.sampled_from([np.int64, np.int32, np.intp, np.int8]))
    return np.array(values, dtype=dtype), n_enrolled, draw(st.booleans())


@given(index_cases())
def test_check_true_index_follows_the_rule(case):
    values, n_enrolled, allow_outsider = case
    if rule_accepts(values.tolist(), n_enrolled, allow_outsider):
        out = check_true_index(values, values.size, n_enrolled, allow_outsider=allow_outsider)
        assert out.dtype == np.intp
        assert out.tolist() == values.tolist()
    else:
        first_bad = next(i for i, v in enumerate(values.tolist()) if not rule_accepts([v], n_enrolled, allow_outsider))
        with pytest.raises(InputError, match=rf"true_index of row {first_bad} is {values[first_bad]}; "):
            check_true_index(values, values.size, n_enrolled, allow_outsider=allow_outsider)


@given(st.integers(0, 5), st.booleans())
def test_shape_and_dtype_are_checked(n_trials, allow_outsider):
    with pytest.raises(InputError, match="integer array of shape"):
        check_true_index(np.zeros(n_trials + 1, dtype=int), n_trials, 3, allow_outsider=allow_outsider)
    with pytest.raises(InputError, match="integer array of shape"):
        check_true_index(np.zeros(n_trials), n_trials, 3, allow_outsider=allow_outsider)  # float
    with pytest.raises(InputError, match="integer array of shape"):
        check_true_index(np.zeros(n_trials, dtype=bool), n_trials, 3, allow_outsider=allow_outsider)


def test_unsigned_indices_are_accepted():
    out = check_true_index(np.array([0, 2], dtype=np.uint16), 2, 3, allow_outsider=False)
    assert out.tolist() == [0, 2]


def test_each_caller_applies_its_side_of_the_rule():
    llr = np.array([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 1.0, 3.0]])
    log_prior = np.full(3, -math.log(3))
    # LID engines on score matrices: -1 is an outsider trial (NaN), anything below is an error
    lid = lid_from_llr(llr, log_prior, np.array([0, OUTSIDER, 2]))
    assert np.isnan(lid[1]) and np.isfinite(lid[[0, 2]]).all()
    with pytest.raises(InputError, match="true_index of row 1 is -2"):
        lid_from_llr(llr, log_prior, np.array([0, -2, 2]))
    # closed-set consumers: the streaming engine and fit_rows reject -1
    rng = np.random.default_rng(0)
    enrol = rng.normal(size=(3, 4))
    with pytest.raises(InputError, match="outsider"):
        lid_from_embeddings(
            enrol + 0.1, enrol, np.array([0, OUTSIDER, 2]), AffineMap(1.0), log_prior, engine=Engine(device="cpu")
        )
    with pytest.raises(InputError, match="true_index of row 1 is -1; expected a column in"):
        Temperature().fit_rows(llr, np.array([0, OUTSIDER, 2]))
