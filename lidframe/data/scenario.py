"""The VoicePrivacy threat-model ladder: what the attacker enrols with, what it scores, which model it uses.

An anonymiser is attacked at three rungs of knowledge (the VoicePrivacy Challenge's
attack scenarios; docs/scenarios.md):

========================  ====  ==========  ==========  =======================================
scenario                  code  enrolment   trials      model
========================  ====  ==========  ==========  =======================================
``ignorant``              o-a   original    anonymised  trained on clear speech
``lazy-informed``         a-a   anonymised  anonymised  trained on clear speech
``semi-informed``         a-a   anonymised  anonymised  adapted on anonymised training speech
========================  ====  ==========  ==========  =======================================

The ignorant attacker does not know that the trials were anonymised: it enrols the
speakers' original (clear) speech.  The lazy-informed attacker anonymises its enrolment
speech with the same anonymiser, but keeps its model.  The semi-informed attacker also
trains (or fine-tunes) its model on training speech anonymised by that anonymiser.

:data:`SCENARIOS` holds the three :class:`Scenario` records in ladder order;
:func:`scenario` and :func:`check_scenario` look one up by name and refuse any other
name in one line.  This module only names and describes the rungs: which enrolment
folder and which checkpoint a rung uses is decided where the data is read
(``lidframe score --scenario``, the grid's ``scenarios`` axis).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from attrs import frozen

from lidframe.errors import InputError, quote

__all__ = [
    "ORIGINAL",
    "ANONYMISED",
    "CLEAR_MODEL",
    "ADAPTED_MODEL",
    "Scenario",
    "SCENARIOS",
    "scenario",
    "check_scenario",
]

#: The side of speech that was not anonymised.
ORIGINAL = "original"
#: The side of speech passed through the anonymiser under audit.
ANONYMISED = "anonymised"
#: The model of the ignorant and lazy-informed attackers.
CLEAR_MODEL = "trained on clear speech"
#: The model of the semi-informed attacker.
ADAPTED_MODEL = "adapted on anonymised training speech"


@frozen
class Scenario:
    """One rung of the threat-model ladder.

    Attributes
    ----------
    name : str
        ``"ignorant"``, ``"lazy-informed"`` or ``"semi-informed"``.
    code : str
        The VoicePrivacy code of the enrolment-trials pair: ``"o-a"`` (original enrolment,
        anonymised trials) or ``"a-a"`` (both anonymised).
    enrolment : {"original", "anonymised"}
        The speech the attacker enrols the speakers with.
    trials : {"anonymised"}
        The speech of the trials it links (always the anonymiser's output).
    model : str
        The attacker's model: :data:`CLEAR_MODEL` or :data:`ADAPTED_MODEL`.
    """

    name: str
    code: str
    enrolment: str
    trials: str
    model: str

    @property
    def original_enrolment(self) -> bool:
        """True when the attacker enrols original (clear) speech (the ignorant rung)."""
        return self.enrolment == ORIGINAL

    @property
    def adapted_model(self) -> bool:
        """True when the attacker's model must be adapted on anonymised speech (the semi-informed rung)."""
        return self.model == ADAPTED_MODEL

    def describe(self) -> str:
        """One line: name, code, the two sides and the model.

        Examples
        --------
        >>> print(SCENARIOS["ignorant"].describe())
        ignorant (o-a): enrolment original speech, trials anonymised speech, model trained on clear speech
        """
        return (
            f"{self.name} ({self.code}): enrolment {self.enrolment} speech, trials {self.trials} speech, "
            f"model {self.model}"
        )

    def stated(self, *, enrolment: str, trials: Iterable[str], model: str) -> str:
        """:meth:`describe` with what this run used on each side and as the model, in parentheses.

        Parameters
        ----------
        enrolment : str
            What the enrolment speech is (``"--enrol data/enrol_orig"``).
        trials : iterable of str
            What the trial speech is (one entry per trial folder).
        model : str
            Which model scored (``"ecapa, checkpoint adapted.ckpt"``).

        Examples
        --------
        >>> print(SCENARIOS["lazy-informed"].stated(enrolment="e", trials=["t1", "t2"], model="random"))
        lazy-informed (a-a): enrolment anonymised speech (e), trials anonymised speech (t1, t2), model trained on clear speech (random)
        """
        return (
            f"{self.name} ({self.code}): enrolment {self.enrolment} speech ({enrolment}), "
            f"trials {self.trials} speech ({', '.join(trials)}), model {self.model} ({model})"
        )


#: The three rungs, in ladder order (the attacker knows more at each).
SCENARIOS: Mapping[str, Scenario] = MappingProxyType(
    {
        "ignorant": Scenario("ignorant", "o-a", ORIGINAL, ANONYMISED, CLEAR_MODEL),
        "lazy-informed": Scenario("lazy-informed", "a-a", ANONYMISED, ANONYMISED, CLEAR_MODEL),
        "semi-informed": Scenario("semi-informed", "a-a", ANONYMISED, ANONYMISED, ADAPTED_MODEL),
    }
)


def check_scenario(name: object, *, key: str = "scenario") -> Scenario:
    """The scenario called *name*, or one error line naming *key* and the three names.

    Parameters
    ----------
    name : object
        A scenario name, as given (a command-line value, a TOML list entry).
    key : str
        What gave it, named in the error (``"--scenario"``, ``"grid.toml: [grid.scenarios[1]]"``).

    Returns
    -------
    Scenario

    Raises
    ------
    InputError
        *name* is not one of :data:`SCENARIOS`.

    Examples
    --------
    >>> check_scenario("semi-informed").code
    'a-a'
    >>> check_scenario("informed", key="--scenario")
    Traceback (most recent call last):
    ...
    lidframe.errors.InputError: --scenario: unknown scenario 'informed'; expected one of ignorant, lazy-informed, semi-informed
    """
    if isinstance(name, str) and name in SCENARIOS:
        return SCENARIOS[name]
    shown = quote(name) if isinstance(name, str) else repr(name)
    raise InputError(f"{key}: unknown scenario {shown}; expected one of {', '.join(SCENARIOS)}")


def scenario(name: object) -> Scenario:
    """The scenario called *name* (:func:`check_scenario` with the key ``scenario``).

    Examples
    --------
    >>> scenario("lazy-informed").enrolment
    'anonymised'
    """
    return check_scenario(name)
