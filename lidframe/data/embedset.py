"""EmbeddingSet: a cosine attacker's trial and enrolled vectors, scored on demand.

A :class:`~lidframe.ScoreSet` stores the T x N similarity matrix; at T = N = 10^6 that
is 8 TB.  An embedding set stores what the matrix is made of -- T trial embeddings and
N enrolled speaker profiles, d numbers each -- and :mod:`lidframe.core.streaming` computes
LID from it without forming the matrix.  Its implied scores are cosines, exactly
those of :class:`~lidframe.attackers.EmbeddingAttacker.score`.

File layout (``.npz``, no pickle): ``trial_vectors`` (T, d) float, ``enrol_vectors``
(N, d) float, ``enrolled`` (N,) str, ``trial_speakers`` (T,) str and optionally
``trial_ids`` (T,) str.  :func:`load_set` reads either kind of set by its keys.

*Labelled embeddings* -- the training set of a scoring back end (PLDA:
:mod:`lidframe.attackers.plda_backend`) -- are read by :func:`read_labelled_embeddings`
from an ``.npz`` with ``vectors`` (M, d) float, ``speakers`` (M,) str and optionally
``utt_ids`` (M,) str, or from an embedding set (its trial vectors and trial speakers).
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.fileio import StrPath, atomic_path
from lidframe.data.npzfile import Kind, npz_keys, read_npz
from lidframe.data.scoreset import ScoreSet, TrialBookkeeping, as_ids, as_real_array, check_ids
from lidframe.data.vectors import check_nonzero_rows, unit_rows
from lidframe.errors import InputError, preview

__all__ = ["EmbeddingSet", "load_set", "read_labelled_embeddings", "EMBEDDING_KEYS", "LABELLED_KEYS"]

#: Keys of an embedding-set ``.npz`` (``trial_ids`` optional).
EMBEDDING_KEYS = ("trial_vectors", "enrol_vectors", "enrolled", "trial_speakers", "trial_ids")
_EMBEDDING_KINDS: dict[str, Kind] = {
    "trial_vectors": "numbers",
    "enrol_vectors": "numbers",
    "enrolled": "ids",
    "trial_speakers": "ids",
    "trial_ids": "ids",
}

#: Keys of a labelled-embeddings ``.npz`` (``utt_ids`` optional).
LABELLED_KEYS = ("vectors", "speakers", "utt_ids")
_LABELLED_KINDS: dict[str, Kind] = {"vectors": "numbers", "speakers": "ids", "utt_ids": "ids"}


def _as_vectors(value: ArrayLike) -> np.ndarray:
    return as_real_array(value, what="embeddings (rows, d)", keep_float32=True)


@attrs.frozen(eq=False)
class EmbeddingSet(TrialBookkeeping):
    """Trial embeddings and enrolled speaker profiles of a cosine-scoring attacker.

    Parameters
    ----------
    trial_vectors : array_like, shape (T, d)
        One embedding per trial utterance (float32 kept as float32, else float64).
    enrol_vectors : array_like, shape (N, d)
        One profile per enrolled speaker.
    enrolled : array_like of str, shape (N,)
    trial_speakers : array_like of str, shape (T,)
    trial_ids : array_like of str, shape (T,), optional
    source : str, optional (keyword only)
        The file the set was read from (set by :meth:`load`), named in later error
        messages; None for a set built in memory.

    Raises
    ------
    InputError
        On shape mismatches, non-finite or all-zero vectors (naming the trial or speaker)
        and on the id checks of :class:`~lidframe.ScoreSet`.
    """

    trial_vectors: np.ndarray = attrs.field(converter=_as_vectors)
    enrol_vectors: np.ndarray = attrs.field(converter=_as_vectors)
    enrolled: np.ndarray = attrs.field(converter=as_ids)
    trial_speakers: np.ndarray = attrs.field(converter=as_ids)
    trial_ids: np.ndarray = attrs.field(default=None, converter=as_ids)  # None: "0", "1", ... are made
    source: str | None = attrs.field(default=None, kw_only=True)
    _true_index: np.ndarray = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        trial, enrol = self.trial_vectors, self.enrol_vectors
        if trial.ndim != 2 or enrol.ndim != 2 or trial.shape[1] != enrol.shape[1]:
            raise InputError(
                f"trial_vectors (T, d) and enrol_vectors (N, d) needed, got {trial.shape} and {enrol.shape}"
            )
        ids = check_ids(
            self.enrolled, self.trial_speakers, self.trial_ids, (trial.shape[0], enrol.shape[0]), "the vectors"
        )
        object.__setattr__(self, "trial_ids", ids[2])
        object.__setattr__(self, "_true_index", ids[3])
        for what, names, vectors in (("trial", self.trial_ids, trial), ("enrolled speaker", self.enrolled, enrol)):
            bad = ~np.isfinite(vectors).all(axis=1)
            if bad.any():
                raise InputError(f"{what} vectors hold NaN or inf: {preview(names[bad])}")
            check_nonzero_rows(vectors, what=f"{what} vectors", ids=names)

    @property
    def n_trials(self) -> int:
        """T, the number of trials, outsider trials included."""
        return self.trial_vectors.shape[0]

    @property
    def n_enrolled(self) -> int:
        """N, the number of enrolled speakers."""
        return self.enrol_vectors.shape[0]

    @property
    def dim(self) -> int:
        """d, the embedding dimension."""
        return self.trial_vectors.shape[1]

    def subset(self, rows: ArrayLike) -> EmbeddingSet:
        """The set restricted to trial *rows* (index array or boolean mask)."""
        rows = np.asarray(rows)
        return EmbeddingSet(
            self.trial_vectors[rows],
            self.enrol_vectors,
            self.enrolled,
            self.trial_speakers[rows],
            self.trial_ids[rows],
            source=self.source,
        )

    def closed_set(self) -> EmbeddingSet:
        """The set without outsider trials."""
        return self.subset(~self.is_outsider)

    def to_scoreset(self, *, max_values: int = 1 << 28) -> ScoreSet:
        """The implied T x N cosine :class:`~lidframe.ScoreSet` (float64), if it has at most *max_values* scores."""
        size = self.n_trials * self.n_enrolled
        if size > max_values:
            raise InputError(
                f"materialising {self.n_trials} x {self.n_enrolled} = {size:,} scores exceeds {max_values:,}; "
                "use the streaming engine (binary_metrics=False) or a smaller set"
            )
        trial = unit_rows(self.trial_vectors.astype(np.float64), what="trial vectors", ids=self.trial_ids)
        enrol = unit_rows(self.enrol_vectors.astype(np.float64), what="enrolled speaker vectors", ids=self.enrolled)
        return ScoreSet(trial @ enrol.T, self.enrolled, self.trial_speakers, self.trial_ids, source=self.source)

    @classmethod
    def load(cls, path: StrPath) -> EmbeddingSet:
        """Read an embedding-set ``.npz`` (keys in :data:`EMBEDDING_KEYS`; checked by :mod:`lidframe.data.npzfile`)."""
        path = Path(path)
        fields = read_npz(path, EMBEDDING_KEYS[:4], EMBEDDING_KEYS[4:], kinds=_EMBEDDING_KINDS, what="embedding set")
        try:
            return cls(**fields, source=str(path))
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None

    def save(self, path: StrPath) -> None:
        """Write the set to ``.npz``, atomically."""
        path = Path(path)
        if path.suffix.lower() != ".npz":
            raise InputError(f"{path}: an embedding set is saved as .npz, not {path.suffix!r}")
        with atomic_path(path, suffix=".npz") as tmp, open(tmp, "wb") as handle:
            np.savez(handle, **{k: getattr(self, k) for k in EMBEDDING_KEYS})


def load_set(path: StrPath) -> ScoreSet | EmbeddingSet:
    """A :class:`~lidframe.ScoreSet` or an :class:`EmbeddingSet`, told apart by the ``.npz`` keys.

    An archive with a ``trial_vectors`` array is an embedding set, any other ``.npz`` (and a
    ``.csv``) a score set; the kind is told from the zip directory alone
    (:func:`~lidframe.data.npzfile.npz_keys`), and the chosen reader checks every header
    before it reads an array.
    """
    path = Path(path)
    if path.suffix.lower() == ".npz" and path.is_file() and "trial_vectors" in npz_keys(path):
        return EmbeddingSet.load(path)
    return ScoreSet.load(path)


def read_labelled_embeddings(path: StrPath) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings with their speakers, from a labelled-embeddings ``.npz`` or an embedding set (module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        An ``.npz`` with ``vectors`` and ``speakers`` (and optionally ``utt_ids``), or an
        embedding-set ``.npz`` (its trials are the labelled embeddings).

    Returns
    -------
    vectors : numpy.ndarray, shape (M, d), float64
    speakers : numpy.ndarray of str, shape (M,)

    Raises
    ------
    InputError
        Not an ``.npz``, a key missing or unknown, shapes that do not match, non-finite
        values (naming the utterances, or the rows).
    """
    path = Path(path)
    if path.suffix.lower() != ".npz":
        raise InputError(
            f"{path}: labelled embeddings are read from an .npz (vectors and speakers, or an embedding set), "
            f"not {path.suffix or 'a file without a suffix'!r}"
        )
    if path.is_file() and "trial_vectors" in npz_keys(path):
        found = EmbeddingSet.load(path)
        return found.trial_vectors.astype(np.float64), found.trial_speakers
    fields = read_npz(path, LABELLED_KEYS[:2], LABELLED_KEYS[2:], kinds=_LABELLED_KINDS, what="labelled embeddings")
    vectors, speakers = np.asarray(fields["vectors"], dtype=np.float64), as_ids(fields["speakers"])
    if vectors.ndim != 2 or speakers.shape != (vectors.shape[0],):
        raise InputError(
            f"{path}: vectors {vectors.shape} and speakers {speakers.shape} do not match; "
            "expected vectors (M, d) and speakers (M,)"
        )
    names = as_ids(fields["utt_ids"]) if "utt_ids" in fields else None
    if names is not None and names.shape != speakers.shape:
        raise InputError(f"{path}: utt_ids {names.shape} and speakers {speakers.shape} do not match")
    bad = ~np.isfinite(vectors).all(axis=1)
    if bad.any():
        rows = names[bad] if names is not None else np.flatnonzero(bad)
        raise InputError(
            f"{path}: labelled embeddings hold NaN or inf: {'' if names is not None else 'rows '}{preview(rows)}"
        )
    return vectors, speakers
