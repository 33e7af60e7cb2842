"""The values a component's numeric options take: :class:`Range`, declared once per option, checked on the way in.

A component declares the range of each numeric option of its constructor (or
``from_params``) in its ``option_ranges`` capability, ``{option: Range(...)}``
(:mod:`lidframe.registry.capabilities`; docs/plugins.md, "Option ranges").  Those
ranges are checked in two places, by the one check here (:func:`check_options`): when
a spec is read (:func:`lidframe.registry.create`, and a grid spec before any cell runs),
and when the component is constructed (:func:`~lidframe.registry.capabilities.range_checked`
on its ``__init__``), so ``Ge2e(rate=0)`` and ``"ge2e?rate=0"`` are one line each,
``attacker 'ge2e': rate must be a number in [0.625, 100], got 0``, before any audio is
read or any model built.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import attrs

from lidframe.errors import InputError, shorten

__all__ = ["Range", "check_option", "check_options"]


def _bound(value: float) -> float:
    """A bound as a float (an int bound is exact enough: bounds are small, and compared as Python numbers)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise ValueError(f"a Range bound must be a number, got {value!r}")
    return value


def _text(number: float) -> str:
    """A bound as written in a message: ``0.625``, ``100``, ``8192``."""
    return f"{number:g}" if isinstance(number, float) and not number.is_integer() else f"{int(number)}"


@attrs.frozen
class Range:
    """The values one numeric option takes: finite numbers between two bounds.

    Parameters
    ----------
    low, high : float
        The bounds (default: none, -inf and +inf).  A value must be finite whatever
        the bounds.
    low_open, high_open : bool
        Whether the bound itself is left out: ``Range(0, 1, low_open=True)`` is (0, 1].
    integer : bool
        Only integers (``int`` or a numpy integer; not a bool, not ``2.0``).
    none : bool
        None is also taken (what it means is the option's: a default chosen at run time).
    sequence : bool
        The option is a non-empty list or tuple of such numbers (``channels=512,512``),
        each checked.

    Examples
    --------
    >>> Range(0.625, 100).describe()
    'a number in [0.625, 100]'
    >>> Range(1, integer=True, sequence=True).describe()
    'a list of integers >= 1'
    >>> Range(high=0, none=True).describe()
    'a number <= 0, or None'
    """

    low: float = attrs.field(default=-math.inf, converter=_bound)
    high: float = attrs.field(default=math.inf, converter=_bound)
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    none: bool = False
    sequence: bool = False

    def __attrs_post_init__(self) -> None:
        if self.low > self.high or (self.low == self.high and (self.low_open or self.high_open)):
            raise ValueError(f"a Range must hold some value, got {self.describe()}")

    def _bounds_text(self) -> str:
        """``in [a, b]``, ``>= a``, ``< b``, ... or ``""`` when unbounded."""
        low_given, high_given = math.isfinite(self.low), math.isfinite(self.high)
        if low_given and high_given:
            if self.low == self.high:
                return f"equal to {_text(self.low)}"
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"in {left}{_text(self.low)}, {_text(self.high)}{right}"
        if low_given:
            return f"{'>' if self.low_open else '>='} {_text(self.low)}"
        if high_given:
            return f"{'<' if self.high_open else '<='} {_text(self.high)}"
        return "finite"

    def describe(self) -> str:
        """What the option must be, in words (the end of a message "``rate must be ...``")."""
        noun = (
            ("integers" if self.integer else "numbers")
            if self.sequence
            else ("an integer" if self.integer else "a number")
        )
        text = f"{'a list of ' if self.sequence else ''}{noun} {self._bounds_text()}"
        return text + (", or None" if self.none else "")

    def contains(self, number: object) -> bool:
        """Whether one number (not None, not a sequence) is in the range."""
        if isinstance(number, bool) or not isinstance(number, numbers.Real):
            return False
        if self.integer and not isinstance(number, numbers.Integral):
            return False
        # an integer is compared as one (exactly, however large); anything else as a float
        value = int(number) if isinstance(number, numbers.Integral) else float(number)
        if isinstance(value, float) and not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def outside(self) -> list[Any]:
        """Numbers just outside the range, and other values it refuses: what a conformance check tries.

        Returns
        -------
        list
            Each bound that is left out, the next integer (or a number 1 beyond a bound, and
            the next float) past each bound that is kept, NaN and +-inf for a number, 1.5 for
            an integer option; as single values (the caller puts them in a list for a
            sequence option).
        """
        found: list[Any] = [] if self.integer else [math.nan, math.inf, -math.inf]
        for bound, is_open, step in ((self.low, self.low_open, -1), (self.high, self.high_open, 1)):
            if not math.isfinite(bound):
                continue
            if is_open:
                found.append(int(bound) if self.integer and float(bound).is_integer() else bound)
            elif self.integer:
                found.append(math.floor(bound) - 1 if step < 0 else math.ceil(bound) + 1)
            else:
                found.extend([bound + step, math.nextafter(bound, step * math.inf)])
        if self.integer:
            found.append(1.5 if self.contains(1) or self.contains(2) else self.low + 0.5)
        return [value for value in found if not self.contains(value)]

    def inside(self) -> list[float]:
        """The bounds that are kept (or a number just inside an open one): in-range values a check expects taken."""
        found: list[float] = []
        for bound, is_open, step in ((self.low, self.low_open, 1), (self.high, self.high_open, -1)):
            if not math.isfinite(bound):
                continue
            if self.integer:
                found.append(math.ceil(bound) if step > 0 else math.floor(bound))
                if is_open and found[-1] == bound:
                    found[-1] += step
            else:
                found.append(math.nextafter(bound, step * math.inf) if is_open else bound)
        return [value for value in dict.fromkeys(found) if self.contains(value)]


def check_option(label: str, name: str, value: object, allowed: Range) -> object:
    """*value* itself if option *name* takes it by *allowed*; else one :class:`InputError` line.

    Parameters
    ----------
    label : str
        What has the option, as the message starts: ``"attacker 'ge2e'"``.
    name : str
        The option.
    value : object
        What it was given (a number, None, or a list or tuple of numbers).
    allowed : Range

    Raises
    ------
    InputError
        ``attacker 'ge2e': rate must be a number in [0.625, 100], got 0``; for a list, the
        first element out of range and its position are named.

    Examples
    --------
    >>> check_option("attacker 'random'", "dim", 192, Range(1, 8192, integer=True))
    192
    """
    if value is None:
        if allowed.none:
            return value
    elif not allowed.sequence:
        if allowed.contains(value):
            return value
    elif isinstance(value, (list, tuple)) and value:
        bad = next((i for i, item in enumerate(value) if not allowed.contains(item)), None)
        if bad is None:
            return value
        raise InputError(
            f"{label}: {name} must be {allowed.describe()}, got {shorten(value[bad])} at position {bad} "
            f"of {shorten(list(value))}"
        )
    raise InputError(f"{label}: {name} must be {allowed.describe()}, got {shorten(_shown(value))}")


def _shown(value: object) -> object:
    """A value as a message shows it: a list as a list, a number or word as written (``0``, ``'abc'``)."""
    return list(value) if isinstance(value, tuple) else value if not isinstance(value, str) else repr(value)


def check_options(label: str, ranges: Mapping[str, Range], values: Mapping[str, object]) -> None:
    """Check each of *values* that *ranges* declares (:func:`check_option`); the others are not looked at.

    Raises
    ------
    InputError
        For the first option out of its range, in the order of *values*.
    """
    for name, value in values.items():
        if name in ranges:
            check_option(label, name, value, ranges[name])
