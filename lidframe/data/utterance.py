"""The ``Utterance`` record (one recording: id, speaker, audio path) and helpers over lists of them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from lidframe.errors import InputError, preview

__all__ = ["Utterance", "group_by_speaker", "check_utterances"]


def _as_text(value: object) -> str:
    """``str(value)``: ids given as numbers become text (the converter of :class:`Utterance`'s ids)."""
    return str(value)


@attrs.frozen
class Utterance:
    """One recording.

    Attributes
    ----------
    utt_id : str
        Unique utterance id (Kaldi ``utt2spk`` key).
    speaker : str
        Speaker id.
    path : str or None
        Audio file, for attackers that read audio; None for attackers that work from ids
        (precomputed embeddings, the random baseline).
    """

    utt_id: str = attrs.field(converter=_as_text)
    speaker: str = attrs.field(converter=_as_text)
    path: str | None = None


def group_by_speaker(utterances: Sequence[Utterance]) -> dict[str, list[Utterance]]:
    """Enrolment mapping ``speaker -> [utterances]``, speakers in order of first appearance."""
    groups: dict[str, list[Utterance]] = {}
    for utt in utterances:
        groups.setdefault(utt.speaker, []).append(utt)
    return groups


def check_utterances(utterances: Iterable[Utterance], role: str) -> list[Utterance]:
    """The utterances as a list; :class:`~lidframe.errors.InputError` if empty, not records, or ids repeat."""
    utterances = list(utterances)
    if not utterances:
        raise InputError(f"{role}: no utterances")
    bad = [u for u in utterances if not isinstance(u, Utterance)]
    if bad:
        raise InputError(f"{role}: expected lidframe.attackers.Utterance records, got {type(bad[0]).__name__}")
    seen, dups = set(), []
    for u in utterances:
        if u.utt_id in seen:
            dups.append(u.utt_id)
        seen.add(u.utt_id)
    if dups:
        raise InputError(f"{role}: utterance ids repeated: {preview(dups)}")
    return utterances
