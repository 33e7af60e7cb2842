"""Readers for Kaldi / VoicePrivacy-style data directories, trial lists and score files.

A data directory holds ``wav.scp`` (``utt path``), ``utt2spk`` (``utt spk``) and
optionally ``spk2utt``, ``spk2gender`` and ``trials`` (``spk utt target|nontarget``: Kaldi's
labels for a mated and a non-mated pair, read as such).
The VoicePrivacy Challenge names its splits ``libri_{dev,test}_enrolls`` and
``libri_{dev,test}_trials_{f,m}`` (plus a suffix for anonymised copies);
:func:`voiceprivacy_split` reads one split's enrolment and trial directories and pools
the two genders into one enrolment set (N = 29 for LibriSpeech test) or keeps them
apart.

Every scp location is read by one rule, :func:`parse_rxfilename`: ``PATH`` or
``PATH:OFFSET`` and nothing else.  Kaldi's extended forms -- a piped command
(``sox ... |``), standard input (``-``), a slice -- are refused: lidframe reads files, it
never runs a command named in a data file.  ``wav.scp`` also refuses archive offsets
(lidframe reads audio files).

A relative audio path in ``wav.scp`` is resolved as Kaldi resolves it: against the current
folder of the process that reads it (``wav_paths="cwd"``, the default).  The other
convention, ``wav_paths="data-dir"``, resolves it against the data directory holding the
``wav.scp`` (a data dir that can move with its audio, as the demo writes its own):
:data:`WAV_PATHS` names both, :func:`check_wav_paths` checks a choice, and
:func:`wav_location` is what a writer puts in ``wav.scp`` so that a reader with the same
convention finds the file (an absolute path for ``"cwd"``, a path relative to the data
dir for ``"data-dir"``).

Kaldi score files (``enroll trial score``) with an optional key (``enroll trial
target|nontarget``) become a full :class:`~lidframe.ScoreSet` when every trial is
scored against every enrolled speaker (:func:`scoreset_from_kaldi`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal, cast

import attrs

from lidframe.data.fileio import StrPath, read_text
from lidframe.data.runpaths import check_input_dir
from lidframe.data.scoreset import ScoreSet
from lidframe.data.utterance import Utterance
from lidframe.errors import InputError, mismatch, preview, quote, shorten

__all__ = [
    "ArchiveEntry",
    "parse_rxfilename",
    "numbered_rows",
    "read_table",
    "read_data_dir",
    "WAV_PATHS",
    "WavPaths",
    "check_wav_paths",
    "wav_location",
    "read_trials",
    "voiceprivacy_split",
    "scoreset_from_kaldi",
]


#: What separates the fields of a Kaldi table: ASCII blanks (C's isspace less the newline), as in Kaldi.
_BLANKS = " \t\r\v\f"
_FIELD_SEPARATOR = re.compile(f"[{_BLANKS}]+")


def numbered_rows(
    path: StrPath, *, columns: int = 2, what: str = "table", exact: bool = False
) -> list[tuple[int, list[str]]]:
    """``(line number, fields)`` of each non-blank line of a whitespace-separated table.

    Line numbers count every line of the file from 1, blank ones included, so a message
    names the line an editor shows (lines end at ``\\n`` only; CRLF is read as ``\\n``).
    Fields are separated by ASCII blanks (space, tab, CR, VT, FF), as Kaldi separates
    them: a non-breaking space or another Unicode space is part of a field.  With
    ``columns=2`` and not *exact* the second field is the rest of the line (a ``wav.scp``
    path may hold spaces); with *exact* every line has exactly *columns* fields.

    Raises
    ------
    InputError
        The file is missing or not a regular file, not UTF-8 text (a byte-order mark and
        CRLF line ends are read: :func:`~lidframe.data.fileio.open_text`) or empty, or a
        line has the wrong number of fields (naming the file and the line).
    """
    path = Path(path)
    if not os.path.lexists(path):
        raise InputError(f"no such {what} file: {path}")
    text = read_text(path, f"a {what} file")
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):  # "\n" only: an editor's lines
        if not line.strip(_BLANKS):
            continue
        if "\x00" in line:
            raise InputError(f"{path}: line {number} holds a NUL byte; expected text ({what})")
        fields = _FIELD_SEPARATOR.split(line.strip(_BLANKS), maxsplit=columns - 1 if columns == 2 and not exact else 0)
        if len(fields) < columns or (exact and len(fields) != columns):
            raise InputError(
                f"{path}: line {number} has {len(fields)} field(s); expected {'exactly ' if exact else ''}{columns} ({what})"
            )
        rows.append((number, fields))
    if not rows:
        raise InputError(f"{path}: empty {what} file; expected lines of {columns} fields")
    return rows


def read_table(path: StrPath, *, columns: int = 2, what: str = "table", exact: bool = False) -> list[list[str]]:
    """The fields of each non-blank line of a whitespace-separated table (:func:`numbered_rows` without the numbers)."""
    return [fields for _, fields in numbered_rows(path, columns=columns, what=what, exact=exact)]


#: Longest scp location read (PATH_MAX on Linux): a longer one is no file name.
MAX_LOCATION_CHARS = 4096
_OFFSET = re.compile(r"^(?P<path>.+):(?P<offset>[0-9]+)$", re.ASCII | re.DOTALL)


@attrs.frozen
class ArchiveEntry:
    """Where one scp entry's object lies.

    Attributes
    ----------
    path : pathlib.Path
        The archive (or single-object file), as the scp names it (relative to the current folder).
    offset : int or None
        Byte offset of the object in *path*; None for a file holding one object.
    line : int
        The entry's line in its scp file (1-based), for messages.
    """

    path: Path
    offset: int | None
    line: int = 0


def parse_rxfilename(
    location: str, *, where: str, line: int = 0, expected: str = "PATH or PATH:OFFSET"
) -> ArchiveEntry:
    """The file and byte offset an scp location names, refusing every Kaldi extended form.

    Kaldi's extended filenames make a file name a program: ``cmd |`` (or ``| cmd``) runs
    ``cmd`` through ``/bin/sh``, ``-`` reads standard input, ``PATH:OFFSET[0:9]`` reads a
    slice.  lidframe accepts exactly ``PATH`` and ``PATH:OFFSET`` (decimal digits): a
    location holding ``|`` anywhere, ``-``, a slice, a NUL byte, or more than
    :data:`MAX_LOCATION_CHARS` characters is refused.  This is the one rule of every scp
    lidframe reads (``wav.scp``, which also refuses offsets, and the embedding scp files
    of :mod:`lidframe.data.kaldi_ark`).

    Parameters
    ----------
    location : str
        The scp line's second field.
    where : str
        What names the entry in a message (``"emb.scp: line 3 (utterance 'u1')"``).
    line : int
        The entry's line, kept in the result.
    expected : str
        What a location should be, for messages.

    Returns
    -------
    ArchiveEntry

    Raises
    ------
    InputError
        One line: *where*, the location (cut) and why it is refused.
    """
    text = location.strip()
    if "\x00" in text:
        raise InputError(f"{where}: {quote(text)} holds a NUL byte; expected {expected}")
    if len(text) > MAX_LOCATION_CHARS:
        raise InputError(f"{where}: a location of {len(text)} characters; expected {expected}")
    if "|" in text:
        raise InputError(
            f"{where}: {quote(text)} is a piped command; lidframe does not run shell commands (expected {expected})"
        )
    if text in ("", "-"):
        raise InputError(f"{where}: {quote(text)} reads standard input; expected {expected}")
    if "[" in text and text.endswith("]"):
        raise InputError(f"{where}: {quote(text)} selects a slice; expected {expected}, without [...]")
    match = _OFFSET.match(text)
    if match is None:
        return ArchiveEntry(Path(text), None, line)
    if len(match["offset"]) > 18:
        raise InputError(f"{where}: {quote(text)} has an offset of {len(match['offset'])} digits; expected {expected}")
    return ArchiveEntry(Path(match["path"]), int(match["offset"]), line)


#: How a relative path in ``wav.scp`` is resolved: against the current folder (as Kaldi does) or the data dir.
WavPaths = Literal["cwd", "data-dir"]
#: The conventions of :data:`WavPaths`, the default first.
WAV_PATHS: tuple[WavPaths, ...] = ("cwd", "data-dir")


def check_wav_paths(wav_paths: object) -> WavPaths:
    """*wav_paths* if it is one of :data:`WAV_PATHS`; else an :class:`~lidframe.errors.InputError` naming them."""
    if not isinstance(wav_paths, str) or wav_paths not in WAV_PATHS:
        raise InputError(f"wav_paths: {wav_paths!r}; expected one of {', '.join(WAV_PATHS)}")
    return cast(WavPaths, wav_paths)


def wav_location(audio: StrPath, folder: StrPath, wav_paths: WavPaths = "cwd") -> str:
    """What a ``wav.scp`` in data dir *folder* says for the file *audio*, for a reader with convention *wav_paths*.

    Parameters
    ----------
    audio : str or os.PathLike
        The audio file (absolute, or relative to the current folder).
    folder : str or os.PathLike
        The data dir the ``wav.scp`` is written in.
    wav_paths : {"cwd", "data-dir"}
        ``"cwd"``: the absolute path (found from any folder, by Kaldi too); ``"data-dir"``:
        the path relative to *folder* (the data dir can move with its audio).

    Returns
    -------
    str

    Raises
    ------
    InputError
        A location that ``wav.scp`` cannot hold, as :func:`read_data_dir` would read it back
        (a line break, a ``|``, blanks at either end, a trailing ``:DIGITS``, ...), naming
        the ``wav.scp`` and the location.
    """
    absolute = os.path.abspath(audio)
    location = absolute if check_wav_paths(wav_paths) == "cwd" else os.path.relpath(absolute, os.path.abspath(folder))
    where = f"{os.path.join(folder, 'wav.scp')}: cannot list the audio file {quote(location)}"
    if "\n" in location or "\r" in location or location != location.strip(_BLANKS):
        raise InputError(f"{where}: it holds a line break or ends in a blank; move the folder to a plainer path")
    entry = parse_rxfilename(location, where=where, expected="a plain path (move the folder to a plainer path)")
    if entry.offset is not None:
        raise InputError(f"{where}: it would read as an archive offset; move the folder to a plainer path")
    return location


def read_data_dir(path: StrPath, *, wav_paths: WavPaths = "cwd") -> list[Utterance]:
    """Utterances of a Kaldi data directory (``wav.scp`` + ``utt2spk``), in wav.scp order.

    A ``spk2utt``, when present, must agree with ``utt2spk`` (it is derived from it; a
    disagreement means one of them is stale).

    Parameters
    ----------
    path : str or os.PathLike
        The data dir.
    wav_paths : {"cwd", "data-dir"}
        How a relative audio path is resolved (module docstring): ``"cwd"`` joins it to the
        current folder (at this call), as Kaldi reads it; ``"data-dir"`` joins it to *path*.
        Absolute paths are kept either way; each utterance's ``path`` names the file it
        resolved to (so that a message names where it was looked for).

    Returns
    -------
    list of Utterance

    Raises
    ------
    InputError
        Missing or empty files, bad lines, piped commands or archive offsets in
        ``wav.scp``, duplicate ids, utterances in one file but not the other -- naming the
        file, the line or the ids; a *wav_paths* that is not one of :data:`WAV_PATHS`.
    """
    base = check_wav_paths(wav_paths)
    folder = check_input_dir(path)  # missing, a file or a symlink loop: named as what it is
    # joined, not normalised (``..`` after a symlink is the OS's to resolve): the current folder of this call
    against = folder if base == "data-dir" else Path(os.getcwd())
    wav = numbered_rows(folder / "wav.scp", what="wav.scp")
    spk = read_table(folder / "utt2spk", what="utt2spk", exact=True)
    audio = {}
    for number, (utt, location) in wav:
        location = location.strip()
        where = f"{folder / 'wav.scp'}: line {number}: utterance {quote(utt)}"
        entry = parse_rxfilename(location, where=where, expected="an audio file (convert the audio to files first)")
        if entry.offset is not None:
            raise InputError(
                f"{where} is an offset into a Kaldi archive ({shorten(location, 60)}); extract the audio to files first"
            )
        if utt in audio:
            raise InputError(f"{where} appears twice")
        audio[utt] = str(against / entry.path)  # an absolute path stays as it is
    speakers = {}
    for utt, speaker in spk:
        if utt in speakers:
            raise InputError(f"{folder / 'utt2spk'}: utterance {utt!r} appears twice")
        speakers[utt] = speaker
    no_speaker = [u for u in audio if u not in speakers]
    no_audio = [u for u in speakers if u not in audio]
    if no_speaker or no_audio:
        raise InputError(
            f"{folder}: wav.scp and utt2spk disagree: {mismatch('no speaker for', no_speaker, 'no audio for', no_audio)}"
        )
    if (folder / "spk2utt").exists():
        _check_spk2utt(folder / "spk2utt", speakers)
    if base == "cwd":
        _warn_if_relative_to_the_data_dir(folder, [(number, fields[1].strip()) for number, fields in wav])
    return [Utterance(u, speakers[u], audio[u]) for u in audio]


def _warn_if_relative_to_the_data_dir(folder: Path, locations: list[tuple[int, str]]) -> None:
    """Warn where relative audio paths, read against the current folder, are missing there but not in *folder*.

    The sign of a data dir written for the other convention (``wav_paths="data-dir"``, as
    lidframe before 0.3.0 read every data dir): one warning that names how many, the first
    line and the option, rather than a "no such file" at the first audio read.
    """
    misplaced = [
        (number, location)
        for number, location in locations
        if not os.path.isabs(location) and not os.path.exists(location) and os.path.exists(folder / location)
    ]
    if misplaced:
        import warnings

        number, location = misplaced[0]
        warnings.warn(
            f"{folder / 'wav.scp'}: {len(misplaced)} of {len(locations)} relative audio paths (first: line {number}, "
            f"{quote(location)}) are not in the current folder but are in the data dir; relative paths are read "
            "against the current folder, as Kaldi does: to read them against the data dir, give --wav-paths "
            "data-dir (wav_paths = 'data-dir' in Python and in a grid spec's data-dir table)",
            stacklevel=3,
        )


def _check_spk2utt(path: Path, speakers: dict[str, str]) -> None:
    """Refuse a ``spk2utt`` that does not list exactly the utterances of each speaker in ``utt2spk``."""
    listed: dict[str, str] = {}
    for fields in read_table(path, columns=2, what="spk2utt", exact=False):
        speaker, utts = fields[0], fields[1].split()
        for utt in utts:
            if utt in listed:
                raise InputError(f"{path}: utterance {utt!r} is listed under {listed[utt]!r} and {speaker!r}")
            listed[utt] = speaker
    wrong = [u for u, s in listed.items() if speakers.get(u, s) != s]
    if wrong:
        u = wrong[0]
        raise InputError(
            f"{path}: puts utterance {u!r} under speaker {listed[u]!r} but utt2spk says {speakers[u]!r}; "
            "regenerate spk2utt from utt2spk (utt2spk_to_spk2utt.pl)"
        )
    unknown = [u for u in listed if u not in speakers]
    absent = [u for u in speakers if u not in listed]
    if unknown or absent:
        raise InputError(
            f"{path}: disagrees with utt2spk: {mismatch('not in utt2spk:', unknown, 'not in spk2utt:', absent)}"
        )


def read_trials(path: StrPath) -> list[tuple[str, str, bool]]:
    """Kaldi trial list lines ``spk utt target|nontarget`` as (spk, utt, is_mated).

    ``target`` marks a mated pair (True), ``nontarget`` a non-mated one (False).
    """
    out = []
    for number, fields in enumerate(read_table(path, columns=3, what="trials", exact=True), start=1):
        label = fields[2]
        if label not in ("target", "nontarget"):
            raise InputError(f"{path}: entry {number} has label {label!r}; expected target or nontarget")
        out.append((fields[0], fields[1], label == "target"))
    return out


def voiceprivacy_split(
    root: StrPath, split: str = "libri_test", *, suffix: str = "", pooled: bool = True, wav_paths: WavPaths = "cwd"
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
    wav_paths : {"cwd", "data-dir"}
        How relative audio paths are resolved (:func:`read_data_dir`).

    Returns
    -------
    dict
        ``{"all": (enrol, trials)}`` when pooled, else ``{"f": (...), "m": (...)}``; enrol
        and trials are lists of Utterance.  Enrolment keeps only speakers that appear in
        the gender's trial list when not pooled.
    """
    root = Path(root)
    enrol = read_data_dir(root / f"{split}_enrolls{suffix}", wav_paths=wav_paths)
    trials = {g: read_data_dir(root / f"{split}_trials_{g}{suffix}", wav_paths=wav_paths) for g in ("f", "m")}
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
    (``target``) pairs (a trial without a mated enrolment is an outsider trial, speaker
    ``"?"+id``).

    Raises
    ------
    InputError
        A non-numeric score, a duplicate pair, or an incomplete grid (listing missing pairs).
    """
    numbered = numbered_rows(scores_path, columns=3, what="scores", exact=True)
    import pandas as pd

    frame = pd.DataFrame([fields for _, fields in numbered], columns=["enroll_spk", "trial_id", "score"])
    mated_enrolment_of: dict = {}
    if utt2spk_path is not None:
        speaker_of = dict(read_table(utt2spk_path, what="utt2spk", exact=True))
    else:
        if key_path is None:
            raise InputError(f"{scores_path}: trial speakers unknown; give the key (target/nontarget) or utt2spk")
        for number, fields in enumerate(read_table(key_path, columns=3, what="key", exact=True), start=1):
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
    # no header: each row is named by its own line of the file (blank lines counted)
    return ScoreSet.from_frame(frame, source=str(scores_path), lines=[number for number, _ in numbered])
