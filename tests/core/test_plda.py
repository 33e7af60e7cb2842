"""Two-covariance PLDA (lidframe.core.plda) against the model's exact joint Gaussian, written here."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import multivariate_normal

from lidframe.core.plda import PLDA, two_covariance_llr
from lidframe.errors import InputError


def _spd(rng, k, scale=1.0):
    """A random symmetric positive-definite (k, k) matrix with eigenvalues in about [0.2, 3] * scale."""
    q, _ = np.linalg.qr(rng.standard_normal((k, k)))
    return scale * (q * rng.uniform(0.2, 3.0, k)) @ q.T


def _exact_llr(enrol_mean, n, test, mu, between_cov, within_cov):
    """log N([a; b] | same) - log N([a; b] | different) from the stacked vector's covariance."""
    k = mu.size
    top = between_cov + within_cov / n
    same = np.block([[top, between_cov], [between_cov, between_cov + within_cov]])
    different = np.block([[top, np.zeros((k, k))], [np.zeros((k, k)), between_cov + within_cov]])
    stacked, centre = np.concatenate([enrol_mean, test]), np.concatenate([mu, mu])
    return multivariate_normal(centre, same).logpdf(stacked) - multivariate_normal(centre, different).logpdf(stacked)


def _draw_model(rng, k):
    mu = rng.standard_normal(k)
    return mu, _spd(rng, k, 2.0), _spd(rng, k, 0.5)


def _draw_speakers(rng, mu, between_cov, within_cov, n_speakers, per_speaker):
    """Embeddings of *n_speakers* speakers drawn from the two-covariance model, *per_speaker* each."""
    identity = rng.multivariate_normal(mu, between_cov, n_speakers)
    owner = np.repeat(np.arange(n_speakers), per_speaker)
    noise = rng.multivariate_normal(np.zeros(mu.size), within_cov, owner.size)
    return identity[owner] + noise, owner


@settings(max_examples=40, deadline=None)
@given(
    k=st.integers(1, 5),
    n_trials=st.integers(1, 4),
    counts=st.lists(st.integers(1, 30), min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
)
def test_llr_is_the_two_covariance_models_exact_llr(k, n_trials, counts, seed):
    rng = np.random.default_rng(seed)
    mu, between_cov, within_cov = _draw_model(rng, k)
    # enrolment means drawn as means of n embeddings of a speaker; tests from the model too
    enrol = np.stack([_draw_speakers(rng, mu, between_cov, within_cov, 1, n)[0].mean(axis=0) for n in counts])
    test = _draw_speakers(rng, mu, between_cov, within_cov, n_trials, 1)[0]
    llr = two_covariance_llr(
        test, enrol, counts, mean=mu, between=np.linalg.inv(between_cov), within=np.linalg.inv(within_cov)
    )
    expected = np.array(
        [
            [_exact_llr(enrol[j], counts[j], test[t], mu, between_cov, within_cov) for j in range(len(counts))]
            for t in range(n_trials)
        ]
    )
    assert llr.shape == (n_trials, len(counts))
    np.testing.assert_allclose(llr, expected, rtol=0, atol=1e-9)


def test_one_enrolment_embedding_is_symmetric_and_default_counts_are_one():
    rng = np.random.default_rng(3)
    mu, between_cov, within_cov = _draw_model(rng, 4)
    params = {"mean": mu, "between": np.linalg.inv(between_cov), "within": np.linalg.inv(within_cov)}
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((3, 4))
    np.testing.assert_allclose(two_covariance_llr(a, b, **params), two_covariance_llr(b, a, **params).T, atol=1e-12)
    np.testing.assert_array_equal(two_covariance_llr(a, b, **params), two_covariance_llr(a, b, [1, 1, 1], **params))


def test_fitted_parameters_approach_the_true_ones_with_many_speakers():
    rng = np.random.default_rng(7)
    k = 4
    mu, between_cov, within_cov = _draw_model(rng, k)
    x, owner = _draw_speakers(rng, mu, between_cov, within_cov, 6000, 4)
    plda = PLDA(n_iter=20, length_norm=False).fit(x, owner)
    # z = P^T (x - m): the true parameters in z space
    proj = plda.projection_
    true_between, true_within = proj.T @ between_cov @ proj, proj.T @ within_cov @ proj
    fitted_between, fitted_within = np.linalg.inv(plda.between_), np.linalg.inv(plda.within_)
    assert np.abs(fitted_between - true_between).max() < 0.06 * np.abs(true_between).max()
    assert np.abs(fitted_within - true_within).max() < 0.03 * np.abs(true_within).max()
    true_mu = (mu - plda.mean_) @ proj
    assert np.abs(plda.mu_ - true_mu).max() < 0.06 * np.sqrt(np.diag(true_between)).max()
    # and its LLRs on new data are those of the true model (LLRs do not change under z = P^T (x - m))
    enrol, _ = _draw_speakers(rng, mu, between_cov, within_cov, 30, 3)
    enrol_means = enrol.reshape(30, 3, k).mean(axis=1)
    test, _ = _draw_speakers(rng, mu, between_cov, within_cov, 40, 1)
    true_llr = two_covariance_llr(
        test, enrol_means, np.full(30, 3), mean=mu, between=np.linalg.inv(between_cov), within=np.linalg.inv(within_cov)
    )
    fitted_llr = plda.score(test, enrol_means, np.full(30, 3))
    assert np.abs(fitted_llr - true_llr).mean() < 0.02 * true_llr.std()
    assert np.abs(fitted_llr - true_llr).max() < 0.25 * true_llr.std()


def test_em_never_lowers_the_likelihood_and_improves_on_the_closed_form():
    rng = np.random.default_rng(11)
    mu, between_cov, within_cov = _draw_model(rng, 5)
    x, owner = _draw_speakers(rng, mu, between_cov, within_cov, 300, 3)
    trace = PLDA(n_iter=15, length_norm=False).fit(x, owner).log_likelihood_
    assert trace.shape == (16,)
    assert (np.diff(trace) >= -1e-8 * np.abs(trace).max()).all()
    assert trace[-1] > trace[0]


def test_the_marginal_likelihood_is_the_joint_gaussian_of_each_speakers_embeddings():
    rng = np.random.default_rng(5)
    k, n_speakers, per = 2, 6, 3
    mu, between_cov, within_cov = _draw_model(rng, k)
    x, owner = _draw_speakers(rng, mu, between_cov, within_cov, n_speakers, per)
    plda = PLDA(n_iter=0, length_norm=False).fit(x, owner)
    z = (x - plda.mean_) @ plda.projection_
    sb, sw = np.linalg.inv(plda.between_), np.linalg.inv(plda.within_)
    covariance = np.kron(np.ones((per, per)), sb) + np.kron(np.eye(per), sw)  # a speaker's (per k) stacked rows
    expected = sum(
        multivariate_normal(np.tile(plda.mu_, per), covariance).logpdf(z[owner == s].ravel()) for s in range(n_speakers)
    )
    assert plda.log_likelihood_[0] == pytest.approx(expected, abs=1e-8)


@settings(max_examples=25, deadline=None)
@given(n_enrolled=st.integers(1, 5), n_trials=st.integers(1, 6), max_count=st.integers(1, 6), seed=st.integers(0, 999))
def test_length_normalised_enrolment_means_map_to_the_mean_of_the_projected_embeddings(
    n_enrolled, n_trials, max_count, seed
):
    rng = np.random.default_rng(seed)
    x, owner = _draw_speakers(rng, np.zeros(6), 4 * np.eye(6), np.eye(6), 20, 4)
    plda = PLDA(lda_dim=4, n_iter=3).fit(x, owner)
    counts = rng.integers(1, max_count + 1, n_enrolled)
    utterances = [rng.standard_normal((n, 6)) for n in counts]
    profiles = np.stack([(u / np.linalg.norm(u, axis=1, keepdims=True)).mean(axis=0) for u in utterances])
    test = rng.standard_normal((n_trials, 6))
    z_means = np.stack([plda.transform(u).mean(axis=0) for u in utterances])
    expected = two_covariance_llr(
        plda.transform(test), z_means, counts, mean=plda.mu_, between=plda.between_, within=plda.within_
    )
    np.testing.assert_allclose(plda.score(test, profiles, counts), expected, atol=1e-9)


def _small_training_set():
    rng = np.random.default_rng(0)
    x, owner = _draw_speakers(rng, np.zeros(3), 4 * np.eye(3), np.eye(3), 10, 3)
    return x, owner


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda x, s: (x[:3], s[:3]), "at least 2 speakers, got 1"),
        (lambda x, s: (np.vstack([x, x[:1]]), np.append(s, 99)), "at least 2 embeddings each; 1 have 1: '99'"),
        (lambda x, s: (np.where(np.arange(x.size).reshape(x.shape) == 4, np.nan, x), s), "hold NaN or inf"),
        (lambda x, s: (x, s[:-1]), "one id per embedding"),
        (lambda x, s: (x[:, 0], s), "must have 2 axes"),
        (lambda x, s: (np.hstack([x, x[:, :1]]), s), "within-speaker scatter of the training embeddings is singular"),
    ],
)
def test_bad_training_sets_are_refused_on_one_line(change, message):
    x, speakers = change(*_small_training_set())
    with pytest.raises(InputError, match=None) as caught:
        PLDA(length_norm=False).fit(x, speakers)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lda_dim": 3}, "lda_dim 3 is more than the data allows: at most min(d, S - 1) = min(3, 2) = 2"),
        ({"lda_dim": 0}, "lda_dim must be None or an integer >= 1"),
        ({"n_iter": -1}, "n_iter must be an integer >= 0"),
        ({"length_norm": "yes"}, "length_norm must be True or False"),
    ],
)
def test_options_out_of_range_are_refused(options, message):
    x, speakers = _small_training_set()
    keep = speakers < 3  # 3 speakers: S - 1 = 2 < d = 3
    with pytest.raises(InputError) as caught:
        PLDA(**options).fit(x[keep], speakers[keep])
    assert message in str(caught.value)


def test_too_few_embeddings_for_the_dimension_are_refused():
    rng = np.random.default_rng(1)
    x, owner = _draw_speakers(rng, np.zeros(8), np.eye(8), np.eye(8), 5, 2)  # M - S = 5 < d = 8
    with pytest.raises(InputError, match=r"rank at most M - S = 5 < d = 8"):
        PLDA(lda_dim=4).fit(x, owner)


def test_scoring_input_is_checked():
    x, speakers = _small_training_set()
    with pytest.raises(InputError, match="not fitted yet"):
        PLDA().score(x, x)
    plda = PLDA(lda_dim=2).fit(x, speakers)
    with pytest.raises(InputError, match="dimension 2, the PLDA was trained on dimension 3"):
        plda.score(x[:, :2], x)
    with pytest.raises(InputError, match="counts must be whole numbers >= 1"):
        plda.score(x, x[:2], [1, 0])
    with pytest.raises(InputError, match="one entry per enrolment"):
        plda.score(x, x[:2], [1])
    with pytest.raises(InputError, match="positive definite"):
        two_covariance_llr(x, x, mean=np.zeros(3), between=-np.eye(3), within=np.eye(3))
