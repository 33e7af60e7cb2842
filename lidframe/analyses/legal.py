"""Linkability over N' and singling out over N: two of the law's three criteria, with intervals.

:func:`linkability_curve` and :func:`singling_out` take what an evaluation has -- a fitted
:class:`~lidframe.core.result.Result` (linkability only: it keeps the true speaker's rank
of every trial), a :class:`~lidframe.ScoreSet`, an
:class:`~lidframe.data.embedset.EmbeddingSet` or the path of either -- and return frozen
records, :class:`LinkabilityCurve` and :class:`SinglingOut`, whose ``to_dict()`` is the
``legal`` block of ``summary.json``.  The formulas are in :mod:`lidframe.metrics.legal`;
what the numbers mean, and do not mean, in docs/legal.md.

Conversation length L
    ``l`` is the number of utterances an attacker holds of one conversation: from an
    embedding set, each speaker's trials are shuffled (seeded) and cut into conversations
    of ``l`` utterances, whose unit-length embeddings are averaged into one
    (:func:`conversations`; the last ``trials mod l`` utterances of a speaker are not
    used).  It is the k of :mod:`lidframe.analyses.longitudinal` -- an attacker holding
    k utterances of one speaker -- where the k utterances' LLRs are fused instead.  A
    score set's rows are already scored, one utterance each: ``l`` is 1 there.

Intervals
    The speaker bootstrap of :func:`lidframe.stats.bootstrap.ratio_ci`: pi_link(N') is a
    trial mean, so each resample is a weighted mean of the trials' P_i(link) with weights
    the resample counts of their speakers (every N' under the same resamples); pi_sing is
    a mean over predicates of their success rates, each predicate (enrolled speaker) one
    unit; each rate carries the noise of its seeded draws (their number is in the
    record), so that interval covers the draws' Monte-Carlo error as well.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs
import numpy as np

from lidframe.analyses.nsweep import default_sizes
from lidframe.core.result import Result
from lidframe.core.sets import SetLike, as_set, naming_set, set_label
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.fileio import json_clean
from lidframe.data.records import RowRecord, as_rows
from lidframe.data.scoreset import ScoreSet
from lidframe.data.vectors import unit_rows
from lidframe.errors import InputError, preview
from lidframe.metrics.identification import true_speaker_rank
from lidframe.metrics.legal import (
    SINGLING_OUT_CHANCE,
    check_n_primes,
    conversation_table,
    link_probabilities,
    linkability_chance,
    linkability_exact,
    singling_out_outcomes,
)
from lidframe.stats.bootstrap import Bootstrap, ratio_ci
from lidframe.stats.interval import Interval

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "LinkabilityPoint",
    "LinkabilityCurve",
    "SinglingOut",
    "linkability_curve",
    "singling_out",
    "conversations",
    "DEFAULT_DRAWS",
]

#: Seeded random sets of N speakers per predicate (enrolled speaker) of :func:`singling_out`.
DEFAULT_DRAWS = 20
_DEFAULT_BOOTSTRAP = Bootstrap()
_NO_ENROLLED_TRIAL = "linkability needs trials whose speaker is enrolled; every trial is an outsider's"
_N_PRIMES_PER_BOOTSTRAP = 32  # candidate-set sizes resampled together (memory: 32 x T values)


@attrs.frozen(eq=False, kw_only=True)
class LinkabilityPoint(RowRecord):
    """pi_link at one candidate-set size N' (a point of :class:`LinkabilityCurve`).

    Attributes
    ----------
    n_prime : int
        N', the candidates the attacker searches (the true speaker among them).
    pi_link : float
        The exact expectation over the candidate draws of the share of trials linked.
    low, high : float
        Its speaker-bootstrap interval (NaN without a bootstrap or with one speaker).
    chance : float
        1/N', a blind guess's.
    """

    n_prime: int
    pi_link: float
    low: float
    high: float
    chance: float


@attrs.frozen(eq=False, kw_only=True)
class LinkabilityCurve:
    """Outcome of :func:`linkability_curve`: pi_link(N') at each N', smallest first.

    ``to_dict()`` is ``{"points": [{n_prime, pi_link, low, high, chance}, ...]}`` (NaN as
    None); the other attributes describe the run and stay out of it.

    Attributes
    ----------
    points : tuple of LinkabilityPoint
    n_enrolled : int
        N, the enrolled speakers (the largest N'; pi_link(N) is the rank-1 rate).
    n_trials : int
        The closed-set trials (or conversations) averaged over.
    level : float
        The intervals' level (NaN without a bootstrap).
    method : str
        The intervals' method (``"bca"``, ``"percentile"``; ``""`` without a bootstrap).
    """

    points: tuple[LinkabilityPoint, ...] = attrs.field(converter=as_rows)
    n_enrolled: int
    n_trials: int
    level: float = math.nan
    method: str = ""

    @property
    def intervals(self) -> tuple[Interval, ...]:
        """Each point's :class:`~lidframe.stats.interval.Interval` (estimate pi_link), in order."""
        return tuple(Interval(p.pi_link, p.low, p.high, self.level, self.method) for p in self.points)

    def to_dict(self) -> dict:
        """``{"points": [...]}``, each point ``{n_prime, pi_link, low, high, chance}``, JSON-able."""
        return {"points": [point.to_dict() for point in self.points]}

    def to_frame(self) -> pd.DataFrame:
        """The points as a :class:`pandas.DataFrame`, one row per N' (pandas imported on call)."""
        import pandas as pd

        return pd.DataFrame([dict(point) for point in self.points])


@attrs.frozen(eq=False, kw_only=True)
class SinglingOut:
    """Outcome of :func:`singling_out`: pi_sing at N speakers per set and conversation length L.

    ``to_dict()`` is ``{n, l, pi_sing, low, high, chance, draws}`` (NaN as None).

    Attributes
    ----------
    n : int
        N, the speakers of each drawn set (the predicate's own one among them).
    l : int
        L, the utterances averaged into each conversation (1 for a score set).
    pi_sing : float
        The share of (predicate, draw) pairs in which the predicate fired on exactly one
        of the N test conversations.
    low, high : float
        Its speaker-clustered bootstrap interval (predicates resampled; NaN without a
        bootstrap or with one predicate).
    chance : float
        e^-1, a random predicate's rate for large N (docs/legal.md: below it for few
        calibration conversations).
    draws : int
        Seeded random sets per predicate; ``draws x`` the enrolled speakers in all.
    level : float
        The interval's level (NaN without a bootstrap).
    method : str
        The interval's method (``""`` without a bootstrap).
    """

    n: int
    l: int  # noqa: E741 -- L, the conversation length, as the law-metric literature and summary.json name it
    pi_sing: float
    low: float
    high: float
    chance: float
    draws: int
    level: float = math.nan
    method: str = ""

    @property
    def interval(self) -> Interval:
        """pi_sing with its interval, as an :class:`~lidframe.stats.interval.Interval`."""
        return Interval(self.pi_sing, self.low, self.high, self.level, self.method)

    def to_dict(self) -> dict:
        """``{n, l, pi_sing, low, high, chance, draws}``, JSON-able."""
        keys = ("n", "l", "pi_sing", "low", "high", "chance", "draws")
        return json_clean({key: getattr(self, key) for key in keys})


def _check_length(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"the conversation length l must be a positive integer (utterances), got {value!r}")
    return int(value)


def conversations(
    embeddings: EmbeddingSet,
    l: int,  # noqa: E741 -- L, the conversation length (module docstring)
    rng: np.random.Generator,
    *,
    min_conversations: int = 1,
) -> EmbeddingSet:
    """The embedding set of conversations of *l* utterances: each the mean of their unit-length embeddings.

    Parameters
    ----------
    embeddings : EmbeddingSet
        Utterance embeddings (trials) and the enrolled profiles (kept as they are).
    l : int
        Utterances per conversation, >= 1; 1 gives *embeddings* itself.
    rng : numpy.random.Generator
        Shuffles each speaker's trials (speakers in sorted order) before they are cut.
    min_conversations : int
        Conversations every speaker must give: at least ``min_conversations * l`` trials.

    Returns
    -------
    EmbeddingSet
        One trial per conversation, speaker by speaker (sorted), its id the ``+``-joined
        ids of its utterances.

    Raises
    ------
    InputError
        *l* not a positive integer, or speakers with too few trials (named, with counts).
    """
    l = _check_length(l)  # noqa: E741
    names, counts = np.unique(embeddings.trial_speakers, return_counts=True)
    short = counts < min_conversations * l
    if short.any():
        raise InputError(
            f"conversations of l={l} utterances need at least {min_conversations * l} trials of every speaker "
            f"({min_conversations} conversation(s) each); {preview(names[short])} have fewer "
            f"(the fewest {counts[short].min()})"
        )
    if l == 1:
        return embeddings
    unit = unit_rows(embeddings.trial_vectors.astype(np.float64), what="trial vectors", ids=embeddings.trial_ids)
    groups = []
    for name in names:
        rows = rng.permutation(np.flatnonzero(embeddings.trial_speakers == name))
        groups.append(rows[: rows.size // l * l].reshape(-1, l))
    group_rows = np.concatenate(groups)
    return EmbeddingSet(
        unit[group_rows].mean(axis=1),
        embeddings.enrol_vectors,
        embeddings.enrolled,
        embeddings.trial_speakers[group_rows[:, 0]],
        np.array(["+".join(embeddings.trial_ids[g]) for g in group_rows]),
        source=embeddings.source,
    )


def _scored(
    data: ScoreSet | EmbeddingSet,
    l: int,  # noqa: E741
    rng: np.random.Generator,
    min_conversations: int,
) -> ScoreSet:
    """*data* as the score set of its conversations of *l* utterances (a score set only at l = 1)."""
    l = _check_length(l)  # noqa: E741
    if isinstance(data, ScoreSet):
        if l != 1:
            raise InputError(
                f"the conversation length l={l} averages utterance embeddings: it needs an embedding set, "
                "and a score set's rows are already scored (l = 1)"
            )
        return data
    with naming_set(data, "eval"):
        return conversations(data, l, rng, min_conversations=min_conversations).to_scoreset()


def _beaters_of(
    source: Result | SetLike,
    l: int,  # noqa: E741
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, int]:
    """(m_i = rank - 1 of each closed-set trial, its speaker, N) of a Result or a set."""
    if isinstance(source, Result):
        if _check_length(l) != 1:
            raise InputError(f"the conversation length l={l} needs the embedding set; a Result's trials are scored")
        closed = ~source.is_outsider
        if not closed.any():
            raise InputError(_NO_ENROLLED_TRIAL)
        return source.true_rank[closed] - 1, source.trial_speakers[closed], int(source.enrolled.size)
    data = as_set(source, "eval")
    if data.n_outsider_trials == data.n_trials:
        raise InputError(f"{set_label(data, 'eval')}: {_NO_ENROLLED_TRIAL}")
    data = data.closed_set() if data.n_outsider_trials else data
    scored = _scored(data, l, rng, min_conversations=1)
    return true_speaker_rank(scored.scores, scored.true_index) - 1, scored.trial_speakers, scored.n_enrolled


def _link_intervals(
    beaters: np.ndarray, speakers: np.ndarray, n_enrolled: int, sizes: np.ndarray, bootstrap: Bootstrap | None
) -> list[Interval | None]:
    """The speaker-bootstrap interval of pi_link at each N' (None without a bootstrap or two speakers)."""
    if bootstrap is None or np.unique(speakers).size < 2:
        return [None] * sizes.size
    out: list[Interval | None] = []
    ones = np.ones(beaters.size)
    for start in range(0, sizes.size, _N_PRIMES_PER_BOOTSTRAP):  # the same resamples for every block
        block = sizes[start : start + _N_PRIMES_PER_BOOTSTRAP]
        probabilities = link_probabilities(beaters, n_enrolled, block)
        parts = {str(n): (row, ones) for n, row in zip(block, probabilities)}
        intervals = ratio_ci(parts, bootstrap, speakers=speakers)
        out.extend(intervals[str(n)] for n in block)
    return out


def linkability_curve(
    source: Result | SetLike,
    n_primes: Iterable[int] | None = None,
    *,
    l: int = 1,  # noqa: E741 -- L, the conversation length (module docstring)
    seed: int = 0,
    bootstrap: Bootstrap | None = _DEFAULT_BOOTSTRAP,
) -> LinkabilityCurve:
    """pi_link(N'), its chance 1/N' and its speaker-bootstrap interval, at each candidate-set size N'.

    Parameters
    ----------
    source : Result, ScoreSet, EmbeddingSet or path
        A fitted :class:`~lidframe.core.result.Result` (its ranks), or the eval set (ranked
        here by its raw scores, ties for the attacker).  Outsider trials are left out:
        they have no true enrolled speaker to link to.
    n_primes : iterable of int, optional
        N' values, each in 2..N (sorted, repeats dropped); default powers of two below N
        and N itself (:func:`lidframe.analyses.nsweep.default_sizes`).
    l : int
        Conversation length L (an embedding set only; module docstring).
    seed : int
        Seed of the conversations' shuffles (l > 1); pi_link itself draws nothing.
    bootstrap : Bootstrap or None, default ``Bootstrap()``
        Settings of the intervals (speakers resampled by default); None: no intervals.

    Returns
    -------
    LinkabilityCurve

    Raises
    ------
    InputError
        N' out of range, no enrolled trial, a bad *l*, or an unreadable set.
    """
    beaters, speakers, n_enrolled = _beaters_of(source, l, np.random.default_rng(seed))
    sizes = check_n_primes(default_sizes(n_enrolled) if n_primes is None else list(n_primes), n_enrolled)
    values = linkability_exact(beaters, n_enrolled, sizes)
    intervals = _link_intervals(beaters, speakers, n_enrolled, sizes, bootstrap)
    points = [
        LinkabilityPoint(
            n_prime=int(n),
            pi_link=float(value),
            low=math.nan if interval is None else interval.low,
            high=math.nan if interval is None else interval.high,
            chance=linkability_chance(int(n)),
        )
        for n, value, interval in zip(sizes, values, intervals)
    ]
    shown = next((i for i in intervals if i is not None), None)
    return LinkabilityCurve(
        points=points,
        n_enrolled=n_enrolled,
        n_trials=int(beaters.size),
        level=math.nan if shown is None else shown.level,
        method="" if shown is None else shown.method,
    )


def _predicates(scored: ScoreSet) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(rows (S, K), counts (S,), own speaker of each enrolled column (N,), speaker names) of a set, checked."""
    names, rows, counts = conversation_table(scored.trial_speakers)
    missing = ~np.isin(scored.enrolled, names)
    if missing.any():
        raise InputError(
            "singling out needs conversations (trials) of every enrolled speaker, the predicates' own; "
            f"none of {preview(scored.enrolled[missing])}"
        )
    short = counts < 2
    if short.any():
        raise InputError(
            "singling out needs at least 2 trials of every speaker (one the test conversation, the others "
            f"calibration); {preview(names[short])} have 1"
        )
    return rows, counts, np.searchsorted(names, scored.enrolled), names


def singling_out(
    source: SetLike,
    n: int | None = None,
    *,
    l: int = 1,  # noqa: E741 -- L, the conversation length (module docstring)
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    bootstrap: Bootstrap | None = _DEFAULT_BOOTSTRAP,
) -> SinglingOut:
    """pi_sing(N): how often a calibrated predicate isolates exactly one of N speakers (:mod:`lidframe.metrics.legal`).

    Every enrolled speaker is a predicate: its column of scores.  Each draw picks N
    speakers (its own and N - 1 others among all trial speakers, outsiders included) and,
    for each, one of its conversations at random as the test one, the others calibrating.

    Parameters
    ----------
    source : ScoreSet, EmbeddingSet or path
        At least 2 trials (2L utterances) of every trial speaker, and trials of every
        enrolled speaker.
    n : int, optional
        Speakers per set, 2..S (S the trial speakers); default N, the enrolled speakers.
    l : int
        Conversation length L (an embedding set only; module docstring).
    draws : int
        Seeded sets per predicate (>= 1).
    seed : int
        Seed of the conversations' shuffles and of the draws (the interval uses ``bootstrap.seed``).
    bootstrap : Bootstrap or None, default ``Bootstrap()``
        Settings of the interval (predicates resampled); None: no interval.

    Returns
    -------
    SinglingOut

    Raises
    ------
    InputError
        Too few trials of a speaker (named), an enrolled speaker without trials, N out of
        range, draws < 1, a bad *l*, or a Result (it holds no scores).
    """
    if isinstance(source, Result):
        raise InputError("singling out needs the scores (a ScoreSet or an EmbeddingSet); a Result holds only ranks")
    data = as_set(source, "eval")
    rng = np.random.default_rng(seed)
    scored = _scored(data, l, rng, min_conversations=2)
    with naming_set(data, "eval"):
        rows, counts, own, _ = _predicates(scored)
        n = scored.n_enrolled if n is None else n
        outcomes = singling_out_outcomes(scored.scores, rows, counts, own, n, draws, rng)
    interval = None
    if bootstrap is not None and scored.n_enrolled >= 2:
        parts = {"pi_sing": (outcomes.sum(axis=1).astype(np.float64), np.full(scored.n_enrolled, float(draws)))}
        interval = ratio_ci(parts, bootstrap, speakers=scored.enrolled)["pi_sing"]
    return SinglingOut(
        n=int(n),
        l=int(l),
        pi_sing=float(outcomes.mean()),
        low=math.nan if interval is None else interval.low,
        high=math.nan if interval is None else interval.high,
        chance=SINGLING_OUT_CHANCE,
        draws=int(draws),
        level=math.nan if interval is None else interval.level,
        method="" if interval is None else interval.method,
    )
