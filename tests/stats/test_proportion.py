"""The Clopper-Pearson interval of a proportion: statsmodels' values, and its coverage from few trials."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binom
from statsmodels.stats.proportion import proportion_confint

from lidframe.errors import InputError
from lidframe.stats import proportion
from lidframe.stats.proportion import clopper_pearson

ROOT = Path(__file__).resolve().parents[2]


@st.composite
def counts(draw, max_trials=300):
    """(k, n): k successes of n >= 1 trials, the ends k = 0 and k = n often."""
    n = draw(st.integers(1, max_trials))
    k = draw(st.one_of(st.sampled_from([0, n]), st.integers(0, n)))
    return k, n


@given(counts(), st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99]) | st.floats(0.01, 0.999))
def test_equals_statsmodels_beta_interval(case, level):
    k, n = case
    want = proportion_confint(k, n, alpha=1 - level, method="beta")
    low, high = clopper_pearson(k, n, level=level)
    assert (float(low), float(high)) == pytest.approx(want, abs=1e-12)
    assert 0.0 <= low <= k / n <= high <= 1.0
    assert (low == 0.0) == (k == 0) and (high == 1.0) == (k == n)  # ends exactly 0 / 1, and only there


def test_closed_forms_at_the_ends():
    # k = 0: high = 1 - (alpha / 2)^(1 / n); k = n: low = (alpha / 2)^(1 / n)
    for n in (1, 10, 30):
        low, high = clopper_pearson(0, n)
        assert (float(low), float(high)) == pytest.approx((0.0, 1 - 0.025 ** (1 / n)), abs=1e-14)
        low, high = clopper_pearson(n, n)
        assert (float(low), float(high)) == pytest.approx((0.025 ** (1 / n), 1.0), abs=1e-14)


def test_vectorised_and_empty_speakers_are_nan():
    low, high = clopper_pearson(np.array([0, 3, 10, 0]), np.array([10, 10, 10, 0]), level=0.9)
    assert low.shape == high.shape == (4,)
    for i, (k, n) in enumerate([(0, 10), (3, 10), (10, 10)]):
        assert (low[i], high[i]) == pytest.approx(proportion_confint(k, n, alpha=0.1, method="beta"), abs=1e-12)
    assert math.isnan(low[3]) and math.isnan(high[3])


def exact_coverage(p: float, n: int, level: float) -> float:
    """P(interval of k ~ Binomial(n, p) holds p), summed over every k with scipy's binomial pmf."""
    k = np.arange(n + 1)
    holds = [proportion_confint(int(j), n, alpha=1 - level, method="beta") for j in k]
    inside = np.array([low <= p <= high for low, high in holds])
    return float(binom.pmf(k, n, p)[inside].sum())


@pytest.mark.parametrize("n", [10, 13, 20, 30])
def test_exact_coverage_is_at_least_the_level_for_every_p(n):
    # the guarantee that made it the choice: over a fine grid of p, 10 to 30 trials
    k = np.arange(n + 1)
    low, high = clopper_pearson(k, np.full(n + 1, n))
    for p in np.linspace(0.0005, 0.9995, 400):
        inside = (low <= p) & (p <= high)
        assert binom.pmf(k, n, p)[inside].sum() >= 0.95 - 1e-12, p
    assert exact_coverage(0.5, n, 0.95) >= 0.95


@pytest.mark.parametrize("p", [0.03, 0.1, 0.3, 0.5, 0.8, 0.97])
def test_coverage_by_simulation_from_10_to_30_trials(p):
    # seeded, 4,000 replications per (p, n): the share of intervals holding p (binomial sd
    # of the share about 0.003 at 0.96, so 0.93 is nine sd below the exact coverage)
    rng = np.random.default_rng(round(p * 1000))
    for n in (10, 15, 20, 25, 30):
        k = rng.binomial(n, p, size=4000)
        low, high = clopper_pearson(k, np.full(k.size, n))
        coverage = float(np.mean((low <= p) & (p <= high)))
        assert coverage >= 0.93, (p, n, coverage)
        assert coverage == pytest.approx(exact_coverage(p, n, 0.95), abs=0.015), (p, n)


def test_bad_counts_and_levels_are_named():
    with pytest.raises(InputError, match="0 <= successes <= trials"):
        clopper_pearson(11, 10)
    with pytest.raises(InputError, match="0 <= successes <= trials"):
        clopper_pearson(-1, 10)
    with pytest.raises(InputError, match="whole numbers"):
        clopper_pearson(2.5, 10)
    with pytest.raises(InputError, match=r"confidence level must be in \(0, 1\)"):
        clopper_pearson(2, 10, level=1.0)


def least_coverage(method: str, n: int, level: float = 0.95) -> tuple[float, float]:
    """(inf over p in (0, 1) of the exact coverage of *method*'s interval from n trials, where).

    The coverage of an interval whose ends are monotone in k is, between two interval ends,
    P(a <= K <= b) for fixed a, b, which is unimodal in p; so its infimum is a one-sided
    limit at an interval end: the binomial pmf at the end e, summed over the k whose
    interval holds the float beside e.  A grid of p checks that nothing lies lower.
    Wilson's and Agresti-Coull's intervals are statsmodels'; ends within 1e-12 of 0 or 1
    are 0 or 1 (Wilson's k = 0 and k = n ends are 0 and 1 in exact arithmetic).
    """
    k = np.arange(n + 1)
    if method == "clopper_pearson":
        low, high = clopper_pearson(k, np.full(n + 1, n), level=level)
    else:
        low, high = proportion_confint(k, n, alpha=1 - level, method=method)
    low, high = np.where(low < 1e-12, 0.0, low), np.where(high > 1 - 1e-12, 1.0, high)
    ends = np.concatenate([low, high])
    ends = ends[(ends > 0.0) & (ends < 1.0)]
    grid = np.linspace(0.0, 1.0, 4001)[1:-1]
    at = np.concatenate([grid, ends, ends])
    beside = np.concatenate([grid, np.nextafter(ends, 0.0), np.nextafter(ends, 1.0)])
    inside = (low[:, None] <= beside) & (beside <= high[:, None])
    coverage = (binom.pmf(k[:, None], n, at) * inside).sum(axis=0)
    return float(coverage.min()), float(at[coverage.argmin()])


def stated_least_coverage(text: str, name: str) -> tuple[float, int]:
    """(percent, n) a text states as *name*'s least coverage at 10 to 30 trials."""
    text = text.replace("–", "-")
    found = re.search(rf"([\d.]+) % \({name}, n = (\d+)\)", text) or re.search(
        rf"{name}'s least is ([\d.]+) % \(n = (\d+)\)", text
    )
    assert found, f"no least coverage of {name} stated"
    return float(found[1]), int(found[2])


@pytest.mark.parametrize(
    ("method", "name"),
    [("agresti_coull", "Agresti-Coull"), ("wilson", "Wilson"), ("clopper_pearson", "Clopper-Pearson")],
)
def test_the_stated_least_coverage_from_10_to_30_trials_is_the_exact_one(method, name):
    # issue 39: the texts said 93 % for Agresti-Coull (it is 92.2 %, n = 12) and 84 % for Wilson (83.5 %)
    least, n_least = min((least_coverage(method, n)[0], n) for n in range(10, 31))
    for text in (proportion.__doc__, (ROOT / "docs" / "statistics.md").read_text()):
        percent, n = stated_least_coverage(text, name)
        assert (percent, n) == (round(100 * least, 1), n_least)


def test_least_coverage_is_attained_beside_an_interval_end():
    # the one-sided limits find what a grid 50 times finer finds, and nothing lower
    for n in (10, 12, 25):
        least, where = least_coverage("agresti_coull", n)
        k = np.arange(n + 1)
        low, high = proportion_confint(k, n, alpha=0.05, method="agresti_coull")
        p = np.linspace(0.0, 1.0, 200_001)[1:-1]
        fine = (binom.pmf(k[:, None], n, p) * ((low[:, None] <= p) & (p <= high[:, None]))).sum(axis=0)
        assert least <= fine.min() <= least + 1e-4, (n, where)
