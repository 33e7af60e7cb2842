"""Certificate audit: what the Gaussian speaker mechanism promises, and what LID still sees.

For each mu of a sweep, :func:`dp_audit` releases a system's trial embeddings (and, if
asked, its enrolment embeddings) through :class:`~lidframe.privacy.mechanism.GaussianSpeakerMechanism`
and measures two attackers:

``bayes``
    the Bayes-optimal attacker for the mechanism: it knows each enrolled speaker's
    clipped clean enrolment centroid c_j and the noise sigma, and its posterior is
    p(j | y) proportional to exp(-||y - c_j||^2 / (2 sigma^2)) -- exact when every
    release of speaker j is c_j plus the mechanism's noise.  Its scores are these
    log-likelihoods, evaluated with the ``identity`` calibrator (they already are LLRs
    up to a per-trial constant, which cancels).
``cosine``
    a practical attacker: cosine scores against enrolment profiles, calibrated on a dev
    split released the same way (``logistic`` unless told otherwise).

It returns a frozen :class:`DPAuditResult` record, one row per mu: next to the measured
pairwise EER (ROC convex hull over all (trial, enrolled) pairs) and ALID / LIDmax, the
single-release bounds EER >= Phi(-mu_held / 2) and mutual information <= mu_held^2 / (2 ln 2)
bit, and the **violations**: a measured value whose bootstrap interval lies entirely beyond
its bound, which means a bug or broken assumptions (e.g. speaker information outside the
clipped embedding).

The bounds use ``mu_held``, the GDP parameter that holds for the audited trials' releases
(:meth:`~lidframe.privacy.mechanism.GaussianSpeakerMechanism.guarantee` on the clipped
eval trial embeddings, the ones released): the mechanism's mu when every clipped norm is
at most U and, with ``sensitivity="radius"`` (noise U / mu), no two clipped trial
embeddings lie more than U apart; otherwise mu max(1, D / Delta), D the largest distance
between two of them (at most 2 mu when the clipping works).  Each row gives
``mu_held``, the largest clipped norm, the diameter D and ``mu_reason``.

The bounds hold for trials whose speakers are drawn from the attacker's prior -- here
the uniform prior over the N enrolled speakers.  The audit checks them only when the
eval trials are **balanced**: every enrolled speaker has the same number of trials, so
their frequencies equal the prior exactly (:func:`trial_balance`).  Otherwise an
attacker that favours the frequent speakers beats both bounds without any bug (all
trials from one speaker: always answering that speaker gives EER 0 and
LID = log2 N on every trial, at any mu), so each row says ``eer_bound_applies`` /
``alid_bound_applies`` False with the reason in ``bounds_reason``, and reports no
violation.  ``lidframe dp-audit`` prints it as a table;
:func:`lidframe.report.analysis_figures.plot_dp_audit` draws it.  :func:`simulated_splits`
makes the simulated embeddings the command audits when given no data;
:func:`released_scoreset` is the grid's mechanism step (an attacker's score set of
released embeddings).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs
import numpy as np

from lidframe.core.engine import Engine, check_engine
from lidframe.core.evaluation import evaluate
from lidframe.data.records import RowRecord, TableRecord, as_rows, nested_row
from lidframe.data.scoreset import ScoreSet
from lidframe.data.vectors import unit_rows
from lidframe.errors import InputError
from lidframe.metrics.detection import eer_rocch
from lidframe.privacy.mechanism import (
    GaussianSpeakerMechanism,
    Guarantee,
    clip_to_norm,
    clipped_extent,
    gdp_eer_bound,
    gdp_mi_bound_bits,
)
from lidframe.registry import CalibratorLike
from lidframe.stats.bootstrap import Bootstrap, bootstrap_ci
from lidframe.stats.interval import Interval
from lidframe.stats.weighted import PairLLRs

if TYPE_CHECKING:
    from lidframe.attackers.base import EmbeddingAttacker

#: Bootstrap settings of :func:`dp_audit` unless told otherwise (fewer resamples than the
#: library default: an audit runs one interval per attacker and mu).
AUDIT_BOOTSTRAP = Bootstrap(n_boot=500)

__all__ = [
    "AUDIT_BOOTSTRAP",
    "AttackerMeasurement",
    "DPAuditRow",
    "DPAuditResult",
    "EmbeddingSplit",
    "TrialBalance",
    "trial_balance",
    "bayes_scores",
    "pairwise_llr",
    "dp_audit",
    "simulated_splits",
    "released_scoreset",
]


@attrs.frozen(eq=False)
class EmbeddingSplit:
    """Clean embeddings of one split.

    Attributes
    ----------
    enrol : dict
        speaker id -> (k, d) enrolment embeddings.
    trials : ndarray (T, d)
    trial_speakers : ndarray of str (T,)
    trial_ids : ndarray of str (T,)
    """

    enrol: dict
    trials: np.ndarray
    trial_speakers: np.ndarray
    trial_ids: np.ndarray


@attrs.frozen(eq=False, kw_only=True)
class AttackerMeasurement(RowRecord):
    """What one attacker of the audit reaches at one mu (``DPAuditRow.bayes`` / ``.cosine``).

    Intervals are bootstrap intervals at the audit's level, held as a table holds an
    interval: ``<metric>_low`` and ``<metric>_high`` (:meth:`interval` gives the
    :class:`~lidframe.stats.interval.Interval`).

    Attributes
    ----------
    eer : float
        Pairwise EER (a fraction): ROC convex hull over all (trial, enrolled) pairs.
    eer_low, eer_high : float
        The ends of ``eer``'s interval.
    alid : float
        ALID (bits).
    alid_low, alid_high : float
        The ends of ``alid``'s interval.
    lid_max : float
        The largest LID (bits).
    lid_q99 : float
        The 99th percentile of LID (bits).
    """

    eer: float
    eer_low: float
    eer_high: float
    alid: float
    alid_low: float
    alid_high: float
    lid_max: float
    lid_q99: float

    def interval(self, metric: str, *, level: float = math.nan) -> Interval:
        """The :class:`~lidframe.stats.interval.Interval` of ``"eer"`` or ``"alid"`` (at the audit's *level*)."""
        if metric not in ("eer", "alid"):
            raise InputError(f"a DP audit measures intervals of 'eer' and 'alid', not {metric!r}")
        found = Interval.from_columns(self, metric, level=level)
        assert found is not None  # both ends are fields
        return found

    @property
    def eer_ci(self) -> tuple[float, float]:
        """``(eer_low, eer_high)``; deprecated, removed in 0.4.0."""
        _warn_renamed("eer_ci", "eer_low, eer_high")
        return (self.eer_low, self.eer_high)

    @property
    def alid_ci(self) -> tuple[float, float]:
        """``(alid_low, alid_high)``; deprecated, removed in 0.4.0."""
        _warn_renamed("alid_ci", "alid_low, alid_high")
        return (self.alid_low, self.alid_high)


def _warn_renamed(old: str, new: str) -> None:
    warnings.warn(
        f"AttackerMeasurement.{old} is now {new} (the interval's ends as a table's columns); "
        "the old name will be removed in lidframe 0.4.0",
        FutureWarning,
        stacklevel=3,
    )


@attrs.frozen(eq=False, kw_only=True)
class DPAuditRow(RowRecord):
    """One mu of :func:`dp_audit` (a row of :class:`DPAuditResult`).

    Also a read-only mapping of its fields (:class:`~lidframe.data.records.RowRecord`);
    the attackers' fields read as ``bayes_eer``, ``bayes_eer_low``, ``bayes_eer_high``, ..., ``cosine_lid_q99``.

    Attributes
    ----------
    mu : float
        The mechanism's GDP parameter.
    sigma : float
        Its noise standard deviation (embedding units).
    eer_bound : float
        Phi(-mu_held / 2), the lowest EER (a fraction) of any attacker.
    mi_bound_bits : float
        mu_held^2 / (2 ln 2), the bound on mutual information (bits), hence on ALID.
    mu_held : float
        The GDP parameter that holds for the audited trials' releases, which the bounds
        use: ``mu`` when the clipping and the sensitivity convention hold for the clipped
        eval trial embeddings, else mu max(1, D / Delta) (module docstring).
    mu_reason : str
        One line saying why ``mu_held`` is what it is.
    max_clipped_norm : float
        The largest L2 norm of a clipped eval trial embedding (at most U, up to the
        relative tolerance :data:`lidframe.privacy.mechanism.TOLERANCE`, when the clipping works).
    clipped_diameter : float
        D, the largest distance between two clipped eval trial embeddings (embedding units).
    n_enrolled : int
        N, the eval's enrolled speakers.
    log2_n : float
        log2 N (bits), the ceiling of LID under the uniform prior.
    eer_bound_applies, alid_bound_applies : bool
        Whether the bounds are checked for these trials (both: the eval trials are
        balanced, see :func:`trial_balance`).
    bounds_reason : str
        One line saying why they are or are not checked.
    trial_prior_kl_bits : float
        KL(trial speakers' frequencies || uniform prior), bits.
    bayes, cosine : AttackerMeasurement
        What the Bayes-optimal and the cosine attacker reach.
    violations : tuple of str
        The violations, beyond the intervals, of the bounds that apply (a list in the
        mapping and the JSON); empty when none.
    """

    mu: float
    sigma: float
    eer_bound: float
    mi_bound_bits: float
    mu_held: float
    mu_reason: str
    max_clipped_norm: float
    clipped_diameter: float
    n_enrolled: int
    log2_n: float
    eer_bound_applies: bool
    alid_bound_applies: bool
    bounds_reason: str
    trial_prior_kl_bits: float
    bayes: AttackerMeasurement = attrs.field(metadata=nested_row(AttackerMeasurement))
    cosine: AttackerMeasurement = attrs.field(metadata=nested_row(AttackerMeasurement))
    violations: tuple[str, ...]


@attrs.frozen(eq=False)
class DPAuditResult(TableRecord):
    """Outcome of :func:`dp_audit`: one row per mu.

    ``to_dict()`` (JSON-able: ``rows``; NaN as None) and ``to_frame()`` come from
    :class:`~lidframe.data.records.TableRecord`.

    Attributes
    ----------
    rows : tuple of DPAuditRow
        One per mu, smallest first.
    """

    rows: tuple[DPAuditRow, ...] = attrs.field(converter=as_rows)

    @property
    def violated(self) -> bool:
        """Whether any mu has a bound violation (a bug, or broken assumptions)."""
        return any(row.violations for row in self.rows)


@attrs.frozen
class TrialBalance:
    """How the eval trials' speakers compare with the audit's uniform prior.

    Attributes
    ----------
    balanced : bool
        Every enrolled speaker has the same number (>= 1) of trials: the trial speakers'
        frequencies equal the uniform prior, the condition of the GDP bounds.
    kl_bits : float
        KL(trial frequencies || uniform prior) in bits: 0 when balanced, log2 N when all
        trials come from one speaker.
    reason : str
        One line saying why the bounds are or are not checked.
    """

    balanced: bool
    kl_bits: float
    reason: str


def trial_balance(trial_speakers: np.ndarray, enrolled: Sequence[str]) -> TrialBalance:
    """Whether the GDP bounds apply to these trials under the uniform prior over *enrolled*.

    The criterion is exact balance: every enrolled speaker has the same number of
    trials.  The bounds are statements about trials drawn from the prior; with any other
    trial composition an attacker can beat them by favouring the frequent speakers.

    Parameters
    ----------
    trial_speakers : ndarray of str, shape (T,)
        Speaker of each eval trial (all enrolled).
    enrolled : sequence of str, length N
        The enrolled speakers.
    """
    speakers = np.asarray(trial_speakers).astype(str)
    counts = np.array([int(np.count_nonzero(speakers == s)) for s in enrolled])
    n_enrolled = counts.size
    freq = counts / counts.sum()
    present = freq > 0
    kl_bits = float(np.sum(freq[present] * np.log2(freq[present] * n_enrolled)))
    low, high = int(counts.min()), int(counts.max())
    if low == high:
        reason = (
            f"eval trials balanced ({low} per enrolled speaker): their speakers' frequencies equal the uniform prior"
        )
        return TrialBalance(True, 0.0, reason)
    reason = (
        f"eval trials not balanced over the {n_enrolled} enrolled speakers ({low} to {high} per speaker, "
        f"KL(trials || uniform prior) = {kl_bits:.3g} bit): the GDP bounds hold for trial speakers drawn "
        "from the prior, so they are not checked"
    )
    return TrialBalance(False, kl_bits, reason)


def _check_closed_set(split: EmbeddingSplit) -> None:
    enrolled = set(split.enrol)
    for trial_id, speaker in zip(split.trial_ids, split.trial_speakers):
        if str(speaker) not in enrolled:
            raise InputError(
                f"eval trial {trial_id!s}: speaker {speaker!s} is not enrolled; the audit needs every trial's speaker "
                "among the enrolled speakers"
            )


def bayes_scores(released: np.ndarray, centroids: np.ndarray, sigma: float) -> np.ndarray:
    """Log-likelihoods -||y - c_j||^2 / (2 sigma^2) of releases (T, d) against centroids (N, d)."""
    sq = (released**2).sum(1)[:, None] - 2.0 * released @ centroids.T + (centroids**2).sum(1)[None, :]
    return -sq / (2.0 * sigma * sigma)


def pairwise_llr(loglik: np.ndarray) -> np.ndarray:
    """Two-hypothesis LLRs from log-likelihoods (T, N): "speaker j" vs "one of the other N - 1".

    LLR_ij = s_ij - log mean_{k != j} exp(s_ik).  The 1-to-N posterior needs only the
    log-likelihoods (a per-trial constant cancels), but comparing pairs *across* trials,
    as an EER does, needs this per-pair normalisation.
    """
    n = loglik.shape[1]
    peak = loglik.max(axis=1, keepdims=True)
    total = np.exp(loglik - peak).sum(axis=1, keepdims=True)
    others = total - np.exp(loglik - peak)
    with np.errstate(divide="ignore"):
        return loglik - (peak + np.log(np.maximum(others, 1e-300)) - math.log(n - 1))


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return unit_rows(a, what="trial embeddings") @ unit_rows(b, what="enrolment profiles").T


def _release(split: EmbeddingSplit, mechanism: GaussianSpeakerMechanism, anonymise_enrolment: bool):
    speakers = list(split.enrol)
    centroids = np.stack([clip_to_norm(split.enrol[s], mechanism.clip_norm).mean(0) for s in speakers])
    trials = mechanism.anonymise(split.trials)
    if anonymise_enrolment:
        enrol_rel = {s: mechanism.anonymise(split.enrol[s]) for s in speakers}
    else:
        enrol_rel = {s: clip_to_norm(split.enrol[s], mechanism.clip_norm) for s in speakers}
    profiles = np.stack([unit_rows(e, what=f"enrolment embeddings of {s}").mean(0) for s, e in enrol_rel.items()])
    bayes = ScoreSet(bayes_scores(trials, centroids, mechanism.sigma), speakers, split.trial_speakers, split.trial_ids)
    cosine = ScoreSet(_cosine(trials, profiles), speakers, split.trial_speakers, split.trial_ids)
    return bayes, cosine


def dp_audit(
    dev: EmbeddingSplit,
    eval: EmbeddingSplit,
    mus: Sequence[float],
    *,
    clip_norm: float = 1.0,
    sensitivity: str = "diameter",
    anonymise_enrolment: bool = False,
    calibrator: str | CalibratorLike = "logistic",
    bootstrap: Bootstrap = AUDIT_BOOTSTRAP,
    seed: int = 0,
    engine: Engine | None = None,
) -> DPAuditResult:
    """Measured disclosure versus the GDP bounds, one row per mu.

    Parameters
    ----------
    dev, eval : EmbeddingSplit
        Clean embeddings; dev calibrates the cosine attacker.
    mus : sequence of float
        Mechanism parameters mu (sorted).
    clip_norm, sensitivity, anonymise_enrolment
        Mechanism settings (:class:`~lidframe.privacy.mechanism.GaussianSpeakerMechanism`).
    calibrator : str or calibrator
        Of the cosine attacker.
    bootstrap : Bootstrap, default :data:`AUDIT_BOOTSTRAP`
        Settings of the EER and ALID intervals (speaker bootstrap, 500 resamples); with
        ``resample="dev+eval"`` (its default) the cosine attacker's ALID interval refits
        its calibrator on resampled dev speakers (:mod:`lidframe.core.refit`).
    seed : int
        Seed of the mechanism's noise (mu number i uses ``seed + i``).
    engine : Engine, optional
        Engine settings of both attackers' evaluations (default ``Engine()``; the tiles'
        threads and size).

    Returns
    -------
    DPAuditResult
        One row per mu (see :class:`DPAuditResult`).
    """
    engine = check_engine(engine)
    mus = [float(m) for m in mus]
    if not mus:
        raise InputError("dp_audit needs at least one mu")
    _check_closed_set(eval)
    balance = trial_balance(eval.trial_speakers, list(eval.enrol))
    # the clipped eval trials, as every mu's mechanism releases them (the clipping does not depend on mu)
    clipping = GaussianSpeakerMechanism(mus[0], clip_norm=clip_norm, sensitivity=sensitivity)
    extent = clipped_extent(clipping.clip(eval.trials))
    rows = []
    for index, mu in enumerate(sorted(mus)):
        mechanism = GaussianSpeakerMechanism(mu, clip_norm=clip_norm, sensitivity=sensitivity, seed=seed + index)
        released = (_release(dev, mechanism, anonymise_enrolment), _release(eval, mechanism, anonymise_enrolment))
        guarantee = mechanism.guarantee_of(*extent)
        rows.append(
            _audit_row(
                guarantee, mechanism.sigma, released, balance, eval.trial_speakers, calibrator, bootstrap, engine
            )
        )
    return DPAuditResult(rows)


def _audit_row(
    guarantee: Guarantee,
    sigma: float,
    released: tuple[tuple[ScoreSet, ScoreSet], tuple[ScoreSet, ScoreSet]],
    balance: TrialBalance,
    trial_speakers: np.ndarray,
    calibrator: str | CalibratorLike,
    bootstrap: Bootstrap,
    engine: Engine,
) -> DPAuditRow:
    """Both attackers on one mu's releases ``((dev bayes, dev cosine), (eval bayes, eval cosine))``.

    The bounds are those of ``guarantee.mu_held``, the mu that holds for the released trials.
    """
    (_dev_bayes, dev_cos), (ev_bayes, ev_cos) = released
    mu = guarantee.mu
    eer_bound, mi_bound = gdp_eer_bound(guarantee.mu_held), gdp_mi_bound_bits(guarantee.mu_held)
    # the cosine attacker's calibrator is fitted on dev: its ALID and LID q99 intervals refit it on resampled dev
    # speakers (as the bootstrap asks); EER's, from the pairs' order, does not depend on it
    cosine = evaluate(dev_cos, ev_cos, calibrator=calibrator, binary_metrics=False, engine=engine, bootstrap=bootstrap)
    bayes = evaluate(ev_bayes, ev_bayes, calibrator="identity", binary_metrics=False, engine=engine).lid
    trials = {
        "bayes": (bayes, _pairs(pairwise_llr(ev_bayes.scores), ev_bayes.true_index)),
        "cosine": (cosine.lid, _pairs(ev_cos.scores, ev_cos.true_index)),
    }
    measured, violations = {}, []
    for name, (lid, pairs) in trials.items():
        intervals = bootstrap_ci(lid, bootstrap, speakers=trial_speakers, pairs=pairs)
        if name == "cosine" and cosine.summary.intervals is not None:
            intervals |= {key: cosine.summary.intervals[key] for key in ("alid", "lid_q99")}
        measured[name] = AttackerMeasurement(
            eer=eer_rocch(pairs.mated, pairs.non_mated.ravel()),
            **intervals["eer"].columns("eer"),
            alid=float(lid.mean()),
            **intervals["alid"].columns("alid"),
            lid_max=float(lid.max()),
            lid_q99=intervals["lid_q99"].estimate,
        )
        if balance.balanced and intervals["eer"].high < eer_bound:
            violations.append(f"{name} EER below the bound")
        if balance.balanced and intervals["alid"].low > mi_bound:
            violations.append(f"{name} ALID above the mutual-information bound")
    return DPAuditRow(
        mu=mu,
        sigma=sigma,
        eer_bound=eer_bound,
        mi_bound_bits=mi_bound,
        mu_held=guarantee.mu_held,
        mu_reason=guarantee.reason,
        max_clipped_norm=guarantee.max_norm,
        clipped_diameter=guarantee.diameter,
        n_enrolled=ev_bayes.n_enrolled,
        log2_n=math.log2(ev_bayes.n_enrolled),
        eer_bound_applies=balance.balanced,
        alid_bound_applies=balance.balanced,
        bounds_reason=balance.reason,
        trial_prior_kl_bits=balance.kl_bits,
        bayes=measured["bayes"],
        cosine=measured["cosine"],
        violations=tuple(violations),
    )


def _pairs(matrix: np.ndarray, true_index: np.ndarray) -> PairLLRs:
    rows = np.arange(matrix.shape[0])
    keep = np.ones(matrix.shape, dtype=bool)
    keep[rows, true_index] = False
    return PairLLRs(matrix[rows, true_index], matrix[keep].reshape(matrix.shape[0], -1))


def released_scoreset(attacker: EmbeddingAttacker, mechanism_spec: str, enrol: dict, trials: list) -> ScoreSet:
    """Score trials released through a Gaussian speaker mechanism (grid system transform).

    The attacker embeds the utterances; the trial embeddings (and, with
    ``enrolment=true`` in the spec, the enrolment embeddings) are released through the
    mechanism before the attacker's enrolment aggregation and scoring
    (:meth:`~lidframe.attackers.EmbeddingAttacker.compare`: cosine, or its PLDA back end).
    """
    from lidframe.registry import parse_spec

    mechanism = GaussianSpeakerMechanism.from_spec(mechanism_spec)
    release_enrolment = bool(parse_spec(mechanism_spec)[1].get("enrolment", False))
    if not callable(getattr(attacker, "embed", None)) or not callable(getattr(attacker, "enrol", None)):
        raise InputError("a mechanism needs an embedding attacker (embed + enrolment profiles)")
    speakers = list(enrol)
    enrol_emb = [np.asarray(attacker.embed(enrol[s]), dtype=np.float64) for s in speakers]
    if release_enrolment:
        enrol_emb = [mechanism.anonymise(e) for e in enrol_emb]
    if attacker.enrolment == "mean_of_normalised":
        enrol_emb = [unit_rows(e, what=f"enrolment embeddings of {s}") for s, e in zip(speakers, enrol_emb)]
    profiles = np.stack([e.mean(0) for e in enrol_emb])
    released = mechanism.anonymise(np.asarray(attacker.embed(trials), dtype=np.float64))
    scores = _released_scores(attacker, released, profiles, np.array([len(e) for e in enrol_emb]), speakers)
    return ScoreSet(scores, speakers, [u.speaker for u in trials], [u.utt_id for u in trials])


def _released_scores(
    attacker: EmbeddingAttacker, released: np.ndarray, profiles: np.ndarray, counts: np.ndarray, speakers: list
) -> np.ndarray:
    """(T, N) scores of released trial embeddings by the attacker's own scorer (cosine where it has none)."""
    compare = getattr(attacker, "compare", None)
    if not callable(compare):
        return _cosine(released, profiles)
    if getattr(attacker, "backend", "cosine") == "plda":
        from lidframe.attackers.plda_backend import check_training_speakers

        check_training_speakers(attacker, speakers)
    return compare(released, profiles, counts=counts)


def simulated_splits(
    *,
    n_enrolled: int = 40,
    trials_per_speaker: int = 10,
    enrol_utterances: int = 3,
    dim: int = 64,
    within_sd: float = 0.3,
    seed: int = 0,
) -> tuple[EmbeddingSplit, EmbeddingSplit]:
    """Dev and eval embedding splits of the demo's generative model without anonymisation.

    Speaker identities x_s ~ N(0, I_dim); an utterance is x_s + within_sd * eps
    (see :mod:`lidframe.data.simulate`); dev and eval have disjoint speakers.
    """

    def split(rng, prefix):
        identity = rng.standard_normal((n_enrolled, dim))
        speakers = [f"{prefix}{k:03d}" for k in range(n_enrolled)]
        enrol = {
            s: identity[k] + within_sd * rng.standard_normal((enrol_utterances, dim)) for k, s in enumerate(speakers)
        }
        owner = np.repeat(np.arange(n_enrolled), trials_per_speaker)
        trials = identity[owner] + within_sd * rng.standard_normal((owner.size, dim))
        trial_speakers = np.array(speakers)[owner]
        ids = np.array([f"{s}-{i:03d}" for i, s in enumerate(trial_speakers)])
        return EmbeddingSplit(enrol, trials, trial_speakers, ids)

    dev_rng, eval_rng = np.random.default_rng(seed).spawn(2)
    return split(dev_rng, "dev-spk"), split(eval_rng, "eval-spk")
