"""The voices a recogniser cannot read: a word error rate per speaker, and those above :data:`UNREADABLE_WER`.

A voice's WER is its errors (substitutions + deletions + insertions) summed over its
utterances, over its reference words summed -- the corpus rate of
:mod:`lidframe.utility.evaluate`, restricted to one speaker of the data dir's ``utt2spk``.
On the plain (unanonymised) speech, a voice above :data:`UNREADABLE_WER` is one the
recogniser cannot read: there a word error rate measures the recogniser's ear for the
voice (a synthetic formant voice, another language, another accent), not what an
anonymiser costs, and ``lidframe utility`` warns, naming the voices.

On anonymised speech (a ``--reference``) a high WER does not say which: the recogniser
may not read the voice even plain, or the anonymiser may have lost it.  With the plain
reference recognised too (``utility(..., plain_wer=True)``, the command's default with
``--reference``), the warning is about the plain reference's WER per voice
(``voice_wers(result, plain=True)``): the voices the recogniser cannot read.  The voices
it reads plain but not anonymised are what anonymisation costs, and
:func:`lost_voices_line` names them.
"""

from __future__ import annotations

from pathlib import Path

from lidframe.errors import InputError
from lidframe.utility.evaluate import Utility

__all__ = ["UNREADABLE_WER", "voice_wers", "unreadable_voices", "unreadable_warning", "lost_voices_line"]

#: The WER (a fraction) above which a recogniser is said not to read a voice: more than half its words wrong.
UNREADABLE_WER = 0.5


def has_plain(result: Utility) -> bool:
    """Whether *result* holds the plain reference's word errors (``utility(..., plain_wer=True)`` with a reference)."""
    return bool(result.rows) and all(row.plain_errors is not None for row in result.rows)


def voice_wers(result: Utility, *, plain: bool = False) -> dict[str, float]:
    """``speaker -> WER`` of each speaker of *result*'s data dir (its ``utt2spk``), in the order speakers first appear.

    Parameters
    ----------
    result : Utility
        A record of :func:`lidframe.utility.utility`; its data dir's ``utt2spk`` names the
        speaker of each row.
    plain : bool, default False
        The WER of the plain reference's utterances (the rows' ``plain_errors``) instead of
        the data dir's; an InputError where *result* has none.

    Returns
    -------
    dict of str to float
        A fraction (it may exceed 1, with insertions); NaN for a speaker with no reference word.
    """
    from lidframe.data.kaldi import read_table

    if plain and not has_plain(result):
        raise InputError(
            f"{result.data}: the plain reference was not recognised; use utility(..., reference, plain_wer=True)"
        )
    speaker_of = dict(read_table(Path(result.data) / "utt2spk", what="utt2spk", exact=True))
    errors: dict[str, list[int]] = {}
    for row in result.rows:
        if row.utt_id not in speaker_of:
            raise InputError(f"{Path(result.data) / 'utt2spk'}: no speaker for utterance {row.utt_id!r}")
        counts = errors.setdefault(speaker_of[row.utt_id], [0, 0])
        counts[0] += int(row.plain_errors or 0) if plain else row.substitutions + row.deletions + row.insertions
        counts[1] += row.reference_words
    return {speaker: (e / w if w else float("nan")) for speaker, (e, w) in errors.items()}


def unreadable_voices(result: Utility, threshold: float = UNREADABLE_WER, *, plain: bool = False) -> dict[str, float]:
    """The voices of :func:`voice_wers` (*plain*: of the plain reference) whose WER exceeds *threshold*, worst first."""
    high = {speaker: wer for speaker, wer in voice_wers(result, plain=plain).items() if wer > threshold}
    return dict(sorted(high.items(), key=lambda item: -item[1]))


def _named(wers: dict[str, float]) -> str:
    """``'s1 100 %, s0 67 %'``: at most ten voices with their WER, and how many more."""
    shown = ", ".join(f"{speaker} {100 * wer:.0f} %" for speaker, wer in list(wers.items())[:10])
    return shown + (f" and {len(wers) - 10} more" if len(wers) > 10 else "")


def unreadable_warning(result: Utility, threshold: float = UNREADABLE_WER) -> str | None:
    """The one-line warning naming the voices the recogniser cannot read (None where it reads every voice).

    With the plain reference recognised (:func:`has_plain`), the voices whose plain WER
    exceeds *threshold*; else those of the data dir, the warning saying what that does
    not tell apart.
    """
    plain = has_plain(result)
    high = unreadable_voices(result, threshold, plain=plain)
    if not high:
        return None
    total = len(voice_wers(result))
    if plain:
        return (
            f"{result.recogniser} gets more than {100 * threshold:.0f} % of the words wrong on {len(high)} of "
            f"{total} voices of the plain reference {result.reference} ({_named(high)}): it cannot read them, so "
            f"their WER on {result.data} measures its ear for the voice, not anonymisation; leave them out or "
            "choose a recogniser that reads them"
        )
    which = (
        "the recogniser or the anonymiser loses them: recognise the plain --reference too (--reference-wer) to tell which"
        if result.reference is not None
        else "if this is the plain speech, the recogniser cannot read them: their WER measures its ear for the "
        "voice, not anonymisation; leave them out or choose a recogniser that reads them"
    )
    return (
        f"{result.recogniser} gets more than {100 * threshold:.0f} % of the words wrong on {len(high)} of {total} "
        f"voices of {result.data} ({_named(high)}); {which}"
    )


def lost_voices_line(result: Utility, threshold: float = UNREADABLE_WER) -> str | None:
    """With the plain reference recognised: one line naming the voices the recogniser reads plain but not anonymised.

    Those whose plain WER is at most *threshold* and whose WER on the data dir exceeds it:
    what anonymisation costs them.  None without the plain reference's errors, or where none.
    """
    if not has_plain(result):
        return None
    plain = voice_wers(result, plain=True)
    lost = {s: wer for s, wer in unreadable_voices(result, threshold).items() if not plain[s] > threshold}
    if not lost:
        return None
    return (
        f"anonymisation loses {len(lost)} of {len(plain)} voices that {result.recogniser} reads in the plain "
        f"reference (WER above {100 * threshold:.0f} % on {result.data}: {_named(lost)})"
    )
