"""The voices a recogniser cannot read: a word error rate per speaker, and those above :data:`UNREADABLE_WER`.

A voice's WER is its errors (substitutions + deletions + insertions) summed over its
utterances, over its reference words summed -- the corpus rate of
:mod:`lidframe.utility.evaluate`, restricted to one speaker of the data dir's ``utt2spk``.
On the plain (unanonymised) speech, a voice above :data:`UNREADABLE_WER` is one the
recogniser cannot read: there a word error rate measures the recogniser's ear for the
voice (a synthetic formant voice, another language, another accent), not what an
anonymiser costs, and ``lidframe utility`` warns, naming the voices.  On anonymised speech
the same warning says that the recogniser or the anonymiser loses them: measured on the
plain reference, the two are told apart.
"""

from __future__ import annotations

from pathlib import Path

from lidframe.errors import InputError
from lidframe.utility.evaluate import Utility

__all__ = ["UNREADABLE_WER", "voice_wers", "unreadable_voices", "unreadable_warning"]

#: The WER (a fraction) above which a recogniser is said not to read a voice: more than half its words wrong.
UNREADABLE_WER = 0.5


def voice_wers(result: Utility) -> dict[str, float]:
    """``speaker -> WER`` of each speaker of *result*'s data dir (its ``utt2spk``), in the order speakers first appear.

    Parameters
    ----------
    result : Utility
        A record of :func:`lidframe.utility.utility`; its data dir's ``utt2spk`` names the
        speaker of each row.

    Returns
    -------
    dict of str to float
        A fraction (it may exceed 1, with insertions); NaN for a speaker with no reference word.
    """
    from lidframe.data.kaldi import read_table

    speaker_of = dict(read_table(Path(result.data) / "utt2spk", what="utt2spk", exact=True))
    errors: dict[str, list[int]] = {}
    for row in result.rows:
        if row.utt_id not in speaker_of:
            raise InputError(f"{Path(result.data) / 'utt2spk'}: no speaker for utterance {row.utt_id!r}")
        counts = errors.setdefault(speaker_of[row.utt_id], [0, 0])
        counts[0] += row.substitutions + row.deletions + row.insertions
        counts[1] += row.reference_words
    return {speaker: (e / w if w else float("nan")) for speaker, (e, w) in errors.items()}


def unreadable_voices(result: Utility, threshold: float = UNREADABLE_WER) -> dict[str, float]:
    """The voices of :func:`voice_wers` whose WER exceeds *threshold*, worst first: ``speaker -> WER``."""
    high = {speaker: wer for speaker, wer in voice_wers(result).items() if wer > threshold}
    return dict(sorted(high.items(), key=lambda item: -item[1]))


def unreadable_warning(result: Utility, threshold: float = UNREADABLE_WER) -> str | None:
    """The one-line warning naming the voices the recogniser cannot read (None where it reads every voice)."""
    high = unreadable_voices(result, threshold)
    if not high:
        return None
    total = len(voice_wers(result))
    shown = ", ".join(f"{speaker} {100 * wer:.0f} %" for speaker, wer in list(high.items())[:10])
    more = f" and {len(high) - 10} more" if len(high) > 10 else ""
    which = (
        "the recogniser or the anonymiser loses them: run lidframe utility on the plain --reference to tell which"
        if result.reference is not None
        else "if this is the plain speech, the recogniser cannot read them: their WER measures its ear for the "
        "voice, not anonymisation; leave them out or choose a recogniser that reads them"
    )
    return (
        f"{result.recogniser} gets more than {100 * threshold:.0f} % of the words wrong on {len(high)} of {total} "
        f"voices of {result.data} ({shown}{more}); {which}"
    )
