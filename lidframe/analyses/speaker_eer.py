"""Each enrolled speaker's EER in an evaluation: the attacker's LLRs of that speaker's own pairs.

:func:`evaluation_speaker_eers` scores the eval set's enrolled trials as the evaluation
did -- row z-norm (where the calibrator reads z-scores) and the fitted calibrator of the
:class:`~lidframe.core.result.Result` -- and splits the pairs by enrolled speaker
(:func:`lidframe.metrics.speaker_eer.speaker_eers`: speaker j's mated trials against the
other enrolled speakers' trials scored against j).  These are the LLRs of the summary's
pooled EER, so the speakers' pairs split its pairs exactly.  The EER depends only on the
order of a speaker's scores; the z-norm, which differs between trials, can change that
order, a calibrator that maps every score alike cannot.

The eval set must be the one evaluated (same trial ids and enrolled speakers, in order).
An eval *embedding* set is scored in full, as the exact binary view does, up to
:data:`~lidframe.core.evaluation.BINARY_PAIR_LIMIT` pairs; above, the EERs are not
computed and the note says so.
"""

from __future__ import annotations

import numpy as np

from lidframe.core.evaluation import BINARY_PAIR_LIMIT
from lidframe.core.result import Result
from lidframe.core.sets import as_scoreset, naming_set
from lidframe.core.znorm import calibrated_llr
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError
from lidframe.metrics.speaker_eer import speaker_eers

__all__ = ["evaluation_speaker_eers", "SPEAKER_EER_NOTE"]

#: What a per-speaker table's EER column is (:attr:`lidframe.analyses.per_speaker.PerSpeakerResult.eer_note`).
SPEAKER_EER_NOTE = (
    "EER per enrolled speaker over its own pairs, as in a trial list grouped by enrolment speaker: its trials "
    "(mated) against the other enrolled speakers' trials scored against it (non-mated), on the attacker's "
    "calibrated LLRs; ROC convex hull; outsider trials left out, as from the pooled EER, whose pairs the "
    "speakers' pairs split"
)


def evaluation_speaker_eers(result: Result, eval_set: ScoreSet | EmbeddingSet) -> tuple[np.ndarray | None, str]:
    """(each enrolled speaker's EER (N,), in ``result.enrolled`` order, and what it is) -- or (None, why not).

    Parameters
    ----------
    result : Result
        The evaluation of *eval_set* (its fitted calibrator and z-norm are applied again).
    eval_set : ScoreSet or EmbeddingSet
        The eval set that was evaluated.

    Returns
    -------
    eer : ndarray, shape (N,), or None
        NaN for a speaker without a trial or without another enrolled speaker's trial;
        None where an embedding set is too large to score in full.
    note : str
        :data:`SPEAKER_EER_NOTE`, or why the EERs were not computed.

    Raises
    ------
    InputError
        *eval_set* is not a set, or not the one *result* evaluated.
    """
    _check_same_set(result, eval_set)
    if isinstance(eval_set, EmbeddingSet):
        n_pairs = eval_set.n_trials * eval_set.n_enrolled
        if n_pairs > BINARY_PAIR_LIMIT:
            return None, (
                f"per-speaker EER not computed: the eval embedding set has {n_pairs:,} pairs, more than the "
                f"{BINARY_PAIR_LIMIT:,} lidframe scores in full (8 bytes each)"
            )
    scores = as_scoreset(eval_set, "eval")
    rows = np.flatnonzero(~scores.is_outsider)
    ddof = result.summary.znorm_ddof
    with naming_set(scores, "eval"):
        llr = calibrated_llr(
            scores.scores[rows],
            result.calibrator,  # type: ignore[arg-type]
            znorm_ddof=1 if ddof is None else ddof,  # None: the calibrator reads raw scores (no z-norm)
            row_names=scores.trial_ids[rows],
        )
    eer, _, _ = speaker_eers(llr, scores.true_index[rows])
    return eer, SPEAKER_EER_NOTE


def _check_same_set(result: Result, eval_set: object) -> None:
    """An InputError unless *eval_set* is a set with *result*'s trial ids and enrolled speakers, in order."""
    if not isinstance(eval_set, (ScoreSet, EmbeddingSet)):
        raise InputError(f"scores must be the evaluated ScoreSet or EmbeddingSet, got {type(eval_set).__name__}")
    for what, have, want in (
        ("trial ids", eval_set.trial_ids, result.trial_ids),
        ("enrolled speakers", eval_set.enrolled, result.enrolled),
    ):
        have, want = np.asarray(have), np.asarray(want)
        if have.shape != want.shape or not np.array_equal(have, want):
            raise InputError(
                f"scores: its {what} are not those of the evaluation ({have.size} against {want.size}, or in "
                "another order); give the eval set that was evaluated"
            )
