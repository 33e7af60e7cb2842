"""The threat-model ladder's records: each rung as VoicePrivacy defines it, and one-line refusals of other names."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe.data.scenario import SCENARIOS, Scenario, check_scenario, scenario
from lidframe.errors import InputError

#: The ladder as the VoicePrivacy Challenge states it (issue 26): name, code, enrolment, trials, model.
LADDER = [
    ("ignorant", "o-a", "original", "anonymised", "trained on clear speech"),
    ("lazy-informed", "a-a", "anonymised", "anonymised", "trained on clear speech"),
    ("semi-informed", "a-a", "anonymised", "anonymised", "adapted on anonymised training speech"),
]


def test_the_ladder_in_order_with_its_sides_and_models():
    assert [attrs.astuple(s) for s in SCENARIOS.values()] == LADDER
    assert list(SCENARIOS) == [row[0] for row in LADDER]
    for name, record in SCENARIOS.items():
        assert record.name == name and scenario(name) is record and check_scenario(name, key="--scenario") is record
    assert [s.original_enrolment for s in SCENARIOS.values()] == [True, False, False]
    assert [s.adapted_model for s in SCENARIOS.values()] == [False, False, True]


def test_records_are_frozen_and_the_registry_read_only():
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        SCENARIOS["ignorant"].enrolment = "anonymised"  # type: ignore[misc]
    with pytest.raises(TypeError):
        SCENARIOS["informed"] = Scenario("informed", "a-a", "anonymised", "anonymised", "x")  # type: ignore[index]


@pytest.mark.parametrize(("name", "code", "enrolment", "trials", "model"), LADDER)
def test_describe_says_the_two_sides_and_the_model_on_one_line(name, code, enrolment, trials, model):
    line = SCENARIOS[name].describe()
    assert line == f"{name} ({code}): enrolment {enrolment} speech, trials {trials} speech, model {model}"
    stated = SCENARIOS[name].stated(enrolment="E", trials=["T1", "T2"], model="M")
    assert (
        stated
        == f"{name} ({code}): enrolment {enrolment} speech (E), trials {trials} speech (T1, T2), model {model} (M)"
    )
    assert "\n" not in line and "\n" not in stated


@given(st.one_of(st.text(max_size=30), st.integers(), st.none()).filter(lambda v: v not in SCENARIOS))
def test_any_other_name_is_one_error_line_naming_the_key_and_the_three(name):
    with pytest.raises(InputError) as caught:
        check_scenario(name, key="grid.toml: [grid.scenarios[2]]")
    message = str(caught.value)
    assert message.startswith("grid.toml: [grid.scenarios[2]]: unknown scenario ")
    assert message.endswith("expected one of ignorant, lazy-informed, semi-informed")
    assert len(message.splitlines()) == 1 and len(message) < 300  # a long or multi-line name is quoted, cut
    with pytest.raises(InputError, match=r"^scenario: unknown scenario"):
        scenario(name)


def test_names_are_exact():
    for wrong in ("Ignorant", " ignorant", "lazy_informed", "semi informed", "o-a"):
        with pytest.raises(InputError, match="expected one of ignorant, lazy-informed, semi-informed"):
            check_scenario(wrong)
