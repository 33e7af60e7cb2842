"""The Logistic calibrator against an independent maximum-likelihood fit (scipy)."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.base import clone

from lidframe import InputError, NotFittedError
from lidframe.calibrators import Logistic


def dev_pairs(seed=0, n_trials=300, n_enrolled=8, separation=1.5):
    rng = np.random.default_rng(seed)
    scores = np.r_[rng.normal(separation, 1.0, n_trials), rng.normal(0.0, 1.0, n_trials * (n_enrolled - 1))]
    labels = np.r_[np.ones(n_trials), np.zeros(n_trials * (n_enrolled - 1))]
    return scores, labels


def reference_fit(z, y, weights, C):
    """Penalised weighted log-loss of scikit-learn's LogisticRegression, minimised by BFGS."""

    def loss(theta):
        w, b = theta
        margin = w * z + b
        nll = np.sum(weights * (y * np.logaddexp(0, -margin) + (1 - y) * np.logaddexp(0, margin)))
        return nll + (0.0 if C is None else 0.5 * w * w / C)

    return minimize(loss, x0=[0.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x


@pytest.mark.parametrize("C", [1.0, 0.01, None])
def test_balanced_matches_reference(C):
    z, y = dev_pairs()
    n, n1 = y.size, y.sum()
    weights = np.where(y == 1, n / (2 * n1), n / (2 * (n - n1)))  # class_weight="balanced"
    w, b = reference_fit(z, y, weights, C)
    cal = Logistic(C=C).fit(z, y)
    assert cal.slope_ == pytest.approx(w, abs=1e-4)
    assert cal.intercept_ == pytest.approx(b, abs=1e-4)
    np.testing.assert_allclose(cal.llr(np.array([-1.0, 0.0, 2.0])), w * np.array([-1.0, 0.0, 2.0]) + b, atol=3e-4)


def test_prior_weighting_subtracts_training_prior_log_odds():
    z, y = dev_pairs(seed=1)
    w, b = reference_fit(z, y, np.ones_like(y), 1.0)
    cal = Logistic(weighting="prior").fit(z, y)
    assert cal.slope_ == pytest.approx(w, abs=1e-4)
    assert cal.intercept_ == pytest.approx(b - math.log(y.sum() / (y.size - y.sum())), abs=1e-4)


def test_llr_recovers_gaussian_closed_form():
    # mated ~ N(mu, 1), non-mated ~ N(0, 1): the true LLR is mu z - mu^2 / 2
    mu = 2.0
    z, y = dev_pairs(seed=2, n_trials=20000, n_enrolled=5, separation=mu)
    cal = Logistic(C=None).fit(z, y)
    assert cal.slope_ == pytest.approx(mu, rel=0.03)
    assert cal.intercept_ == pytest.approx(-mu * mu / 2, abs=0.06)


def test_sklearn_conventions_and_json_round_trip():
    cal = Logistic(weighting="prior", C=0.5)
    assert cal.get_params() == {
        "C": 0.5,
        "standard_errors": "auto",
        "weighting": "prior",
        "max_pairs": 1_000_000,
        "bins": 65536,
    }
    with pytest.raises(NotFittedError):
        cal.llr(np.zeros(3))
    with pytest.raises(TypeError):
        Logistic("balanced")  # keyword-only
    z, y = dev_pairs(seed=3)
    cal.fit(z, y)
    copy = clone(cal)
    assert copy.get_params() == cal.get_params() and not hasattr(copy, "slope_")
    record = json.loads(json.dumps(cal.to_dict()))
    back = Logistic.from_dict(record)
    grid = np.linspace(-4, 4, 9)
    np.testing.assert_array_equal(back.llr(grid), cal.llr(grid))
    assert np.all(np.diff(cal.llr(grid)) >= 0)


@pytest.mark.parametrize(
    "scores, labels, message",
    [
        (np.zeros((2, 2)), np.zeros(4), "1-D"),
        (np.zeros(3), np.zeros(2), "labels have shape"),
        (np.array([0.0, np.nan]), np.array([0, 1]), "finite"),
        (np.array([0.0, 1.0]), np.array([0, 2]), "index 1 is 2"),
        (np.array([0.0, 1.0]), np.array([0, 0]), "both mated and non-mated"),
    ],
)
def test_fit_input_errors(scores, labels, message):
    with pytest.raises(InputError, match=message):
        Logistic().fit(scores, labels)


def test_bad_params_are_reported_at_fit():
    z, y = dev_pairs()
    with pytest.raises(InputError, match="weighting must be one of"):
        Logistic(weighting="odd").fit(z, y)
    with pytest.raises(InputError, match="C must be a positive number"):
        Logistic(C=-1).fit(z, y)


def test_fitted_intercept_cancels_in_lid_under_any_prior():
    # the intercept adds one constant to a whole LLR row, which cancels in the posterior
    # softmax whatever the prior: checked against the dense textbook formula with the
    # intercept dropped, for a uniform, a watch-list and a skewed explicit prior
    from lidframe import WatchList
    from lidframe.core.lid import lid_from_llr
    from tests.reference import dense_lid, dense_znorm

    cal = Logistic(weighting="prior").fit(*dev_pairs(seed=3))
    assert abs(cal.intercept_) > 1.0  # a real offset: ln(N_mated / N_non_mated) is in it
    rng = np.random.default_rng(4)
    n_enrolled = 6
    z = dense_znorm(rng.normal(size=(40, n_enrolled)), 1)
    true_index = rng.integers(0, n_enrolled, 40)
    enrolled = [f"s{j}" for j in range(n_enrolled)]
    explicit = np.log(np.array([0.6, 0.2, 0.1, 0.05, 0.03, 0.02]))
    for log_prior in (
        np.full(n_enrolled, -math.log(n_enrolled)),
        WatchList(enrolled[:2], 10.0).log_prior(enrolled),
        explicit,
    ):
        with_intercept = lid_from_llr(cal.llr(z), log_prior, true_index)
        np.testing.assert_allclose(with_intercept, dense_lid(cal.slope_ * z, log_prior, true_index), rtol=0, atol=1e-10)


@st.composite
def weighted_dev_sets(draw):
    """(scores, labels, sample_weight or None): scores on a coarse grid (ties), classes that overlap."""
    n_mated, n_non_mated = draw(st.integers(2, 40)), draw(st.integers(2, 200))
    grid = st.integers(-64, 64).map(lambda k: k / 8.0)
    mated = draw(st.lists(grid, min_size=n_mated, max_size=n_mated))
    non_mated = draw(st.lists(grid, min_size=n_non_mated, max_size=n_non_mated))
    scores = np.array([*mated, min(mated) - 1.0, *non_mated, max(mated) + 1.0])  # each class spans the other
    labels = np.r_[np.ones(n_mated + 1), np.zeros(n_non_mated + 1)]
    weights = draw(st.one_of(st.none(), st.lists(st.integers(1, 300), min_size=scores.size, max_size=scores.size)))
    return scores, labels, None if weights is None else np.array(weights, dtype=np.float64)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(weighted_dev_sets(), st.sampled_from([1.0, 0.1, None]), st.sampled_from(["balanced", "prior"]))
def test_the_fit_is_where_the_objectives_gradient_vanishes(dev, C, weighting):
    """The fitted (intercept, slope) zero the gradient of the penalised weighted log-loss, to ~1e-10 of its scale.

    scikit-learn's L-BFGS alone stops on a relative decrease of the objective and left heavily
    weighted rows ~1e-7 from the optimum; the gradient is written out here.
    """
    scores, labels, sample_weight = dev
    cal = Logistic(C=C, weighting=weighting, max_pairs=None, standard_errors=False)
    cal.fit(scores, labels, sample_weight=sample_weight)
    if cal.clamped_:
        return
    weights = np.ones_like(scores) if sample_weight is None else sample_weight.copy()
    if weighting == "balanced":  # each class's total weight made half of the whole
        total = weights.sum()
        class_totals = {value: weights[labels == value].sum() for value in (0.0, 1.0)}
        for value, class_total in class_totals.items():
            weights[labels == value] *= total / (2.0 * class_total)
    intercept = cal.intercept_
    if weighting == "prior":  # the fit's own intercept, before the prior log-odds came off
        w_mated, w_non_mated = (float(np.sum(np.where(labels == v, weights, 0.0))) for v in (1.0, 0.0))
        intercept += math.log(w_mated / w_non_mated)
    residual = weights * (1.0 / (1.0 + np.exp(-(cal.slope_ * scores + intercept))) - labels)
    penalty = 0.0 if C is None else cal.slope_ / C
    assert abs(residual.sum()) <= 1e-10 * weights.sum()
    assert abs((residual * scores).sum() + penalty) <= 1e-10 * (np.sum(weights * np.abs(scores)) + abs(penalty))
