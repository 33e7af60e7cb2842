"""How docs/report.md says the page prints numbers, written here independently of lidframe.report.

The report tests compare the page's text with these, so a change to the report's own
formatters cannot make a test agree with itself.  ``—`` marks a missing or NaN value.
"""

from __future__ import annotations

import math


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_bits(value) -> str:
    """Bits with two decimals."""
    return "—" if _missing(value) else f"{value:.2f}"


def fmt_percent(value) -> str:
    """A fraction as a percentage with one decimal and a spaced ``%``."""
    return "—" if _missing(value) else f"{100 * value:.1f} %"


def fmt_count(value) -> str:
    """A count with thousands separators."""
    return "—" if value is None else f"{int(value):,}"


def sort_text(value) -> str:
    """A cell's ``data-sort``: the float's repr, empty for a missing value."""
    return "" if _missing(value) else repr(float(value))
