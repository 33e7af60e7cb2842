"""Membership detection at low false-positive rates: the ROC of "enrolled or not", and its TPR at an FPR.

A membership attacker flags a trial as *enrolled* (its speaker is in the database) when
the trial's score reaches a threshold t: ``flag(s) = s >= t``.  Over the enrolled trials
(members) and the outsider trials (non-members) that gives

    TPR(t) = #{members with s >= t} / #members,     FPR(t) = #{outsiders with s >= t} / #outsiders.

**Ties.**  Trials with equal scores are flagged together: the thresholds are the distinct
scores (and +inf, which flags none), there is no randomised tie-break, so a tie that
straddles the FPR budget is left out whole.  The ROC here is the step ROC of those
thresholds, not its convex hull: no interpolation between two thresholds (a randomised
detector could reach the hull; a deterministic one cannot).

**TPR at an FPR.**  ``tpr_at_fpr`` takes, among the thresholds whose FPR (the float
``fp / #outsiders``) is at most the target, one with the largest TPR (TPR and FPR both
fall as t rises), and of those the highest: the same members flagged with the fewest
outsiders.  With fewer than 1/target outsider
trials, no FPR strictly between 0 and 1/#outsiders exists: the only admissible threshold
is then above every outsider score (FPR 0), and the TPR measured is the TPR at FPR 0 of
this sample.  A low-FPR claim needs many outsider trials; the records say whether the
target could be resolved (``#outsiders x target >= 1``).

Membership-inference work judges an attack by its TPR at FPR 1 % and 0.1 %, not by an
average over the ROC (Carlini et al. 2022, "Membership inference attacks from first
principles"): an attack that is certain about a few members is a privacy failure even
when its AUC is near 0.5.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError

__all__ = ["detection_roc", "tpr_at_fpr", "tprs_at_fprs", "thinned_roc"]


def _checked(member_scores: ArrayLike, outsider_scores: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Both score sets as 1-d float64, each non-empty and finite."""
    members = np.asarray(member_scores, dtype=np.float64).ravel()
    outsiders = np.asarray(outsider_scores, dtype=np.float64).ravel()
    if members.size == 0 or outsiders.size == 0:
        raise InputError(
            f"membership detection needs enrolled and outsider trials, got {members.size} and {outsiders.size}"
        )
    if not (np.isfinite(members).all() and np.isfinite(outsiders).all()):
        raise InputError("membership detection needs finite scores (a NaN or infinite score has no place in the order)")
    return members, outsiders


def detection_roc(member_scores: ArrayLike, outsider_scores: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every threshold of the step ROC, highest first, with the members and outsiders it flags (module docstring).

    Parameters
    ----------
    member_scores : array_like, shape (M,)
        Scores of the enrolled trials (a higher score: more likely enrolled).
    outsider_scores : array_like, shape (O,)
        Scores of the outsider trials.

    Returns
    -------
    thresholds : ndarray, shape (U + 1,)
        +inf (flags none), then the U distinct scores, descending.
    true_positives : ndarray of int64, shape (U + 1,)
        Members with score >= threshold (non-decreasing).
    false_positives : ndarray of int64, shape (U + 1,)
        Outsiders with score >= threshold (non-decreasing).

    Examples
    --------
    >>> t, tp, fp = detection_roc([3.0, 2.0, 2.0], [2.0, 1.0])
    >>> t.tolist(), tp.tolist(), fp.tolist()
    ([inf, 3.0, 2.0, 1.0], [0, 1, 3, 3], [0, 0, 1, 2])
    """
    members, outsiders = _checked(member_scores, outsider_scores)
    distinct = np.unique(np.concatenate([members, outsiders]))[::-1]
    members.sort()
    outsiders.sort()
    true_positives = members.size - np.searchsorted(members, distinct, side="left")
    false_positives = outsiders.size - np.searchsorted(outsiders, distinct, side="left")
    return (
        np.concatenate([[np.inf], distinct]),
        np.concatenate([[0], true_positives]).astype(np.int64),
        np.concatenate([[0], false_positives]).astype(np.int64),
    )


def tpr_at_fpr(member_scores: ArrayLike, outsider_scores: ArrayLike, max_fpr: float) -> tuple[int, int, float]:
    """The best detector whose FPR is at most *max_fpr*: the members and outsiders it flags, and its threshold.

    Parameters
    ----------
    member_scores, outsider_scores : array_like
        As for :func:`detection_roc`.
    max_fpr : float
        The FPR budget, in [0, 1].

    Returns
    -------
    true_positives : int
        Members flagged (TPR = true_positives / M): the most of any threshold with
        ``false_positives / O <= max_fpr``.
    false_positives : int
        Outsiders flagged at that threshold.
    threshold : float
        The highest threshold that flags that many members (a score: flag ``s >= threshold``),
        so the fewest outsiders with that TPR; +inf where it flags no member.

    Examples
    --------
    >>> tpr_at_fpr([3.0, 2.5, 2.0], [2.0, 1.0, 0.0, -1.0], 0.25)  # 2.0 would flag 1 of 4 outsiders
    (3, 1, 2.0)
    >>> tpr_at_fpr([3.0, 2.5, 2.0], [2.0, 1.0, 0.0, -1.0], 0.2)
    (2, 0, 2.5)
    """
    return tprs_at_fprs(member_scores, outsider_scores, [max_fpr])[0]


def tprs_at_fprs(
    member_scores: ArrayLike, outsider_scores: ArrayLike, max_fprs: Sequence[float]
) -> list[tuple[int, int, float]]:
    """:func:`tpr_at_fpr` at each budget of *max_fprs*, from one sweep of the thresholds.

    Examples
    --------
    >>> tprs_at_fprs([3.0, 2.5, 2.0], [2.0, 1.0, 0.0, -1.0], [0.25, 0.2])
    [(3, 1, 2.0), (2, 0, 2.5)]
    """
    for max_fpr in max_fprs:
        if isinstance(max_fpr, bool) or not isinstance(max_fpr, (int, float)) or not 0.0 <= max_fpr <= 1.0:
            raise InputError(f"a false-positive rate budget must be a number in [0, 1], got {max_fpr!r}")
    thresholds, true_positives, false_positives = detection_roc(member_scores, outsider_scores)
    fpr = false_positives / np.asarray(outsider_scores).size
    found = []
    for max_fpr in max_fprs:
        best = int(np.flatnonzero(fpr <= max_fpr)[-1])  # admissible thresholds: a prefix, FP grows as t falls
        first = int(np.searchsorted(true_positives[: best + 1], true_positives[best], side="left"))
        found.append((int(true_positives[best]), int(false_positives[first]), float(thresholds[first])))
    return found


def thinned_roc(
    true_positives: np.ndarray, false_positives: np.ndarray, n_members: int, n_outsiders: int, *, max_points: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    """The step ROC as at most about *max_points* (FPR, TPR) points for a figure on a log FPR axis.

    With at most *max_points* distinct FPRs every one is kept; above, the FPRs kept are the
    0, every k/O up to 10/O, and log-spaced ones up to 1; at each the TPR is the best of any
    threshold with at most that FPR (the step ROC's upper envelope, read at those FPRs).

    Parameters
    ----------
    true_positives, false_positives : ndarray of int
        Of :func:`detection_roc` (non-decreasing together).
    n_members, n_outsiders : int
        M and O.
    max_points : int, default 200

    Returns
    -------
    fpr, tpr : ndarray, shape (P,)
        Ascending FPR (from 0 to 1) and the TPR at each.
    """
    fp_levels = np.unique(false_positives)
    if fp_levels.size > max_points:
        log_grid = np.geomspace(10.0, n_outsiders, max_points - 11)
        wanted = np.unique(np.concatenate([np.arange(11), np.floor(log_grid)])).astype(np.int64)
        fp_levels = fp_levels[np.unique(np.searchsorted(fp_levels, wanted, side="right") - 1)]
    # the most members flagged with at most f false positives: the last threshold whose FP <= f
    best = np.searchsorted(false_positives, fp_levels, side="right") - 1
    return fp_levels / float(n_outsiders), true_positives[best] / float(n_members)
