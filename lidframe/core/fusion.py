"""Linear logistic fusion of K attackers' score sets of the same trials and enrolled speakers (BOSARIS, FoCal).

K attackers (different encoders, or one encoder on different rungs) score the same T
trials against the same N enrolled speakers.  Fusion combines them into one score set,
which the LID pipeline then row-z-norms and calibrates like any other.  Each component
is first row-z-normed (:func:`~lidframe.core.znorm.row_znorm`), z^(k)_ij, and the fused
score is affine in them::

    f_ij = b + sum_k w_k z^(k)_ij

The weights (w_1 .. w_K) and the offset b are fitted as FoCal and BOSARIS fit them: a
logistic regression of the mated label on the K z-scores of the dev set's pairs (the
enrolled trials: one mated pair per trial, N - 1 non-mated), the two classes carrying
equal total weight (scikit-learn's ``class_weight="balanced"``, FoCal's prior-weighted
objective at P = 1/2: the effective prior odds are 1), so f is the fusion's estimate of
the pair's LLR.  It minimises::

    sum_p c_p [log(1 + e^{eta_p}) - y_p eta_p] + ||w||^2 / (2 C),   eta_p = b + sum_k w_k z^(k)_p

with c_p = P / (2 P_class) (P pairs, P_class of the pair's class) and, as
:class:`~lidframe.calibrators.Logistic`, an L2 penalty on the weights (never on b) of
strength 1 / ``C`` (``C=None``: none).  The optimum comes from damped Newton steps
(:func:`~lidframe.calibrators.base.logistic_newton`, the calibrators' own solver) from
zero; where none exists (perfectly separated dev pairs, or two inputs with the same
z-scores, without a penalty) the fit is refused.

Why row z-scores and not raw scores: LID depends on a trial's row only through its row
z-scores (``docs/theory.md``, step 1), so the fusion should see what the pipeline sees.
Raw scores of different attackers are on different scales (a cosine in [-1, 1], a PLDA
LLR in tens of nats) with per-trial offsets and spreads (short or noisy trials); a
weight fitted on raw pairs pooled over rows would weigh those per-row nuisances as much
as the evidence, and one attacker's per-row offset would move the fused row in a way the
z-norm afterwards cannot undo (it is no longer an offset of the fused row).  On z-scores
every component has mean 0 and spread 1 within each row, so w_k is directly how much
attacker k is trusted, and the fused set is invariant, as LID is, to any per-row affine
map of any input.  The offset b and a common scale of the weights are removed again by
the pipeline's z-norm of the fused set; only the ratios of the weights move LID.

Large dev sets: above ``max_pairs`` pairs the fit keeps every mated pair and a uniform
draw (seeded) of the non-mated ones, each weighted by the inverse of its draw rate, so
the objective is an unbiased estimate of the full one (the balanced class weights make
the two classes' totals the same as on every pair).

:func:`align_score_sets` checks that the K sets hold the same trials (ids, and each
trial's speaker) and the same enrolled speakers, and puts them in the first set's order;
:func:`fit_fusion` fits, :func:`apply_fusion` applies, :class:`LinearFusion` wraps both
as an estimator.  ``lidframe fuse`` is the command line (``docs/fusion.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import attrs
import numpy as np
from sklearn.exceptions import NotFittedError

from lidframe.calibrators.base import DEFAULT_MAX_PAIRS, balance_classes, logistic_newton
from lidframe.core.znorm import check_ddof, row_znorm
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError, quote

__all__ = ["FusionWeights", "LinearFusion", "align_score_sets", "apply_fusion", "fit_fusion"]


def _names(sets: Sequence[ScoreSet], names: Sequence[str] | None) -> list[str]:
    """What names each set in messages: *names*, else the file it was read from, else ``input k``."""
    if names is not None:
        if len(names) != len(sets):
            raise ValueError(f"names has {len(names)} entries for {len(sets)} score sets")
        return [str(name) for name in names]
    return [s.source if s.source is not None else f"input {k + 1}" for k, s in enumerate(sets)]


def _check_count(sets: Sequence[ScoreSet]) -> None:
    if len(sets) < 2:
        raise InputError(f"fusion needs at least two score sets (one per attacker), got {len(sets)}")
    for k, s in enumerate(sets):
        if not isinstance(s, ScoreSet):
            raise InputError(f"score set {k + 1} is a {type(s).__name__}; expected a ScoreSet")


def _order(ids: np.ndarray, reference: np.ndarray, name: str, first: str, what: str) -> np.ndarray:
    """The index that puts *ids* (of *name*) in the order of *reference* (of *first*); a mismatch names its first id."""
    position = {x: i for i, x in enumerate(ids)}
    missing = [x for x in reference if x not in position]
    if missing:
        raise InputError(f"{name}: has no {what} {quote(missing[0])}, which {first} has; fused inputs must match")
    known = set(reference)
    extra = [x for x in ids if x not in known]
    if extra:
        raise InputError(f"{name}: {what} {quote(extra[0])} is not in {first}; fused inputs must match")
    return np.fromiter((position[x] for x in reference), dtype=np.intp, count=reference.size)


def align_score_sets(sets: Sequence[ScoreSet], *, names: Sequence[str] | None = None) -> tuple[ScoreSet, ...]:
    """The K score sets with the same trials and enrolled speakers, each in the first set's order.

    Parameters
    ----------
    sets : sequence of ScoreSet, length K >= 2
        Score sets of the same trials (same trial ids, each with the same speaker) and the
        same enrolled speakers, in any order.
    names : sequence of str, optional
        What names each set in messages (default: the file it was read from).

    Returns
    -------
    tuple of ScoreSet
        The first set as it is, the others with rows and columns reordered to it.

    Raises
    ------
    InputError
        Fewer than two sets, or the first mismatch: one line naming the set and the trial
        or enrolled id that the first set has and it lacks (or the reverse), or the trial
        whose speaker differs.
    """
    _check_count(sets)
    labels = _names(sets, names)
    first, aligned = sets[0], [sets[0]]
    for s, name in zip(sets[1:], labels[1:], strict=True):
        rows = _order(s.trial_ids, first.trial_ids, name, labels[0], "trial")
        columns = _order(s.enrolled, first.enrolled, name, labels[0], "enrolled speaker")
        speakers = s.trial_speakers[rows]
        clash = np.flatnonzero(speakers != first.trial_speakers)
        if clash.size:
            i = int(clash[0])
            raise InputError(
                f"{name}: trial {quote(first.trial_ids[i])} has speaker {quote(speakers[i])}, but "
                f"{quote(first.trial_speakers[i])} in {labels[0]}; fused inputs must match"
            )
        same = np.array_equal(rows, np.arange(rows.size)) and np.array_equal(columns, np.arange(columns.size))
        aligned.append(
            s
            if same
            else ScoreSet(s.scores[np.ix_(rows, columns)], first.enrolled, speakers, first.trial_ids, source=s.source)
        )
    return tuple(aligned)


@attrs.frozen(eq=False, kw_only=True)
class FusionWeights:
    """A fitted linear fusion: ``f = offset + sum_k weights[k] z^(k)`` on row z-scores (module docstring).

    Attributes
    ----------
    weights : ndarray, shape (K,)
        Weight of each input's row z-scores (LLR nats per unit z).
    offset : float
        b, nats (removed again by the pipeline's z-norm; kept for the pairs' LLR).
    znorm_ddof : int
        The ddof of the inputs' row z-norm.
    C : float or None
        Inverse L2 penalty of the weights (None: none).
    n_mated, n_non_mated : int
        The dev pairs of each class (before any draw above ``max_pairs``).
    n_fit_pairs : int
        The pairs the regression was fitted on (all, or the draw).
    """

    weights: np.ndarray
    offset: float
    znorm_ddof: int
    C: float | None
    n_mated: int
    n_non_mated: int
    n_fit_pairs: int

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON values (``weights`` a list)."""
        record = attrs.asdict(self)
        record["weights"] = [float(w) for w in self.weights]
        return record


def _component_z(s: ScoreSet, name: str, rows: np.ndarray | None, znorm_ddof: int) -> np.ndarray:
    """The row z-scores of *s* (its *rows*, or all), an error naming the set and the trial."""
    scores = s.scores if rows is None else s.scores[rows]
    trial_ids = s.trial_ids if rows is None else s.trial_ids[rows]
    try:
        return row_znorm(scores, znorm_ddof, row_names=trial_ids)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


def _fit_pairs(
    dev: tuple[ScoreSet, ...], labels: list[str], znorm_ddof: int, max_pairs: int | None, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """The design (pairs, 1 + K), labels and weights of the dev pairs (all, or every mated and a draw of the rest)."""
    rows = np.flatnonzero(dev[0].true_index >= 0)
    if rows.size == 0:
        raise InputError(f"{labels[0]}: no dev trial's speaker is enrolled; fusion is fitted on mated pairs")
    mated = dev[0].subset(rows).mated_mask().ravel()
    n_mated, n_non_mated = int(mated.sum()), int(mated.size - mated.sum())
    weight_of = np.ones(2)
    if max_pairs is None or mated.size <= max_pairs:
        chosen = np.arange(mated.size)
    else:
        n_draw = max(max_pairs - n_mated, n_mated)
        non_mated = np.flatnonzero(~mated)
        drawn = np.random.default_rng(seed).choice(non_mated.size, size=min(n_draw, non_mated.size), replace=False)
        chosen = np.sort(np.concatenate([np.flatnonzero(mated), non_mated[drawn]]))
        weight_of[0] = n_non_mated / drawn.size
    design = np.empty((chosen.size, 1 + len(dev)))
    design[:, 0] = 1.0
    for k, (s, name) in enumerate(zip(dev, labels, strict=True)):
        design[:, 1 + k] = _component_z(s, name, rows, znorm_ddof).ravel()[chosen]
    y = mated[chosen].astype(np.int8)
    return design, y, weight_of[y], n_mated, n_non_mated


def _check_options(C: float | None, max_pairs: int | None) -> None:
    if C is not None and not (isinstance(C, (int, float)) and not isinstance(C, bool) and C > 0):
        raise InputError(f"fusion C must be a positive number or None, got {C!r}")
    if max_pairs is not None and not (isinstance(max_pairs, (int, np.integer)) and max_pairs >= 2):
        raise InputError(f"fusion max_pairs must be None or an integer >= 2, got {max_pairs!r}")


def fit_fusion(
    dev_sets: Sequence[ScoreSet],
    *,
    C: float | None = 1.0,
    znorm_ddof: int = 1,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
    seed: int = 0,
    names: Sequence[str] | None = None,
) -> FusionWeights:
    """Fit the fusion weights on the dev pairs of K score sets (module docstring).

    Parameters
    ----------
    dev_sets : sequence of ScoreSet, length K >= 2
        The K attackers' dev score sets of the same trials and enrolled speakers
        (:func:`align_score_sets`); outsider trials are left out of the fit.
    C : float or None, default 1.0
        Inverse L2 penalty on the weights (as :class:`~lidframe.calibrators.Logistic`'s);
        None: an unpenalised fit.
    znorm_ddof : {0, 1}
        Delta degrees of freedom of the inputs' row z-norm.
    max_pairs : int or None, default 1_000_000
        Fit on every dev pair up to this many; above, on every mated pair and a seeded
        draw of the non-mated ones, reweighted.  None: always every pair.
    seed : int
        Seed of that draw.
    names : sequence of str, optional
        What names each set in messages (default: its file).

    Returns
    -------
    FusionWeights

    Raises
    ------
    InputError
        Fewer than two sets, mismatched sets (:func:`align_score_sets`), a constant row,
        no enrolled dev trial, a bad option, or dev pairs with no finite optimum (perfectly
        separated, or two inputs with the same z-scores) without a penalty.
    """
    znorm_ddof = check_ddof(znorm_ddof)
    _check_options(C, max_pairs)
    dev = align_score_sets(dev_sets, names=names)
    labels = _names(dev_sets, names)
    design, y, weight, n_mated, n_non_mated = _fit_pairs(dev, labels, znorm_ddof, max_pairs, seed)
    penalty = np.zeros(design.shape[1])
    if C is not None:
        penalty[1:] = 1.0 / float(C)
    optimum = logistic_newton(design, y, balance_classes(weight, y), np.zeros(design.shape[1]), penalty)
    if optimum is None:
        raise InputError(
            f"{labels[0]} and the other dev sets: the fusion weights have no finite optimum (the dev pairs are "
            "perfectly separated, or two inputs have the same z-scores); fit with a penalty (C)"
        )
    return FusionWeights(
        weights=optimum[1:],
        offset=float(optimum[0]),
        znorm_ddof=znorm_ddof,
        C=None if C is None else float(C),
        n_mated=n_mated,
        n_non_mated=n_non_mated,
        n_fit_pairs=int(y.size),
    )


def apply_fusion(fusion: FusionWeights, sets: Sequence[ScoreSet], *, names: Sequence[str] | None = None) -> ScoreSet:
    """The fused score set ``offset + sum_k weights[k] z^(k)`` of K score sets of the same trials.

    Parameters
    ----------
    fusion : FusionWeights
        From :func:`fit_fusion` (on the dev sets of the same K attackers, in the same order).
    sets : sequence of ScoreSet, length K
        Score sets of the same trials and enrolled speakers (:func:`align_score_sets`);
        every trial is fused, outsider trials included.
    names : sequence of str, optional
        What names each set in messages.

    Returns
    -------
    ScoreSet
        Shape (T, N), in the first set's order of trials and enrolled speakers, ``source`` None.
    """
    if len(sets) != fusion.weights.size:
        raise InputError(
            f"the fusion was fitted on {fusion.weights.size} score sets but is applied to {len(sets)}; give one per "
            "attacker, in the same order"
        )
    aligned = align_score_sets(sets, names=names)
    labels = _names(sets, names)
    fused = np.full(aligned[0].scores.shape, fusion.offset)
    for w, s, name in zip(fusion.weights, aligned, labels, strict=True):
        fused += w * _component_z(s, name, None, fusion.znorm_ddof)
    first = aligned[0]
    return ScoreSet(fused, first.enrolled, first.trial_speakers, first.trial_ids)


class LinearFusion:
    """Linear logistic fusion as an estimator: :func:`fit_fusion` in ``fit``, :func:`apply_fusion` in ``transform``.

    Parameters
    ----------
    C : float or None, default 1.0
        Inverse L2 penalty on the weights; None: unpenalised.
    znorm_ddof : {0, 1}, default 1
    max_pairs : int or None, default 1_000_000
    seed : int, default 0
        As :func:`fit_fusion` takes them.

    Attributes
    ----------
    weights_ : ndarray, shape (K,)
        Weight of each input's row z-scores.
    offset_ : float
        The fused pairs' LLR at z = 0 (nats).
    n_mated_, n_non_mated_ : int
        Dev pairs of each class.
    fusion_ : FusionWeights
        The whole fitted record.

    Examples
    --------
    >>> from lidframe.data.simulate import simulate_system
    >>> a_dev, a_eval = simulate_system(leakage=0.5, seed=1, n_enrolled=8, trials_per_speaker=4)
    >>> b_dev, b_eval = simulate_system(leakage=0.2, seed=2, n_enrolled=8, trials_per_speaker=4)
    >>> fusion = LinearFusion().fit([a_dev, b_dev])
    >>> fusion.transform([a_eval, b_eval]).scores.shape == a_eval.scores.shape
    True
    """

    def __init__(
        self, *, C: float | None = 1.0, znorm_ddof: int = 1, max_pairs: int | None = DEFAULT_MAX_PAIRS, seed: int = 0
    ):
        self.C = C
        self.znorm_ddof = znorm_ddof
        self.max_pairs = max_pairs
        self.seed = seed

    def fit(self, dev_sets: Sequence[ScoreSet], *, names: Sequence[str] | None = None) -> Self:
        """Fit the weights on the K dev score sets; returns self."""
        fusion = fit_fusion(
            dev_sets, C=self.C, znorm_ddof=self.znorm_ddof, max_pairs=self.max_pairs, seed=self.seed, names=names
        )
        self.fusion_ = fusion
        self.weights_ = fusion.weights
        self.offset_ = fusion.offset
        self.n_mated_ = fusion.n_mated
        self.n_non_mated_ = fusion.n_non_mated
        return self

    def transform(self, sets: Sequence[ScoreSet], *, names: Sequence[str] | None = None) -> ScoreSet:
        """The fused score set of K score sets (dev or eval) of the fitted attackers."""
        if not hasattr(self, "fusion_"):
            raise NotFittedError("this LinearFusion is not fitted yet; call fit(dev_sets) first")
        return apply_fusion(self.fusion_, sets, names=names)
