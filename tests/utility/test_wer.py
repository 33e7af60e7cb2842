"""Word errors against jiwer and a textbook edit distance; the transcript normalisation by hand."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe import InputError
from lidframe.utility import normalise_transcript, word_errors
from lidframe.utility.text import transcript_words

jiwer = pytest.importorskip("jiwer", reason="the utility extra (jiwer) is not installed")

VOCABULARY = ["the", "cat", "sat", "on", "mat", "naïve", "straße", "日本", "don't", "7"]
words = st.lists(st.sampled_from(VOCABULARY), max_size=12)


def edit_distance(reference, hypothesis):
    """Levenshtein distance over words (the textbook dynamic programme)."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, start=1):
        current = [i]
        for j, hyp in enumerate(hypothesis, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref != hyp)))
        previous = current
    return previous[-1]


@settings(max_examples=200, deadline=None)
@given(words.filter(bool), words)
def test_word_errors_equal_jiwer_and_the_edit_distance(reference, hypothesis):
    got = word_errors(reference, hypothesis)
    assert got.reference_words == len(reference)
    assert got.errors == edit_distance(reference, hypothesis)
    if hypothesis:
        out = jiwer.process_words(" ".join(reference), " ".join(hypothesis))
        assert (got.substitutions, got.deletions, got.insertions) == (out.substitutions, out.deletions, out.insertions)
        assert got.wer == pytest.approx(out.wer, abs=1e-12)
    else:  # an empty hypothesis deletes every reference word
        assert (got.substitutions, got.deletions, got.insertions) == (0, len(reference), 0)
        assert got.wer == 1.0


def test_fixtures_by_hand():
    only_insertions = word_errors(["the", "cat"], ["the", "big", "cat", "sat"])
    assert (only_insertions.substitutions, only_insertions.deletions, only_insertions.insertions) == (0, 0, 2)
    assert only_insertions.wer == 1.0
    unicode = word_errors(["日本", "naïve"], ["日本", "naive"])
    assert (unicode.substitutions, unicode.wer) == (1, 0.5)
    assert word_errors(["a"], []).wer == 1.0
    with pytest.raises(InputError, match="no words after normalisation"):
        word_errors([], ["a"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, World!", "hello world"),
        ("Don't stop -- it's 7 o'clock.", "don't stop it's 7 o'clock"),
        ("'quoted' words", "quoted words"),
        ("Straße ＡＢＣ ﬁne", "strasse abc fine"),
        ("a\u2019b", "a'b"),
        ("  spaced\tout\nlines  ", "spaced out lines"),
        ("?!...", ""),
        ("€5 + 3", "5 3"),
    ],
)
def test_normalisation_by_hand(text, expected):
    assert normalise_transcript(text) == expected
    assert transcript_words(text) == expected.split()
