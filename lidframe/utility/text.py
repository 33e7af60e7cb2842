"""How transcripts are normalised before words are compared (one rule, stated once).

:func:`normalise_transcript` turns a reference (Kaldi ``text``) or a recogniser's
hypothesis into the words that the word error rate counts:

1. Unicode NFKC (compatibility forms folded: full-width letters, ligatures ``ﬁ`` -> ``fi``);
2. case folded (``str.casefold``: ``Straße`` -> ``strasse``);
3. every character of a Unicode punctuation or symbol category (``P*``, ``S*``) becomes a
   space, except an apostrophe (``'`` or ``’``) between two letters, which is kept as
   ``'`` (``don't``, ``o'clock`` stay one word);
4. words are the runs of what remains between whitespace.

Digits are kept as written (``7`` and ``seven`` are different words: a recogniser that
writes numbers as digits is charged for it, so say so when you compare recognisers).
"""

from __future__ import annotations

import unicodedata

__all__ = ["normalise_transcript", "transcript_words", "NORMALISATION"]

#: The rule in one line, as results and reports state it.
NORMALISATION = "NFKC, case-folded, punctuation and symbols to spaces (apostrophes inside words kept)"

_APOSTROPHES = ("'", "\u2019")


def transcript_words(text: str) -> list[str]:
    """The words of *text* after the normalisation of this module (a list, possibly empty)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    out = []
    for index, char in enumerate(folded):
        if char in _APOSTROPHES:
            inside = 0 < index < len(folded) - 1 and folded[index - 1].isalpha() and folded[index + 1].isalpha()
            out.append("'" if inside else " ")
        elif unicodedata.category(char)[0] in "PS":
            out.append(" ")
        else:
            out.append(char)
    return "".join(out).split()


def normalise_transcript(text: str) -> str:
    """*text* normalised (module docstring): its words joined by single spaces."""
    return " ".join(transcript_words(text))
