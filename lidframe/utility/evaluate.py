"""``utility()``: what anonymisation costs the speech, on the same audio LID is measured on.

Two numbers, as every anonymisation study reports them beside privacy:

* the word error rate (WER) of a recogniser on the anonymised speech, against the data
  dir's ``text``: errors (substitutions + deletions + insertions) summed over the
  utterances, over the reference words summed (:mod:`lidframe.utility.wer`), after the
  normalisation of :mod:`lidframe.utility.text`;
* with a reference (the original) data dir, ρ_F0: the mean over utterances of the
  correlation of each anonymised utterance's F0 contour with its original's
  (:mod:`lidframe.utility.pitch`).

With a reference and ``plain_wer=True`` the recogniser also hears each original utterance,
scored against the same transcript (``plain_errors`` per row): the plain speech's word
errors, per voice the WER that says which voices the recogniser cannot read at all
(:mod:`lidframe.utility.voices`).

Audio is read by the attackers' reader (:func:`lidframe.attackers.audio.read_audio`:
every file checked from its header before any is decoded; stereo mixed to mono; another
rate than the recogniser's resampled to it, polyphase, and counted in ``resampled``); ρ_F0
compares both utterances at that rate.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable
from concurrent.futures import Executor, as_completed
from pathlib import Path
from typing import Any

import attrs
import numpy as np

import lidframe.stats.bootstrap
from lidframe.attackers.audio import probe_audio, read_audio
from lidframe.data.fileio import StrPath
from lidframe.data.kaldi import WavPaths
from lidframe.data.records import ABSENT_WHEN_NONE, RowRecord, TableRecord, as_rows
from lidframe.data.utterance import Utterance
from lidframe.errors import InputError, quote
from lidframe.registry import capabilities_of, describe_component
from lidframe.runtime.workers import check_jobs
from lidframe.stats.bootstrap import Bootstrap, ratio_ci, ratio_units
from lidframe.stats.interval import Interval
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
    plain_errors : int or None
        With ``plain_wer=True``: the word errors (substitutions + deletions + insertions)
        of the recogniser on the reference's (plain) utterance, against the same transcript.
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
    plain_errors: int | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)


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
    speakers : int
        Speakers of the data dir (its ``utt2spk``).
    bootstrap : dict or None
        The bootstrap settings behind *intervals* (:meth:`Bootstrap.to_dict`); None without one.
    intervals : dict of str to Interval, or None
        ``"wer"`` (and ``"rho_f0"`` with a reference): the bootstrap interval of each, the
        resamples drawn over speakers (or utterances, ``unit="trial"``) as for LID; None
        without a bootstrap.
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
    speakers: int
    bootstrap: dict[str, Any] | None
    # Qualified for the API reference: this __init__'s annotations stay text (the rows converter's
    # Iterable is not a name here), and report.headline defines an Interval too.
    intervals: dict[str, lidframe.stats.bootstrap.Interval] | None
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
    return str(describe_component(recogniser))


def utility(
    data: StrPath,
    reference: StrPath | None = None,
    *,
    recogniser: Any = "pocketsphinx",
    bootstrap: Bootstrap | None = None,
    jobs: int = 1,
    executor: Executor | None = None,
    progress: Callable[[int, int], object] | None = None,
    wav_paths: WavPaths = "cwd",
    plain_wer: bool = False,
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
    bootstrap : Bootstrap, optional
        Intervals of WER and ρ_F0 (``intervals``): resamples of speakers (``unit="speaker"``,
        the data dir's ``utt2spk``) or utterances (``"trial"``), each a ratio of the
        resampled sums (:func:`lidframe.stats.bootstrap.ratio_ci`).  None: no intervals.
    jobs : int
        Worker processes that recognise (and track pitch) at once, each with its own copy
        of the recogniser (which must pickle; the built-in does).  The result does not
        depend on it.
    executor : concurrent.futures.Executor, optional
        Run the workers' shares in this pool instead of a new one of *jobs* processes
        (*jobs* then only says how many shares to cut: four per job).  One pool shared by
        the calls on several data dirs starts its processes once, and each keeps what its
        recogniser loaded (the built-in loads its model once per process).
    progress : callable, optional
        Called as ``progress(done, total)`` after each utterance (after each worker's
        share of them with *jobs* > 1).
    wav_paths : {"cwd", "data-dir"}
        How a relative audio path in the ``wav.scp`` of *data* and *reference* is resolved
        (:func:`lidframe.data.kaldi.read_data_dir`): against the current folder, as Kaldi
        does, or against the data dir.
    plain_wer : bool, default False
        With *reference*: recognise each original utterance too (twice the recognition),
        its word errors in the rows' ``plain_errors`` (module docstring); without a
        reference, nothing to recognise (ignored).

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
    checked = _checked_inputs(Path(data), reference, bootstrap, wav_paths)
    model = resolve_recogniser(recogniser)
    target = capabilities_of("recogniser", model).sample_rate
    rates = _probe_audio(checked, target)
    plain = bool(plain_wer) and checked.originals is not None
    measured = _measure_all(
        model, checked.items(plain), target, jobs=check_jobs(jobs, name="jobs"), executor=executor, progress=progress
    )
    rows, total = _utterance_rows(checked, measured)
    return _utility_record(
        checked,
        rows,
        total,
        reference=reference,
        recogniser=_describe(model),
        resampled=sum(rate != target for rate in rates),
        bootstrap=bootstrap,
    )


@attrs.frozen
class _Checked:
    """The inputs of :func:`utility`, checked before any audio is decoded."""

    #: The data dir.
    data: Path
    #: Its utterances, in ``wav.scp`` order.
    utterances: list[Utterance]
    #: utt_id -> the normalised words of its transcript.
    references: dict[str, list[str]]
    #: utt_id -> the reference data dir's utterance; None without a reference.
    originals: dict[str, Utterance] | None
    #: The speaker of each utterance.
    speakers: list[str]

    def items(self, plain: bool = False) -> list[tuple[str, str | None, bool]]:
        """``(audio, original audio or None, recognise the original too)`` of each utterance, what :func:`_measure` reads."""
        originals = self.originals
        return [
            (str(utt.path), None if originals is None else str(originals[utt.utt_id].path), plain)
            for utt in self.utterances
        ]


def _checked_inputs(
    data: Path, reference: StrPath | None, bootstrap: Bootstrap | None, wav_paths: WavPaths
) -> _Checked:
    """Read and check :func:`utility`'s data dir, its transcripts, the reference and the bootstrap, before any audio."""
    from lidframe.data.kaldi import read_data_dir

    utterances = read_data_dir(data, wav_paths=wav_paths)
    transcripts = read_transcripts(data)
    originals = None
    if reference is not None:
        originals = {utt.utt_id: utt for utt in read_data_dir(Path(reference), wav_paths=wav_paths)}
        missing = [utt.utt_id for utt in utterances if utt.utt_id not in originals]
        if missing:
            raise InputError(
                f"{reference}: no utterance {quote(missing[0])} ({len(missing)} of {len(utterances)} missing); "
                f"the reference must hold every utterance of {data}"
            )
    references = _reference_words(data, utterances, transcripts)
    speakers = [utt.speaker for utt in utterances]
    if bootstrap is not None:  # refused now, not after every utterance is recognised
        try:
            ratio_units(bootstrap, len(utterances), np.asarray(speakers))
        except InputError as exc:
            raise InputError(f"utility intervals: {exc}") from None
    return _Checked(data, utterances, references, originals, speakers)


def _reference_words(
    data: Path, utterances: list[Utterance], transcripts: dict[str, tuple[int, str]]
) -> dict[str, list[str]]:
    """utt_id -> the normalised words of its transcript; every utterance must have one with at least one word."""
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
    return references


def _probe_audio(checked: _Checked, target: int) -> list[int]:
    """Check every audio file from its header before any is decoded (the attackers' probe); each utterance's rate."""
    rates = [probe_audio(str(utt.path), sample_rate=target, min_seconds=0.0)[1] for utt in checked.utterances]
    if checked.originals is not None:
        for utt in checked.utterances:
            probe_audio(str(checked.originals[utt.utt_id].path), sample_rate=target, min_seconds=0.0)
    return rates


def _utterance_rows(checked: _Checked, measured: list[_Measured]) -> tuple[list[UtteranceUtility], WordErrors]:
    """Each utterance's row (its words, word errors and ρ_F0) from what was *measured*, and the errors summed."""
    rows, total = [], WordErrors(substitutions=0, deletions=0, insertions=0, reference_words=0)
    for utt, (said, rho, note, plain_said) in zip(checked.utterances, measured):
        hypothesis = transcript_words(said)
        errors = word_errors(checked.references[utt.utt_id], hypothesis)
        plain = (
            None if plain_said is None else word_errors(checked.references[utt.utt_id], transcript_words(plain_said))
        )
        total = total + errors
        rows.append(
            UtteranceUtility(
                utt_id=utt.utt_id,
                reference=" ".join(checked.references[utt.utt_id]),
                hypothesis=" ".join(hypothesis),
                substitutions=errors.substitutions,
                deletions=errors.deletions,
                insertions=errors.insertions,
                reference_words=errors.reference_words,
                rho_f0=rho,
                rho_f0_note=note,
                plain_errors=None if plain is None else plain.substitutions + plain.deletions + plain.insertions,
            )
        )
    return rows, total


def _utility_record(
    checked: _Checked,
    rows: list[UtteranceUtility],
    total: WordErrors,
    *,
    reference: StrPath | None,
    recogniser: str,
    resampled: int,
    bootstrap: Bootstrap | None,
) -> Utility:
    """The :class:`Utility` of the utterances' *rows*: WER of the *total*, mean ρ_F0, the intervals of both."""
    rhos = [row.rho_f0 for row in rows if row.rho_f0 is not None and not math.isnan(row.rho_f0)]
    intervals = None
    if bootstrap is not None:
        intervals = _intervals(rows, checked.speakers, bootstrap, with_rho=checked.originals is not None)
    return Utility(
        wer=total.wer,
        substitutions=total.substitutions,
        deletions=total.deletions,
        insertions=total.insertions,
        reference_words=total.reference_words,
        rho_f0=(float(np.mean(rhos)) if rhos else math.nan) if checked.originals is not None else None,
        rho_f0_utterances=len(rhos),
        utterances=len(rows),
        recogniser=recogniser,
        resampled=resampled,
        normalisation=NORMALISATION,
        data=str(checked.data),
        reference=None if reference is None else str(reference),
        speakers=len(set(checked.speakers)),
        bootstrap=None if bootstrap is None else bootstrap.held_fixed().to_dict(),  # no calibrator: the speech only
        intervals=intervals,
        rows=rows,
    )


def _intervals(
    rows: list[UtteranceUtility], speakers: list[str], bootstrap: Bootstrap, *, with_rho: bool
) -> dict[str, Interval]:
    """The bootstrap intervals of WER (errors over reference words) and ρ_F0 (the mean over utterances that have one)."""
    if not isinstance(bootstrap, Bootstrap):
        raise InputError(f"bootstrap must be a Bootstrap record, got {type(bootstrap).__name__}")
    errors = np.array([row.substitutions + row.deletions + row.insertions for row in rows], dtype=np.float64)
    words = np.array([row.reference_words for row in rows], dtype=np.float64)
    parts = {"wer": (errors, words)}
    if with_rho:
        rho = np.array([math.nan if row.rho_f0 is None else row.rho_f0 for row in rows])
        defined = ~np.isnan(rho)
        parts["rho_f0"] = (np.where(defined, rho, 0.0), defined.astype(np.float64))
    try:
        return ratio_ci(parts, bootstrap, speakers=np.asarray(speakers))
    except InputError as exc:
        raise InputError(f"utility intervals: {exc}") from None


#: What :func:`_measure` gives per utterance: what the recogniser said, ρ_F0, why ρ_F0 is NaN,
#: and what it said on the original (None unless asked).
_Measured = tuple[str, float | None, str | None, str | None]


def _measure(model: Any, items: list[tuple[str, str | None, bool]], target: int) -> list[_Measured]:
    """:data:`_Measured` of each ``(audio, original audio or None, recognise the original too)``."""
    out = []
    for path, original_path, plain in items:
        # mono, at the recogniser's rate (resampled where the file has another)
        waveform = read_audio(path, sample_rate=target, min_seconds=0.0).astype(np.float64)
        said = str(model.transcribe(waveform, target))
        rho, note, plain_said = None, None, None
        if original_path is not None:
            original = read_audio(original_path, sample_rate=target, min_seconds=0.0)
            rho, note = rho_f0(f0_contour(original, target), f0_contour(waveform, target))
            if plain:
                plain_said = str(model.transcribe(original.astype(np.float64), target))
        out.append((said, rho, note, plain_said))
    return out


def _measure_all(
    model: Any,
    items: list[tuple[str, str | None, bool]],
    target: int,
    *,
    jobs: int,
    executor: Executor | None = None,
    progress: Callable[[int, int], object] | None,
) -> list[_Measured]:
    """:func:`_measure` of every item, in order: here one at a time, or in *jobs* worker processes (of *executor*)."""
    total = len(items)
    if executor is None and (jobs == 1 or total < 2):
        out = []
        for done, item in enumerate(items, start=1):
            out.extend(_measure(model, [item], target))
            if progress is not None:
                progress(done, total)
        return out
    import pickle

    from lidframe.runtime.workers import process_pool

    try:
        pickle.dumps(model)
    # pickle raises PicklingError, TypeError, AttributeError, ... by what the object holds
    except Exception as exc:  # noqa: BLE001 -- any pickling failure means the same to the user
        raise InputError(
            f"recogniser {_describe(model)} cannot be sent to worker processes ({type(exc).__name__}: {exc}); "
            "use jobs=1 (--jobs 1)"
        ) from None
    workers = min(jobs, total)
    # contiguous shares, about four per worker, so that a slow share does not hold the rest back
    n_shares = min(total, 4 * workers)
    bounds = np.linspace(0, total, n_shares + 1).round().astype(int)
    shares = [items[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    results: list[list[_Measured]] = [[] for _ in shares]
    done = 0
    with contextlib.ExitStack() as stack:
        pool = executor if executor is not None else stack.enter_context(process_pool(workers))
        futures = {pool.submit(_measure, model, share, target): k for k, share in enumerate(shares)}
        failed: dict[int, BaseException] = {}
        for future in as_completed(futures):
            k = futures[future]
            try:
                results[k] = future.result()
            # a worker reports any failure of the recogniser or the audio: it is raised below as it was raised
            except Exception as exc:  # noqa: BLE001 -- raised below: the first share's, whichever worker finished first
                failed[k] = exc
                for other in futures:  # what has not started yet is not worth starting
                    other.cancel()
                continue
            done += len(shares[k])
            if progress is not None:
                progress(done, total)
    if failed:
        raise failed[min(failed)]
    return [measured for share in results for measured in share]
