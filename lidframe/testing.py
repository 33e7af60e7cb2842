"""Conformance checks for plugin authors: does a component keep lidframe's contract?

Call them from your own test suite::

    from lidframe.testing import check_calibrator
    from mylab_lid import ShrunkLogistic

    def test_conforms():
        check_calibrator(ShrunkLogistic())

Each ``check_*`` runs every check of its kind, then raises one :class:`ConformanceError`
(an ``AssertionError``, so pytest reports it as a failure) listing every check that
failed and why; on success it returns the names of the checks that passed.  The
checks use fixed seeds: they are deterministic.

What a component of each kind must provide is its Protocol in
:mod:`lidframe.registry.contracts` (:class:`~lidframe.registry.CalibratorLike`,
:class:`~lidframe.registry.PriorLike`, :class:`~lidframe.registry.AttackerLike`,
:class:`~lidframe.registry.RecogniserLike`); each
suite's first check, ``"contract"``, is :func:`~lidframe.registry.check_contract`
against it (its methods, and the types of the capabilities it declares,
:mod:`lidframe.registry.capabilities`), and the other checks test the behaviour the
Protocol's docstrings promise.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.core.znorm import uses_znorm
from lidframe.errors import InputError, NotFittedError
from lidframe.registry import check_contract
from lidframe.registry.capabilities import capability_of, outside_of
from lidframe.registry.specs import range_problems

if TYPE_CHECKING:
    from lidframe.data.utterance import Utterance

#: One exception class, or a tuple of them, as ``except`` accepts.
_ExceptionKinds = type[BaseException] | tuple[type[BaseException], ...]

__all__ = ["ConformanceError", "check_calibrator", "check_prior", "check_attacker", "check_recogniser"]


class ConformanceError(AssertionError):
    """One or more conformance checks failed; the message lists each."""


class _Checks:
    def __init__(self, label: str):
        self.label = label
        self.passed: list[str] = []
        self.failed: list[str] = []

    def run(self, name: str, func: Callable[[], Any]) -> Any:
        """Run one check; return what it returns, or None when it fails (the failure is recorded)."""
        try:
            out = func()
        except Exception as exc:  # noqa: BLE001  # a conformance suite reports every failure, whatever it is
            self.failed.append(f"{name}: {type(exc).__name__}: {exc}")
            return None
        self.passed.append(name)
        return out

    def finish(self) -> list[str]:
        if self.failed:
            lines = "\n".join(f"  - {f}" for f in self.failed)
            raise ConformanceError(f"{self.label} failed {len(self.failed)} conformance check(s):\n{lines}")
        return self.passed


def _expect(condition: bool | np.bool_, message: str) -> None:
    if not condition:
        raise ConformanceError(message)


def _expect_raises(kinds: _ExceptionKinds, func: Callable[[], object], what: str) -> None:
    try:
        func()
    except kinds:
        return
    except Exception as exc:  # noqa: BLE001  # any other exception is the non-conformance reported
        raise ConformanceError(f"{what}: raised {type(exc).__name__} ({exc}), expected {_names(kinds)}") from None
    raise ConformanceError(f"{what}: nothing raised, expected {_names(kinds)}")


def _names(kinds: _ExceptionKinds) -> str:
    listed = kinds if isinstance(kinds, tuple) else (kinds,)
    return " or ".join(k.__name__ for k in listed)


def _dev_pairs(seed: int = 0, n_mated: int = 200, n_per_trial: int = 9) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic z-normed dev pairs: mated ~ N(1.5, 1), non-mated ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    scores = np.r_[rng.normal(1.5, 1.0, n_mated), rng.normal(0.0, 1.0, n_mated * n_per_trial)]
    labels = np.r_[np.ones(n_mated, dtype=int), np.zeros(n_mated * n_per_trial, dtype=int)]
    order = rng.permutation(scores.size)
    return scores[order], labels[order]


def _dev_rows(seed: int = 0, n_trials: int = 200, n_enrolled: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic z-normed dev rows: the true column shifted by 1.5, then row z-normed."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((n_trials, n_enrolled))
    true_index = rng.integers(0, n_enrolled, n_trials)
    scores[np.arange(n_trials), true_index] += 1.5
    z = (scores - scores.mean(axis=1, keepdims=True)) / scores.std(axis=1, ddof=1, keepdims=True)
    return z, true_index


def _fresh(obj: Any) -> Any:
    from sklearn.base import clone

    try:
        return clone(obj)
    except TypeError:
        return copy.deepcopy(obj)


@attrs.frozen
class _CalibratorCase:
    """One calibrator under test, with the dev data it is fitted on and the z grid its LLRs are read on."""

    obj: Any
    by_rows: bool  # fitted on whole dev rows by its ``fit_rows`` hook, not on pairs
    data: tuple[np.ndarray, np.ndarray]  # (scores, labels), or (rows (T, N), true_index (T,))
    grid: np.ndarray  # z values from far below to far above the dev range

    def fit(self, est: Any, first: np.ndarray, second: np.ndarray) -> Any:
        return est.fit_rows(first, second) if self.by_rows else est.fit(first, second)


def _calibrator_case(calibrator: Any, scores: ArrayLike | None, labels: ArrayLike | None) -> _CalibratorCase:
    obj = calibrator() if isinstance(calibrator, type) else calibrator
    try:
        by_rows = capability_of("calibrator", obj, "fit_rows") is not None
    except InputError:  # not a method: the "contract" check fails, and the others fit on pairs
        by_rows = False
    if by_rows:
        rows, true_index = _dev_rows()
        data = (rows, true_index)
    else:
        if scores is None:
            scores, labels = _dev_pairs()
        data = (np.asarray(scores, dtype=np.float64), np.asarray(labels))
    grid = np.r_[-50.0, np.linspace(data[0].min() - 3, data[0].max() + 3, 201), 50.0]
    return _CalibratorCase(obj, by_rows, data, grid)


def _params_and_clone(case: _CalibratorCase) -> None:
    params = case.obj.get_params()
    _expect(isinstance(params, dict), "get_params() must return a dict")
    twin = _fresh(case.obj)
    _expect(twin.get_params() == params, "clone must keep the parameters")


def _unfitted_llr_raises(case: _CalibratorCase) -> None:
    _expect_raises(NotFittedError, lambda: _fresh(case.obj).llr(np.zeros(3)), "llr before fit")


def _fit_returns_self(case: _CalibratorCase) -> Any:
    est = _fresh(case.obj)
    kept = [d.copy() for d in case.data]
    out = case.fit(est, *case.data)
    _expect(out is est, "fit must return self")
    _expect(all(np.array_equal(d, k) for d, k in zip(case.data, kept)), "fit modified its input")
    return est


def _llr_shapes(case: _CalibratorCase, fitted: Any) -> None:
    grid = case.grid
    for x in (grid, grid[:12].reshape(3, 4), np.array([0.5])):
        kept = x.copy()
        y = np.asarray(fitted.llr(x))
        _expect(y.shape == x.shape, f"llr of shape {x.shape} returned shape {y.shape}")
        _expect(y.dtype.kind == "f", f"llr must return floats, got dtype {y.dtype}")
        _expect(np.array_equal(x, kept), "llr modified its input")


def _llr_finite_monotone(case: _CalibratorCase, fitted: Any) -> None:
    grid = case.grid
    y = np.asarray(fitted.llr(grid), dtype=np.float64)
    _expect(np.isfinite(y).all(), f"llr not finite at z = {grid[~np.isfinite(y)][:3]}")
    drops = np.flatnonzero(np.diff(y) < -1e-12)
    _expect(drops.size == 0, f"llr decreases between z = {grid[drops[:1]]} and {grid[drops[:1] + 1]}")


def _llr_map_agrees(case: _CalibratorCase, fitted: Any) -> None:
    from lidframe.calibrators.maps import llr_map_of

    form = llr_map_of(fitted)  # what the engines apply to each tile
    got = np.asarray(form(case.grid.copy()), dtype=np.float64)
    want = np.asarray(fitted.llr(case.grid), dtype=np.float64)
    worst = float(np.max(np.abs(got - want))) if got.shape == want.shape else math.inf
    _expect(worst <= 1e-12, f"llr_map() and llr() differ by up to {worst:.3g} nats (write the map once)")


def _deterministic(case: _CalibratorCase, fitted: Any) -> None:
    again = case.fit(_fresh(case.obj), *case.data)
    _expect(np.array_equal(np.asarray(again.llr(case.grid)), np.asarray(fitted.llr(case.grid))), "two fits differ")


def _json_round_trip(case: _CalibratorCase, fitted: Any) -> None:
    record = json.loads(json.dumps(fitted.to_dict()))
    back = type(fitted).from_dict(record)
    _expect(
        np.array_equal(np.asarray(back.llr(case.grid)), np.asarray(fitted.llr(case.grid))),
        "from_dict(to_dict()) changes llr",
    )


def _calibrator_bad_input(case: _CalibratorCase, fitted: Any) -> None:
    first, second = case.data
    with_nan = first.copy()
    with_nan.flat[0] = np.nan
    _expect_raises(ValueError, lambda: case.fit(_fresh(case.obj), with_nan, second), "fit with NaN scores")
    if case.by_rows:
        out_of_range = second.copy()
        out_of_range[0] = first.shape[1]
        _expect_raises(
            ValueError, lambda: case.fit(_fresh(case.obj), first, out_of_range), "fit_rows with a bad true column"
        )
    else:
        _expect_raises(
            ValueError, lambda: case.fit(_fresh(case.obj), first, np.zeros_like(second)), "fit with one class"
        )
    _expect_raises(ValueError, lambda: case.fit(_fresh(case.obj), first, second[:-1]), "fit with mismatched lengths")


#: The checks of a fitted calibrator, ``(name, check(case, fitted))``, in the order they run.
_FITTED_CALIBRATOR_CHECKS: tuple[tuple[str, Callable[[_CalibratorCase, Any], None]], ...] = (
    ("llr keeps shape, returns floats", _llr_shapes),
    ("llr finite and non-decreasing", _llr_finite_monotone),
    ("llr_map() agrees with llr()", _llr_map_agrees),
    ("deterministic fit", _deterministic),
    ("to_dict/from_dict JSON round trip", _json_round_trip),
    ("bad input raises ValueError", _calibrator_bad_input),
)


def check_calibrator(calibrator: Any, *, scores: ArrayLike | None = None, labels: ArrayLike | None = None) -> list[str]:
    """Check a calibrator instance (or class with default parameters) against the contract.

    Parameters
    ----------
    calibrator : object or class
        An *unfitted* calibrator: any object with the methods of
        :class:`~lidframe.registry.CalibratorLike` (it need not subclass
        :class:`~lidframe.calibrators.base.Calibrator`).
    scores, labels : array_like, shape (n_pairs,), optional
        Dev z-scores and 0/1 labels to fit on (default: 2,000 synthetic pairs).  A
        calibrator with the ``fit_rows`` hook is fitted on 200 synthetic dev rows instead.

    Checks: the methods of the Protocol exist and the capabilities it declares are of
    their types (:func:`~lidframe.registry.check_contract`);
    ``get_params``/``clone`` work and clone is unfitted;
    ``llr`` before fitting raises ``NotFittedError``; fitting returns self and leaves its
    input unchanged; ``llr`` keeps shape (1-D and 2-D), returns finite floats, also far
    outside the dev range, and is non-decreasing; the map the engines use (``llr_map()``,
    or ``llr`` wrapped in a ``CallbackMap``) agrees with ``llr``; fitting twice gives identical LLRs;
    ``to_dict`` survives ``json.dumps`` and ``from_dict`` reproduces the LLRs exactly;
    bad input (NaN scores, a single class or an out-of-range true column, mismatched
    lengths) raises ``ValueError``; ``input_scale`` is ``"znorm"`` or ``"raw"``.

    Returns
    -------
    list of str
        Names of the checks that passed.

    Raises
    ------
    ConformanceError
        Listing every failed check.
    """
    case = _calibrator_case(calibrator, scores, labels)
    checks = _Checks(f"calibrator {type(case.obj).__module__}.{type(case.obj).__qualname__}")
    checks.run("contract", lambda: check_contract("calibrator", case.obj))
    checks.run("input_scale is 'znorm' or 'raw'", lambda: uses_znorm(case.obj))
    checks.run("get_params and clone", lambda: _params_and_clone(case))
    checks.run("unfitted llr raises NotFittedError", lambda: _unfitted_llr_raises(case))
    fitted = checks.run("fit returns self, input untouched", lambda: _fit_returns_self(case))
    if fitted is None:
        return checks.finish()
    for name, check in _FITTED_CALIBRATOR_CHECKS:
        checks.run(name, functools.partial(check, case, fitted))
    return checks.finish()


def check_prior(prior: Any, *, enrolled: Iterable[str] | None = None) -> list[str]:
    """Check a prior against the contract.

    Parameters
    ----------
    prior : object
        A prior instance: any object with the methods of :class:`~lidframe.registry.PriorLike`.
    enrolled : sequence of str, optional
        Enrolled ids to evaluate it on (default ``spk0`` ... ``spk5``; pass ids your prior
        knows, e.g. a superset of a watch list).

    Checks: the methods of the Protocol exist and the capabilities it declares are of
    their types (:func:`~lidframe.registry.check_contract`);
    ``log_prior`` returns a float array of shape (N,), finite, with
    logsumexp 0 (to 1e-9); it accepts a list and a numpy array alike; permuting the
    enrolled ids permutes the output; an empty id list raises ``ValueError``; an
    ``outside`` attribute, where the prior has one (the open set), is a number in [0, 1)
    or ``"auto"`` (:func:`~lidframe.registry.capabilities.check_outside`).

    Returns
    -------
    list of str
        Names of the checks that passed.

    Raises
    ------
    ConformanceError
        Listing every failed check.
    """
    checks = _Checks(f"prior {type(prior).__module__}.{type(prior).__qualname__}")
    ids = list(enrolled) if enrolled is not None else [f"spk{i}" for i in range(6)]
    checks.run("contract", lambda: check_contract("prior", prior))

    def normalised():
        lp = np.asarray(prior.log_prior(ids))
        _expect(lp.shape == (len(ids),), f"log_prior returned shape {lp.shape} for {len(ids)} ids")
        _expect(lp.dtype.kind == "f", f"log_prior must return floats, got {lp.dtype}")
        _expect(np.isfinite(lp).all(), "log_prior must be finite (every enrolled speaker possible)")
        total = float(np.logaddexp.reduce(lp))
        _expect(abs(total) <= 1e-9, f"log_prior must sum to probability 1, logsumexp = {total:.3g}")
        lp_array = np.asarray(prior.log_prior(np.array(ids)))
        _expect(np.allclose(lp_array, lp, rtol=0, atol=1e-12), "a numpy array of ids gives another result than a list")

    checks.run("log_prior shape and normalisation", normalised)

    def equivariant():
        perm = np.random.default_rng(0).permutation(len(ids))
        lp = np.asarray(prior.log_prior(ids))
        lp_perm = np.asarray(prior.log_prior([ids[i] for i in perm]))
        _expect(np.allclose(lp_perm, lp[perm], rtol=0, atol=1e-12), "permuting the ids must permute log_prior")

    checks.run("log_prior follows the id order", equivariant)
    checks.run(
        "empty ids raise ValueError",
        lambda: _expect_raises(ValueError, lambda: prior.log_prior([]), "log_prior([])"),
    )

    checks.run("outside is a mass in [0, 1) or 'auto'", lambda: outside_of(prior))
    return checks.finish()


def _default_trials() -> list[Utterance]:
    """12 id-only trial utterances of 4 speakers (``trial-00`` ... ``trial-11``)."""
    from lidframe.data.utterance import Utterance

    return [Utterance(f"trial-{i:02d}", f"spk{i % 4}") for i in range(12)]


def _default_enrolment() -> dict[str, list[Utterance]]:
    """2 id-only enrolment utterances (``enrol-<s>-<k>``) for each of the 4 speakers of :func:`_default_trials`."""
    from lidframe.data.utterance import Utterance

    return {f"spk{s}": [Utterance(f"enrol-{s}-{k}", f"spk{s}") for k in range(2)] for s in range(4)}


def _embeddings(attacker: Any, trials: list[Utterance]) -> None:
    emb = np.asarray(attacker.embed(trials))
    _expect(emb.ndim == 2 and emb.shape[0] == len(trials), f"embed returned shape {emb.shape} for {len(trials)}")
    _expect(emb.dtype.kind == "f", f"embed must return floats, got {emb.dtype}")
    _expect(np.isfinite(emb).all(), "embed returned non-finite values")
    again = np.asarray(attacker.embed(trials))
    _expect(np.array_equal(again, emb), "embed is not deterministic")
    half = np.asarray(attacker.embed(trials[: max(1, len(trials) // 2)]))
    _expect(half.shape[1] == emb.shape[1], "embedding dimension changed between calls")
    _expect(
        np.allclose(half, emb[: half.shape[0]], rtol=1e-5, atol=1e-6),
        "an utterance's embedding depends on the other utterances in the call",
    )


def _scoring(attacker: Any, trials: list[Utterance], enrolment: Mapping[str, Sequence[Utterance]]) -> None:
    from lidframe.data.scoreset import ScoreSet

    s = attacker.score(trials, enrolment)
    _expect(isinstance(s, ScoreSet), f"score must return a lidframe.ScoreSet, got {type(s).__name__}")
    _expect(s.scores.shape == (len(trials), len(enrolment)), f"score shape {s.scores.shape}")
    _expect(list(s.enrolled) == [str(k) for k in enrolment], "enrolled ids must be the enrolment keys, in order")
    _expect(list(s.trial_ids) == [u.utt_id for u in trials], "trial ids must be the trials' utt_ids, in order")
    _expect(list(s.trial_speakers) == [u.speaker for u in trials], "trial speakers must be the trials' speakers")


def _attacker_bad_input(attacker: Any, trials: list[Utterance], enrolment: Mapping[str, Sequence[Utterance]]) -> None:
    _expect_raises(ValueError, lambda: attacker.score([], enrolment), "score with no trials")
    empty = dict(enrolment)
    empty[next(iter(empty))] = []
    _expect_raises(ValueError, lambda: attacker.score(trials, empty), "score with a speaker without utterances")


def _ranges_kept(kind: str, component: Any) -> None:
    """Every numeric option has a declared range, and the constructor refuses a value outside it (:func:`range_problems`)."""
    problems = range_problems(kind, component)
    _expect(not problems, "; ".join(problems))


#: The name of the check that numeric options keep their declared ranges (attackers and recognisers).
_RANGES_CHECK = "numeric options refused outside their declared ranges"


def _run_options(attacker: Any) -> None:
    from lidframe.attackers.base import RUN_OPTIONS
    from lidframe.registry import accepted_params

    if accepted_params("attacker", type(attacker)) is None:
        raise ConformanceError(
            f"its constructor takes **keywords that lidframe cannot see through, so it cannot tell which run "
            f"options ({', '.join(RUN_OPTIONS)}) apply and passes every one given: name those it takes as "
            "keyword parameters (and forward the rest to a base class, or take none)"
        )


def check_attacker(
    attacker: Any,
    *,
    trials: Iterable[Utterance] | None = None,
    enrolment: Mapping[str, Sequence[Utterance]] | None = None,
) -> list[str]:
    """Check an attacker against the contract.

    Parameters
    ----------
    attacker : object
        An attacker instance: any object with the methods of
        :class:`~lidframe.registry.AttackerLike`.
    trials : sequence of Utterance, optional
        Trial utterances it can process (default: 12 id-only utterances of 4 speakers,
        enough for attackers that need no audio; audio attackers must pass real ones).
    enrolment : mapping of str to sequence of Utterance, optional
        Enrolment utterances per speaker (default: 2 id-only utterances for each of the
        4 speakers).

    Checks: the methods of the Protocol exist and the capabilities it declares are of
    their types (:func:`~lidframe.registry.check_contract`);
    ``embed`` returns finite floats of shape
    (n, d) with d the same for every call, is deterministic and independent of batch
    composition; ``score`` returns a ScoreSet of shape (T, N) whose enrolled ids are
    the enrolment keys in order and whose trial ids/speakers are the trials'; an empty
    trial list and an enrolled speaker without utterances raise ``ValueError``; the
    constructor names its parameters, so that lidframe passes it only the run options
    (:data:`~lidframe.attackers.base.RUN_OPTIONS`: device, precision, batch size, cache
    folder) it takes and leaves out, with a warning, those that do not apply to it; each
    numeric option of the constructor has a range in ``option_ranges``
    (:class:`~lidframe.registry.Range`), and a value just outside it raises
    :class:`~lidframe.errors.InputError` when the attacker is constructed
    (:func:`~lidframe.registry.specs.range_problems`).

    Returns
    -------
    list of str
        Names of the checks that passed.

    Raises
    ------
    ConformanceError
        Listing every failed check.
    """
    checks = _Checks(f"attacker {type(attacker).__module__}.{type(attacker).__qualname__}")
    trials = list(_default_trials() if trials is None else trials)
    enrolment = _default_enrolment() if enrolment is None else enrolment
    checks.run("contract", lambda: check_contract("attacker", attacker))
    checks.run("embed shape, determinism, batch independence", lambda: _embeddings(attacker, trials))
    checks.run("score returns the full T x N ScoreSet", lambda: _scoring(attacker, trials, enrolment))
    checks.run("bad input raises ValueError", lambda: _attacker_bad_input(attacker, trials, enrolment))
    checks.run("run options named in the constructor", lambda: _run_options(attacker))
    checks.run(_RANGES_CHECK, lambda: _ranges_kept("attacker", attacker))
    return checks.finish()


def _tone(sample_rate: int, seconds: float = 1.0) -> np.ndarray:
    """A 1 s harmonic tone at 140 Hz with a falling level: audio without words (fixed, no seed needed)."""
    t = np.arange(int(sample_rate * seconds)) / sample_rate
    return 0.3 * np.sin(2 * np.pi * 140.0 * t) * np.linspace(1.0, 0.2, t.size)


def _transcripts(recogniser: Any, rate: int, speech: np.ndarray | None) -> None:
    for label, waveform in (("a tone", _tone(rate)), ("silence", np.zeros(rate // 2))) + (
        () if speech is None else (("the speech given", np.asarray(speech, dtype=np.float64)),)
    ):
        first = recogniser.transcribe(waveform, rate)
        _expect(isinstance(first, str), f"transcribe({label}) returned {type(first).__name__}, expected str")
        again = recogniser.transcribe(waveform.copy(), rate)
        _expect(first == again, f"transcribe({label}) is not deterministic: {first!r} then {again!r}")


def _does_not_change_input(recogniser: Any, rate: int) -> None:
    waveform = _tone(rate)
    before = waveform.copy()
    recogniser.transcribe(waveform, rate)
    _expect(np.array_equal(waveform, before), "transcribe changed the waveform it was given")


def _copies_transcribe_alike(recogniser: Any, rate: int) -> None:
    import pickle

    waveform = _tone(rate)
    copied = pickle.loads(pickle.dumps(recogniser))
    _expect(
        copied.transcribe(waveform, rate) == recogniser.transcribe(waveform, rate),
        "a pickled copy transcribes differently (lidframe may send recognisers to worker processes)",
    )


def check_recogniser(recogniser: Any, *, speech: ArrayLike | None = None, words: str | None = None) -> list[str]:
    """Check a recogniser against the contract.

    Parameters
    ----------
    recogniser : object
        A recogniser instance: any object with the methods of :class:`~lidframe.registry.RecogniserLike`.
    speech : array_like, shape (n,), optional
        A mono utterance at the recogniser's ``sample_rate`` that it should recognise.
    words : str, optional
        What *speech* says: with it, the hypothesis must share at least half of its words
        (after lidframe's normalisation, :mod:`lidframe.utility.text`).

    Checks: the methods of the Protocol exist and the capabilities it declares are of
    their types (:func:`~lidframe.registry.check_contract`);
    ``sample_rate``, where the recogniser has one, is a positive integer; ``transcribe``
    returns a str for a tone, for silence and for *speech*, the same str twice; it leaves
    the waveform it is given unchanged; a pickled copy transcribes alike; *speech* is
    recognised as above; each numeric option of the constructor has a declared range
    that it refuses a value outside of, as :func:`check_attacker` checks.

    Returns
    -------
    list of str
        Names of the checks that passed.

    Raises
    ------
    ConformanceError
        Listing every failed check.
    """
    checks = _Checks(f"recogniser {type(recogniser).__module__}.{type(recogniser).__qualname__}")
    checks.run("contract", lambda: check_contract("recogniser", recogniser))
    rate = checks.run(
        "sample_rate is a positive integer", lambda: capability_of("recogniser", recogniser, "sample_rate")
    )
    checks.run(_RANGES_CHECK, lambda: _ranges_kept("recogniser", recogniser))
    waveform = None if speech is None else np.asarray(speech, dtype=np.float64)
    if rate:
        checks.run("transcribe returns the same str twice", lambda: _transcripts(recogniser, rate, waveform))
        checks.run("transcribe leaves its input unchanged", lambda: _does_not_change_input(recogniser, rate))
        checks.run("a pickled copy transcribes alike", lambda: _copies_transcribe_alike(recogniser, rate))
        if waveform is not None and words is not None:
            checks.run("the speech given is recognised", lambda: _recognised(recogniser, rate, waveform, words))
    return checks.finish()


def _recognised(recogniser: Any, rate: int, speech: np.ndarray, words: str) -> None:
    from lidframe.utility.text import transcript_words

    said = transcript_words(words)
    heard = set(transcript_words(recogniser.transcribe(np.asarray(speech, dtype=np.float64), rate)))
    shared = sum(word in heard for word in said)
    _expect(2 * shared >= len(said), f"recognised {shared} of the {len(said)} words said ({words!r})")
