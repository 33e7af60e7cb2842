"""The mu that holds: clipped norms and, for sensitivity "radius", the clipped embeddings' diameter.

The mechanism's noise sigma = Delta / mu gives mu-GDP only when no two released (clipped)
embeddings lie more than Delta apart: Delta = 2U ("diameter", any embeddings whose clipped
norm is at most U) or U ("radius"). The audit checks it on the clipped eval trials and
computes its bounds with the mu that holds, mu max(1, D / Delta); here D comes from
scipy's pdist on embeddings clipped by the formula, written in the test.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import pdist
from scipy.stats import norm

from lidframe import Bootstrap, InputError
from lidframe.privacy import mechanism as mechanism_module
from lidframe.privacy.audit import EmbeddingSplit, dp_audit, simulated_splits
from lidframe.privacy.mechanism import TOLERANCE, GaussianSpeakerMechanism

LN2 = math.log(2.0)


def clip_by_formula(x: np.ndarray, u: float) -> np.ndarray:
    """x min(1, U / ||x||), row by row (the definition of the clipping)."""
    norms = np.sqrt((x * x).sum(axis=1, keepdims=True))
    return x * np.minimum(1.0, u / np.maximum(norms, 1e-300))


def diameter(points: np.ndarray) -> float:
    """The largest pairwise distance (scipy), 0 for one point."""
    return float(pdist(points).max()) if len(points) > 1 else 0.0


def want_mu_held(mu, u, sensitivity, points):
    """(mu that holds, whether the claimed mu holds) for releases of *points*, from their norms and pdist."""
    delta = 2 * u if sensitivity == "diameter" else u
    d = diameter(points)
    within = np.linalg.norm(points, axis=1).max() <= u * (1 + TOLERANCE)
    holds = bool(within and (sensitivity == "diameter" or d <= u * (1 + TOLERANCE)))
    return (mu if holds else mu * max(1.0, d / delta)), holds


@settings(max_examples=60, deadline=None)
@given(
    points=st.integers(1, 12).flatmap(
        lambda n: arrays(np.float64, (n, 3), elements=st.floats(-3, 3, allow_nan=False, allow_infinity=False))
    ),
    u=st.floats(0.1, 4.0),
    mu=st.floats(0.1, 8.0),
    sensitivity=st.sampled_from(["diameter", "radius"]),
    clip=st.booleans(),
)
def test_guarantee_is_mu_max_one_diameter_over_delta(points, u, mu, sensitivity, clip):
    mechanism = GaussianSpeakerMechanism(mu, clip_norm=u, sensitivity=sensitivity)
    released = clip_by_formula(points, u) if clip else points  # not clipped: norms may exceed U
    got = mechanism.guarantee(released)
    mu_held, holds = want_mu_held(mu, u, sensitivity, released)
    assert got.mu == mu and got.holds == holds
    assert got.mu_held == pytest.approx(mu_held, rel=1e-9)
    # from the Gram matrix: ||a||^2 + ||b||^2 - 2 a.b rounds to about 1e-16 ||a||^2, so a
    # distance near 0 is known to about 1e-8 ||a|| only; near U (what is compared) to 1e-16
    scale = max(1.0, float(np.linalg.norm(released, axis=1).max()))
    assert got.diameter == pytest.approx(diameter(released), rel=1e-9, abs=1e-6 * scale)
    assert got.max_norm == pytest.approx(float(np.linalg.norm(released, axis=1).max()), rel=1e-12, abs=1e-300)
    if clip:  # clipping works: never more than 2 mu, and "diameter" always holds
        assert got.mu_held <= 2 * mu * (1 + 1e-9)
        assert got.holds or sensitivity == "radius"


def test_the_clipping_is_checked_with_the_stated_tolerance():
    mechanism = GaussianSpeakerMechanism(1.0, clip_norm=1.0)
    inside = np.array([[1.0 + 0.5 * TOLERANCE, 0.0], [0.0, 1.0]])
    outside = np.array([[1.0 + 2 * TOLERANCE, 0.0], [0.0, 1.0]])
    assert mechanism.guarantee(inside).holds
    got = mechanism.guarantee(outside)
    assert not got.holds and got.reason.startswith("clipping failed: a clipped embedding has norm 1 > U = 1")
    with pytest.raises(InputError, match="finite"):
        mechanism.guarantee(np.array([[np.nan, 0.0]]))


def test_anonymise_is_the_clipped_embedding_plus_the_seeded_noise():
    rng = np.random.default_rng(0)
    x = rng.normal(scale=2.0, size=(7, 5))
    mechanism = GaussianSpeakerMechanism(2.0, clip_norm=1.5, sensitivity="radius", seed=4)
    released = mechanism.anonymise(x)
    sigma = 1.5 / 2.0
    want = clip_by_formula(x, 1.5) + np.random.default_rng(4).standard_normal(x.shape) * sigma
    np.testing.assert_allclose(released, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(mechanism.clip(x), clip_by_formula(x, 1.5), rtol=0, atol=1e-15)


# ---------------------------------------------------------------------------- the audit


def small_splits():
    return simulated_splits(n_enrolled=8, trials_per_speaker=4, dim=16, seed=0)


def audit(dev, ev, **kwargs):
    return dp_audit(dev, ev, [0.5, 2.0], bootstrap=Bootstrap(n_boot=100, seed=0), seed=1, **kwargs).rows


def assert_bounds_of(row, mu_held):
    """The row's bounds are the GDP bounds of *mu_held*, Phi(-mu/2) and mu^2 / (2 ln 2) (scipy, by hand)."""
    assert row["mu_held"] == pytest.approx(mu_held, rel=1e-9)
    assert row["eer_bound"] == pytest.approx(norm.cdf(-mu_held / 2), rel=1e-9)
    assert row["mi_bound_bits"] == pytest.approx(mu_held**2 / (2 * LN2), rel=1e-9)


def test_radius_on_embeddings_more_than_u_apart_reports_the_mu_that_holds():
    # simulated identities point in random directions of 16 dimensions: clipped to the unit
    # sphere they lie about sqrt(2) U apart, more than the U that sigma = U / mu assumes
    dev, ev = small_splits()
    clipped = clip_by_formula(ev.trials, 1.0)
    d = diameter(clipped)
    assert 1.2 < d <= 2.0
    for row in audit(dev, ev, sensitivity="radius"):
        assert row["sigma"] == pytest.approx(1.0 / row["mu"])
        assert_bounds_of(row, row["mu"] * d)  # mu max(1, D / U), D > U
        assert row["mu_held"] > row["mu"]
        assert row["clipped_diameter"] == pytest.approx(d, rel=1e-9)
        assert row["max_clipped_norm"] == pytest.approx(1.0, rel=1e-12)
        assert "gives mu only for embeddings at most U = 1 apart" in row["mu_reason"]
    for row in audit(dev, ev, sensitivity="diameter"):  # the same embeddings: 2U covers them, mu holds
        assert row["sigma"] == pytest.approx(2.0 / row["mu"])
        assert_bounds_of(row, row["mu"])
        assert row["mu_reason"].startswith("sensitivity diameter")


def test_radius_on_embeddings_within_u_of_each_other_keeps_mu():
    # every trial close to one direction: clipped, no two are more than U apart
    rng = np.random.default_rng(5)
    base = np.zeros(16)
    base[0] = 3.0

    def split(prefix):
        speakers = [f"{prefix}{j}" for j in range(6)]
        centres = base + 0.2 * rng.normal(size=(6, 16))
        owner = np.repeat(np.arange(6), 3)
        trials = centres[owner] + 0.05 * rng.normal(size=(owner.size, 16))
        enrol = {s: centres[j][None, :] + 0.05 * rng.normal(size=(2, 16)) for j, s in enumerate(speakers)}
        ids = np.array([f"{prefix}t{i}" for i in range(owner.size)])
        return EmbeddingSplit(enrol, trials, np.array(speakers)[owner], ids)

    dev, ev = split("d"), split("e")
    d = diameter(clip_by_formula(ev.trials, 1.0))
    assert d < 1.0
    for row in audit(dev, ev, sensitivity="radius"):
        assert_bounds_of(row, row["mu"])
        assert row["clipped_diameter"] == pytest.approx(d, rel=1e-9)
        assert "mu-GDP among them" in row["mu_reason"]


def no_clipping(emb, clip_norm):
    """A mutant of clip_to_norm: the embeddings pass unclipped."""
    return np.asarray(emb, dtype=np.float64)


def max_abs_clipping(emb, clip_norm):
    """A mutant of clip_to_norm: the max-abs (L-infinity) norm clipped to U instead of the L2 norm."""
    x = np.asarray(emb, dtype=np.float64)
    peak = np.abs(x).max(axis=-1, keepdims=True)
    return x * np.minimum(1.0, clip_norm / np.maximum(peak, 1e-300))


@pytest.mark.parametrize("mutant", [no_clipping, max_abs_clipping], ids=["clipping skipped", "wrong norm"])
@pytest.mark.parametrize("sensitivity", ["diameter", "radius"])
def test_embeddings_outside_the_radius_do_not_yield_the_mu_claim(monkeypatch, mutant, sensitivity):
    # the mechanism's clipping broken: what it releases lies outside the ball of radius U
    # (norms about 4 here), so neither convention's mu holds; the bounds must use the mu
    # that holds among the released trials, mu D / Delta, with D of what was released
    monkeypatch.setattr(mechanism_module, "clip_to_norm", mutant)
    dev, ev = small_splits()
    released = mutant(ev.trials, 1.0)
    assert np.linalg.norm(released, axis=1).max() > 2.0
    delta = 2.0 if sensitivity == "diameter" else 1.0
    d = diameter(released)
    for row in audit(dev, ev, sensitivity=sensitivity):
        assert_bounds_of(row, row["mu"] * d / delta)
        assert row["mu_held"] > row["mu"] * 1.5
        assert row["max_clipped_norm"] == pytest.approx(np.linalg.norm(released, axis=1).max(), rel=1e-12)
        assert row["mu_reason"].startswith("clipping failed: a clipped embedding has norm")
