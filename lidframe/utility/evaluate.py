"""``utility()``: what anonymisation costs the speech, on the same audio LID is measured on.

Two numbers, as every anonymisation study reports them beside privacy:

* the word error rate (WER) of a recogniser on the anonymised speech, against the data
  dir's ``text``: errors (substitutions + deletions + insertions) summed over the
  utterances, over the reference words summed (:mod:`lidframe.utility.wer`), after the
  normalisation of :mod:`lidframe.utility.text`;
* with a reference (the original) data dir, ρ_F0: the mean over utterances of the
  correlation of each anonymised utterance's F0 contour with its original's
  (:mod:`lidframe.utility.pitch`).

Audio is read by the attackers' reader (:func:`lidframe.attackers.frontend.read_audio`:
every file checked from its header before any is decoded; stereo mixed to mono; another
rate than the recogniser's resampled to it, polyphase, and counted in ``resampled``); ρ_F0
compares both utterances at that rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from lidframe.attackers.frontend import probe_audio, read_audio
from lidframe.data.fileio import StrPath
from lidframe.data.records import ABSENT_WHEN_NONE, RowRecord, TableRecord, as_rows
from lidframe.errors import InputError, quote
from lidframe.utility.pitch import f0_contour, rho_f0
from lidframe.utility.text import NORMALISATION, transcript_words
from lidframe.utility.wer import WordErrors, word_errors

__all__ = ["utility", "Utility", "UtteranceUtility", "read_transcripts", "resolve_recogniser"]


@attrs.frozen(eq=False, kw_only=True)
class UtteranceUtility(RowRecord):
    """One utterance: its normalised reference and hypothesis, their word errors, and its ρ_F0.

    Attributes
    ----------
    utt_id : str
    reference, hypothesis : str
        Normalised words, space-separated.
    substitutions, deletions, insertions, reference_words : int
    rho_f0 : float or None
        With a reference data dir: ρ_F0 (NaN where there is none, see ``rho_f0_note``).
    rho_f0_note : str or None
        Why ρ_F0 is NaN (too few frames voiced in both, a constant contour).
    """

    utt_id: str
    reference: str
    hypothesis: str
    substitutions: int
    deletions: int
    insertions: int
    reference_words: int
    rho_f0: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    rho_f0_note: str | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)


@attrs.frozen(eq=False, kw_only=True)
class Utility(TableRecord):
    """What :func:`utility` measured on one data dir.

    Attributes
    ----------
    wer : float
        Corpus word error rate: errors summed / reference words summed (a fraction; may exceed 1).
    substitutions, deletions, insertions, reference_words : int
        The sums behind it.
    rho_f0 : float or None
        Mean ρ_F0 over the utterances that have one (None without a reference data dir).
    rho_f0_utterances : int
        Utterances whose ρ_F0 is defined (the mean's count).
    utterances : int
    recogniser : str
        The recogniser by name with its settings.
    resampled : int
        Utterances resampled to the recogniser's rate.
    normalisation : str
        The transcript normalisation (:data:`lidframe.utility.text.NORMALISATION`).
    data, reference : str
        The data dirs (reference: None without one).
    rows : tuple of UtteranceUtility
        One per utterance, in ``wav.scp`` order.
    """

    wer: float
    substitutions: int
    deletions: int
    insertions: int
    reference_words: int
    rho_f0: float | None
    rho_f0_utterances: int
    utterances: int
    recogniser: str
    resampled: int
    normalisation: str
    data: str
    reference: str | None
    rows: tuple[UtteranceUtility, ...] = attrs.field(converter=as_rows)


def read_transcripts(data: Path) -> dict[str, tuple[int, str]]:
    """``utt_id -> (line number, transcript)`` of the data dir's ``text`` (a one-line error when missing)."""
    from lidframe.data.kaldi import numbered_rows

    path = data / "text"
    if not path.is_file():
        raise InputError(
            f"{data}: no text file; utility needs the reference transcripts (Kaldi 'text': <utt-id> <words>)"
        )
    out: dict[str, tuple[int, str]] = {}
    for number, (utt_id, words) in numbered_rows(path, what="text"):
        if utt_id in out:
            raise InputError(
                f"{path}: line {number} repeats utterance {quote(utt_id)} (first on line {out[utt_id][0]})"
            )
        out[utt_id] = (number, words)
    return out


def resolve_recogniser(recogniser: Any) -> Any:
    """A recogniser object from a registry spec (``"pocketsphinx"``, ``"NAME?key=value"``) or an object as is."""
    if isinstance(recogniser, str):
        from lidframe.registry import create

        return create("recogniser", recogniser)
    if not callable(getattr(recogniser, "transcribe", None)):
        raise InputError(
            f"recogniser must be a registry name or an object with transcribe(); got {type(recogniser).__name__}"
        )
    return recogniser


def _describe(recogniser: Any) -> str:
    describe = getattr(recogniser, "describe", None)
    return str(describe()) if callable(describe) else type(recogniser).__name__


def utility(
    data: StrPath,
    reference: StrPath | None = None,
    *,
    recogniser: Any = "pocketsphinx",
    progress: Callable[[int, int], object] | None = None,
) -> Utility:
    """Word error rate (and, with *reference*, ρ_F0) of the speech in a Kaldi data dir.

    Parameters
    ----------
    data : path
        A Kaldi data dir with ``wav.scp`` and ``text`` (the anonymised speech, or any).
    reference : path, optional
        The original data dir the anonymised one was made from (the same utterance ids;
        ``wav.scp`` at least): ρ_F0 per utterance against it.
    recogniser : str or object
        A registry spec (default ``"pocketsphinx"``, the built-in) or an object with
        ``transcribe(waveform, sample_rate) -> str`` and optionally ``sample_rate`` (Hz,
        default 16000) and ``describe()``.
    progress : callable, optional
        Called as ``progress(done, total)`` after each utterance.

    Returns
    -------
    Utility

    Raises
    ------
    InputError
        A data dir without ``text``; an utterance of ``wav.scp`` missing from ``text`` or from
        the reference; a transcript with no words after normalisation (only punctuation);
        unreadable audio; the recogniser missing (one line naming what to install).
    """
    from lidframe.data.kaldi import read_data_dir

    data = Path(data)
    utterances = read_data_dir(data)
    transcripts = read_transcripts(data)
    originals = None
    if reference is not None:
        originals = {utt.utt_id: utt for utt in read_data_dir(Path(reference))}
        missing = [utt.utt_id for utt in utterances if utt.utt_id not in originals]
        if missing:
            raise InputError(
                f"{reference}: no utterance {quote(missing[0])} ({len(missing)} of {len(utterances)} missing); "
                f"the reference must hold every utterance of {data}"
            )
    references = {}
    for utt in utterances:  # every transcript checked before any audio is decoded
        if utt.utt_id not in transcripts:
            raise InputError(f"{data / 'text'}: no transcript of utterance {quote(utt.utt_id)} (it is in wav.scp)")
        number, text = transcripts[utt.utt_id]
        words = transcript_words(text)
        if not words:
            raise InputError(
                f"{data / 'text'}: line {number}: the transcript of {quote(utt.utt_id)} has no words after "
                f"normalisation ({quote(text)}); expected at least one word"
            )
        references[utt.utt_id] = words
    model = resolve_recogniser(recogniser)
    target = int(getattr(model, "sample_rate", 16000))
    # every audio file checked from its header before any is decoded (the attackers' reader and probe)
    rates = [probe_audio(str(utt.path), sample_rate=target, min_seconds=0.0)[1] for utt in utterances]
    if originals is not None:
        for utt in utterances:
            probe_audio(str(originals[utt.utt_id].path), sample_rate=target, min_seconds=0.0)
    rows, total = [], WordErrors(substitutions=0, deletions=0, insertions=0, reference_words=0)
    for done, utt in enumerate(utterances, start=1):
        # mono, at the recogniser's rate (resampled where the file has another)
        waveform = read_audio(str(utt.path), sample_rate=target, min_seconds=0.0).astype(np.float64)
        hypothesis = transcript_words(str(model.transcribe(waveform, target)))
        errors = word_errors(references[utt.utt_id], hypothesis)
        total = total + errors
        rho, note = None, None
        if originals is not None:
            original = read_audio(str(originals[utt.utt_id].path), sample_rate=target, min_seconds=0.0)
            rho, note = rho_f0(f0_contour(original, target), f0_contour(waveform, target))
        rows.append(
            UtteranceUtility(
                utt_id=utt.utt_id,
                reference=" ".join(references[utt.utt_id]),
                hypothesis=" ".join(hypothesis),
                substitutions=errors.substitutions,
                deletions=errors.deletions,
                insertions=errors.insertions,
                reference_words=errors.reference_words,
                rho_f0=rho,
                rho_f0_note=note,
            )
        )
        if progress is not None:
            progress(done, len(utterances))
    rhos = [row.rho_f0 for row in rows if row.rho_f0 is not None and not math.isnan(row.rho_f0)]
    return Utility(
        wer=total.wer,
        substitutions=total.substitutions,
        deletions=total.deletions,
        insertions=total.insertions,
        reference_words=total.reference_words,
        rho_f0=(float(np.mean(rhos)) if rhos else math.nan) if originals is not None else None,
        rho_f0_utterances=len(rhos),
        utterances=len(rows),
        recogniser=_describe(model),
        resampled=sum(rate != target for rate in rates),
        normalisation=NORMALISATION,
        data=str(data),
        reference=None if reference is None else str(reference),
        rows=rows,
    )
