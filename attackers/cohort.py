"""Cohort score normalisation of an embedding attacker: its options ``score_norm``, ``cohort``, ``cohort_top_k``.

Every :class:`~lidframe.attackers.EmbeddingAttacker` takes them (the formulas:
:mod:`lidframe.core.cohort`):

``score_norm``
    ``"none"`` (default: raw scores), ``"snorm"`` or ``"asnorm"``.
``cohort``
    The cohort speakers: a Kaldi data dir (``wav.scp`` + ``utt2spk``, its relative audio
    paths resolved by the attacker's ``wav_paths``, the run's convention for its other
    data dirs: the current folder by default, the data dir with ``data-dir``),
    embedded by the attacker itself and aggregated per speaker as its enrolment is; or an
    embedding-set ``.npz`` (:mod:`lidframe.data.embedset`) whose *enrolled* speakers'
    profiles are the cohort (its trial vectors are not used), made by the same encoder.
``cohort_top_k``
    K of AS-norm (default :data:`~lidframe.core.cohort.DEFAULT_TOP_K`).

The cohort is read and checked before anything is embedded: a cohort speaker who is also
an enrolled speaker or a trial's speaker would normalise the scores with the eval data
itself, and is refused by name, as is a cohort smaller than K.  Each enrolled speaker's
cohort scores are those of the cohort profiles scored against its profile, each trial's
those of the trial scored against the cohort profiles, both by the attacker's own
``compare`` (so a back end other than cosine normalises with its own scores).

This module is the wiring only, in small functions that
:meth:`~lidframe.attackers.EmbeddingAttacker.score` calls; the cohort's files (its
``.npz``, or its data dir's tables and, for an attacker that reads audio, its audio) are
declared by :func:`cohort_input_files`, so grid cache keys and the score file's provenance
follow them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from lidframe.core.cohort import SCORE_NORMS, CohortNorm, cohort_normalise
from lidframe.data.fileio import StrPath
from lidframe.data.kaldi import WavPaths, check_wav_paths, read_data_dir
from lidframe.data.provenance_parts import DATA_DIR_TABLES
from lidframe.data.utterance import Utterance, group_by_speaker
from lidframe.data.vectors import check_nonzero_rows
from lidframe.errors import InputError, quote, quote_path

if TYPE_CHECKING:
    from .base import EmbeddingAttacker

__all__ = [
    "Cohort",
    "check_score_norm",
    "cohort_input_files",
    "read_cohort",
    "check_cohort",
    "embed_cohort",
    "normalise_with_cohort",
]

#: The tables a cohort data dir must hold.
_REQUIRED_TABLES = ("wav.scp", "utt2spk")


def check_score_norm(score_norm: str, cohort: StrPath | None, cohort_top_k: int | None) -> CohortNorm | None:
    """The :class:`~lidframe.core.cohort.CohortNorm` the three options ask for; None for ``score_norm="none"``.

    Raises
    ------
    InputError
        An unknown ``score_norm``; a normalisation without a cohort; a cohort or a
        ``cohort_top_k`` given without a normalisation; ``cohort_top_k`` with S-norm.
    """
    if score_norm not in SCORE_NORMS:
        raise InputError(f"score_norm must be one of {', '.join(SCORE_NORMS)}, got {score_norm!r}")
    if score_norm == "none":
        given = [name for name, value in (("cohort", cohort), ("cohort_top_k", cohort_top_k)) if value is not None]
        if given:
            raise InputError(f"{given[0]} is given but score_norm='none': set score_norm=snorm or asnorm, or drop it")
        return None
    if cohort is None or os.fspath(cohort) == "":
        raise InputError(f"score_norm={score_norm!r} needs cohort= (a data dir or an embedding-set .npz)")
    return CohortNorm(method=str(score_norm), top_k=cohort_top_k)  # the record checks K


def cohort_input_files(params: Mapping[str, Any], *, reads_audio: bool) -> list[Path]:
    """The files a spec's cohort reads: its ``.npz``, or its data dir's tables (and audio, where *reads_audio*).

    The audio is found as the attacker finds it, by the spec's ``wav_paths`` (default ``"cwd"``).

    Raises
    ------
    InputError
        A cohort data dir that cannot be read (:func:`~lidframe.data.kaldi.read_data_dir`).
    """
    cohort = params.get("cohort")
    if cohort is None or params.get("score_norm", "none") == "none" or os.fspath(cohort) == "":
        return []
    path = Path(cohort)
    if not path.is_dir():
        return [path]
    tables = [path / name for name in DATA_DIR_TABLES if name in _REQUIRED_TABLES or (path / name).is_file()]
    if not reads_audio or not all(table.is_file() for table in tables):
        return tables
    listed = read_data_dir(path, wav_paths=check_wav_paths(params.get("wav_paths", "cwd")))
    return [*tables, *(Path(u.path) for u in listed if u.path is not None)]


@attrs.frozen(eq=False)
class Cohort:
    """The cohort speakers as read: their ids and either their utterances (a data dir) or their profiles (a set).

    Attributes
    ----------
    source : str
        The data dir or file, as given.
    speakers : ndarray of str, shape (C,)
    utterances : dict of str to list of Utterance, or None
        Per speaker, from a data dir (embedded by the attacker when it scores).
    profiles : ndarray, shape (C, d), or None
        From an embedding set.
    """

    source: str
    speakers: np.ndarray
    utterances: dict[str, list[Utterance]] | None = None
    profiles: np.ndarray | None = None

    @property
    def counts(self) -> np.ndarray | None:
        """The utterances averaged into each profile, shape (C,): a data dir's; None for a set's (one each).

        A back end whose score depends on it (PLDA) takes it where a cohort profile stands as
        an enrolled speaker's; a profile standing as a trial is scored as one embedding.
        """
        if self.utterances is None:
            return None
        return np.array([len(self.utterances[str(s)]) for s in self.speakers])


def read_cohort(path: StrPath, *, wav_paths: WavPaths = "cwd") -> Cohort:
    """The cohort of *path*: a Kaldi data dir, or an embedding-set ``.npz`` (its enrolled speakers).

    A data dir's relative audio paths are resolved by *wav_paths*
    (:func:`lidframe.data.kaldi.read_data_dir`).

    Raises
    ------
    InputError
        A path that is neither, or a file that does not read as one (named).
    """
    from lidframe.data.embedset import EmbeddingSet

    source = os.fspath(path)
    if os.path.isdir(path):
        by_speaker = group_by_speaker(read_data_dir(path, wav_paths=wav_paths))
        return Cohort(source, np.array(list(by_speaker)), utterances=by_speaker)
    if Path(path).suffix.lower() != ".npz":
        raise InputError(
            f"cohort {quote_path(source)}: expected a data dir (wav.scp, utt2spk) or an embedding-set .npz"
        )
    found = EmbeddingSet.load(path)
    return Cohort(source, found.enrolled, profiles=np.asarray(found.enrol_vectors, dtype=np.float64))


def check_cohort(cohort: Cohort, norm: CohortNorm, enrolled: Sequence[str], trial_speakers: Sequence[str]) -> None:
    """Refuse a cohort that holds an enrolled or a trial speaker, or fewer speakers than K.

    Raises
    ------
    InputError
        One line naming the cohort and the first of its speakers (in its order) who is
        also enrolled or a trial's speaker; or its size and K.
    """
    roles = {
        **dict.fromkeys(map(str, trial_speakers), "a trial speaker"),
        **dict.fromkeys(map(str, enrolled), "an enrolled speaker"),
    }
    for speaker in cohort.speakers:
        if str(speaker) in roles:
            raise InputError(
                f"cohort {quote_path(cohort.source)}: speaker {quote(str(speaker))} is also {roles[str(speaker)]}; a "
                "cohort must hold other speakers than those scored (never the eval speakers)"
            )
    norm.k(len(cohort.speakers), where=f"cohort {quote_path(cohort.source)}")


def embed_cohort(attacker: EmbeddingAttacker, cohort: Cohort, dim: int) -> Cohort:
    """*cohort* with its (C, d) profiles: a set's as they are, a data dir's enrolled by *attacker* (as its enrolment is).

    Raises
    ------
    InputError
        Profiles of another dimension than the attacker's *dim*, zero profiles, or what
        embedding the cohort's utterances raised, each naming the cohort.
    """
    where = f"cohort {quote_path(cohort.source)}"
    if cohort.profiles is not None:
        profiles = cohort.profiles
    else:
        assert cohort.utterances is not None  # a Cohort holds one or the other
        try:
            _, profiles = attacker.enrol(cohort.utterances)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
    if profiles.ndim != 2 or profiles.shape[1] != dim:
        raise InputError(f"{where}: profiles of shape {profiles.shape}; the attacker's embeddings have d = {dim}")
    check_nonzero_rows(profiles, what=f"{where} profiles", ids=cohort.speakers)
    return attrs.evolve(cohort, profiles=profiles)


def normalise_with_cohort(
    attacker: EmbeddingAttacker,
    cohort: Cohort,
    norm: CohortNorm,
    scores: np.ndarray,
    trial_emb: np.ndarray,
    profiles: np.ndarray,
    *,
    counts: np.ndarray | None = None,
    trial_ids: Sequence[str] | np.ndarray,
    enrolled: Sequence[str] | np.ndarray,
) -> np.ndarray:
    """*scores* (T, N) S-normed or AS-normed in place against the embedded *cohort* (:func:`embed_cohort`).

    The trials' cohort scores are ``compare(trial_emb, cohort profiles)`` (T, C), the
    enrolled speakers' ``compare(cohort profiles, profiles)`` transposed (N, C): a cohort
    speaker stands where a trial stands, against each enrolled profile.  *counts* (N,) are
    the enrolled profiles' utterance counts and the cohort's own
    (:attr:`Cohort.counts`) go with its profiles where they stand as enrolled speakers, for a
    back end whose score depends on them (PLDA).
    """
    if cohort.profiles is None:
        raise InputError(f"cohort {quote_path(cohort.source)} must be embedded first (embed_cohort)")
    trial_side = attacker.compare(trial_emb, cohort.profiles, counts=cohort.counts)
    enrolled_side = np.ascontiguousarray(attacker.compare(cohort.profiles, profiles, counts=counts).T)
    return cohort_normalise(scores, trial_side, enrolled_side, norm, trial_ids=trial_ids, enrolled=enrolled, out=scores)
