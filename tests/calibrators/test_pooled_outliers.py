"""Pooled calibration fits with outliers in the dev scores, against fits on every pair computed independently.

Above ``max_pairs`` dev pairs the calibrators fit on pairs pooled by (score bin, class)
(:func:`lidframe.calibrators.base.group_pairs`).  Equal bins over [min, max] let one
score of 1e5 widen every bin of the bulk 10^4-fold: the Logistic slope moved by 13.5 %
on 1.2 M pairs (issue 27).  Here the pooled fits, with such outliers injected, are held
to the fit on every pair:

* Logistic: slope and intercept within 1e-3 relative of statsmodels' unpenalised,
  class-balanced binomial GLM on the raw pairs (on 1.2 M pairs: of Newton's method
  written here, checked against statsmodels on the drawn sets);
* Beta: the pooled parameters within 1e-3 of the fit on every pair, and their
  log-likelihood on every pair (computed here) no worse than that of a bounded
  maximum-likelihood fit written here (Newton's method on every active set of a, b >= 0);
* Isotonic: the PAV of the pooled pairs is scikit-learn's PAV of the pairs moved to
  their group means, grouped here by the documented rule (core range between the
  (k + 1)-th smallest and largest score, asinh bins, tails single), and on a
  1.2 M-pair dev set its map is the one of every pair to 1e-3 (dev Cllr, relative).
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import log_expit, log_ndtr
from sklearn.isotonic import IsotonicRegression

from lidframe.calibrators import Beta, Isotonic, Logistic
from tests.calibrators.test_large_dev import documented_groups, moved_to_group_means

statsmodels = pytest.importorskip("statsmodels.api")

OUTLIER_VALUES = (1e5, -1e5, 5e4, -3e4, 1e3, -2e3)


def dev_matrix(seed, n_trials, n_enrolled, shift, kind):
    """Row scores with one mated pair per trial, flattened: (scores, labels)."""
    rng = np.random.default_rng(seed)
    if kind == "heavy":  # Student t with 1 to 3 degrees of freedom: scores out to 1e4 by themselves
        scores = rng.standard_t(int(rng.integers(1, 4)), (n_trials, n_enrolled))
    else:
        scores = rng.standard_normal((n_trials, n_enrolled))
    true_index = rng.integers(0, n_enrolled, n_trials)
    scores[np.arange(n_trials), true_index] += shift
    if kind == "ties":
        scores = np.round(scores * 4) / 4
    elif kind == "few":  # a handful of distinct scores
        scores = np.round(scores)
    labels = np.zeros((n_trials, n_enrolled), dtype=np.int8)
    labels[np.arange(n_trials), true_index] = 1
    return scores.ravel(), labels.ravel()


@st.composite
def dev_sets_with_outliers(draw, consistent=False):
    """(scores, labels, bins): 3,000-24,000 dev pairs of a drawn shape, with 1-6 injected outliers.

    ``consistent``: mated outliers far above, non-mated far below (plus up to two
    moderate ones the other way), for Beta, whose features grow as z^2 / 2.
    """
    n_trials, n_enrolled = draw(st.integers(150, 400)), draw(st.integers(20, 60))
    kind = draw(st.sampled_from(["normal", "heavy", "ties", "few"]))
    seed = draw(st.integers(0, 2**32 - 1))
    scores, labels = dev_matrix(seed, n_trials, n_enrolled, draw(st.floats(1.0, 4.0)), kind)
    n_out = draw(st.integers(1, 6))
    where = draw(st.lists(st.integers(0, scores.size - 1), min_size=n_out, max_size=n_out, unique=True))
    where = np.array(where)
    if consistent:
        scores = np.clip(scores, -50.0, 50.0)
        size = np.array(draw(st.lists(st.sampled_from([1e5, 3e4, 1e3]), min_size=n_out, max_size=n_out)))
        scores[where] = np.where(labels[where] == 1, size, -size)
        against = draw(st.lists(st.integers(0, scores.size - 1), max_size=2, unique=True))
        for i in against:
            scores[i] = (-1.0 if labels[i] == 1 else 1.0) * draw(st.floats(8.0, 30.0))
    else:
        values = draw(st.lists(st.sampled_from(OUTLIER_VALUES), min_size=n_out, max_size=n_out))
        scores[where] = values
        mated = draw(st.lists(st.booleans(), min_size=n_out, max_size=n_out))
        labels[where] = np.array(mated, dtype=np.int8)
    if labels.sum() in (0, labels.size):
        labels[0] = 1 - labels[0]
    return scores, labels, draw(st.sampled_from([256, 1024]))


def newton_fit(design, labels, weights):
    """Coefficients maximising the weighted binomial log-likelihood of logit P(mated) = design @ beta.

    Newton's method written out: exact gradient and Hessian (least-squares solve, for
    features of very different sizes), steps halved until the likelihood rises.

    Returns
    -------
    beta : ndarray, shape (p,)
    log_likelihood : float
    """
    sign = np.where(labels == 1, 1.0, -1.0)

    def log_likelihood(beta):
        return float(np.sum(weights * log_expit(sign * (design @ beta))))

    beta = np.zeros(design.shape[1])
    value = log_likelihood(beta)
    for _ in range(200):
        p = np.exp(log_expit(design @ beta))
        gradient = design.T @ (weights * (labels - p))
        hessian = design.T @ (design * (weights * p * (1.0 - p))[:, None])
        step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        trial = log_likelihood(beta + step)
        for _ in range(60):
            if trial >= value:
                break
            step /= 2
            trial = log_likelihood(beta + step)
        if trial < value:
            break
        beta, value = beta + step, trial
        if np.all(np.abs(step) <= 1e-13 * np.maximum(np.abs(beta), 1e-6)):
            break
    return beta, value


def newton_logistic(scores, labels):
    """(slope, intercept) of the unpenalised fit with class_weight="balanced" (weights n / (2 n_class))."""
    n, n_mated = labels.size, labels.sum()
    weights = np.where(labels == 1, n / (2 * n_mated), n / (2 * (n - n_mated)))
    beta, _ = newton_fit(np.column_stack([scores, np.ones_like(scores)]), labels, weights)
    return float(beta[0]), float(beta[1])


def glm_logistic(scores, labels):
    """(slope, intercept) of the unpenalised binomial GLM with class-balanced weights (statsmodels IRLS)."""
    n, n_mated = labels.size, labels.sum()
    weights = np.where(labels == 1, n / (2 * n_mated), n / (2 * (n - n_mated)))
    design = np.column_stack([np.ones_like(scores), scores])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = statsmodels.GLM(
            labels.astype(np.float64), design, family=statsmodels.families.Binomial(), var_weights=weights
        ).fit(tol=1e-13, maxiter=300)
    return float(fit.params[1]), float(fit.params[0])


def assert_logistic_close(fitted, slope, intercept):
    if slope < -1e-9:  # the exact fit falls: Logistic's documented fallback
        assert fitted.clamped_
        return
    if slope <= 1e-9:  # no sign to hold to
        return
    assert not fitted.clamped_
    assert abs(fitted.slope_ - slope) <= 1e-3 * slope, (fitted.slope_, slope)
    assert abs(fitted.intercept_ - intercept) <= 1e-3 * max(abs(intercept), 1.0), (fitted.intercept_, intercept)


@pytest.mark.slow
@settings(max_examples=25)
@given(dev_sets_with_outliers())
def test_pooled_logistic_with_outliers_is_the_fit_on_every_pair(case):
    scores, labels, bins = case
    pooled = Logistic(C=None, max_pairs=1, bins=bins, standard_errors=False).fit(scores, labels)
    assert pooled.fit_bins_ == bins
    assert_logistic_close(pooled, *glm_logistic(scores, labels))


def test_logistic_moves_the_intercept_when_outliers_flatten_the_slope():
    """Outliers of +-1e5 against the slope's sign hold the slope to ~7e-6: the intercept is then the bulk's.

    On these 6,000 pairs (the shape of a failing Hypothesis example of the test above:
    mated scores of 1e5, 1e5 and -1e5, a non-mated one of -3e4) the class-balanced
    objective's curvature in the slope is ~1e8 times that in the intercept, and
    scikit-learn's L-BFGS stopped on its relative-decrease test with the intercept still at
    its start (-1e-10), where the optimum is -1.66e-3: 0.0021 nats of weighted
    log-likelihood (of -4156) short, a gap float64 resolves ~1e9-fold, so the optimum is
    determined and the fit must reach it -- pooled (256 bins) and on every pair alike.
    """
    scores, labels = dev_matrix(0, 200, 30, 2.0, "normal")
    scores[:4], labels[:4] = [1e5, 1e5, -3e4, -1e5], [1, 1, 0, 1]
    slope, intercept = newton_logistic(scores, labels)
    glm_slope, glm_intercept = glm_logistic(scores, labels)
    assert abs(glm_intercept - intercept) <= 1e-12 and abs(glm_slope - slope) <= 1e-9 * slope
    assert 6e-6 < slope < 8e-6 and intercept < -1e-3  # the case: a flat slope, an intercept off zero
    for max_pairs in (1, None):
        fitted = Logistic(C=None, max_pairs=max_pairs, bins=256, standard_errors=False).fit(scores, labels)
        assert abs(fitted.intercept_ - intercept) <= 1e-9, (max_pairs, fitted.intercept_, intercept)
        assert abs(fitted.slope_ - slope) <= 1e-6 * slope, (max_pairs, fitted.slope_, slope)


def beta_log_likelihood(scores, labels, a, b, c):
    """Unweighted log-likelihood of logit P(mated) = a ln Phi(z) - b ln Phi(-z) + c on every pair."""
    margin = a * log_ndtr(scores) - b * log_ndtr(-scores) + c
    return float(log_expit(np.where(labels == 1, margin, -margin)).sum())


def newton_beta_log_likelihood(scores, labels):
    """Best log-likelihood of the bounded (a, b >= 0) beta model on every pair: Newton on each active set."""
    features = (log_ndtr(scores), -log_ndtr(-scores))
    best = -math.inf
    for free in ((0, 1), (0,), (1,), ()):
        design = np.column_stack([*(features[j] for j in free), np.ones_like(scores)])
        with np.errstate(all="ignore"):
            beta, value = newton_fit(design, labels, np.ones_like(scores))
        if np.all(beta[:-1] >= 0) and np.isfinite(value):
            best = max(best, value)
    return best


@pytest.mark.slow
@settings(max_examples=15)
@given(dev_sets_with_outliers(consistent=True))
def test_pooled_beta_with_outliers_is_the_fit_on_every_pair(case):
    scores, labels, bins = case
    pooled = Beta(C=None, max_pairs=1, bins=bins).fit(scores, labels)
    full = Beta(C=None, max_pairs=None).fit(scores, labels)
    assert pooled.fit_bins_ == bins
    pooled_fit = beta_log_likelihood(scores, labels, pooled.a_, pooled.b_, pooled.c_)
    # at least as likely as an independent fitter's optimum, and as the fit on every pair
    assert pooled_fit >= newton_beta_log_likelihood(scores, labels) - 1e-6 * abs(pooled_fit)
    assert pooled_fit >= beta_log_likelihood(scores, labels, full.a_, full.b_, full.c_) - 1e-6 * abs(pooled_fit)
    scale = max(abs(full.a_), abs(full.b_), abs(full.c_), 1.0)
    for got, want in ((pooled.a_, full.a_), (pooled.b_, full.b_), (pooled.c_, full.c_)):
        assert abs(got - want) <= 1e-3 * scale, (got, want)


@settings(max_examples=25)
@given(dev_sets_with_outliers())
def test_pooled_isotonic_with_outliers_is_the_pav_of_the_moved_pairs(case):
    scores, labels, bins = case
    pooled = Isotonic(laplace=False, max_pairs=1, bins=bins).fit(scores, labels)
    assert documented_groups(scores, labels, bins)[1] <= bins  # the tails: at most bins pairs, kept single
    moved = moved_to_group_means(scores, labels, bins)
    # scikit-learn's PAV of the moved pairs, pooled into its steps
    order = np.argsort(moved, kind="stable")
    fitted = IsotonicRegression().fit(moved[order], labels[order].astype(np.float64)).predict(moved[order])
    steps = np.unique(fitted)
    np.testing.assert_allclose(pooled.pav_posterior_, steps, rtol=1e-9, atol=1e-12)


def outlier_dev_set(shift=2.0):
    """1.21 M row-z-normed dev pairs (T = N = 1,100) with outliers of 1e5 in both classes."""
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((1100, 1100))
    true_index = rng.integers(0, 1100, 1100)
    scores[np.arange(1100), true_index] += shift
    z = (scores - scores.mean(axis=1, keepdims=True)) / scores.std(axis=1, ddof=1, keepdims=True)
    labels = np.zeros(z.shape, dtype=np.int8)
    labels[np.arange(1100), true_index] = 1
    z, labels = z.ravel(), labels.ravel()
    non_mated, mated = np.flatnonzero(labels == 0), np.flatnonzero(labels == 1)
    z[non_mated[:4]] = [1e5, -1e5, 5e4, 1e5]
    z[mated[:2]] = [1e5, 3e4]
    return z, labels


@pytest.mark.slow
def test_default_pooled_logistic_with_outliers_reproduces_the_fit_on_every_pair():
    z, labels = outlier_dev_set()
    single = z.copy()
    single[labels == 0] = np.where(np.abs(z[labels == 0]) > 100, 0.0, z[labels == 0])
    single[np.flatnonzero(labels == 0)[0]] = 1e5  # the case: one non-mated score of 1e5
    single[labels == 1] = np.where(np.abs(z[labels == 1]) > 100, 2.0, z[labels == 1])
    for scores in (single, z):
        pooled = Logistic(C=None, standard_errors=False).fit(scores, labels)  # 1.21 M > max_pairs: pooled
        assert pooled.fit_bins_ == 65536
        slope, intercept = newton_logistic(scores, labels)  # statsmodels' IRLS: minutes on these pairs
        assert_logistic_close(pooled, slope, intercept)
        assert abs(pooled.slope_ - slope) <= 1e-6 * slope  # measured 1e-10 (equal bins: 1.3e-1)


def test_default_pooled_isotonic_with_outliers_has_the_dev_cllr_of_every_pair():
    from lidframe.metrics.detection import cllr

    z, labels = outlier_dev_set()
    pooled = Isotonic().fit(z, labels)
    assert pooled.fit_bins_ == 65536
    # the map of every pair, built here from scikit-learn's PAV (Laplace pairs at both ends)
    ends = np.r_[z.min() - 1.0, z.min() - 1.0, z.max() + 1.0, z.max() + 1.0]
    x = np.r_[ends[:2], z, ends[2:]]
    y = np.r_[1.0, 0.0, labels, 1.0, 0.0]
    order = np.argsort(x, kind="stable")
    post = IsotonicRegression().fit(x[order], y[order]).predict(x[order])[2:-2]
    z_sorted = x[order][2:-2]
    starts = np.flatnonzero(np.r_[True, post[1:] != post[:-1]])
    centres = np.add.reduceat(z_sorted, starts) / np.diff(np.r_[starts, z_sorted.size])
    prior = math.log(labels.sum() / (labels.size - labels.sum()))
    knot_llr = np.log(post[starts]) - np.log1p(-post[starts]) - prior
    exact = np.interp(z, centres, knot_llr)
    got = pooled.llr(z)
    want_cllr = cllr(exact[labels == 1], exact[labels == 0])
    assert cllr(got[labels == 1], got[labels == 0]) == pytest.approx(want_cllr, rel=1e-3)
    assert np.mean(np.abs(got - exact)) <= 1e-3
