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
single-release bounds EER >= Phi(-mu / 2) and mutual information <= mu^2 / (2 ln 2) bit,
and the **violations**: a measured value whose bootstrap interval lies entirely beyond
its bound, which means a bug or broken assumptions (e.g. speaker information outside the
clipped embedding).

The bounds hold for trials whose speakers are drawn from the attacker's prior -- here
the uniform prior over the N enrolled speakers.  The audit checks them only when the
eval trials are **balanced**: every enrolled speaker has the same number of trials, so
their frequencies equal the prior exactly (:func:`trial_balance`).  Otherwise an
attacker that favours the frequent speakers beats both bounds without any bug (all
trials from one speaker: always answering that speaker gives EER 0 and
LID = log2 N on every trial, at any mu), so each row says ``eer_bound_applies`` /
``alid_bound_applies`` False with the reason in ``bounds_reason``, and reports no
violation.  ``lidframe dp-audit`` prints it as a table; :func:`plot_dp_audit`
draws it.  :func:`simulated_splits` makes the simulated embeddings the command audits
when given no data; :func:`released_scoreset` is the grid's mechanism step (an attacker's
score set of released embeddings).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs
import numpy as np

from lidframe.core.evaluation import evaluate
from lidframe.data.fileio import StrPath
from lidframe.data.records import Row, TableRecord, as_rows
from lidframe.data.scoreset import ScoreSet
from lidframe.data.vectors import unit_rows
from lidframe.errors import InputError
from lidframe.metrics.detection import eer_rocch
from lidframe.privacy.mechanism import GaussianSpeakerMechanism, clip_to_norm, gdp_eer_bound, gdp_mi_bound_bits
from lidframe.registry import CalibratorLike
from lidframe.stats.bootstrap import Bootstrap, PairLLRs, bootstrap_ci

if TYPE_CHECKING:
    from lidframe.attackers.base import EmbeddingAttacker

#: Bootstrap settings of :func:`dp_audit` unless told otherwise (fewer resamples than the
#: library default: an audit runs one interval per attacker and mu).
AUDIT_BOOTSTRAP = Bootstrap(n_boot=500)

__all__ = [
    "AUDIT_BOOTSTRAP",
    "DPAuditResult",
    "EmbeddingSplit",
    "TrialBalance",
    "trial_balance",
    "bayes_scores",
    "pairwise_llr",
    "dp_audit",
    "plot_dp_audit",
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


@attrs.frozen(eq=False)
class DPAuditResult(TableRecord):
    """Outcome of :func:`dp_audit`: one row per mu.

    ``to_dict()`` (JSON-able: ``rows``; NaN as None) and ``to_frame()`` come from
    :class:`~lidframe.data.records.TableRecord`.

    Attributes
    ----------
    rows : tuple of dict
        ``mu, sigma, eer_bound, mi_bound_bits, n_enrolled, log2_n``; whether the bounds
        are checked for these trials, ``eer_bound_applies`` and ``alid_bound_applies``
        (both: the eval trials are balanced, see :func:`trial_balance`), with the reason
        ``bounds_reason`` and ``trial_prior_kl_bits``; for the ``bayes`` and ``cosine``
        attackers, ``<attacker>_eer``, ``_eer_ci``, ``_alid``, ``_alid_ci``,
        ``_lid_max``, ``_lid_q99``; ``violations`` lists the violations, beyond the
        intervals, of the bounds that apply.
    """

    rows: tuple[Row, ...] = attrs.field(converter=as_rows)

    @property
    def violated(self) -> bool:
        """Whether any mu has a bound violation (a bug, or broken assumptions)."""
        return any(row["violations"] for row in self.rows)


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
        Settings of the EER and ALID intervals (speaker bootstrap, 500 resamples).
    seed : int
        Seed of the mechanism's noise (mu number i uses ``seed + i``).

    Returns
    -------
    DPAuditResult
        One row per mu (see :class:`DPAuditResult`).
    """
    mus = [float(m) for m in mus]
    if not mus:
        raise InputError("dp_audit needs at least one mu")
    _check_closed_set(eval)
    balance = trial_balance(eval.trial_speakers, list(eval.enrol))
    rows = []
    for index, mu in enumerate(sorted(mus)):
        mechanism = GaussianSpeakerMechanism(mu, clip_norm=clip_norm, sensitivity=sensitivity, seed=seed + index)
        _dev_bayes, dev_cos = _release(dev, mechanism, anonymise_enrolment)
        ev_bayes, ev_cos = _release(eval, mechanism, anonymise_enrolment)
        row = {
            "mu": mu,
            "sigma": mechanism.sigma,
            "eer_bound": gdp_eer_bound(mu),
            "mi_bound_bits": gdp_mi_bound_bits(mu),
            "n_enrolled": ev_bayes.n_enrolled,
            "log2_n": math.log2(ev_bayes.n_enrolled),
            "eer_bound_applies": balance.balanced,
            "alid_bound_applies": balance.balanced,
            "bounds_reason": balance.reason,
            "trial_prior_kl_bits": balance.kl_bits,
        }
        cosine = evaluate(dev_cos, ev_cos, calibrator=calibrator, binary_metrics=False).lid
        bayes = evaluate(ev_bayes, ev_bayes, calibrator="identity", binary_metrics=False).lid
        measured = {
            "bayes": (bayes, _pairs(pairwise_llr(ev_bayes.scores), ev_bayes.true_index)),
            "cosine": (cosine, _pairs(ev_cos.scores, ev_cos.true_index)),
        }
        violations = []
        for name, (lid, pairs) in measured.items():
            intervals = bootstrap_ci(lid, bootstrap, speakers=eval.trial_speakers, pairs=pairs)
            eer = eer_rocch(pairs.mated, pairs.non_mated.ravel())
            row.update(
                {
                    f"{name}_eer": eer,
                    f"{name}_eer_ci": [intervals["eer"].low, intervals["eer"].high],
                    f"{name}_alid": float(lid.mean()),
                    f"{name}_alid_ci": [intervals["alid"].low, intervals["alid"].high],
                    f"{name}_lid_max": float(lid.max()),
                    f"{name}_lid_q99": intervals["lid_q99"].estimate,
                }
            )
            if row["eer_bound_applies"] and intervals["eer"].high < row["eer_bound"]:
                violations.append(f"{name} EER below the bound")
            if row["alid_bound_applies"] and intervals["alid"].low > row["mi_bound_bits"]:
                violations.append(f"{name} ALID above the mutual-information bound")
        row["violations"] = violations
        rows.append(row)
    return DPAuditResult(rows)


def _pairs(matrix: np.ndarray, true_index: np.ndarray) -> PairLLRs:
    rows = np.arange(matrix.shape[0])
    keep = np.ones(matrix.shape, dtype=bool)
    keep[rows, true_index] = False
    return PairLLRs(matrix[rows, true_index], matrix[keep].reshape(matrix.shape[0], -1))


def released_scoreset(attacker: EmbeddingAttacker, mechanism_spec: str, enrol: dict, trials: list) -> ScoreSet:
    """Score trials released through a Gaussian speaker mechanism (grid system transform).

    The attacker embeds the utterances; the trial embeddings (and, with
    ``enrolment=true`` in the spec, the enrolment embeddings) are released through the
    mechanism before the attacker's enrolment aggregation and cosine scoring.
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
    return ScoreSet(_cosine(released, profiles), speakers, [u.speaker for u in trials], [u.utt_id for u in trials])


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


def plot_dp_audit(result: DPAuditResult, path: StrPath, *, title: str | None = None) -> None:
    """Measured EER (left) and ALID / LIDmax (right) versus mu, with the GDP bound curves."""
    from lidframe.plotting import pyplot, save_figure

    plt = pyplot()
    rows = result.rows
    mus = np.array([r["mu"] for r in rows])
    grid = np.linspace(max(mus.min() * 0.8, 1e-3), mus.max() * 1.1, 200)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 4.0), dpi=120)
    left.plot(grid, [gdp_eer_bound(m) for m in grid], color="0.3", ls=":", label="bound Phi(-mu/2)")
    right.plot(grid, [gdp_mi_bound_bits(m) for m in grid], color="0.3", ls=":", label="MI bound mu^2/(2 ln 2)")
    right.axhline(rows[0]["log2_n"], color="0.6", lw=0.8, ls="--", label=f"log2 N = {rows[0]['log2_n']:.2f}")
    for name, marker in (("bayes", "o"), ("cosine", "s")):
        eer = np.array([r[f"{name}_eer"] for r in rows])
        ci = np.array([r[f"{name}_eer_ci"] for r in rows])
        left.errorbar(
            mus, eer, yerr=np.abs([eer - ci[:, 0], ci[:, 1] - eer]), marker=marker, capsize=3, label=f"{name} EER"
        )
        alid = np.array([r[f"{name}_alid"] for r in rows])
        aci = np.array([r[f"{name}_alid_ci"] for r in rows])
        right.errorbar(
            mus, alid, yerr=np.abs([alid - aci[:, 0], aci[:, 1] - alid]), marker=marker, capsize=3, label=f"{name} ALID"
        )
        right.plot(mus, [r[f"{name}_lid_max"] for r in rows], marker=marker, ls="--", label=f"{name} LIDmax")
    left.set_xlabel("mu")
    left.set_ylabel("EER (pairs)")
    left.set_ylim(0, 0.55)
    right.set_xlabel("mu")
    right.set_ylabel("bits")
    right.set_ylim(bottom=-0.2)
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title or f"Gaussian speaker mechanism: measured vs bounds (N = {rows[0]['n_enrolled']})")
    fig.tight_layout()
    save_figure(fig, path)
