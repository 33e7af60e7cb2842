"""Readers for Kaldi / VoicePrivacy-style data directories, trial lists and score files.

A data directory holds ``wav.scp`` (``utt path``), ``utt2spk`` (``utt spk``) and
optionally ``spk2utt``, ``spk2gender`` and ``trials`` (``spk utt target|nontarget``: Kaldi's
labels for a mated and a non-mated pair, read as such).
The VoicePrivacy Challenge names its splits ``libri_{dev,test}_enrolls`` and
``libri_{dev,test}_trials_{f,m}`` (plus a suffix for anonymised copies);
:func:`voiceprivacy_split` reads one split's enrolment and trial directories and pools
the two genders into one enrolment set (N = 29 for LibriSpeech test) or keeps them
apart.  Piped ``wav.scp`` entries (``sox ... |``) are refused: lidframe reads audio
files, it does not run shell commands.

Kaldi score files (``enroll trial score``) with an optional key (``enroll trial
target|nontarget``) become a full :class:`~lidframe.ScoreSet` when every trial is
scored against every enrolled speaker (:func:`scoreset_from_kaldi`).
"""

from __future__ import annotations

from pathlib import Path

from lidframe.data.fileio import StrPath
from lidframe.data.scoreset import ScoreSet
from lidframe.data.utterance import Utterance
from lidframe.errors import InputError, mismatch, preview

__all__ = ["read_table", "read_data_dir", "read_trials", "voiceprivacy_split", "scoreset_from_kaldi"]


def read_table(path: StrPath, *, columns: int = 2, what: str = "table") -> list[list[str]]:
    """Whitespace-separated lines of at least *columns* fields (blank lines skipped)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such {what} file")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split(None, columns - 1) if columns == 2 else line.split()
        if len(fields) < columns:
            raise InputError(f"{path}: line {number} has {len(fields)} field(s); expected {columns} ({what})")
        rows.append(fields)
    return rows


def read_data_dir(path: StrPath) -> list[Utterance]:
    """Utterances of a Kaldi data directory (``wav.scp`` + ``utt2spk``), in wav.scp order.

    Relative audio paths are taken relative to the data directory.

    Raises
    ------
    InputError
        Missing files, piped commands, duplicate ids, utterances in one file but not the
        other -- naming the file and the ids.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such data directory")
    wav = read_table(folder / "wav.scp", what="wav.scp")
    spk = read_table(folder / "utt2spk", what="utt2spk")
    audio = {}
    for utt, location in wav:
        location = location.strip()
        if location.endswith("|"):
            raise InputError(
                f"{folder / 'wav.scp'}: utterance {utt!r} is a piped command ({location[:40]}...); "
                "convert the audio to files first (lidframe does not run shell commands)"
            )
        if utt in audio:
            raise InputError(f"{folder / 'wav.scp'}: utterance {utt!r} appears twice")
        target = Path(location)
        audio[utt] = str(target if target.is_absolute() else folder / target)
    speakers = {}
    for utt, speaker in spk:
        if utt in speakers:
            raise InputError(f"{folder / 'utt2spk'}: utterance {utt!r} appears twice")
        speakers[utt] = speaker.strip()
    no_speaker = [u for u in audio if u not in speakers]
    no_audio = [u for u in speakers if u not in audio]
    if no_speaker or no_audio:
        raise InputError(
            f"{folder}: wav.scp and utt2spk disagree: {mismatch('no speaker for', no_speaker, 'no audio for', no_audio)}"
        )
    return [Utterance(u, speakers[u], audio[u]) for u in audio]


def read_trials(path: StrPath) -> list[tuple[str, str, bool]]:
    """Kaldi trial list lines ``spk utt target|nontarget`` as (spk, utt, is_mated).

    ``target`` marks a mated pair (True), ``nontarget`` a non-mated one (False).
    """
    out = []
    for number, fields in enumerate(read_table(path, columns=3, what="trials"), start=1):
        label = fields[2]
        if label not in ("target", "nontarget"):
            raise InputError(f"{path}: entry {number} has label {label!r}; expected target or nontarget")
        out.append((fields[0], fields[1], label == "target"))
    return out


def voiceprivacy_split(
    root: StrPath, split: str = "libri_test", *, suffix: str = "", pooled: bool = True
) -> dict[str, tuple[list[Utterance], list[Utterance]]]:
    """Enrolment and trial utterances of a VoicePrivacy split.

    Parameters
    ----------
    root : path
        Folder holding ``<split>_enrolls<suffix>`` and ``<split>_trials_{f,m}<suffix>``.
    split : str
        ``"libri_dev"`` or ``"libri_test"`` (or another prefix with the same layout).
    suffix : str
        Suffix of anonymised copies (e.g. ``"_b1"``).
    pooled : bool
        One enrolment set for both genders (N = all enrolled speakers), or one per gender.

    Returns
    -------
    dict
        ``{"all": (enrol, trials)}`` when pooled, else ``{"f": (...), "m": (...)}``; enrol
        and trials are lists of Utterance.  Enrolment keeps only speakers that appear in
        the gender's trial list when not pooled.
    """
    root = Path(root)
    enrol = read_data_dir(root / f"{split}_enrolls{suffix}")
    trials = {g: read_data_dir(root / f"{split}_trials_{g}{suffix}") for g in ("f", "m")}
    if pooled:
        return {"all": (enrol, trials["f"] + trials["m"])}
    out: dict[str, tuple[list[Utterance], list[Utterance]]] = {}
    for gender, utts in trials.items():
        speakers = {u.speaker for u in utts}
        out[gender] = ([u for u in enrol if u.speaker in speakers], utts)
    return out


def scoreset_from_kaldi(
    scores_path: StrPath, *, key_path: StrPath | None = None, utt2spk_path: StrPath | None = None
) -> ScoreSet:
    """A full ScoreSet from Kaldi ``enroll trial score`` lines.

    The trial speakers come from *utt2spk_path* when given, else from the key's mated
    (``target``) pairs (a trial without a mated enrolment is an impostor trial, speaker
    ``"?"+id``).

    Raises
    ------
    InputError
        A non-numeric score, a duplicate pair, or an incomplete grid (listing missing pairs).
    """
    rows = read_table(scores_path, columns=3, what="scores")
    import pandas as pd

    frame = pd.DataFrame(rows, columns=["enroll_spk", "trial_id", "score"])
    mated_enrolment_of: dict = {}
    if utt2spk_path is not None:
        speaker_of = dict(read_table(utt2spk_path, what="utt2spk"))
    else:
        if key_path is None:
            raise InputError(f"{scores_path}: trial speakers unknown; give the key (target/nontarget) or utt2spk")
        for number, fields in enumerate(read_table(key_path, columns=3, what="key"), start=1):
            if fields[2] not in ("target", "nontarget"):
                raise InputError(f"{key_path}: entry {number} has label {fields[2]!r}; expected target or nontarget")
            if fields[2] == "target":
                if fields[1] in mated_enrolment_of and mated_enrolment_of[fields[1]] != fields[0]:
                    raise InputError(f"{key_path}: trial {fields[1]!r} has two mated (target) enrolments")
                mated_enrolment_of[fields[1]] = fields[0]
        speaker_of = mated_enrolment_of
    missing = sorted(set(frame["trial_id"]) - set(speaker_of)) if utt2spk_path is not None else []
    if missing:
        raise InputError(f"{utt2spk_path}: no speaker for trials {preview(missing)}")
    frame["trial_spk"] = [speaker_of.get(t, f"?{t}") for t in frame["trial_id"]]
    return ScoreSet.from_frame(frame, source=str(scores_path))
