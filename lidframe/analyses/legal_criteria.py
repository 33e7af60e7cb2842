"""The ``legal`` block of an evaluation: linkability and singling out of its eval set, or why each is absent.

:func:`legal_criteria` is what ``lidframe evaluate`` computes beside the
:class:`~lidframe.core.summary.Summary`: the linkability curve pi_link(N') of the fitted
:class:`~lidframe.core.result.Result` (its ranks; N' the powers of two below N, and N)
and pi_sing(N) of the eval set (:mod:`lidframe.analyses.legal`), both under the run's
bootstrap.  The third criterion, inference, is LID: the summary holds it.  A criterion
the eval set does not allow -- singling out needs at least 2 trials of every speaker --
is absent with one sentence saying why, never an error.

The record, :class:`LegalCriteria`, is the ``legal`` block of ``summary.json``
(:meth:`LegalCriteria.to_dict`)::

    {"linkability": {"points": [{n_prime, pi_link, low, high, chance}, ...]} or null,
     "singling_out": {n, l, pi_sing, low, high, chance, draws} or null,
     "absent": {criterion: why, ...},
     "n_enrolled": N, "n_trials": closed-set trials, "seed": seed of the draws,
     "level": level of the intervals or null, "method": their method or ""}

and :meth:`LegalCriteria.from_dict` reads it back.  The interval level and method are the
block's (both criteria share the run's bootstrap); ``linkability`` and ``singling_out``
are exactly the analyses' records' ``to_dict()``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import numpy as np

from lidframe.analyses.legal import (
    DEFAULT_DRAWS,
    LinkabilityCurve,
    LinkabilityPoint,
    SinglingOut,
    linkability_curve,
    singling_out,
)
from lidframe.core.evaluation import BINARY_PAIR_LIMIT
from lidframe.core.result import Result
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.fileio import json_clean
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError
from lidframe.stats.bootstrap import Bootstrap

__all__ = ["LegalCriteria", "legal_criteria", "singling_out_criterion", "CRITERIA", "SINGLING_OUT_VALUE_LIMIT"]

#: The criteria of the block, in the order the JSON, the console and the page give them.
CRITERIA = ("linkability", "singling_out")

#: Most scores the draws of singling out may compare (enrolled speakers x draws x N x the most
#: trials of a speaker): about 30 s on one core.  A larger eval set leaves it absent, saying so.
SINGLING_OUT_VALUE_LIMIT = 1 << 30

_T = TypeVar("_T")


@attrs.frozen(eq=False, kw_only=True)
class LegalCriteria:
    """Linkability and singling out of one evaluation, each or the reason it is absent (module docstring).

    Attributes
    ----------
    linkability : LinkabilityCurve or None
        pi_link(N') at N' = 2, 4, ... below N, and N (None: absent, :attr:`absent` says why).
    singling_out : SinglingOut or None
        pi_sing(N) at N the enrolled speakers, conversation length 1.
    absent : dict
        criterion (``"linkability"``, ``"singling_out"``) -> why it is absent; only the absent ones.
    n_enrolled : int
        N, the enrolled speakers.
    n_trials : int
        The eval trials whose speaker is enrolled (linkability's trials).
    seed : int
        Seed of singling out's draws.
    level : float
        The intervals' level (NaN where neither criterion has one: no bootstrap).
    method : str
        The intervals' method (``""`` where neither has one).
    """

    linkability: LinkabilityCurve | None
    singling_out: SinglingOut | None
    absent: dict[str, str] = attrs.field(factory=dict)
    n_enrolled: int
    n_trials: int
    seed: int
    level: float = math.nan
    method: str = ""

    def __attrs_post_init__(self) -> None:
        for key in CRITERIA:
            if (getattr(self, key) is None) != (key in self.absent):
                raise InputError(f"the legal block's {key} must be given or absent with a reason, not both or neither")

    def to_dict(self) -> dict[str, Any]:
        """The ``legal`` block of ``summary.json`` (module docstring), JSON-able (NaN as None)."""
        return json_clean(
            {
                "linkability": None if self.linkability is None else self.linkability.to_dict(),
                "singling_out": None if self.singling_out is None else self.singling_out.to_dict(),
                "absent": dict(self.absent),
                "n_enrolled": self.n_enrolled,
                "n_trials": self.n_trials,
                "seed": self.seed,
                "level": self.level,
                "method": self.method,
            }
        )

    @classmethod
    def from_dict(cls, record: Mapping[str, Any], *, where: str = "legal block") -> LegalCriteria:
        """The record of a block :meth:`to_dict` wrote (read back from JSON: None for NaN).

        Raises
        ------
        InputError
            A key missing or of the wrong kind, named with *where*.
        """
        try:
            level = _number(record["level"])
            method = str(record["method"] or "")
            n_enrolled = int(record["n_enrolled"])
            curve = record["linkability"]
            single = record["singling_out"]
            linkability = None
            if curve is not None:
                points = [
                    LinkabilityPoint(
                        n_prime=int(p["n_prime"]),
                        **{k: _number(p[k]) for k in ("pi_link", "low", "high", "chance")},
                    )
                    for p in curve["points"]
                ]
                linkability = LinkabilityCurve(
                    points=points, n_enrolled=n_enrolled, n_trials=int(record["n_trials"]), level=level, method=method
                )
            singled = None
            if single is not None:
                singled = SinglingOut(
                    n=int(single["n"]),
                    l=int(single["l"]),
                    pi_sing=_number(single["pi_sing"]),
                    low=_number(single["low"]),
                    high=_number(single["high"]),
                    chance=_number(single["chance"]),
                    draws=int(single["draws"]),
                    level=level,
                    method=method,
                )
            return cls(
                linkability=linkability,
                singling_out=singled,
                absent={str(k): str(v) for k, v in dict(record["absent"]).items()},
                n_enrolled=n_enrolled,
                n_trials=int(record["n_trials"]),
                seed=int(record["seed"]),
                level=level,
                method=method,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(
                f"{where}: not a legal block as lidframe writes it ({type(exc).__name__}: {exc})"
            ) from None


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def _or_reason(compute: Callable[[], _T]) -> tuple[_T | None, str | None]:
    """``compute()``, or None and the one line of the InputError that says why the set does not allow it."""
    try:
        return compute(), None
    except InputError as exc:
        return None, str(exc)


def _singling_out_too_large(eval_set: ScoreSet | EmbeddingSet, draws: int) -> str | None:
    """Why singling out is left out of an evaluation of *eval_set* for its size, or None."""
    n_trials, n_enrolled = int(eval_set.n_trials), int(eval_set.n_enrolled)
    if isinstance(eval_set, EmbeddingSet) and n_trials * n_enrolled > BINARY_PAIR_LIMIT:
        return (
            f"singling out scores every trial against every enrolled speaker, {n_trials:,} x {n_enrolled:,} pairs, "
            f"more than the {BINARY_PAIR_LIMIT:,} an evaluation holds in memory; "
            "lidframe.analyses.legal.singling_out on a subset computes it"
        )
    _, counts = np.unique(eval_set.trial_speakers, return_counts=True)
    values = n_enrolled * draws * n_enrolled * int(counts.max(initial=0))
    if values > SINGLING_OUT_VALUE_LIMIT:
        return (
            f"singling out at N = {n_enrolled:,} would compare {values:,} scores (enrolled speakers x {draws} draws x N "
            f"x the most trials of a speaker), more than the {SINGLING_OUT_VALUE_LIMIT:,} an evaluation spends on it; "
            "lidframe.analyses.legal.singling_out(eval, n=...) computes it for a smaller N"
        )
    return None


def singling_out_criterion(
    eval_set: ScoreSet | EmbeddingSet,
    *,
    bootstrap: Bootstrap | None,
    seed: int = 0,
    draws: int = DEFAULT_DRAWS,
) -> tuple[SinglingOut | None, str | None]:
    """pi_sing(N) of *eval_set* as :func:`legal_criteria` computes it, or None and why the set does not allow it.

    It depends on the eval set, *bootstrap*, *seed* and *draws* only -- not on the
    calibrator or the prior of an evaluation -- so a grid computes it once per eval set
    and seed and gives it to :func:`legal_criteria` (``singled_out=``) for every cell.

    Returns
    -------
    single : SinglingOut or None
    why : str or None
        The one line that says why it is absent (too few trials of a speaker, a set too
        large to draw in an evaluation); None when *single* is computed.
    """
    why = _singling_out_too_large(eval_set, draws)
    if why is not None:
        return None, why
    return _or_reason(lambda: singling_out(eval_set, draws=draws, seed=seed, bootstrap=bootstrap))


def legal_criteria(
    result: Result,
    eval_set: ScoreSet | EmbeddingSet,
    *,
    bootstrap: Bootstrap | None,
    seed: int = 0,
    draws: int = DEFAULT_DRAWS,
    singled_out: tuple[SinglingOut | None, str | None] | None = None,
) -> LegalCriteria:
    """Linkability of *result* and singling out of *eval_set*, each or why the set does not allow it.

    Parameters
    ----------
    result : Result
        :func:`lidframe.evaluate` of *eval_set*: pi_link(N') from its ranks
        (:func:`lidframe.analyses.legal.linkability_curve`, the default N').
    eval_set : ScoreSet or EmbeddingSet
        The set *result* evaluated: pi_sing(N) at N its enrolled speakers
        (:func:`lidframe.analyses.legal.singling_out`, L = 1).
    bootstrap : Bootstrap or None
        The run's bootstrap, for both intervals; None: no intervals.
    seed : int
        Seed of singling out's draws.
    draws : int
        Singling out's draws per enrolled speaker.
    singled_out : tuple, optional
        :func:`singling_out_criterion` of *eval_set* with the same *bootstrap*, *seed* and
        *draws*, computed once and reused (a grid's cells of one eval set); computed here
        when not given.

    Returns
    -------
    LegalCriteria
        A criterion the set does not allow (too few trials of a speaker, no enrolled
        trial, a set too large to score in memory) is absent, the reason in
        :attr:`LegalCriteria.absent`.
    """
    absent: dict[str, str] = {}
    curve, why = _or_reason(lambda: linkability_curve(result, bootstrap=bootstrap))
    if why is not None:
        absent["linkability"] = why
    if singled_out is None:
        singled_out = singling_out_criterion(eval_set, bootstrap=bootstrap, seed=seed, draws=draws)
    single, why = singled_out
    if why is not None:
        absent["singling_out"] = why
    shown = next((r for r in (curve, single) if r is not None and r.method), None)  # the intervals computed
    return LegalCriteria(
        linkability=curve,
        singling_out=single,
        absent=absent,
        n_enrolled=int(result.enrolled.size),
        n_trials=int((~result.is_outsider).sum()),
        seed=int(seed),
        level=math.nan if shown is None else shown.level,
        method="" if shown is None else shown.method,
    )
