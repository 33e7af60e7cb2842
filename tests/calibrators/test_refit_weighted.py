"""``refit_weighted``: the warm-started refit that the dev-resampling bootstrap calls per resample (issue 41).

Its answer must be the fit of the same weighted pairs by ``fit`` (scikit-learn's L-BFGS and
Newton polish for Logistic, L-BFGS-B for Beta), from any start, with the original left alone.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe.calibrators import Beta, Logistic
from lidframe.registry import capabilities_of


def _pairs(seed: int, n: int = 3000, separation: float = 2.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(z, labels, integer weights): one mated pair in 20, and weights as a bootstrap resample's counts."""
    rng = np.random.default_rng(seed)
    labels = (np.arange(n) % 20 == 0).astype(np.int8)
    z = rng.normal(size=n) + separation * labels
    return z, labels, rng.poisson(1.0, n).astype(np.float64)


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    separation=st.sampled_from([0.5, 2.0, 4.0]),
    params=st.sampled_from([{}, {"weighting": "prior"}, {"C": None}, {"C": 0.01, "weighting": "prior"}]),
)
def test_logistic_refit_weighted_is_the_fit_of_the_weighted_pairs(seed, separation, params):
    z, labels, weights = _pairs(seed, separation=separation)
    fitted = Logistic(**params).fit(z, labels)
    before = fitted.to_dict()
    refit = fitted.refit_weighted(z, labels, weights)
    want = Logistic(**params, standard_errors=False).fit(z, labels, sample_weight=weights)
    assert refit.slope_ == pytest.approx(want.slope_, abs=1e-7)
    assert refit.intercept_ == pytest.approx(want.intercept_, abs=1e-7)
    assert refit.n_mated_ == want.n_mated_ and np.isnan(refit.slope_se_)
    assert fitted.to_dict() == before  # the original is not changed


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beta_refit_weighted_is_the_fit_of_the_weighted_pairs(seed):
    z, labels, weights = _pairs(seed)
    fitted = Beta().fit(z, labels)
    refit = fitted.refit_weighted(z, labels, weights)
    want = Beta().fit(z, labels, sample_weight=weights)
    grid = np.linspace(-4, 6, 41)
    np.testing.assert_allclose(refit.llr(grid), want.llr(grid), atol=1e-6)
    assert refit.prior_log_odds_ == pytest.approx(want.prior_log_odds_, abs=1e-12)


def test_a_logistic_refit_without_an_optimum_falls_back_to_fit():
    """Separated classes without a penalty have no finite optimum: Newton does not converge, ``fit`` answers."""
    z = np.r_[np.linspace(-3, -1, 40), np.linspace(1, 3, 4)]
    labels = np.r_[np.zeros(40), np.ones(4)].astype(np.int8)
    fitted = Logistic(C=None, standard_errors=False).fit(z, labels)
    refit = fitted.refit_weighted(z, labels, np.ones(z.size))
    want = Logistic(C=None, standard_errors=False).fit(z, labels, sample_weight=np.ones(z.size))
    assert refit.slope_ == pytest.approx(want.slope_, rel=1e-9)


def test_refit_weighted_is_a_declared_capability():
    assert callable(capabilities_of("calibrator", Logistic()).refit_weighted)
    assert callable(capabilities_of("calibrator", Beta()).refit_weighted)
    from lidframe.calibrators import Isotonic

    assert capabilities_of("calibrator", Isotonic()).refit_weighted is None
