"""Message helpers: a long value is cut to a few dozen characters and the rest counted, never echoed."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from lidframe.errors import SHOWN_CHARS, preview, quote, quote_path, shorten


@given(text=st.text(max_size=300), limit=st.integers(1, 120))
def test_shorten_keeps_a_prefix_and_counts_the_rest(text, limit):
    cut = shorten(text, limit)
    if len(text) <= limit:
        assert cut == text
    else:
        assert cut == text[:limit] + f"... (+{len(text) - limit} more characters)"


@given(text=st.text(max_size=300), limit=st.integers(1, 120))
def test_quote_is_the_repr_of_what_shorten_keeps(text, limit):
    cut = quote(text, limit)
    if len(text) <= limit:
        assert cut == repr(text)
    else:
        assert cut == repr(text[:limit]) + f"... (+{len(text) - limit} more characters)"


@given(
    parts=st.lists(
        st.text(st.characters(blacklist_characters="/\x00"), min_size=1, max_size=40), min_size=1, max_size=8
    )
)
def test_a_path_is_named_in_full_with_its_file_name(parts):
    """A path in a message is never cut (issue 42: a cohort under a long pytest-xdist folder lost its file name)."""
    path = Path("/", *parts)
    assert quote_path(path) == quote_path(str(path)) == repr(str(path))


def test_a_5_mb_value_becomes_a_short_message():
    value = "x" * 5_000_000
    assert len(quote(value)) < SHOWN_CHARS + 50 and "(+4999920 more characters)" in quote(value)
    assert len(preview([value] * 10)) < 5 * (SHOWN_CHARS + 50) + 20
    assert preview(["a", "b", "c"], 2) == "'a', 'b' (+1 more)"
