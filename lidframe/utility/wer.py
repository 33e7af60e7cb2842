"""Word errors of a hypothesis against a reference: substitutions, deletions, insertions.

The alignment is jiwer's (``jiwer.process_words``: a minimum edit distance over words);
lidframe normalises both sides first (:mod:`lidframe.utility.text`) and keeps the counts,
so that a corpus WER is the sum of the errors over the sum of the reference words (not a
mean of per-utterance rates).
"""

from __future__ import annotations

import attrs

from lidframe.errors import InputError

__all__ = ["WordErrors", "word_errors", "JIWER_HINT"]

JIWER_HINT = "the word error rate needs jiwer: pip install -e '.[utility]' (or pip install jiwer)"


@attrs.frozen(kw_only=True)
class WordErrors:
    """Counts of one alignment (or of a sum of them).

    Attributes
    ----------
    substitutions, deletions, insertions : int
        Word errors.
    reference_words : int
        Words of the reference (hits + substitutions + deletions).
    """

    substitutions: int
    deletions: int
    insertions: int
    reference_words: int

    @property
    def errors(self) -> int:
        """Substitutions + deletions + insertions."""
        return self.substitutions + self.deletions + self.insertions

    @property
    def wer(self) -> float:
        """Errors / reference words (may exceed 1); NaN when there are no reference words."""
        return self.errors / self.reference_words if self.reference_words else float("nan")

    def __add__(self, other: WordErrors) -> WordErrors:
        return WordErrors(
            substitutions=self.substitutions + other.substitutions,
            deletions=self.deletions + other.deletions,
            insertions=self.insertions + other.insertions,
            reference_words=self.reference_words + other.reference_words,
        )


def word_errors(reference: list[str], hypothesis: list[str]) -> WordErrors:
    """The word errors of *hypothesis* against *reference*, both already normalised word lists.

    Parameters
    ----------
    reference : list of str
        At least one word.
    hypothesis : list of str
        May be empty (every reference word is then a deletion).

    Raises
    ------
    InputError
        An empty reference (no word to count errors against), or jiwer missing.
    """
    if not reference:
        raise InputError("the reference has no words after normalisation; expected at least one")
    if not hypothesis:  # jiwer aligns an empty hypothesis too; the answer needs no alignment
        return WordErrors(substitutions=0, deletions=len(reference), insertions=0, reference_words=len(reference))
    try:
        import jiwer
    except ImportError:
        raise InputError(JIWER_HINT) from None
    out = jiwer.process_words(" ".join(reference), " ".join(hypothesis))
    return WordErrors(
        substitutions=int(out.substitutions),
        deletions=int(out.deletions),
        insertions=int(out.insertions),
        reference_words=int(out.hits + out.substitutions + out.deletions),
    )
