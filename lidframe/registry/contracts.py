"""The contract of each component kind, written once as a :class:`typing.Protocol`.

A Protocol's methods are what a component of its kind must have; each method's
signature gives the positional arguments lidframe calls it with, and the first line of
its ``Returns`` section says what it returns.  :func:`check_contract` reads them from
here, the conformance suites of :mod:`lidframe.testing` run :func:`check_contract`, and
the base classes (:class:`lidframe.calibrators.Calibrator`,
:class:`lidframe.attackers.base.Attacker`, :class:`lidframe.core.priors.Prior`) point
here rather than restating it.

What a component *may* declare beyond its methods (a calibrator's ``absolute_llr``, an
attacker's ``reads_audio``, ...) are its capabilities, typed records with defaults in
:mod:`lidframe.registry.capabilities`; :func:`check_contract` checks those too.  They
are not members of the Protocols: a Protocol's members are required of everything that
type-checks as it, and capabilities are optional.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from lidframe.errors import InputError
from lidframe.registry.capabilities import capability_problems, target_of
from lidframe.registry.coercion import builder_params

if TYPE_CHECKING:
    import numpy as np

    from lidframe.data.scoreset import ScoreSet
    from lidframe.data.utterance import Utterance

__all__ = [
    "KINDS",
    "PROTOCOLS",
    "RecogniserLike",
    "CalibratorLike",
    "PriorLike",
    "AttackerLike",
    "ContractMethod",
    "contract_methods",
    "check_contract",
    "check_kind",
]


class CalibratorLike(Protocol):
    """What a calibrator provides: ``fit`` on 1-D scores and 0/1 labels, then ``llr``.

    Calibrators may also declare ``input_scale``, ``absolute_llr``,
    ``fit_rows(z, true_index)``, ``llr_map()``, ``to_dict()`` and ``describe()``: their
    capabilities, with their types and defaults in :class:`~lidframe.registry.capabilities.CalibratorCapabilities`, read
    through :func:`~lidframe.registry.capabilities.capabilities_of` (:mod:`lidframe.calibrators.base` says how the base
    class uses them).
    """

    def fit(self, scores: np.ndarray, labels: np.ndarray) -> Any:
        """Fit on development pairs.

        Parameters
        ----------
        scores : ndarray of float, shape (n_pairs,)
            Row z-scores (the attacker's raw scores where ``input_scale == "raw"``).
        labels : ndarray of int, shape (n_pairs,)
            1 for a mated pair (trial and enrolled speaker are the same person), 0 otherwise.

        Returns
        -------
        self, fitted on 1-D z-scores and 0/1 mated labels
            The fitted calibrator (a plugin that returns None is taken as fitted in place).
        """
        ...

    def llr(self, scores: np.ndarray) -> np.ndarray:
        """Map scores to likelihood ratios.

        Parameters
        ----------
        scores : ndarray of float, any shape
            Z-scores (or raw scores, as for :meth:`fit`).

        Returns
        -------
        an ndarray of natural-log LLRs, same shape as scores, non-decreasing
            Nats, elementwise in *scores*.
        """
        ...


class PriorLike(Protocol):
    """What a prior provides: natural-log prior probabilities of the enrolled speakers.

    Priors may also declare ``describe()`` (a short name with parameters, for tables) and
    an ``outside`` attribute (:class:`~lidframe.registry.capabilities.PriorCapabilities`): the prior mass π_∅ of "nobody enrolled" (the open set,
    :mod:`lidframe.core.openset`), a number in [0, 1) or ``"auto"`` (estimated from the
    dev set's share of outsider trials); a prior without it has ``outside`` 0 (the closed
    set).  ``log_prior`` is the prior *given* enrolment either way: enrolled speaker j has
    prior (1 - π_∅) exp(log_prior_j).  A spec string gives any prior ``outside``
    (``"myprior?outside=0.2"``): one whose builder does not take it is wrapped
    (:class:`lidframe.registry.specs.WithOutside`).
    """

    def log_prior(self, enrolled: np.ndarray) -> np.ndarray:
        """Prior probabilities of the enrolled speakers.

        Parameters
        ----------
        enrolled : array_like of str, shape (N,)
            The enrolled speaker ids.

        Returns
        -------
        an ndarray (N,) of natural-log probabilities summing to 1
            In the order of *enrolled*; finite (every enrolled speaker is possible).
        """
        ...


class AttackerLike(Protocol):
    """What an attacker provides: embeddings of utterances, scores of trials.

    Attackers may also declare ``reads_audio``, ``input_files(params)`` and
    ``describe()`` (:class:`~lidframe.registry.capabilities.AttackerCapabilities`): what a grid's cache keys follow, and
    the name tables show.
    """

    def embed(self, utterances: Sequence[Utterance]) -> np.ndarray:
        """Embed utterances.

        Parameters
        ----------
        utterances : sequence of Utterance, length n

        Returns
        -------
        an ndarray (n, d) of embeddings, one row per utterance
            Finite floats; d is the same for every call.
        """
        ...

    def score(self, trials: Sequence[Utterance], enrolment: Mapping[str, Sequence[Utterance]]) -> ScoreSet:
        """Score every trial against every enrolled speaker.

        Parameters
        ----------
        trials : sequence of Utterance, length T
        enrolment : mapping of str to sequence of Utterance, N speakers
            Speaker id -> that speaker's enrolment utterances.

        Returns
        -------
        a lidframe.ScoreSet of every trial against every enrolled speaker
            Scores of shape (T, N); enrolled ids the enrolment keys in order.
        """
        ...


class RecogniserLike(Protocol):
    """What a recogniser (speech recognition, ASR) provides: the words said in an utterance.

    Recognisers may also declare ``sample_rate`` (Hz, default 16000: lidframe resamples the
    audio to it before calling) and ``describe()`` (name and settings, for tables):
    :class:`~lidframe.registry.capabilities.RecogniserCapabilities`.  The
    hypothesis is normalised by lidframe (:mod:`lidframe.utility.text`) before it is
    scored, so return the words as the recogniser writes them.  Each call hears its
    utterance on its own: what it returns must not depend on the utterances transcribed
    before (a WER would then depend on their order and on how ``jobs`` shared them).
    """

    def transcribe(self, waveform: np.ndarray, sample_rate: int) -> str:
        """Recognise the words of one utterance.

        Parameters
        ----------
        waveform : ndarray of float64, shape (n,)
            Mono samples, nominally in [-1, 1].
        sample_rate : int
            Hz: the recogniser's ``sample_rate`` (16000 where it has none).

        Returns
        -------
        a str of the words recognised
            Empty when nothing is recognised.
        """
        ...


#: The contract of each kind, ``kind -> Protocol``; the kinds in the order lidframe lists them.
PROTOCOLS: Mapping[str, type] = MappingProxyType(
    {"attacker": AttackerLike, "calibrator": CalibratorLike, "prior": PriorLike, "recogniser": RecogniserLike}
)
#: The component kinds, in the order lidframe lists them.
KINDS = tuple(PROTOCOLS)


@attrs.frozen
class ContractMethod:
    """One method of a kind's contract, as its Protocol writes it.

    Attributes
    ----------
    name : str
    arguments : tuple of str
        The positional arguments lidframe calls it with (after ``self``).
    returns : str
        What it returns: the first line of the method's ``Returns`` section.
    """

    name: str
    arguments: tuple[str, ...]
    returns: str

    def call(self) -> str:
        """``name(arg, ...)``, as the method is called."""
        return f"{self.name}({', '.join(self.arguments)})"


def check_kind(kind: str) -> str:
    """*kind* itself if it is one of :data:`KINDS`; an :class:`InputError` naming them otherwise."""
    if kind not in KINDS:
        raise InputError(f"unknown component kind {kind!r}; expected one of {', '.join(KINDS)}")
    return kind


def _returns_line(method: Any) -> str:
    """The first line of *method*'s numpydoc ``Returns`` section (its return annotation where docstrings are stripped)."""
    lines = (inspect.getdoc(method) or "").splitlines()
    for i, line in enumerate(lines[:-2]):
        if line.strip() == "Returns" and set(lines[i + 1].strip()) == {"-"}:
            return lines[i + 2].strip()
    return str(inspect.signature(method).return_annotation)  # python -OO


@functools.cache
def contract_methods(kind: str) -> tuple[ContractMethod, ...]:
    """The methods a component of *kind* must have, read off its Protocol (:data:`PROTOCOLS`).

    Parameters
    ----------
    kind : {"attacker", "calibrator", "prior"}

    Returns
    -------
    tuple of ContractMethod
        In the order the Protocol defines them.

    Examples
    --------
    >>> [m.call() for m in contract_methods("calibrator")]
    ['fit(scores, labels)', 'llr(scores)']
    """
    protocol = PROTOCOLS[check_kind(kind)]
    methods = []
    for name, member in vars(protocol).items():
        if name.startswith("_") or not inspect.isfunction(member):
            continue
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        arguments = [p.name for p in inspect.signature(member).parameters.values() if p.kind in positional]
        methods.append(ContractMethod(name, tuple(arguments[1:]), _returns_line(member)))
    return tuple(methods)


def _callable_with(func: Any, n_args: int) -> bool:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # builtins without a signature: trust them
        return True
    try:
        signature.bind(*([None] * n_args))
    except TypeError:
        return False
    return True


def _unknown_ranged_options(obj: object, ranges: Mapping[str, Any]) -> list[str]:
    """A problem for each option that ``option_ranges`` declares and the constructor does not take (a misspelt name)."""
    accepted = builder_params(obj if inspect.isclass(obj) else type(obj))
    unknown = [name for name in ranges if accepted is not None and name not in accepted]
    if not unknown:
        return []
    return [
        f"option_ranges names {', '.join(map(repr, unknown))}, not a parameter it takes ({', '.join(accepted or [])})"
    ]


def check_contract(kind: str, obj: object, *, label: str | None = None) -> None:
    """Check that *obj* (a class or an instance) has the methods of *kind*'s Protocol and declares its capabilities well.

    Parameters
    ----------
    kind : {"attacker", "calibrator", "prior"}
    obj : class or object
    label : str, optional
        How the message names *obj* (default ``KIND module:Class``).

    Raises
    ------
    InputError
        Listing every missing method or unusable signature, and what each should return,
        and every capability declared with a value of the wrong type
        (:func:`~lidframe.registry.capabilities.capabilities_of`), or an
        ``option_ranges`` that names an option its constructor does not take.
    """
    kind = check_kind(kind)
    label = label or f"{kind} {target_of(obj)}"
    problems = []
    for method in contract_methods(kind):
        func = getattr(obj, method.name, None)
        wanted = f"{method.call()} returning {method.returns}"
        if not callable(func):
            problems.append(f"missing {wanted}")
            continue
        # on a class, methods are plain functions that also take self
        bound = not (inspect.isclass(obj) and inspect.isfunction(inspect.getattr_static(obj, method.name, None)))
        if not _callable_with(func, len(method.arguments) + (0 if bound else 1)):
            problems.append(f"{method.name}{inspect.signature(func)} cannot be called as {wanted}")
    declared, wrong = capability_problems(kind, obj)
    problems.extend(wrong)
    problems.extend(_unknown_ranged_options(obj, declared.get("option_ranges", {})))
    if problems:
        raise InputError(f"{label} is not a {kind}: " + "; ".join(problems))
