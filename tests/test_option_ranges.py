"""Option ranges (``lidframe.registry.Range``, the ``option_ranges`` capability): declared, checked, conformance-tested.

The range check is compared with the plain inequalities it stands for; specs, the
decorated constructor, the contract and the conformance suites are tested on small
plugins written here (the built-ins: tests/attackers/test_option_ranges.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe import registry
from lidframe.attackers import RandomAttacker
from lidframe.attackers.base import EmbeddingAttacker
from lidframe.errors import InputError
from lidframe.registry import Range, range_checked
from lidframe.registry.ranges import check_option
from lidframe.testing import ConformanceError, check_attacker, check_recogniser

RANGES_CHECK = "numeric options refused outside their declared ranges"

numbers = st.one_of(
    st.integers(-(10**30), 10**30), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([True, False])
)


@given(
    low=st.one_of(st.none(), st.integers(-50, 50)),
    width=st.one_of(st.none(), st.integers(0, 50)),
    low_open=st.booleans(),
    high_open=st.booleans(),
    integer=st.booleans(),
    value=numbers,
)
def test_a_range_takes_exactly_the_finite_numbers_between_its_bounds(low, width, low_open, high_open, integer, value):
    high = None if width is None or low is None else low + width
    if low is not None and high is not None and low == high and (low_open or high_open):
        return  # an empty range (refused when declared: below)
    allowed = Range(
        -math.inf if low is None else low,
        math.inf if high is None else high,
        low_open=low_open,
        high_open=high_open,
        integer=integer,
    )
    is_number = not isinstance(value, bool) and (isinstance(value, int) or math.isfinite(value))
    takes = (
        is_number
        and (not integer or isinstance(value, int))
        and (low is None or (value > low if low_open else value >= low))
        and (high is None or (value < high if high_open else value <= high))
    )
    if takes:
        assert check_option("it", "x", value, allowed) is value
    else:
        with pytest.raises(InputError, match="^" + re.escape(f"it: x must be {allowed.describe()}, got ")):
            check_option("it", "x", value, allowed)


def test_a_range_says_what_it_takes():
    assert Range(0.625, 100).describe() == "a number in [0.625, 100]"
    assert Range(0, 1, low_open=True).describe() == "a number in (0, 1]"
    assert Range(1, integer=True, none=True).describe() == "an integer >= 1, or None"
    assert Range(high=0, high_open=True).describe() == "a number < 0"
    assert Range(80, 80, integer=True).describe() == "an integer equal to 80"
    assert Range(1, 64, integer=True, sequence=True).describe() == "a list of integers in [1, 64]"
    assert Range().describe() == "a number finite"


def test_a_range_must_hold_a_value_and_have_number_bounds():
    for bad in (lambda: Range(2, 1), lambda: Range(1, 1, low_open=True), lambda: Range(math.nan), lambda: Range("0")):
        with pytest.raises(ValueError):
            bad()


def test_none_lists_and_numpy_numbers():
    width = Range(1, 8, integer=True, sequence=True)
    assert check_option("it", "w", (1, 8, np.int64(3)), width) == (1, 8, np.int64(3))
    with pytest.raises(
        InputError, match=r"^it: w must be a list of integers in \[1, 8\], got 9 at position 2 of \[1, 2, 9\]$"
    ):
        check_option("it", "w", (1, 2, 9), width)
    for empty in ([], (), "1,2", 3):
        with pytest.raises(InputError, match="must be a list of integers"):
            check_option("it", "w", empty, width)
    with pytest.raises(InputError, match=r"^it: n must be a number in \[0, 1\], got None$"):
        check_option("it", "n", None, Range(0, 1))
    assert check_option("it", "n", None, Range(0, 1, none=True)) is None
    assert check_option("it", "n", np.float32(0.5), Range(0, 1)) == 0.5
    with pytest.raises(InputError, match=r"got 2.0$"):
        check_option("it", "n", 2.0, Range(0, 4, integer=True))  # an integer option takes no float, even 2.0
    long = "x" * 500
    with pytest.raises(InputError) as info:
        check_option("it", "n", long, Range(0, 1))
    assert len(str(info.value)) < 200  # a long value is cut (errors.shorten)


# -- plugins: declared, checked by specs and by the decorated constructor, refused by the contract when misdeclared
class Steady(EmbeddingAttacker):
    """A plugin attacker that keeps its ranges: declared, and its constructor decorated."""

    name = "steady"
    reads_audio = False
    option_ranges: ClassVar[Mapping[str, Range]] = {
        "dim": Range(1, 64, integer=True),
        "gain": Range(0, 10, low_open=True),
    }

    @range_checked("attacker")
    def __init__(self, *, dim: int = 4, gain: float = 1.0, enrolment: str = "mean_of_normalised"):
        super().__init__(enrolment=enrolment)
        self.dim = dim
        self.gain = gain
        self.built = True

    def embed(self, utterances):
        return self.gain * RandomAttacker(dim=self.dim).embed(utterances)


class Unchecked(Steady):
    """Declares its ranges but does not check them when constructed (no decorator, nothing forwarded)."""

    name = "unchecked"

    def __init__(self, *, dim: int = 4, gain: float = 1.0, enrolment: str = "mean_of_normalised"):
        EmbeddingAttacker.__init__(self, enrolment=enrolment)
        self.dim = dim
        self.gain = gain


@pytest.fixture()
def registered():
    registry.register("attacker", "steady", Steady, replace=True)
    registry.register("attacker", "unchecked", Unchecked, replace=True)
    yield
    registry.unregister("attacker", "steady")
    registry.unregister("attacker", "unchecked")


def test_the_decorated_constructor_refuses_before_its_body_runs():
    with pytest.raises(InputError, match=r"^attacker 'steady': gain must be a number in \(0, 10\], got 0$"):
        Steady(gain=0)
    with pytest.raises(InputError, match=r"^attacker 'steady': dim must be an integer in \[1, 64\], got 65$"):
        Steady(dim=65)
    assert Steady(dim=64, gain=10).built


def test_a_subclass_forwarding_options_has_them_checked_by_its_base_under_its_own_name():
    class Wider(RandomAttacker):
        name = "wider"
        option_ranges: ClassVar[Mapping[str, Range]] = {**RandomAttacker.option_ranges, "spread": Range(0, 1)}

        @range_checked("attacker")
        def __init__(self, *, spread: float = 0.5, **options):
            super().__init__(**options)
            self.spread = spread

    with pytest.raises(InputError, match=r"^attacker 'wider': spread must be a number in \[0, 1\], got 2$"):
        Wider(spread=2)
    with pytest.raises(InputError, match=r"^attacker 'wider': dim must be an integer in \[1, 8192\], got 0$"):
        Wider(dim=0)
    assert Wider(dim=3, spread=1).dim == 3


@pytest.mark.usefixtures("registered")
def test_a_spec_is_checked_against_the_declared_ranges_even_where_the_constructor_is_not():
    with pytest.raises(InputError, match=r"^attacker 'unchecked': gain must be a number in \(0, 10\], got 0.0$"):
        registry.create("attacker", "unchecked?gain=0")
    with pytest.raises(InputError, match=r"^attacker 'unchecked': dim must be an integer in \[1, 64\], got 0$"):
        registry.create("attacker", "unchecked", dim=0)  # parameters given beside the spec
    with pytest.raises(InputError, match=r"^attacker 'unchecked': dim must be an integer in \[1, 64\], got 0$"):
        registry.create("attacker", Unchecked, dim=0)  # a class and its parameters
    with pytest.raises(InputError, match="attacker 'unchecked': gain must be"):
        registry.spec_inputs("attacker", "unchecked?gain=11")  # what a grid spec is checked with, before any cell
    with pytest.raises(InputError, match="attacker 'unchecked': gain must be"):
        registry.accepted_params("attacker", "unchecked?gain=-1")
    assert registry.create("attacker", "unchecked?gain=10&dim=1").gain == 10.0


def test_the_contract_refuses_ranges_of_options_the_constructor_does_not_take_or_of_the_wrong_type():
    misspelt = type("Misspelt", (Steady,), {"option_ranges": {"gian": Range(0, 1)}})
    with pytest.raises(
        InputError, match=r"option_ranges names 'gian', not a parameter it takes \(dim, gain, enrolment\)"
    ):
        registry.check_contract("attacker", misspelt)
    wrong = type("Wrong", (Steady,), {"option_ranges": {"dim": (1, 64)}})
    with pytest.raises(InputError, match="option_ranges must map option names to lidframe.registry.Range records"):
        registry.check_contract("attacker", wrong)


# -- the conformance suites
def test_the_attacker_suite_passes_a_plugin_that_keeps_its_ranges():
    assert RANGES_CHECK in check_attacker(Steady())


def test_the_attacker_suite_fails_a_plugin_that_does_not_check_its_declared_ranges():
    with pytest.raises(
        ConformanceError, match=rf"{RANGES_CHECK}: ConformanceError: dim=0 was taken, outside its declared range"
    ):
        check_attacker(Unchecked())


def test_the_attacker_suite_fails_a_numeric_option_without_a_declared_range():
    class Undeclared(Steady):
        option_ranges: ClassVar[Mapping[str, Range]] = {"dim": Range(1, 64, integer=True)}

    with pytest.raises(ConformanceError, match="numeric options without a declared range: gain"):
        check_attacker(Undeclared())


def test_the_attacker_suite_fails_a_plugin_that_refuses_with_another_exception():
    class Asserts(Steady):
        def __init__(self, *, dim: int = 4, gain: float = 1.0, enrolment: str = "mean_of_normalised"):
            assert dim >= 1 and 0 < gain <= 10
            super().__init__(dim=dim, gain=gain, enrolment=enrolment)

    with pytest.raises(ConformanceError, match=r"dim=0 raised AssertionError \(.*\), not an InputError"):
        check_attacker(Asserts())


def test_the_attacker_suite_rebuilds_a_plugin_with_a_required_parameter_from_its_attribute():
    class Required(Steady):
        @range_checked("attacker")
        def __init__(self, *, label: str, dim: int = 4, gain: float = 1.0):
            super().__init__(dim=dim, gain=gain)
            self.label = label

    assert RANGES_CHECK in check_attacker(Required(label="x"))

    class Hidden(Required):
        def __init__(self, *, label: str, dim: int = 4, gain: float = 1.0):
            super().__init__(label=label, dim=dim, gain=gain)
            del self.label

    with pytest.raises(ConformanceError, match="cannot rebuild it to try its options: no attribute 'label'"):
        check_attacker(Hidden(label="x"))


class Echo:
    """A plugin recogniser with a numeric option: repeats its words *times* times."""

    name = "echo"
    option_ranges: ClassVar[Mapping[str, Range]] = {"times": Range(1, 5, integer=True)}

    @range_checked("recogniser")
    def __init__(self, *, words: str = "hello", times: int = 1):
        self.words = words
        self.times = times

    def transcribe(self, waveform, sample_rate):
        return " ".join([self.words] * self.times)


def test_the_recogniser_suite_checks_the_ranges_of_numeric_options():
    assert RANGES_CHECK in check_recogniser(Echo())
    with pytest.raises(InputError, match=r"^recogniser 'echo': times must be an integer in \[1, 5\], got 0$"):
        Echo(times=0)

    class Undeclared(Echo):
        option_ranges: ClassVar[Mapping[str, Range]] = {}

    with pytest.raises(ConformanceError, match="numeric options without a declared range: times"):
        check_recogniser(Undeclared())
