"""Readers of what the VoicePrivacy Challenge evaluation wrote: its speaker-vector cache and its score files.

The VoicePrivacy 2024 and 2026 recipes (``evaluation/privacy/asv``) embed every
utterance of each evaluation dataset with their ASV model and cache the embeddings,
with the speaker-level averages of the enrolment sets, in the results folder of that
model (``exp/<asv model>/<distance>_out``)::

    emb_xvect/<dataset>/utt-level/
        speaker_vectors.pt   one float tensor (n, d): row i is the embedding of the identifier
                             whose INDEX is i (utterance ids here)
        id2idx               "IDENTIFIER INDEX" lines, one per row
        idx2spk              "INDEX SPEAKER" lines: the speaker of each row
        spk2gender           "SPEAKER f|m" lines: the gender of each speaker
    emb_xvect/<dataset>/spk-level/
        the same four files, one row per speaker (IDENTIFIER = SPEAKER: the mean of the
        speaker's utterance embeddings)

An enrolment dataset (``libri_{dev,test}_enrolls<suffix>``) is read at the speaker level
(:func:`read_enrolment`), a trial dataset (``libri_{dev,test}_trials_{f,m}<suffix>``) at
the utterance level (:func:`read_trials`), and :func:`embedding_set` makes them one
:class:`~lidframe.data.embedset.EmbeddingSet` -- the cosine attacker the recipe runs --
pooled or for one gender.  Where the recipe's folders lie and which are one system:
:mod:`lidframe.data.voiceprivacy_runs`.

The recipe's scores of one enrolment dataset against one trial dataset, in
``<distance>_out/<enrolment dataset>-<trial dataset>/scores`` (``ENROLLED TRIAL SCORE``
lines, no header), with their labels in the trial dataset's ``trials`` list of the
recipe's data folder (``ENROLLED TRIAL target|nontarget``), are a
:class:`~lidframe.ScoreSet`: :func:`read_scores`.  The recipe scores every trial of one
gender against every enrolled speaker of that gender, so its score sets are per gender.

Every file is read through :func:`lidframe.data.fileio.open_input`; the tensor only by
:func:`lidframe.data.torchfile.load_weights_only` (``torch.load(weights_only=True)``: a
pickle that would run code is refused before any of it runs), at most
:data:`MAX_VECTORS_BYTES`.  Every id is checked: a missing file is named (a partial
folder), and so are an index that is not a row of the tensor, a row without an id, an id
or index listed twice, an id in one mapping file and not the other, a speaker without a
gender, a gender other than ``f``/``m``, and a tensor that is not one (n, d) float tensor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np

from lidframe.data.embedset import EmbeddingSet
from lidframe.data.fileio import StrPath
from lidframe.data.kaldi import numbered_rows, read_table, scoreset_from_kaldi
from lidframe.data.scoreset import ScoreSet
from lidframe.data.torchfile import load_weights_only
from lidframe.errors import InputError, mismatch, preview, quote

__all__ = [
    "GENDERS",
    "LEVEL_FILES",
    "MAX_VECTORS_BYTES",
    "SpeakerVectors",
    "embedding_set",
    "read_enrolment",
    "read_scores",
    "read_trials",
    "read_vectors",
]

#: The files of one level folder of the recipe's cache, in the order they are read.
LEVEL_FILES = ("speaker_vectors.pt", "id2idx", "idx2spk", "spk2gender")
#: The genders the recipe's ``spk2gender`` files name, in the order the views are reported.
GENDERS = ("f", "m")
#: The largest ``speaker_vectors.pt`` read (2 GiB: 10^6 utterances of 512 float32 numbers).
MAX_VECTORS_BYTES = 2 << 30

_ROW = re.compile(r"[0-9]{1,18}", re.ASCII)


@attrs.frozen(eq=False)
class SpeakerVectors:
    """One level folder of the recipe's cache, checked: a row per identifier, its speaker and the speakers' genders.

    Attributes
    ----------
    identifiers : ndarray of str, shape (n,)
        Row i's identifier (an utterance id at the utterance level, a speaker id at the
        speaker level), rows in the tensor's order.
    speakers : ndarray of str, shape (n,)
        Row i's speaker.
    vectors : ndarray of float, shape (n, d)
        The embeddings (float32, or float64 where the tensor was).
    gender_of : dict of str to str
        Each speaker's gender, ``"f"`` or ``"m"``.
    folder : pathlib.Path
        The folder read (``.../<dataset>/utt-level``).
    """

    identifiers: np.ndarray
    speakers: np.ndarray
    vectors: np.ndarray
    gender_of: dict[str, str]
    folder: Path

    def rows_of(self, gender: str) -> np.ndarray:
        """The row indices whose speaker has *gender* (``"f"`` or ``"m"``), in order."""
        return np.flatnonzero([self.gender_of[s] == gender for s in self.speakers])


def _check_folder(folder: Path) -> None:
    """Refuse a level folder that is missing or lacks one of :data:`LEVEL_FILES` (a partial folder), in one line."""
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise InputError(f"{folder}: {what}; expected a VoicePrivacy embedding folder ({', '.join(LEVEL_FILES)})")
    missing = [name for name in LEVEL_FILES if not (folder / name).exists() and not (folder / name).is_symlink()]
    if missing:
        interrupted = any(folder.glob("temp*"))
        why = " (its temp* folders: an extraction that did not finish)" if interrupted else ""
        raise InputError(
            f"{folder}: a partial VoicePrivacy embedding folder{why}: no {', no '.join(missing)}; "
            f"expected {', '.join(LEVEL_FILES)}"
        )


def _load_matrix(path: Path) -> np.ndarray:
    """The (n, d) float tensor of ``speaker_vectors.pt`` as a numpy array (float32, or float64 where it was)."""
    obj = load_weights_only(  # first: without torch, it says what to install
        path,
        what="speaker-vector file",
        saved_as="torch.save(tensor)",
        advice="save the tensor of embeddings itself",
        max_bytes=MAX_VECTORS_BYTES,
    )
    import torch  # load_weights_only has imported it

    expected = "expected one float tensor (n, d), a row per identifier of id2idx"
    if not isinstance(obj, torch.Tensor):
        size = f" of {len(obj)} items" if isinstance(obj, (list, tuple, dict)) else ""
        raise InputError(f"{path}: holds a {type(obj).__name__}{size}; {expected}")
    if obj.layout != torch.strided:
        raise InputError(f"{path}: holds a {obj.layout} tensor; {expected} (dense)")
    if obj.ndim != 2 or 0 in obj.shape:
        raise InputError(f"{path}: holds a tensor of shape {tuple(obj.shape)}; {expected}")
    if not obj.is_floating_point():
        raise InputError(f"{path}: holds a tensor of {obj.dtype}; {expected}")
    dtype = torch.float64 if obj.dtype == torch.float64 else torch.float32
    return np.array(obj.detach().to(device="cpu", dtype=dtype).numpy(), copy=True)


def _row_number(text: str, path: Path, line: int, n_rows: int) -> int:
    """The row *text* names in a mapping file, checked against the tensor's *n_rows* rows."""
    if not _ROW.fullmatch(text):
        raise InputError(f"{path}: line {line}: index {quote(text)} is not a row number; expected a whole number >= 0")
    row = int(text)
    if row >= n_rows:
        raise InputError(
            f"{path}: line {line}: index {row} is out of range: speaker_vectors.pt has {n_rows} rows (0 to {n_rows - 1})"
        )
    return row


def _read_id2idx(path: Path, n_rows: int) -> np.ndarray:
    """The identifier of each row, from ``id2idx`` (every row named once, every identifier once)."""
    identifier_of: dict[int, tuple[str, int]] = {}
    line_of: dict[str, int] = {}
    for line, (identifier, index) in numbered_rows(path, columns=2, what="id2idx", exact=True):
        if identifier in line_of:
            raise InputError(
                f"{path}: line {line}: identifier {quote(identifier)} is listed again (line {line_of[identifier]})"
            )
        line_of[identifier] = line
        row = _row_number(index, path, line, n_rows)
        if row in identifier_of:
            other, first = identifier_of[row]
            raise InputError(
                f"{path}: line {line}: row {row} is given to {quote(identifier)} and to {quote(other)} (line {first})"
            )
        identifier_of[row] = (identifier, line)
    if len(identifier_of) != n_rows:
        unnamed = [row for row in range(n_rows) if row not in identifier_of]
        raise InputError(
            f"{path}: names {len(identifier_of)} of the {n_rows} rows of speaker_vectors.pt; "
            f"rows without an identifier: {preview(unnamed)}"
        )
    return np.array([identifier_of[row][0] for row in range(n_rows)], dtype=str)


def _read_idx2spk(path: Path, identifiers: np.ndarray) -> np.ndarray:
    """The speaker of each row, from ``idx2spk`` (exactly the rows of ``id2idx``)."""
    n_rows = identifiers.shape[0]
    speaker_of: dict[int, tuple[str, int]] = {}
    outside: list[str] = []
    for line, (index, speaker) in numbered_rows(path, columns=2, what="idx2spk", exact=True):
        if not _ROW.fullmatch(index):
            raise InputError(
                f"{path}: line {line}: index {quote(index)} is not a row number; expected a whole number >= 0"
            )
        row = int(index)
        if row >= n_rows:
            outside.append(index)
            continue
        if row in speaker_of:
            raise InputError(f"{path}: line {line}: row {row} is listed again (line {speaker_of[row][1]})")
        speaker_of[row] = (speaker, line)
    absent = [str(identifiers[row]) for row in range(n_rows) if row not in speaker_of]
    if outside or absent:
        words = mismatch("rows that id2idx does not name:", outside, "no speaker for the identifiers", absent)
        raise InputError(f"{path}: disagrees with id2idx: {words}")
    return np.array([speaker_of[row][0] for row in range(n_rows)], dtype=str)


def _read_spk2gender(path: Path, speakers: np.ndarray) -> dict[str, str]:
    """Each speaker's gender, from ``spk2gender`` (exactly the speakers of ``idx2spk``, each ``f`` or ``m``)."""
    gender_of: dict[str, str] = {}
    for line, (speaker, gender) in numbered_rows(path, columns=2, what="spk2gender", exact=True):
        if speaker in gender_of:
            raise InputError(f"{path}: line {line}: speaker {quote(speaker)} is listed again")
        if gender not in GENDERS:
            raise InputError(
                f"{path}: line {line}: speaker {quote(speaker)} has gender {quote(gender)}; expected f or m"
            )
        gender_of[speaker] = gender
    listed = set(speakers.tolist())
    absent = sorted(listed - set(gender_of))
    unknown = sorted(set(gender_of) - listed)
    if absent or unknown:
        words = mismatch("no gender for the speakers", absent, "speakers idx2spk does not name:", unknown)
        raise InputError(f"{path}: disagrees with idx2spk: {words}")
    return gender_of


def read_vectors(folder: StrPath) -> SpeakerVectors:
    """One level folder of the recipe's cache (``.../<dataset>/utt-level`` or ``spk-level``), every id checked.

    Parameters
    ----------
    folder : str or os.PathLike
        A folder holding :data:`LEVEL_FILES`.

    Returns
    -------
    SpeakerVectors

    Raises
    ------
    InputError
        One line naming the file (and its line): a missing file (a partial folder), a
        tensor file that is not one (n, d) float tensor or pickles anything but tensors,
        and every disagreement between the tensor and the three mapping files (module
        docstring).
    """
    folder = Path(folder)
    _check_folder(folder)
    vectors = _load_matrix(folder / LEVEL_FILES[0])
    identifiers = _read_id2idx(folder / "id2idx", vectors.shape[0])
    speakers = _read_idx2spk(folder / "idx2spk", identifiers)
    gender_of = _read_spk2gender(folder / "spk2gender", speakers)
    return SpeakerVectors(identifiers, speakers, vectors, gender_of, folder)


def read_enrolment(dataset: StrPath) -> SpeakerVectors:
    """The enrolled speakers of an enrolment dataset's cache: its ``spk-level`` folder, one row per speaker.

    Raises
    ------
    InputError
        What :func:`read_vectors` refuses, or a row whose identifier is not its speaker.
    """
    vectors = read_vectors(Path(dataset) / "spk-level")
    wrong = np.flatnonzero(vectors.identifiers != vectors.speakers)
    if wrong.size:
        row = int(wrong[0])
        raise InputError(
            f"{vectors.folder / 'idx2spk'}: row {row} belongs to speaker {quote(vectors.speakers[row])} but id2idx "
            f"names it {quote(vectors.identifiers[row])}; a speaker-level folder has one row per speaker, named by it"
        )
    return vectors


def read_trials(dataset: StrPath) -> SpeakerVectors:
    """The trial utterances of a trial dataset's cache: its ``utt-level`` folder (:func:`read_vectors`)."""
    return read_vectors(Path(dataset) / "utt-level")


def _trial_rows(trials: SpeakerVectors, gender: str | None) -> SpeakerVectors:
    """*trials*, checked to hold only speakers of *gender* (None: any)."""
    if gender is not None:
        other = [s for s in dict.fromkeys(trials.speakers.tolist()) if trials.gender_of[s] != gender]
        if other:
            raise InputError(
                f"{trials.folder / 'spk2gender'}: speakers {preview(other)} are not {gender!r}, in a trial set "
                f"of gender {gender!r}; expected the recipe's libri_*_trials_{gender} folder"
            )
    return trials


def embedding_set(enrolment: StrPath, trials: Sequence[StrPath], *, gender: str | None = None) -> EmbeddingSet:
    """The cosine attacker's :class:`~lidframe.data.embedset.EmbeddingSet` of the recipe's cached datasets.

    Parameters
    ----------
    enrolment : str or os.PathLike
        An enrolment dataset's folder (``emb_xvect/libri_test_enrolls<suffix>``), read at the
        speaker level (:func:`read_enrolment`).
    trials : sequence of str or os.PathLike
        Trial datasets' folders (``emb_xvect/libri_test_trials_f<suffix>``, ...), read at
        the utterance level (:func:`read_trials`), their trials in this order.
    gender : {"f", "m"}, optional
        Keep the enrolled speakers of this gender only (by the enrolment's ``spk2gender``);
        every trial speaker must have it too.  None (default): every enrolled speaker, pooled.

    Returns
    -------
    EmbeddingSet
        Trials = the trial utterances (trial ids the utterance ids, speakers from
        ``idx2spk``; a trial whose speaker is not enrolled is an outsider trial); enrolled
        = the speaker-level vectors.

    Raises
    ------
    InputError
        What the readers refuse, a gender other than f or m, a trial utterance listed in
        two trial datasets, or a trial speaker of the other gender.
    """
    if gender is not None and gender not in GENDERS:
        raise InputError(f"gender {gender!r}: expected f, m or None (pooled)")
    enrol = read_enrolment(enrolment)
    parts = [_trial_rows(read_trials(folder), gender) for folder in trials]
    if not parts:
        raise InputError("embedding_set: give at least one trial dataset")
    seen: dict[str, Path] = {}
    for part in parts:
        for identifier in part.identifiers.tolist():
            if identifier in seen:
                raise InputError(
                    f"{part.folder / 'id2idx'}: trial utterance {quote(identifier)} is also a trial of {seen[identifier]}"
                )
            seen[identifier] = part.folder
    rows = np.arange(enrol.identifiers.shape[0]) if gender is None else enrol.rows_of(gender)
    source = f"{Path(enrolment)} + {', '.join(str(Path(folder)) for folder in trials)}"
    try:
        return EmbeddingSet(
            np.concatenate([part.vectors for part in parts]),
            enrol.vectors[rows],
            enrol.identifiers[rows],
            np.concatenate([part.speakers for part in parts]),
            np.concatenate([part.identifiers for part in parts]),
            source=source,
        )
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None


@attrs.frozen
class _Key:
    """A trial list read: its (enrolled, trial) pairs and the line of each."""

    line_of: dict[tuple[str, str], int]

    @classmethod
    def read(cls, path: StrPath) -> _Key:
        line_of: dict[tuple[str, str], int] = {}
        for line, (enrolled, trial, label) in numbered_rows(path, columns=3, what="trials", exact=True):
            if label not in ("target", "nontarget"):
                raise InputError(f"{path}: line {line} has label {quote(label)}; expected target or nontarget")
            if (enrolled, trial) in line_of:
                raise InputError(
                    f"{path}: line {line}: the pair {quote(enrolled)} {quote(trial)} is listed again "
                    f"(line {line_of[enrolled, trial]})"
                )
            line_of[enrolled, trial] = line
        return cls(line_of)


def read_scores(scores: StrPath, trials: StrPath) -> ScoreSet:
    """The recipe's scores of one enrolment dataset against one trial dataset, as a full :class:`~lidframe.ScoreSet`.

    Parameters
    ----------
    scores : str or os.PathLike
        ``<distance>_out/<enrolment dataset>-<trial dataset>/scores``: ``ENROLLED TRIAL
        SCORE`` lines, no header.
    trials : str or os.PathLike
        The trial dataset's ``trials`` list in the recipe's data folder: ``ENROLLED TRIAL
        target|nontarget`` lines.  A trial's speaker is its ``target`` enrolled speaker; a
        trial with none is an outsider trial.

    Returns
    -------
    ScoreSet
        Every trial scored against every enrolled speaker of the file.

    Raises
    ------
    InputError
        A bad line, a non-numeric score, a pair scored twice, a pair that is scored and
        not in the trial list or listed and not scored, a trial with two ``target``
        enrolled speakers, or an incomplete grid -- naming the file and the pairs.
    """
    key = _Key.read(trials)
    scored = {(row[0], row[1]) for row in read_table(scores, columns=3, what="scores", exact=True)}
    unlisted = sorted(scored - key.line_of.keys())
    unscored = sorted(key.line_of.keys() - scored)
    if unlisted or unscored:
        words = mismatch(
            "scored, not in the trial list:",
            [" ".join(p) for p in unlisted],
            "listed, not scored:",
            [" ".join(p) for p in unscored],
        )
        raise InputError(f"{scores}: disagrees with the trial list {trials}: {words}")
    return scoreset_from_kaldi(scores, key_path=trials)
