"""The PLDA back end of embedding attackers: its options, its training set, its fitted model, its scores.

``backend="plda"`` (:class:`~lidframe.attackers.EmbeddingAttacker`) scores a trial against a
profile by the LLR of two-covariance PLDA with LDA (:mod:`lidframe.core.plda`), trained on
``plda_train``:

a data dir (``wav.scp``, ``utt2spk``)
    the attacker embeds its utterances itself, so the training embeddings come from the
    same encoder as the trials' (a ``precomputed`` attacker looks them up in its files);
a ``.npz`` of labelled embeddings
    :func:`lidframe.data.embedset.read_labelled_embeddings`; they must come from the same
    encoder as the attacker's, which lidframe can check only by their dimension.

The PLDA length-normalises exactly where the attacker's enrolment does
(``enrolment="mean_of_normalised"``, the default): the training and trial embeddings are
scaled to unit length and a profile is the mean of its unit-length enrolment embeddings,
so the LLR takes it as the mean of n embeddings of the model (n = the speaker's enrolment
utterances).  With ``enrolment="mean"`` nothing is normalised.

The model is fitted once per attacker, on first use, and refuses a training set of one
speaker, with a speaker of one embedding, or with an enrolled speaker in it (the back end
would have learnt the very speakers it is scored on).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lidframe.core.plda import PLDA
from lidframe.data.utterance import Utterance
from lidframe.data.vectors import unit_rows
from lidframe.errors import InputError, preview, quote

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .base import EmbeddingAttacker

__all__ = [
    "check_backend",
    "check_training_speakers",
    "fitted_plda",
    "plda_input_files",
    "plda_scores",
    "training_data_dir",
]

#: The tables of a data dir that a PLDA training set is read from.
_TABLES = ("wav.scp", "utt2spk")


def check_backend(attacker: EmbeddingAttacker) -> None:
    """Refuse a back end that is not one of :data:`~lidframe.attackers.base.BACKENDS`, and PLDA options that do not fit it.

    ``backend="plda"`` needs ``plda_train`` naming an existing data dir or file; ``plda_train``
    or ``plda_dim`` with the cosine back end would be ignored, so they are refused.
    """
    from .base import BACKENDS

    if attacker.backend not in BACKENDS:
        raise InputError(f"backend must be one of {', '.join(BACKENDS)}, got {attacker.backend!r}")
    train = attacker.plda_train
    if attacker.backend == "cosine":
        given = [name for name in ("plda_train", "plda_dim") if getattr(attacker, name) not in (None, "")]
        if given:
            verb = "apply" if len(given) > 1 else "applies"
            raise InputError(f"{' and '.join(given)} {verb} only to backend=plda (the backend is cosine)")
        return
    if train is None or str(train) == "":
        raise InputError(
            "backend=plda needs plda_train: a data dir (wav.scp, utt2spk) or an .npz of labelled embeddings"
        )
    if not os.path.lexists(train):
        raise InputError(f"plda_train {quote(train)}: no such data dir or file")


def plda_input_files(params: dict) -> list[Path]:
    """The files a PLDA training set named in *params* is read from (for grid validation and cache keys).

    A file is itself; a data dir its ``wav.scp`` and ``utt2spk`` (which must exist).
    """
    train = params.get("plda_train")
    if not train or params.get("backend", "cosine") != "plda":
        return []
    path = Path(train)
    return [path / table for table in _TABLES] if path.is_dir() else [path]


def _training_set(attacker: EmbeddingAttacker) -> tuple[np.ndarray, np.ndarray, list[Utterance] | None]:
    """``(embeddings (M, d), speakers (M,), utterances or None)`` of ``plda_train``."""
    from lidframe.data.embedset import read_labelled_embeddings
    from lidframe.data.kaldi import read_data_dir

    path = Path(attacker.plda_train)  # type: ignore[arg-type]  # checked by check_backend
    if not path.is_dir():
        vectors, speakers = read_labelled_embeddings(path)
        return vectors, speakers, None
    utterances = read_data_dir(path, wav_paths=attacker.wav_paths)
    embeddings = np.asarray(attacker.embed(utterances), dtype=np.float64)
    if embeddings.ndim != 2 or embeddings.shape[0] != len(utterances):
        raise InputError(
            f"{type(attacker).__name__}.embed returned shape {embeddings.shape} for {len(utterances)} utterances"
        )
    return embeddings, np.array([u.speaker for u in utterances]), utterances


def fitted_plda(attacker: EmbeddingAttacker) -> PLDA:
    """The attacker's PLDA, fitted on its training set on first use (every error names ``plda_train``)."""
    if attacker._plda is None:
        train = attacker.plda_train
        embeddings, speakers, utterances = _training_set(attacker)
        normalise = attacker.enrolment == "mean_of_normalised"
        if normalise:
            names = [u.utt_id for u in utterances] if utterances is not None else None
            embeddings = unit_rows(embeddings, what=f"plda_train {train} embeddings", ids=names)
        try:
            plda = PLDA(lda_dim=attacker.plda_dim, length_norm=normalise).fit(embeddings, speakers)
        except InputError as exc:
            raise InputError(f"plda_train {train}: {exc}") from None
        attacker._plda = plda
        attacker._plda_utterances = utterances
    return attacker._plda


def check_training_speakers(attacker: EmbeddingAttacker, enrolled: Sequence[str] | np.ndarray) -> None:
    """Refuse enrolled speakers that are in the PLDA's training set (fitting it first if needed)."""
    both = np.intersect1d(fitted_plda(attacker).speakers_, np.asarray(enrolled, dtype=str))
    if both.size:
        raise InputError(
            f"plda_train {attacker.plda_train} holds enrolled speakers {preview(both)}: a back end trained on "
            "the speakers it scores overstates what an attacker learns; train it on other speakers"
        )


def plda_scores(
    attacker: EmbeddingAttacker,
    trial_emb: np.ndarray,
    profiles: np.ndarray,
    *,
    counts: np.ndarray | None,
    trial_ids: Sequence[str] | None = None,
) -> np.ndarray:
    """(T, N) PLDA LLRs (nats) of trial embeddings against profiles of *counts* enrolment embeddings each."""
    plda = fitted_plda(attacker)
    trial_emb = np.asarray(trial_emb, dtype=np.float64)
    if plda.length_norm and trial_emb.ndim == 2:
        trial_emb = unit_rows(trial_emb, what="trial embeddings", ids=trial_ids)
    try:
        return plda.score(trial_emb, profiles, counts)
    except InputError as exc:
        raise InputError(f"backend plda (plda_train {attacker.plda_train}): {exc}") from None


def training_data_dir(attacker: Any) -> tuple[str, Path, list[Utterance]] | None:
    """``("plda_train", folder, utterances)`` of a PLDA fitted on a data dir (for the provenance), else None."""
    utterances = getattr(attacker, "_plda_utterances", None)
    if getattr(attacker, "_plda", None) is None or utterances is None:
        return None
    return ("plda_train", Path(attacker.plda_train), utterances)
