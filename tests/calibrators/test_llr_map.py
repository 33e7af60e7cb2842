"""Each calibrator's map is written once (``llr_map``); ``llr`` is derived from it.

The oracles here are the calibrators' formulas re-written from their fitted attributes
(not the library's map records), evaluated in float64 numpy on drawn scores.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import log_ndtr

from lidframe import NotFittedError, registry
from lidframe.calibrators import Calibrator
from lidframe.calibrators.base import check_fit_input
from lidframe.calibrators.maps import CallbackMap, llr_map_of
from lidframe.core.znorm import row_znorm
from lidframe.testing import check_calibrator
from tests.strategies import closed_set_cases, dev_pairs

SPECS = [
    "logistic",
    "logistic?weighting=prior",
    "isotonic",
    "isotonic?laplace=false",
    "beta",
    "gaussian",
    "gaussian?shared_variance=false",
    "temperature",
    "identity",
]


def _oracle(cal, z):
    """The calibrator's LLR written out from its fitted attributes (nats)."""
    name = cal.name
    if name == "logistic":
        return cal.slope_ * z + cal.intercept_
    if name == "temperature":
        return cal.slope_ * z
    if name == "identity":
        return z.copy()
    if name == "isotonic":
        return np.interp(z, cal.knot_z_, cal.knot_llr_)
    if name == "beta":
        return cal.a_ * log_ndtr(z) - cal.b_ * log_ndtr(-z) + cal.c_ - cal.prior_log_odds_
    if name == "gaussian":
        c = z
        if cal.quad_ > 0:
            c = np.maximum(z, cal.vertex_)
        elif cal.quad_ < 0:
            c = np.minimum(z, cal.vertex_)
        return (cal.quad_ * c + cal.lin_) * c + cal.const_
    raise AssertionError(name)


def _fitted(spec, pairs, dev_rows):
    """*spec* fitted on drawn dev data: the (T, N) rows for a row-fitted calibrator, else the pairs."""
    cal = registry.create("calibrator", spec)
    if hasattr(cal, "fit_rows"):
        scores, true_index = dev_rows
        return cal.fit_rows(row_znorm(scores), true_index)
    return cal.fit(*pairs)


z_arrays = arrays(
    np.float64,
    st.tuples(st.integers(1, 6), st.integers(1, 7)),
    elements=st.floats(-40.0, 40.0, allow_nan=False, allow_infinity=False, width=64),
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    spec=st.sampled_from(SPECS),
    pairs=dev_pairs(),
    dev_rows=closed_set_cases(max_trials=30, max_enrolled=10),
    z=z_arrays,
)
def test_llr_is_llr_map_on_numpy_and_equals_the_written_out_formula(spec, pairs, dev_rows, z):
    cal = _fitted(spec, pairs, dev_rows)
    form = cal.llr_map()
    assert not isinstance(form, CallbackMap), spec
    assert type(llr_map_of(cal)) is type(form)
    kept = z.copy()
    llr = cal.llr(z)
    assert isinstance(llr, np.ndarray) and llr.dtype == np.float64 and llr.shape == z.shape
    np.testing.assert_array_equal(llr, form(z))
    np.testing.assert_array_equal(z, kept)  # input untouched
    np.testing.assert_allclose(llr, _oracle(cal, z), rtol=1e-13, atol=1e-12)
    # lists and other dtypes go through a float64 copy
    np.testing.assert_array_equal(cal.llr(z.astype(np.float32).tolist()), cal.llr(z.astype(np.float32)))


@pytest.mark.parametrize("spec", SPECS)
def test_unfitted_llr_and_llr_map_raise(spec):
    cal = registry.create("calibrator", spec)
    with pytest.raises(NotFittedError):
        cal.llr(np.zeros(3))
    with pytest.raises(NotFittedError):
        cal.llr_map()


class OnlyLlr(Calibrator):
    """A plugin with no closed form: it writes ``llr`` only."""

    name = "only-llr"
    _fitted_attributes = ("cut_",)

    def __init__(self, *, width: float = 1.0):
        self.width = width

    def fit(self, scores, labels, *, sample_weight=None):
        scores, labels, _ = check_fit_input(scores, labels, sample_weight)
        self.cut_ = float(np.median(scores[labels == 1]))
        return self

    def llr(self, scores):
        self._check_fitted()
        return np.tanh((np.asarray(scores, dtype=np.float64) - self.cut_) / self.width)


class OnlyMap(Calibrator):
    """A plugin that writes its closed form only: ``llr`` comes from the base class."""

    name = "only-map"
    _fitted_attributes = ("slope_",)

    def __init__(self):
        pass

    def fit(self, scores, labels, *, sample_weight=None):
        scores, labels, _ = check_fit_input(scores, labels, sample_weight)
        self.slope_ = float(scores[labels == 1].mean() - scores[labels == 0].mean())
        return self

    def llr_map(self):
        from lidframe.calibrators.maps import AffineMap

        self._check_fitted()
        return AffineMap(self.slope_, 0.0)


class Neither(Calibrator):
    name = "neither"

    def fit(self, scores, labels, *, sample_weight=None):
        return self


def test_plugin_with_llr_only_gets_a_callback_map_and_conforms():
    check_calibrator(OnlyLlr(width=2.0))
    cal = OnlyLlr(width=2.0).fit(np.r_[np.linspace(0, 3, 20), np.linspace(-3, 1, 80)], np.r_[np.ones(20), np.zeros(80)])
    form = cal.llr_map()
    assert isinstance(form, CallbackMap) and isinstance(llr_map_of(cal), CallbackMap)
    z = np.linspace(-5, 5, 41)
    np.testing.assert_array_equal(form(z), np.tanh((z - cal.cut_) / 2.0))
    with pytest.raises(NotFittedError):
        OnlyLlr().llr_map()


def test_plugin_with_llr_map_only_gets_llr_and_conforms():
    check_calibrator(OnlyMap())
    cal = OnlyMap().fit(np.r_[np.linspace(0, 3, 20), np.linspace(-3, 1, 80)], np.r_[np.ones(20), np.zeros(80)])
    z = np.linspace(-5, 5, 41)
    np.testing.assert_array_equal(cal.llr(z), cal.slope_ * z)


def test_a_calibrator_with_neither_hook_says_so():
    cal = Neither().fit(np.zeros(2), np.array([0, 1]))
    with pytest.raises(NotImplementedError, match="llr_map"):
        cal.llr(np.zeros(2))
    with pytest.raises(NotImplementedError, match="llr_map"):
        cal.llr_map()


def test_conformance_catches_an_llr_override_that_leaves_an_inherited_map_behind():
    from lidframe.calibrators import Logistic
    from lidframe.testing import ConformanceError

    class Doubled(Logistic):
        """Overrides llr only: the engines would still use Logistic's AffineMap."""

        def llr(self, scores):
            return 2.0 * super().llr(scores)

    with pytest.raises(ConformanceError, match="llr_map\\(\\) and llr\\(\\) differ"):
        check_calibrator(Doubled(standard_errors=False))
