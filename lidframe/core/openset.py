"""Open-set linkage: the hypothesis "nobody enrolled" (``∅``) with prior mass ``outside`` = π_∅.

The closed set (the LID paper) assumes every trial speaker is one of the N enrolled.  The
open set adds a hypothesis ∅, "this voice is not in the database", with prior mass π_∅
(``outside``, 0 <= π_∅ < 1); the enrolled speakers share 1 - π_∅ as the prior says:
π_j = (1 - π_∅) π'_j, where π' = exp(``log_prior``) is the prior *given* enrolment (sums
to 1).  With calibrated LLRs l_ij (mated against non-mated) and conditionally independent
scores, the likelihood of "speaker j" against "nobody" is exp(l_ij), so::

    p(j | s_i) = π_j e^{l_ij} / Z_i,    p(∅ | s_i) = π_∅ / Z_i,    Z_i = π_∅ + Σ_k π_k e^{l_ik}

Every engine computes, per trial and in one pass over the N enrolled speakers, the
closed-set LID (enrolled trials) and two more numbers (:class:`OpenSetStats`):

``log_evidence``  E_i = log Σ_j π'_j e^{l_ij} (nats): the log likelihood ratio of
                  "enrolled" against "nobody"; Z_i = π_∅ + (1 - π_∅) e^{E_i};
``log_top``       max_j log p'(j | s_i) (nats, <= 0): the closed-set posterior of the
                  attacker's best enrolled guess.

From these :func:`open_set_trials` gives every trial's disclosure (bits)::

    LID_i (enrolled, true m) = log2 p(m | s_i) / π_m = closed LID_i - (log Z_i - E_i) / ln 2
    LID_i (outsider)         = log2 p(∅ | s_i) / π_∅ = -log Z_i / ln 2   (membership disclosure)
    membership_i (enrolled)  = log2 p(enrolled | s_i) / (1 - π_∅) = (E_i - log Z_i) / ln 2
    top_posterior_i          = max_j p(j | s_i) = (1 - π_∅) exp(log_top_i + E_i - log Z_i)

``log Z`` is computed by :func:`log_normaliser` so that E_i = 0 (a row of zero LLRs, a
random attacker) gives log Z = 0 exactly, hence LID = 0 exactly for every trial at any
π_∅.  π_∅ = 0 is the closed set: the engines do not compute these numbers then, and
outsider trials keep a NaN LID.

Unlike the closed set, a constant added to an LLR row does not cancel (E_i moves with it):
open-set numbers need a calibrator whose output is a true LLR.  The maths and a worked
example: ``docs/theory.md``; what an auditor reads from them: ``docs/openset.md``.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.core.lid import LN2, check_log_prior
from lidframe.errors import InputError
from lidframe.registry.capabilities import OUTSIDE_AUTO, check_outside, outside_of

__all__ = [
    "OpenSetStats",
    "OpenSetTrials",
    "log_normaliser",
    "open_set_trials",
    "open_set_log_posterior",
    "check_outside_value",
    "resolve_outside",
]


def check_outside_value(outside: object) -> float:
    """*outside* as a float in [0, 1) (``"auto"`` must have been resolved: :func:`resolve_outside`)."""
    value = check_outside(outside)
    if isinstance(value, str):
        raise InputError("outside='auto' must be resolved from the dev set first (resolve_outside)")
    return value


@attrs.frozen(eq=False, kw_only=True)
class OpenSetStats:
    """What an engine returns per trial, besides the closed-set LID, for the open set.

    Attributes
    ----------
    log_evidence : ndarray, shape (T,), float64
        E_i = log Σ_j π'_j e^{l_ij} in nats (LLR intercept included): "enrolled" against
        "nobody".  Exactly the row's LLR where the row's LLRs are all equal.
    log_top : ndarray, shape (T,), float64
        max_j log p'(j | s_i) in nats (closed-set posterior of the best enrolled guess).
    """

    log_evidence: np.ndarray
    log_top: np.ndarray

    @classmethod
    def empty(cls, n_trials: int) -> OpenSetStats:
        """Buffers for *n_trials* trials, to be filled tile by tile."""
        return cls(log_evidence=np.empty(n_trials), log_top=np.empty(n_trials))


@attrs.frozen(eq=False, kw_only=True)
class OpenSetTrials:
    """Per-trial open-set disclosures of T trials (:func:`open_set_trials`).

    Attributes
    ----------
    lid_bits : ndarray, shape (T,)
        LID of every trial (bits): identification disclosure of an enrolled trial,
        membership disclosure of an outsider trial.
    membership_bits : ndarray, shape (T,)
        log2 p(enrolled | s) / (1 - π_∅) of an enrolled trial; an outsider trial's LID.
    posterior_true : ndarray, shape (T,)
        p(true speaker | s) of an enrolled trial, p(∅ | s) of an outsider trial.
    top_posterior : ndarray, shape (T,)
        max_j p(j | s): the posterior of the attacker's best enrolled guess.
    is_outsider : ndarray of bool, shape (T,)
    outside : float
        π_∅.
    """

    lid_bits: np.ndarray
    membership_bits: np.ndarray
    posterior_true: np.ndarray
    top_posterior: np.ndarray
    is_outsider: np.ndarray
    outside: float


_LARGE_EVIDENCE = 700.0
"""E (nats) above which :func:`log_normaliser` leaves log1p(expm1): e^700 = 1e304 is finite."""


def log_normaliser(log_evidence: ArrayLike, outside: float) -> np.ndarray:
    """log Z = log(π_∅ + (1 - π_∅) e^E), elementwise, without overflow.

    Parameters
    ----------
    log_evidence : array_like
        E in nats.
    outside : float
        π_∅ in [0, 1).

    Returns
    -------
    ndarray
        log Z in nats; exactly 0 where E is exactly 0, for every π_∅.

    Notes
    -----
    With Δ = (1 - π_∅) expm1(E) (in (-1, ∞); 1 - π_∅ is exact for π_∅ >= 1/2):

    * E <= 700 and Δ > -1/2: log Z = log1p(Δ).  For E >= 0, Δ >= 0 and nothing cancels
      at any π_∅, the small terms near E = 0 kept (E + log((1 - π_∅) + π_∅ e^-E) would
      cancel there, E against the log, and E + log1p(π_∅ expm1(-E)) cancels inside log1p
      as π_∅ -> 1);
    * Δ <= -1/2 (E < 0 only): log Z = log(π_∅ + (1 - π_∅) e^E), a sum of two positive
      terms (log1p(Δ) would cancel there when π_∅ is small and E very negative);
    * E > 700 (expm1 would overflow): log Z = E + log((1 - π_∅) + π_∅ e^-E), a sum of two
      positive terms; E > 700 outweighs the log, which is >= log(2^-53) = -36.7.

    Relative error a few ulp throughout (within 2 ulp of 50-digit arithmetic for every
    π_∅ in (0, 1), a subnormal log Z aside: tests/core/test_log_normaliser.py).

    Examples
    --------
    >>> log_normaliser([0.0, 2.0], 0.25).round(6).tolist()
    [0.0, 1.756442]
    """
    evidence = np.asarray(log_evidence, dtype=np.float64)
    outside = check_outside_value(outside)
    enrolled = 1.0 - outside
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        delta = enrolled * np.expm1(np.minimum(evidence, _LARGE_EVIDENCE))  # in (-1, 1e304]
        moderate = np.where(
            delta > -0.5, np.log1p(delta), np.log(outside + enrolled * np.exp(np.minimum(evidence, 0.0)))
        )
        large = evidence + np.log(enrolled + outside * np.exp(-np.maximum(evidence, _LARGE_EVIDENCE)))
    return np.where(evidence > _LARGE_EVIDENCE, large, moderate)


def open_set_trials(
    closed_lid_bits: ArrayLike,
    stats: OpenSetStats,
    true_index: ArrayLike,
    log_prior: ArrayLike,
    outside: float,
) -> OpenSetTrials:
    """Every trial's open-set disclosure from an engine's per-trial numbers (module docstring).

    Parameters
    ----------
    closed_lid_bits : array_like, shape (T,)
        Closed-set LID (bits) of each trial; ignored (may be NaN) for outsider trials.
    stats : OpenSetStats
        The engine's ``log_evidence`` and ``log_top`` of the same trials.
    true_index : array_like of int, shape (T,)
        Column of each trial's true speaker; -1 for an outsider trial.
    log_prior : array_like, shape (N,)
        Natural-log prior over the enrolled speakers given enrolment (logsumexp = 0).
    outside : float
        π_∅ in (0, 1).

    Returns
    -------
    OpenSetTrials
    """
    outside = check_outside_value(outside)
    if outside == 0.0:
        raise InputError("outside = 0 is the closed set: outsider trials have no LID there")
    true_index = np.asarray(true_index, dtype=np.int64)
    log_prior = check_log_prior(log_prior, int(np.asarray(log_prior).shape[0]))
    evidence = np.asarray(stats.log_evidence, dtype=np.float64)
    log_top = np.asarray(stats.log_top, dtype=np.float64)
    closed_lid = np.asarray(closed_lid_bits, dtype=np.float64)
    if not (evidence.shape == log_top.shape == closed_lid.shape == true_index.shape) or true_index.ndim != 1:
        raise InputError(
            f"open-set statistics of {true_index.shape} trials have shapes {evidence.shape}, {log_top.shape}, "
            f"{closed_lid.shape}"
        )
    if not np.isfinite(evidence).all():
        bad = int(np.flatnonzero(~np.isfinite(evidence))[0])
        raise InputError(f"LLRs of row {bad} are not finite (log evidence {evidence[bad]}); check the calibrator")
    is_outsider = true_index < 0
    log_z = log_normaliser(evidence, outside)
    gap = log_z - evidence  # log Z - E: 0 exactly where E = 0
    # + 0.0: a zero disclosure is +0.0, never -0.0 (printed "-0.000"), as in the closed set
    lid = np.where(is_outsider, -log_z / LN2, closed_lid - gap / LN2) + 0.0
    membership = np.where(is_outsider, lid, -gap / LN2) + 0.0
    log_enrolled_mass = math.log1p(-outside)
    log_prior_true = np.where(is_outsider, math.log(outside), log_enrolled_mass + log_prior[np.maximum(true_index, 0)])
    # exp(LID ln 2 + ln prior) can round to a hair above 1 when the attacker is certain: clipped
    posterior_true = np.minimum(np.exp(lid * LN2 + log_prior_true), 1.0)
    top_posterior = np.minimum(np.exp(log_enrolled_mass + log_top - gap), 1.0)
    return OpenSetTrials(
        lid_bits=lid,
        membership_bits=membership,
        posterior_true=posterior_true,
        top_posterior=top_posterior,
        is_outsider=is_outsider,
        outside=outside,
    )


def open_set_log_posterior(llr: ArrayLike, log_prior: ArrayLike, outside: float) -> np.ndarray:
    """Dense log posterior over the N enrolled speakers and ∅ (small inputs; a reference).

    Parameters
    ----------
    llr : array_like, shape (T, N)
        Natural-log LLRs, intercept included.
    log_prior : array_like, shape (N,)
        Natural-log prior given enrolment (logsumexp = 0).
    outside : float
        π_∅ in [0, 1).

    Returns
    -------
    ndarray, shape (T, N + 1)
        log p(j | s_i) in columns 0..N-1 and log p(∅ | s_i) in column N (-inf when π_∅ = 0).
    """
    from scipy.special import log_softmax

    llr = np.asarray(llr, dtype=np.float64)
    log_prior = check_log_prior(log_prior, llr.shape[-1])
    outside = check_outside_value(outside)
    log_outside = math.log(outside) if outside > 0 else -math.inf
    joint = np.concatenate(
        [llr + math.log1p(-outside) + log_prior, np.full(llr.shape[:-1] + (1,), log_outside)], axis=-1
    )
    return log_softmax(joint, axis=-1)


def resolve_outside(prior: object, dev: object | None) -> tuple[float, str]:
    """(π_∅, ``"given"`` or ``"auto"``) of *prior*: its ``outside``, or the dev set's outsider share for ``"auto"``.

    Parameters
    ----------
    prior : prior
        Anything with an optional ``outside`` (:func:`lidframe.registry.outside_of`).
    dev : ScoreSet or None
        The dev set (``n_outsider_trials``, ``n_trials``) that ``"auto"`` reads.

    Raises
    ------
    InputError
        ``"auto"`` without a dev set, or with a dev set without outsider trials (its
        estimate would be 0, silently the closed set).
    """
    outside = outside_of(prior)
    if outside != OUTSIDE_AUTO:
        return float(outside), "given"
    if dev is None:
        raise InputError(
            "outside='auto' estimates the prior mass of 'nobody enrolled' from the dev set's share of outsider "
            "trials; give the dev set (dev=...) or a number"
        )
    n_outsider, n_trials = int(dev.n_outsider_trials), int(dev.n_trials)  # type: ignore[attr-defined]
    if n_outsider == 0:
        raise InputError(
            "outside='auto': the dev set has no outsider trial, so its estimate of the mass of 'nobody enrolled' "
            "is 0 (the closed set); give outside a number, or a dev set with outsider trials"
        )
    return n_outsider / n_trials, "auto"
