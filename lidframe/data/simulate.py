"""A documented generative model of speaker embeddings, for demos and tests.

Each speaker s has a latent identity vector x_s ~ N(0, I_d).  An utterance of s
that went through an anonymiser with *leakage* rho in [0, 1] has the embedding::

    e = rho * x_s + sqrt(1 - rho^2) * y + within_sd * eps,    y, eps ~ N(0, I_d)

where y is a fresh pseudo-speaker drawn per utterance (what the anonymiser puts in the
speaker's place) and eps is within-speaker variability.  rho = 1 is no anonymisation,
rho = 0 leaves no trace of the speaker (a random system).  An *uneven* anonymiser fails
on a share of the speakers: they get a higher leakage than the rest.  As in the LID reference
pipeline, each enrolled speaker's profile is the mean of its L2-normalised enrolment
embeddings (also anonymised: the attacker enrols anonymised speech), and a trial is
scored by cosine similarity against every profile, giving a full T x N score set.

*Outsider* speakers (``n_outsiders``) come from the same population and go through the
same anonymiser, but are not enrolled: their trials are scored against the N profiles
like any other trial (outsider trials, the open set of :mod:`lidframe.core.openset`).
They are drawn after everything else from the same random stream and their trials are
appended after the enrolled speakers' trials, so adding outsiders leaves every other
score unchanged.

Dev and eval use disjoint speakers; ids are ``dev-spk000`` ... and ``eval-spk000`` ...
(outsider speakers continue the numbering after the N enrolled ones).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.scoreset import ScoreSet
from lidframe.data.vectors import unit_rows
from lidframe.errors import InputError

__all__ = ["simulate_scoreset", "simulate_system"]


def _embeddings(identity: np.ndarray, leakage: ArrayLike, within_sd: float, rng: np.random.Generator) -> np.ndarray:
    leakage = np.asarray(leakage, dtype=np.float64).reshape(-1, 1)
    pseudo = rng.standard_normal(identity.shape)
    noise = rng.standard_normal(identity.shape)
    return leakage * identity + np.sqrt(1.0 - leakage**2) * pseudo + within_sd * noise


def simulate_scoreset(
    *,
    leakage: float,
    n_enrolled: int = 29,
    trials_per_speaker: int = 20,
    enrol_utterances: int = 5,
    dim: int = 32,
    within_sd: float = 0.5,
    leaky_share: float = 0.0,
    leaky_leakage: float = 0.6,
    n_outsiders: int = 0,
    prefix: str = "spk",
    rng: np.random.Generator | int | None = None,
) -> ScoreSet:
    """Draw one score set from the generative model.

    Parameters
    ----------
    leakage : float in [0, 1]
        Share rho of the speaker identity that survives anonymisation.
    n_enrolled : int
        N, enrolled speakers (each also speaks ``trials_per_speaker`` trials).
    trials_per_speaker : int
        Trial utterances per speaker; T = (N + n_outsiders) * trials_per_speaker.
    enrol_utterances : int
        Utterances averaged into each enrolment profile.
    dim : int
        Embedding dimension d.
    within_sd : float
        Standard deviation of the within-speaker noise per dimension.
    leaky_share : float in [0, 1]
        Share of speakers the anonymiser fails on: each speaker independently, with this
        probability, gets leakage ``leaky_leakage`` instead of ``leakage`` (an uneven
        anonymiser whose average looks safe).
    leaky_leakage : float in [0, 1]
        Leakage of those speakers.
    n_outsiders : int
        Speakers who are not enrolled, each with ``trials_per_speaker`` trials (outsider
        trials, after the enrolled speakers' trials); drawn as the enrolled speakers
        (``leaky_share`` included) from the same stream after everything else, so the
        other scores do not depend on it.
    prefix : str
        Speaker ids are ``f"{prefix}{k:03d}"`` (k = 0 ... N + n_outsiders - 1, the
        outsiders last); trial ids ``f"{speaker}-{u:03d}"``.
    rng : numpy.random.Generator or int, optional
        Randomness (seeded generator or seed).

    Returns
    -------
    ScoreSet
        Cosine scores, shape ((N + n_outsiders) * trials_per_speaker, N).
    """
    _check_parameters(
        leakage=leakage,
        leaky_share=leaky_share,
        leaky_leakage=leaky_leakage,
        counts=(n_enrolled, trials_per_speaker, enrol_utterances, dim, n_outsiders),
    )
    rng = np.random.default_rng(rng)
    identity = rng.standard_normal((n_enrolled, dim))
    speaker_leakage = np.where(rng.random(n_enrolled) < leaky_share, leaky_leakage, leakage)
    enrol = _embeddings(
        np.repeat(identity, enrol_utterances, axis=0), np.repeat(speaker_leakage, enrol_utterances), within_sd, rng
    )
    enrol_unit = unit_rows(enrol, what="simulated enrolment embeddings")
    profiles = unit_rows(enrol_unit.reshape(n_enrolled, enrol_utterances, dim).mean(axis=1), what="simulated profiles")
    scores = _trial_scores(identity, speaker_leakage, profiles, trials_per_speaker, within_sd, rng)
    if n_outsiders:  # last, from the same stream, scored apart: the scores above do not depend on them
        outsider_identity = rng.standard_normal((n_outsiders, dim))
        outsider_leakage = np.where(rng.random(n_outsiders) < leaky_share, leaky_leakage, leakage)
        outsider_scores = _trial_scores(
            outsider_identity, outsider_leakage, profiles, trials_per_speaker, within_sd, rng
        )
        scores = np.concatenate([scores, outsider_scores])
    speakers = np.array([f"{prefix}{k:03d}" for k in range(n_enrolled + n_outsiders)])
    trial_speakers = np.repeat(speakers, trials_per_speaker)
    trial_ids = np.array([f"{s}-{u:03d}" for s in speakers for u in range(trials_per_speaker)])
    return ScoreSet(scores, speakers[:n_enrolled], trial_speakers, trial_ids)


def _check_parameters(
    *, leakage: float, leaky_share: float, leaky_leakage: float, counts: tuple[int, int, int, int, int]
) -> None:
    """Refuse a share outside [0, 1], and too small *counts*.

    *counts* are n_enrolled, trials_per_speaker, enrol_utterances, dim and n_outsiders.
    """
    for name, value in (("leakage", leakage), ("leaky_share", leaky_share), ("leaky_leakage", leaky_leakage)):
        if not 0.0 <= value <= 1.0:
            raise InputError(f"{name} must be in [0, 1], got {value}")
    n_enrolled, trials_per_speaker, enrol_utterances, dim, n_outsiders = counts
    if n_enrolled < 2 or trials_per_speaker < 1 or enrol_utterances < 1 or dim < 1 or n_outsiders < 0:
        raise InputError(
            "need n_enrolled >= 2, trials_per_speaker >= 1, enrol_utterances >= 1, dim >= 1, n_outsiders >= 0"
        )


def _trial_scores(
    identity: np.ndarray,
    leakage: np.ndarray,
    profiles: np.ndarray,
    trials_per_speaker: int,
    within_sd: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draw *trials_per_speaker* trial embeddings per speaker (row of *identity*) and score them against *profiles*."""
    trials = _embeddings(
        np.repeat(identity, trials_per_speaker, axis=0), np.repeat(leakage, trials_per_speaker), within_sd, rng
    )
    return unit_rows(trials, what="simulated trial embeddings") @ profiles.T


def simulate_system(*, leakage: float, seed: int = 0, **kwargs: Any) -> tuple[ScoreSet, ScoreSet]:
    """Draw a (dev, eval) pair of score sets with disjoint speakers.

    Parameters
    ----------
    leakage : float in [0, 1]
        See :func:`simulate_scoreset`.
    seed : int
        Seed of ``numpy.random.default_rng``; dev and eval use independent streams.
    **kwargs
        Passed to :func:`simulate_scoreset`.
    """
    dev_rng, eval_rng = np.random.default_rng(seed).spawn(2)
    dev = simulate_scoreset(leakage=leakage, prefix="dev-spk", rng=dev_rng, **kwargs)
    ev = simulate_scoreset(leakage=leakage, prefix="eval-spk", rng=eval_rng, **kwargs)
    return dev, ev
