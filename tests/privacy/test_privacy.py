"""Gaussian speaker mechanism, GDP theory, and the certificate audit."""

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.optimize import brentq
from scipy.stats import norm

from lidframe import Bootstrap, InputError
from lidframe.cli import main
from lidframe.privacy.audit import EmbeddingSplit, dp_audit, pairwise_llr
from lidframe.privacy.mechanism import (
    GaussianSpeakerMechanism,
    clip_to_norm,
    compose_mu,
    gdp_eer_bound,
    gdp_mi_bound_bits,
    gdp_tradeoff,
    mu_for_eer,
)


def test_sigma_for_both_sensitivity_conventions():
    assert GaussianSpeakerMechanism(2.0, clip_norm=3.0).sigma == pytest.approx(3.0)  # 2U / mu
    assert GaussianSpeakerMechanism(2.0, clip_norm=3.0, sensitivity="radius").sigma == pytest.approx(1.5)  # U / mu
    with pytest.raises(InputError, match="sensitivity must be one of"):
        GaussianSpeakerMechanism(1.0, sensitivity="max")
    with pytest.raises(InputError, match="mu must be positive"):
        GaussianSpeakerMechanism(0.0)


def test_released_norms_follow_theory_and_seeding():
    d, u, mu, n = 32, 1.5, 1.0, 20000
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(n, d)) * 5  # norms far above U: every row is clipped to norm U
    mech = GaussianSpeakerMechanism(mu, clip_norm=u, seed=3)
    released = mech.anonymise(emb)
    sq = (released**2).sum(1)
    sigma = mech.sigma
    # ||U e + sigma z||^2 / sigma^2 is non-central chi-square(d, (U / sigma)^2)
    mean, var = u**2 + d * sigma**2, 2 * d * sigma**4 + 4 * u**2 * sigma**2
    assert sq.mean() == pytest.approx(mean, abs=4 * math.sqrt(var / n))
    assert sq.var() == pytest.approx(var, rel=0.05)
    again = GaussianSpeakerMechanism(mu, clip_norm=u, seed=3).anonymise(emb)
    np.testing.assert_array_equal(released, again)
    assert not np.array_equal(mech.anonymise(emb), released)  # the stream moves on
    small = np.array([0.1, 0.2])
    np.testing.assert_array_equal(clip_to_norm(small, 1.0), small)  # inside the ball: unchanged


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 8, dtype=torch.float64) * 3
    y = GaussianSpeakerMechanism(1.0, seed=0).anonymise(x)
    assert isinstance(y, torch.Tensor) and y.shape == x.shape and y.dtype == torch.float64
    np.testing.assert_allclose(y.numpy(), GaussianSpeakerMechanism(1.0, seed=0).anonymise(x.numpy()))


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 2.0, 5.0])
def test_eer_bound_solves_alpha_equals_tradeoff(mu):
    alpha = brentq(lambda a: gdp_tradeoff(a, mu) - a, 1e-12, 0.5)
    assert gdp_eer_bound(mu) == pytest.approx(alpha, abs=1e-10)
    assert mu_for_eer(gdp_eer_bound(mu)) == pytest.approx(mu, rel=1e-10)


def test_published_numbers_and_composition():
    assert [round(gdp_eer_bound(m), 3) for m in (2, 1, 0.5)] == [0.159, 0.309, 0.401]
    assert gdp_mi_bound_bits(1.0) == pytest.approx(1 / (2 * math.log(2)))
    assert compose_mu(1.0, 4) == 2.0
    assert gdp_tradeoff(0.0, 1.0) == pytest.approx(1.0) and gdp_tradeoff(1.0, 1.0) == pytest.approx(0.0)
    with pytest.raises(InputError):
        mu_for_eer(0.6)


mus = st.floats(0.05, 5.0, allow_nan=False)
false_alarms = st.floats(1e-6, 1 - 1e-6, allow_nan=False)


@given(mus, false_alarms)
def test_tradeoff_is_the_miss_rate_of_the_best_test_between_two_unit_normals(mu, alpha):
    # Neyman-Pearson: the best test of N(0, 1) against N(mu, 1) at false-alarm rate alpha
    # says "N(mu, 1)" above t = isf(alpha), and misses with probability P(N(mu, 1) < t)
    threshold = norm.isf(alpha)
    miss = 0.5 * math.erfc((mu - threshold) / math.sqrt(2.0))
    assert gdp_tradeoff(alpha, mu) == pytest.approx(miss, rel=1e-7)
    np.testing.assert_allclose(gdp_tradeoff(np.array([alpha, alpha]), mu), [miss, miss], rtol=1e-7)


@given(mus)
def test_eer_bound_is_where_the_tradeoff_meets_the_diagonal(mu):
    eer = gdp_eer_bound(mu)
    assert eer == pytest.approx(0.5 * math.erfc(mu / (2.0 * math.sqrt(2.0))), rel=1e-12)  # Phi(-mu / 2)
    assert gdp_tradeoff(eer, mu) == pytest.approx(eer, rel=1e-9)
    assert mu_for_eer(eer) == pytest.approx(mu, rel=1e-9)


@pytest.mark.slow
@given(mus)
def test_mi_bound_is_the_kl_divergence_of_two_releases_in_bits(mu):
    # KL(N(0, 1) || N(mu, 1)) by numerical integration, in bits
    def integrand(x):
        return norm.pdf(x) * (norm.logpdf(x) - norm.logpdf(x, loc=mu))

    kl_nats, _ = quad(integrand, -40.0, 40.0, points=[0.0, mu], epsabs=1e-13, epsrel=1e-11, limit=200)
    assert gdp_mi_bound_bits(mu) == pytest.approx(kl_nats / math.log(2.0), rel=1e-8)


@given(mus, st.integers(1, 50), false_alarms)
def test_k_releases_compose_to_the_tradeoff_of_their_mean(mu, k, alpha):
    # k independent releases of N(0, 1) or of N(mu, 1): their mean, N(0, 1/k) or N(mu, 1/k),
    # is sufficient, so the best test thresholds it
    scale = 1.0 / math.sqrt(k)
    miss = norm.cdf(norm.isf(alpha, scale=scale), loc=mu, scale=scale)
    assert gdp_tradeoff(alpha, compose_mu(mu, k)) == pytest.approx(miss, rel=1e-7)


def centroid_splits(rng, n=40, d=192, trials_per=25):
    def split(prefix):
        c = rng.normal(size=(n, d))
        c /= np.linalg.norm(c, axis=1, keepdims=True)
        speakers = [f"{prefix}{j}" for j in range(n)]
        owner = np.repeat(np.arange(n), trials_per)
        return EmbeddingSplit(
            {s: c[j][None, :] for j, s in enumerate(speakers)},
            c[owner],
            np.array(speakers)[owner],
            np.array([f"{prefix}t{i}" for i in range(owner.size)]),
        )

    return split("d"), split("e")


def test_bayes_attacker_respects_the_bounds_and_moves_with_mu():
    dev, ev = centroid_splits(np.random.default_rng(7))
    rows = dp_audit(dev, ev, [0.5, 1.0, 2.0], bootstrap=Bootstrap(n_boot=200, seed=1), seed=1).rows
    for r in rows:
        # Monte-Carlo tolerance: 3 bootstrap half-widths
        eer_half = (r["bayes_eer_high"] - r["bayes_eer_low"]) / 2
        alid_half = (r["bayes_alid_high"] - r["bayes_alid_low"]) / 2
        assert r["bayes_eer"] >= r["eer_bound"] - 3 * eer_half, r
        assert r["bayes_alid"] <= r["mi_bound_bits"] + 3 * alid_half, r
        assert r["violations"] == []
    eers = [r["bayes_eer"] for r in rows]
    alids = [r["bayes_alid"] for r in rows]
    assert eers[0] > eers[1] > eers[2] and alids[0] < alids[1] < alids[2]


def test_pairwise_llr_is_the_two_hypothesis_log_ratio():
    s = np.log(np.array([[0.5, 0.3, 0.2]]))
    want = np.log(0.5 / ((0.3 + 0.2) / 2))
    assert pairwise_llr(s)[0, 0] == pytest.approx(want)


def test_dp_audit_cli(tmp_path, capsys):
    code = main(
        [
            "dp-audit",
            "--mu",
            "0.5,2",
            "--n-boot",
            "200",
            "--json",
            str(tmp_path / "a.json"),
            "--plot",
            str(tmp_path / "a.png"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "EERbound" in out and "ok" in out
    rows = json.loads((tmp_path / "a.json").read_text())["rows"]
    assert [r["mu"] for r in rows] == [0.5, 2.0]
    assert rows[0]["eer_bound"] == pytest.approx(norm.cdf(-0.25))
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["dp-audit", "--mu", "x"]) == 2
    assert main(["dp-audit", "--mu", "1", "--enrol", "d"]) == 2
