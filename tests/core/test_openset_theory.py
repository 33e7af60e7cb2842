"""The open set (hypothesis ∅, "not enrolled") against theory computed here, not by lidframe.

Model: N enrolled speakers; a trial's score against its own speaker is N(μ, 1), against any
other N(0, 1), so the exact LLR of a score s is l = μ s - μ²/2.  With the prior π_∅ on ∅ and
π_j = (1 - π_∅) π'_j on enrolled speaker j, the posterior of a trial over {1..N, ∅} is::

    p(j | s) = π_j e^{l_j} / Z,    p(∅ | s) = π_∅ / Z,    Z = π_∅ + Σ_k π_k e^{l_k}

and every trial's LID is log2 p(true | s) / π_true (:mod:`lidframe.core.openset`).

Two paths are checked against the float64 reference of this module
(:func:`reference_open_set`):

* the open-set maths alone: lidframe's closed-set engine (:func:`lid_from_llr`), per-trial
  statistics computed as an engine does (:func:`engine_stats`) and
  :func:`~lidframe.core.openset.open_set_trials`;
* the whole pipeline, :func:`lidframe.evaluate` with a prior that has ``outside`` = π_∅ and a
  calibrator on raw scores that applies the exact LLR map (:class:`AffineLLR`).

The theory: the posterior (closed form), ALID against the mutual information I(H; S) found
by Gauss-Hermite quadrature (exact map: ALID -> I; a wrong map: below I, Gibbs), the bound
LID <= -log2 π_true, ALID = PDR LID+ + NDR LID-, the limit π_∅ -> 0, LLR = 0 giving LID = 0
exactly, π_∅ = 0 being the closed set, and two mutants the reference check must catch.
"""

from __future__ import annotations

import inspect
import math
import sys
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import logsumexp

import lidframe.core.openset as openset
from lidframe import ScoreSet, evaluate
from lidframe.core.lid import lid_from_llr, log_posterior
from lidframe.core.openset import OpenSetStats, log_normaliser, open_set_log_posterior, open_set_trials
from lidframe.core.priors import Explicit, Uniform
from lidframe.metrics.aggregates import alid_decomposition

LN2 = math.log(2.0)

#: Tolerances of a lidframe number against the reference (float64 rounding of LLRs up to ~40 nats).
LID_RTOL, LID_ATOL = 1e-9, 1e-9
PROBABILITY_ATOL = 1e-12


# --------------------------------------------------------------------------- calibrators


class AffineLLR:
    """A calibrator on raw scores with a fixed affine LLR map, l = slope * s + intercept.

    ``AffineLLR(μ, -μ²/2)`` is the exact LLR of the Gaussian model of this module; other
    values give a misspecified one.  ``fit`` learns nothing.

    Parameters
    ----------
    slope, intercept : float
        The map, in nats per score unit and nats.
    """

    input_scale = "raw"

    def __init__(self, slope: float, intercept: float) -> None:
        self.slope = slope
        self.intercept = intercept

    @classmethod
    def exact(cls, mu: float) -> AffineLLR:
        """The exact LLR map of mated scores N(mu, 1) against non-mated N(0, 1)."""
        return cls(mu, -(mu**2) / 2)

    def fit(self, scores: np.ndarray, labels: np.ndarray) -> AffineLLR:
        """Nothing to learn: the map is given."""
        return self

    def llr(self, scores: np.ndarray) -> np.ndarray:
        """slope * scores + intercept, elementwise (any shape)."""
        return self.slope * np.asarray(scores, dtype=np.float64) + self.intercept


class ZeroLLR:
    """A calibrator on raw scores whose every LLR is 0: an attacker who learns nothing."""

    input_scale = "raw"

    def fit(self, scores: np.ndarray, labels: np.ndarray) -> ZeroLLR:
        """Nothing to learn."""
        return self

    def llr(self, scores: np.ndarray) -> np.ndarray:
        """Zeros of the shape of *scores*."""
        return np.zeros(np.shape(scores), dtype=np.float64)


# --------------------------------------------------------------------------- drawn cases


class GaussianCase(NamedTuple):
    """Scores of the Gaussian model, who spoke each trial, and the attacker's prior.

    Attributes
    ----------
    scores : ndarray, shape (T, N)
        Raw scores: noise in [-4, 4] plus ``mu`` at the trial's own speaker.
    true_index : ndarray of int, shape (T,)
        Column of the trial's speaker, -1 for an outsider; trial 0 is always enrolled.
    mu : float
        Mean of a mated score.
    outside : float
        π_∅ in (0, 1).
    prior_weights : ndarray, shape (N,), or None
        The enrolled prior given enrolment π' (sums to 1); None for the uniform prior.
    """

    scores: np.ndarray
    true_index: np.ndarray
    mu: float
    outside: float
    prior_weights: np.ndarray | None

    @property
    def n_enrolled(self) -> int:
        return self.scores.shape[1]

    @property
    def llr(self) -> np.ndarray:
        """The exact LLRs μ s - μ²/2, shape (T, N)."""
        return self.mu * self.scores - self.mu**2 / 2

    @property
    def log_prior(self) -> np.ndarray:
        """log π' (given enrolment), shape (N,)."""
        if self.prior_weights is None:
            return np.full(self.n_enrolled, -math.log(self.n_enrolled))
        return np.log(self.prior_weights)

    @property
    def enrolled(self) -> list[str]:
        return [f"spk{j}" for j in range(self.n_enrolled)]

    def scoreset(self) -> ScoreSet:
        """The case as an eval ScoreSet; outsider trials are spoken by ``outsider<i>``."""
        speakers = [self.enrolled[m] if m >= 0 else f"outsider{i}" for i, m in enumerate(self.true_index.tolist())]
        return ScoreSet(self.scores, self.enrolled, speakers, [f"utt{i:03d}" for i in range(len(speakers))])

    def prior(self, outside: float | None = None):
        """The lidframe prior of the case with ``outside`` (default: the case's π_∅)."""
        outside = self.outside if outside is None else outside
        if self.prior_weights is None:
            return Uniform(outside=outside)
        return Explicit(dict(zip(self.enrolled, self.prior_weights.tolist())), outside=outside)


@st.composite
def gaussian_open_set_cases(draw, max_trials: int = 12, max_enrolled: int = 6, min_outside: float = 1e-4):
    """:class:`GaussianCase` with drawn noise, speakers (outsiders among them), μ, π_∅ and prior."""
    n_enrolled = draw(st.integers(2, max_enrolled))
    n_trials = draw(st.integers(1, max_trials))
    mu = draw(st.floats(0.25, 4.0))
    noise = draw(arrays(np.float64, (n_trials, n_enrolled), elements=st.floats(-4.0, 4.0, width=64)))
    # trial 0 enrolled: evaluate() calibrates on (and needs) at least one enrolled trial
    first = draw(st.integers(0, n_enrolled - 1))
    rest = draw(st.lists(st.integers(-1, n_enrolled - 1), min_size=n_trials - 1, max_size=n_trials - 1))
    true_index = np.array([first, *rest], dtype=np.int64)
    enrolled_rows = np.flatnonzero(true_index >= 0)
    scores = noise.copy()
    scores[enrolled_rows, true_index[enrolled_rows]] += mu
    outside = draw(st.floats(min_outside, 0.95))
    prior_weights = None
    if draw(st.booleans()):
        mass = np.array(draw(st.lists(st.floats(0.05, 20.0), min_size=n_enrolled, max_size=n_enrolled)))
        prior_weights = mass / mass.sum()
    return GaussianCase(scores, true_index, mu, outside, prior_weights)


# --------------------------------------------------------------------------- reference


class OpenSetNumbers(NamedTuple):
    """Per-trial open-set numbers of T trials, as the reference and lidframe give them.

    Attributes
    ----------
    lid_bits : ndarray, shape (T,)
        log2 p(true | s) / π_true.
    membership_bits : ndarray, shape (T,)
        log2 p(enrolled | s) / (1 - π_∅) of an enrolled trial; the LID of an outsider.
    posterior_true : ndarray, shape (T,)
        p(true speaker | s), p(∅ | s) for an outsider.
    top_posterior : ndarray, shape (T,)
        max_j p(j | s) over the enrolled speakers.
    """

    lid_bits: np.ndarray
    membership_bits: np.ndarray
    posterior_true: np.ndarray
    top_posterior: np.ndarray


def reference_log_posterior(llr: np.ndarray, log_prior: np.ndarray, outside: float) -> np.ndarray:
    """log p(h | s_i) over h = 1..N, ∅ by the open-set Bayes rule, in float64.

    Parameters
    ----------
    llr : ndarray, shape (T, N)
        Natural-log LLRs l_ij.
    log_prior : ndarray, shape (N,)
        log π' (given enrolment).
    outside : float
        π_∅ in [0, 1).

    Returns
    -------
    ndarray, shape (T, N + 1)
        Columns 0..N-1: log p(j | s_i); column N: log p(∅ | s_i).
    """
    llr = np.asarray(llr, dtype=np.float64)
    log_joint_enrolled = math.log1p(-outside) + log_prior[None, :] + llr
    log_joint_outside = np.full((llr.shape[0], 1), math.log(outside) if outside > 0 else -math.inf)
    log_joint = np.concatenate([log_joint_enrolled, log_joint_outside], axis=1)
    peak = log_joint.max(axis=1, keepdims=True)
    log_z = peak + np.log(np.exp(log_joint - peak).sum(axis=1, keepdims=True))
    return log_joint - log_z


def reference_open_set(
    llr: np.ndarray, true_index: np.ndarray, log_prior: np.ndarray, outside: float
) -> OpenSetNumbers:
    """Every trial's open-set numbers from :func:`reference_log_posterior` (module docstring).

    Parameters
    ----------
    llr : ndarray, shape (T, N)
    true_index : ndarray of int, shape (T,)
        Column of the true speaker, -1 for an outsider.
    log_prior : ndarray, shape (N,)
    outside : float
        π_∅ in (0, 1).
    """
    n_trials, n_enrolled = np.shape(llr)
    log_post = reference_log_posterior(llr, log_prior, outside)
    is_outsider = true_index < 0
    true_column = np.where(is_outsider, n_enrolled, true_index)
    log_post_true = log_post[np.arange(n_trials), true_column]
    log_prior_true = np.where(
        is_outsider, math.log(outside), math.log1p(-outside) + log_prior[np.maximum(true_index, 0)]
    )
    lid_bits = (log_post_true - log_prior_true) / LN2
    peak = log_post[:, :n_enrolled].max(axis=1)
    log_enrolled = peak + np.log(np.exp(log_post[:, :n_enrolled] - peak[:, None]).sum(axis=1))
    membership_bits = np.where(is_outsider, lid_bits, (log_enrolled - math.log1p(-outside)) / LN2)
    return OpenSetNumbers(lid_bits, membership_bits, np.exp(log_post_true), np.exp(peak))


def assert_matches_reference(got: OpenSetNumbers, want: OpenSetNumbers) -> None:
    """Raise AssertionError unless lidframe's numbers *got* equal the reference *want*.

    LIDs and membership disclosures (bits) to ``LID_RTOL``/``LID_ATOL``, probabilities to
    ``PROBABILITY_ATOL``; this is the check the mutants must fail.
    """
    for name in ("lid_bits", "membership_bits"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=LID_RTOL, atol=LID_ATOL, err_msg=name)
    for name in ("posterior_true", "top_posterior"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=0, atol=PROBABILITY_ATOL, err_msg=name)


# --------------------------------------------------------------------------- lidframe's two paths


def engine_stats(llr: np.ndarray, log_prior: np.ndarray) -> OpenSetStats:
    """The per-trial statistics an engine hands to :func:`open_set_trials`, computed densely.

    ``log_evidence`` E_i = log Σ_j π'_j e^{l_ij} (exactly the row's LLR where the row is
    constant, as the engines promise), ``log_top`` = max_j log p'(j | s_i) by lidframe's
    closed-set :func:`log_posterior`.
    """
    llr = np.asarray(llr, dtype=np.float64)
    log_evidence = logsumexp(llr + log_prior, axis=1)
    constant = llr.max(axis=1) == llr.min(axis=1)
    log_evidence[constant] = llr[constant, 0]
    return OpenSetStats(log_evidence=log_evidence, log_top=log_posterior(llr, log_prior).max(axis=1))


def lidframe_open_set(llr: np.ndarray, true_index: np.ndarray, log_prior: np.ndarray, outside: float) -> OpenSetNumbers:
    """lidframe's closed-set LID (:func:`lid_from_llr`) turned open by :func:`open_set_trials`.

    *true_index* goes to both, so a wrong true column reaches every number.
    """
    closed_lid_bits = lid_from_llr(llr, log_prior, true_index)
    trials = open_set_trials(closed_lid_bits, engine_stats(llr, log_prior), true_index, log_prior, outside)
    assert trials.outside == outside
    np.testing.assert_array_equal(trials.is_outsider, true_index < 0)
    return OpenSetNumbers(trials.lid_bits, trials.membership_bits, trials.posterior_true, trials.top_posterior)


def evaluate_case(case: GaussianCase, outside: float | None = None, calibrator=None, **kwargs):
    """:func:`lidframe.evaluate` of *case* (dev = eval), exact LLR map unless *calibrator* is given."""
    eval_set = case.scoreset()
    calibrator = AffineLLR.exact(case.mu) if calibrator is None else calibrator
    return evaluate(
        eval_set, eval_set, calibrator=calibrator, prior=case.prior(outside), binary_metrics=False, **kwargs
    )


def numbers_of_result(result) -> OpenSetNumbers:
    """The per-trial open-set numbers of an evaluate() Result."""
    return OpenSetNumbers(result.lid, result.membership_bits, result.posterior_true, result.top_posterior)


# --------------------------------------------------------------------------- 1. closed form


@given(
    log_evidence=arrays(np.float64, st.integers(1, 20), elements=st.floats(-700.0, 700.0, width=64)),
    outside=st.floats(1e-12, 0.999),
)
def test_log_normaliser_is_log_of_pi_outside_plus_enrolled_mass_times_evidence(log_evidence, outside):
    # log Z = log(π_∅ + (1 - π_∅) e^E) as a log-sum of two positive terms: no cancellation anywhere
    want = np.logaddexp(math.log(outside), math.log1p(-outside) + log_evidence)
    np.testing.assert_allclose(log_normaliser(log_evidence, outside), want, rtol=1e-12, atol=1e-12)
    assert log_normaliser([0.0], outside)[0] == 0.0


@given(case=gaussian_open_set_cases())
def test_open_set_log_posterior_is_the_closed_form(case):
    want = reference_log_posterior(case.llr, case.log_prior, case.outside)
    got = open_set_log_posterior(case.llr, case.log_prior, case.outside)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.exp(want).sum(axis=1), 1.0, rtol=1e-12)


@given(case=gaussian_open_set_cases())
def test_open_set_trials_equal_the_closed_form_posterior(case):
    want = reference_open_set(case.llr, case.true_index, case.log_prior, case.outside)
    assert_matches_reference(lidframe_open_set(case.llr, case.true_index, case.log_prior, case.outside), want)


@given(case=gaussian_open_set_cases())
def test_evaluate_equals_the_closed_form_posterior(case):
    result = evaluate_case(case)
    assert result.outside == case.outside
    np.testing.assert_array_equal(result.is_outsider, case.true_index < 0)
    np.testing.assert_allclose(result.log_prior, case.log_prior, rtol=0, atol=1e-12)
    want = reference_open_set(case.llr, case.true_index, case.log_prior, case.outside)
    assert_matches_reference(numbers_of_result(result), want)


# --------------------------------------------------------------------------- 2. ALID and I(H; S)


def expected_lid_bits(
    n_enrolled: int, mu: float, outside: float, slope: float, intercept: float, n_nodes: int = 48
) -> tuple[float, float]:
    """E[LID] and E[LID²] (bits) of an attacker with LLR map slope * s + intercept, by quadrature.

    The truth is the Gaussian model (uniform enrolled prior, π_∅ on ∅); the attacker's
    posterior uses the given map, so with the exact map (slope μ, intercept -μ²/2) E[LID]
    is the mutual information I(H; S) = Σ_h π_h E[log2 p(h | S)/π_h | h], and with any
    other map it is I - E[KL(p || attacker's p)] <= I (Gibbs).  Gauss-Hermite product
    quadrature with *n_nodes* nodes per score (N = 2 or 3 scores); by symmetry, enrolled
    speaker 0 stands for every enrolled speaker.

    Returns
    -------
    mean_bits, second_moment_bits2 : float
    """
    nodes, weights = hermegauss(n_nodes)  # for the weight exp(-x²/2)
    weights = weights / math.sqrt(2 * math.pi)
    grid = np.stack(np.meshgrid(*[nodes] * n_enrolled, indexing="ij"), axis=-1).reshape(-1, n_enrolled)
    grid_weight = np.prod(
        np.stack(np.meshgrid(*[weights] * n_enrolled, indexing="ij"), axis=-1).reshape(-1, n_enrolled), axis=1
    )
    log_prior_enrolled = math.log1p(-outside) - math.log(n_enrolled)
    log_prior_outside = math.log(outside)

    def attacker_log_posterior(scores: np.ndarray) -> np.ndarray:
        log_joint = np.concatenate(
            [
                log_prior_enrolled + slope * scores + intercept,
                np.full((scores.shape[0], 1), log_prior_outside),
            ],
            axis=1,
        )
        peak = log_joint.max(axis=1, keepdims=True)
        return log_joint - peak - np.log(np.exp(log_joint - peak).sum(axis=1, keepdims=True))

    mated = grid.copy()
    mated[:, 0] += mu
    lid_enrolled = (attacker_log_posterior(mated)[:, 0] - log_prior_enrolled) / LN2
    lid_outsider = (attacker_log_posterior(grid)[:, n_enrolled] - log_prior_outside) / LN2
    mean = (1 - outside) * grid_weight @ lid_enrolled + outside * grid_weight @ lid_outsider
    second = (1 - outside) * grid_weight @ lid_enrolled**2 + outside * grid_weight @ lid_outsider**2
    return float(mean), float(second)


def simulate_trials(rng: np.random.Generator, n_trials: int, n_enrolled: int, mu: float, outside: float):
    """(scores (T, N), true_index (T,)) of the Gaussian model, hypotheses drawn from the prior.

    ∅ with probability π_∅, else an enrolled speaker uniformly.
    """
    is_outsider = rng.random(n_trials) < outside
    true_index = np.where(is_outsider, -1, rng.integers(0, n_enrolled, n_trials))
    scores = rng.standard_normal((n_trials, n_enrolled))
    rows = np.flatnonzero(~is_outsider)
    scores[rows, true_index[rows]] += mu
    return scores, true_index


#: (N, μ, π_∅, seed) of the ALID-vs-I checks.
INFORMATION_CASES = [(2, 2.0, 0.3, 11), (3, 1.5, 0.5, 12), (3, 3.0, 0.1, 13)]
N_SIMULATED_TRIALS = 20_000


def misspecified_map(mu: float) -> tuple[float, float]:
    """(slope, intercept) of a wrong map: half the slope, the intercept 1 nat too high."""
    return 0.5 * mu, -(mu**2) / 2 + 1.0


@pytest.mark.parametrize(("n_enrolled", "mu", "outside"), [case[:3] for case in INFORMATION_CASES])
def test_quadrature_converged_and_gibbs(n_enrolled, mu, outside):
    information, _ = expected_lid_bits(n_enrolled, mu, outside, mu, -(mu**2) / 2)
    coarser, _ = expected_lid_bits(n_enrolled, mu, outside, mu, -(mu**2) / 2, n_nodes=40)
    assert abs(information - coarser) < 1e-6
    # 0 < I < H(H), the entropy of the hypothesis
    prior = np.r_[np.full(n_enrolled, (1 - outside) / n_enrolled), outside]
    assert 0 < information < -(prior * np.log2(prior)).sum()
    wrong, _ = expected_lid_bits(n_enrolled, mu, outside, *misspecified_map(mu))
    assert wrong < information - 0.05


def _alid_and_standard_error(lid_bits: np.ndarray) -> tuple[float, float]:
    return float(lid_bits.mean()), float(lid_bits.std(ddof=1) / math.sqrt(lid_bits.size))


@pytest.mark.parametrize(("n_enrolled", "mu", "outside", "seed"), INFORMATION_CASES)
def test_alid_of_open_set_trials_estimates_mutual_information(n_enrolled, mu, outside, seed):
    scores, true_index = simulate_trials(np.random.default_rng(seed), N_SIMULATED_TRIALS, n_enrolled, mu, outside)
    log_prior = np.full(n_enrolled, -math.log(n_enrolled))
    information, _ = expected_lid_bits(n_enrolled, mu, outside, mu, -(mu**2) / 2)
    exact = lidframe_open_set(mu * scores - mu**2 / 2, true_index, log_prior, outside)
    alid, standard_error = _alid_and_standard_error(exact.lid_bits)
    assert abs(alid - information) < 4 * standard_error, (alid, information, standard_error)
    slope, intercept = misspecified_map(mu)
    wrong = lidframe_open_set(slope * scores + intercept, true_index, log_prior, outside)
    alid_wrong, standard_error_wrong = _alid_and_standard_error(wrong.lid_bits)
    assert information - alid_wrong > 4 * standard_error_wrong, (alid_wrong, information, standard_error_wrong)
    expected_wrong, _ = expected_lid_bits(n_enrolled, mu, outside, slope, intercept)
    assert abs(alid_wrong - expected_wrong) < 4 * standard_error_wrong, (alid_wrong, expected_wrong)


@pytest.mark.parametrize(("n_enrolled", "mu", "outside", "seed"), INFORMATION_CASES)
def test_alid_of_evaluate_estimates_mutual_information(n_enrolled, mu, outside, seed):
    scores, true_index = simulate_trials(np.random.default_rng(seed), N_SIMULATED_TRIALS, n_enrolled, mu, outside)
    case = GaussianCase(scores, true_index, mu, outside, None)
    information, _ = expected_lid_bits(n_enrolled, mu, outside, mu, -(mu**2) / 2)
    exact = evaluate_case(case)
    _, standard_error = _alid_and_standard_error(exact.lid)
    assert abs(exact.summary.alid - information) < 4 * standard_error, (exact.summary.alid, information)
    slope, intercept = misspecified_map(mu)
    wrong = evaluate_case(case, calibrator=AffineLLR(slope, intercept))
    _, standard_error_wrong = _alid_and_standard_error(wrong.lid)
    assert information - wrong.summary.alid > 4 * standard_error_wrong, (wrong.summary.alid, information)


# --------------------------------------------------------------------------- 3. bound and decomposition


def lid_bound_bits(true_index: np.ndarray, log_prior: np.ndarray, outside: float) -> np.ndarray:
    """-log2 π_true of every trial: π_∅ for an outsider, (1 - π_∅) π'_m for speaker m."""
    log_prior_true = np.where(
        true_index < 0, math.log(outside), math.log1p(-outside) + log_prior[np.maximum(true_index, 0)]
    )
    return -log_prior_true / LN2


def assert_below_bound(lid_bits: np.ndarray, bound_bits: np.ndarray) -> None:
    """LID <= -log2 π_true, up to float64 rounding (1e-12 relative)."""
    excess = lid_bits - bound_bits
    assert np.all(excess <= 1e-12 * np.maximum(1.0, np.abs(bound_bits))), excess.max()


@given(case=gaussian_open_set_cases())
def test_open_set_lid_below_minus_log2_prior_of_truth(case):
    numbers = lidframe_open_set(case.llr, case.true_index, case.log_prior, case.outside)
    assert_below_bound(numbers.lid_bits, lid_bound_bits(case.true_index, case.log_prior, case.outside))


def assert_group_record(record, lid_bits: np.ndarray) -> None:
    """An aggregate record of a trial group against the reference's *lid_bits* of the group.

    ALID, PDR (the share of LID > 0), NDR, LID+ and LID- from *lid_bits*, and ALID = PDR LID+ +
    NDR LID- with those sides (an empty side's term 0).  A reference LID within 1e-9 bit of 0
    could round to either side in lidframe, so PDR is then only bracketed.
    """
    assert record.n_trials == lid_bits.size
    assert record.alid == pytest.approx(lid_bits.mean(), rel=LID_RTOL, abs=LID_ATOL)
    assert record.lid_max == pytest.approx(lid_bits.max(), rel=LID_RTOL, abs=LID_ATOL)
    positive = lid_bits > 0
    if (np.abs(lid_bits) < 1e-9).any():
        assert np.mean(lid_bits > 1e-9) <= record.pdr <= np.mean(lid_bits > -1e-9)
        return
    assert (record.pdr, record.ndr) == (np.mean(positive), np.mean(~positive))
    lid_pos = lid_bits[positive].mean() if positive.any() else 0.0
    lid_neg = lid_bits[~positive].mean() if (~positive).any() else 0.0
    sides = np.mean(positive) * lid_pos + np.mean(~positive) * lid_neg
    assert alid_decomposition(record) == pytest.approx(sides, rel=LID_RTOL, abs=LID_ATOL)
    assert record.alid == pytest.approx(sides, rel=LID_RTOL, abs=LID_ATOL)


@given(case=gaussian_open_set_cases())
def test_evaluate_lid_bound_and_alid_decomposition_by_group(case):
    # the groups' aggregates against the closed-form reference, under the case's prior
    # (uniform or drawn, :func:`gaussian_open_set_cases`)
    result = evaluate_case(case)
    assert np.isfinite(result.lid).all()
    assert_below_bound(result.lid, lid_bound_bits(case.true_index, result.log_prior, case.outside))
    want = reference_open_set(case.llr, case.true_index, case.log_prior, case.outside)
    summary = result.summary
    assert summary.alid == pytest.approx(want.lid_bits.mean(), rel=LID_RTOL, abs=LID_ATOL)
    assert alid_decomposition(summary) == pytest.approx(summary.alid, rel=1e-12, abs=1e-12)
    groups = summary.open_set
    assert groups.outside == case.outside
    is_outsider = case.true_index < 0
    assert_group_record(groups.enrolled, want.lid_bits[~is_outsider])
    assert_group_record(groups.membership_enrolled, want.membership_bits[~is_outsider])
    if is_outsider.any():
        assert_group_record(groups.outsider, want.lid_bits[is_outsider])
    else:
        assert groups.outsider is None


# --------------------------------------------------------------------------- 4. π_∅ -> 0


#: π_∅ values of the limit check.
SMALL_OUTSIDE = (1e-3, 1e-6, 1e-9)


def assert_converges_to_closed_set(open_lid_bits, closed_lid_bits, log_evidence, outside) -> None:
    """Enrolled trials' open LID minus closed LID = -log2(1 + x), x = π_∅ (e^{-E} - 1).

    Checked as two bounds: |difference| <= |x| / ((1 - π_∅) ln 2) always (a constant
    C_i = |e^{-E_i} - 1| / ln 2 times π_∅ / (1 - π_∅): linear in π_∅), and
    |difference + x / ln 2| <= x² / ln 2 where |x| <= 1/2; each with 1e-12 bit of rounding.
    """
    difference = open_lid_bits - closed_lid_bits
    x = outside * np.expm1(-log_evidence)
    assert np.all(np.abs(difference) <= np.abs(x) / ((1 - outside) * LN2) + 1e-12), (difference, x)
    small = np.abs(x) <= 0.5
    assert np.all(np.abs(difference + x / LN2)[small] <= (x**2 / LN2)[small] + 1e-12)


@given(case=gaussian_open_set_cases(), outside=st.sampled_from(SMALL_OUTSIDE))
def test_open_set_trials_converge_to_closed_set_as_outside_vanishes(case, outside):
    enrolled = case.true_index >= 0
    llr, true_index = case.llr[enrolled], case.true_index[enrolled]
    closed_lid_bits = lid_from_llr(llr, case.log_prior, true_index)
    numbers = lidframe_open_set(llr, true_index, case.log_prior, outside)
    log_evidence = logsumexp(llr + case.log_prior, axis=1)  # E_i, the reference's own
    assert_converges_to_closed_set(numbers.lid_bits, closed_lid_bits, log_evidence, outside)


@given(case=gaussian_open_set_cases())
def test_evaluate_converges_to_closed_set_as_outside_vanishes(case):
    enrolled = case.true_index >= 0
    closed = evaluate_case(case, outside=0.0)
    log_evidence = logsumexp(case.llr[enrolled] + case.log_prior, axis=1)
    for outside in SMALL_OUTSIDE:
        open_lid_bits = evaluate_case(case, outside=outside).lid[enrolled]
        assert_converges_to_closed_set(open_lid_bits, closed.lid[enrolled], log_evidence, outside)


# --------------------------------------------------------------------------- 5. LLR = 0


@given(case=gaussian_open_set_cases())
def test_zero_llr_open_set_trials_give_exactly_zero(case):
    numbers = lidframe_open_set(np.zeros_like(case.scores), case.true_index, case.log_prior, case.outside)
    assert np.all(numbers.lid_bits == 0.0)
    assert np.all(numbers.membership_bits == 0.0)


@given(case=gaussian_open_set_cases())
def test_zero_llr_evaluate_gives_exactly_zero(case):
    result = evaluate_case(case, calibrator=ZeroLLR())
    assert np.all(result.lid == 0.0), result.lid
    assert np.all(result.membership_bits == 0.0), result.membership_bits
    assert result.summary.alid == 0.0 and result.summary.pdr == 0.0


# --------------------------------------------------------------------------- 6. π_∅ = 0


@given(case=gaussian_open_set_cases())
def test_outside_zero_is_the_closed_set_exactly(case):
    eval_set = case.scoreset()
    calibrator = AffineLLR.exact(case.mu)
    plain = evaluate(eval_set, eval_set, calibrator=calibrator, prior="uniform", binary_metrics=False)
    zero = evaluate(eval_set, eval_set, calibrator=calibrator, prior=Uniform(outside=0.0), binary_metrics=False)
    is_outsider = case.true_index < 0
    for result in (plain, zero):
        assert result.outside == 0.0
        assert np.isnan(result.lid[is_outsider]).all() and np.isfinite(result.lid[~is_outsider]).all()
        assert result.membership_bits is None and result.top_posterior is None
        assert result.summary.open_set is None
    np.testing.assert_array_equal(zero.lid, plain.lid)  # NaN at the same places
    np.testing.assert_array_equal(zero.posterior_true, plain.posterior_true)
    summary_zero, summary_plain = zero.summary.to_dict(), plain.summary.to_dict()
    summary_zero.pop("prior"), summary_plain.pop("prior")  # how the prior is described may differ
    assert summary_zero == summary_plain


# --------------------------------------------------------------------------- 7. mutants


def mutant_case() -> GaussianCase:
    """A fixed case with enrolled and outsider trials under a non-uniform prior."""
    rng = np.random.default_rng(2024)
    scores, true_index = simulate_trials(rng, 40, 4, 2.0, 0.3)
    assert (true_index < 0).any() and (true_index >= 0).any()
    return GaussianCase(scores, true_index, 2.0, 0.3, np.array([0.1, 0.2, 0.3, 0.4]))


def dropped_outside_log_normaliser(log_evidence, outside):
    """Mutant (a): Z = Σ_k π_k e^{l_k}, without π_∅, so log Z = log(1 - π_∅) + E."""
    return math.log1p(-outside) + np.asarray(log_evidence, dtype=np.float64)


def next_column(true_index: np.ndarray, n_enrolled: int) -> np.ndarray:
    """Mutant (b): the true column m read as (m + 1) mod N; outsiders (-1) stay."""
    true_index = np.asarray(true_index)
    return np.where(true_index < 0, true_index, (true_index + 1) % n_enrolled)


def patch_everywhere(monkeypatch, original, replacement) -> int:
    """Replace *original* by *replacement* in every loaded lidframe module that holds it by name.

    Returns
    -------
    int
        How many modules were patched.
    """
    name = original.__name__
    patched = 0
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("lidframe") and getattr(module, name, None) is original:
            monkeypatch.setattr(module, name, replacement)
            patched += 1
    return patched


def test_reference_check_passes_on_the_mutant_case():
    case = mutant_case()
    want = reference_open_set(case.llr, case.true_index, case.log_prior, case.outside)
    assert_matches_reference(lidframe_open_set(case.llr, case.true_index, case.log_prior, case.outside), want)


def test_reference_check_catches_pi_outside_dropped_from_the_normaliser(monkeypatch):
    case = mutant_case()
    want = reference_open_set(case.llr, case.true_index, case.log_prior, case.outside)
    monkeypatch.setattr(openset, "log_normaliser", dropped_outside_log_normaliser)
    mutated = lidframe_open_set(case.llr, case.true_index, case.log_prior, case.outside)
    with pytest.raises(AssertionError):
        assert_matches_reference(mutated, want)


def test_reference_check_catches_the_wrong_true_column():
    case = mutant_case()
    want = reference_open_set(case.llr, case.true_index, case.log_prior, case.outside)
    mutated = lidframe_open_set(case.llr, next_column(case.true_index, case.n_enrolled), case.log_prior, case.outside)
    with pytest.raises(AssertionError):
        assert_matches_reference(mutated, want)


def test_reference_check_catches_mutants_in_evaluate(monkeypatch):
    case = mutant_case()
    want = reference_open_set(case.llr, case.true_index, case.log_prior, case.outside)
    assert_matches_reference(numbers_of_result(evaluate_case(case)), want)
    with monkeypatch.context() as patch:
        assert patch_everywhere(patch, openset.log_normaliser, dropped_outside_log_normaliser) >= 1
        mutated = numbers_of_result(evaluate_case(case))
    with pytest.raises(AssertionError):
        assert_matches_reference(mutated, want)
    original = openset.open_set_trials
    signature = inspect.signature(original)

    def wrong_column_open_set_trials(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.arguments["true_index"] = next_column(bound.arguments["true_index"], case.n_enrolled)
        return original(*bound.args, **bound.kwargs)

    with monkeypatch.context() as patch:
        assert patch_everywhere(patch, original, wrong_column_open_set_trials) >= 1
        mutated = numbers_of_result(evaluate_case(case))
    with pytest.raises(AssertionError):
        assert_matches_reference(mutated, want)
