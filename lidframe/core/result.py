"""The record :func:`lidframe.evaluate` returns (:class:`Result`): per-trial LID and the summary.

:func:`result_of_run` lays an engine's per-trial outputs out over every eval trial.
"""

from __future__ import annotations

import functools
import json
import warnings
from typing import TYPE_CHECKING

import attrs
import numpy as np

from lidframe.core.engine_result import EngineResult
from lidframe.core.openset import OpenSetTrials
from lidframe.core.summary import Summary
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.scoreset import ScoreSet
from lidframe.metrics.legal import link_probabilities
from lidframe.registry import CalibratorLike, PriorLike, capabilities_of

if TYPE_CHECKING:
    import pandas as pd

    from lidframe.core.refit import RefitInputs

__all__ = ["Result", "result_of_run"]


@attrs.frozen(eq=False)
class Result:
    """Per-trial LID of an eval score set and its summary.

    Attributes
    ----------
    lid : ndarray, shape (T,)
        LID in bits per eval trial, in eval order; NaN for outsider trials in the closed
        set, their membership disclosure in the open set (every trial has a LID).
    posterior_true : ndarray, shape (T,)
        Attacker's posterior probability of the true speaker (of ∅, "nobody enrolled",
        for an outsider trial in the open set); NaN for outsider trials in the closed set.
    true_rank : ndarray of int64, shape (T,)
        Rank of the true speaker among the N enrolled by the attacker's score (1 = first;
        1 + the number of enrolled speakers scoring strictly higher, so ties count for the
        attacker: :func:`~lidframe.metrics.identification.true_speaker_rank`); 0 for
        outsider trials.  ``summary.rank1_rate`` is the share of closed-set ranks equal to 1.
    is_outsider : ndarray of bool, shape (T,)
        Trials whose speaker is not enrolled (without a LID in the closed set).  Its old name
        ``is_impostor`` still reads for one release, with a :class:`FutureWarning`.
    trial_ids, trial_speakers : ndarray of str, shape (T,)
        From the eval score set.
    enrolled : ndarray of str, shape (N,)
    log_prior : ndarray, shape (N,)
        Natural-log prior over the enrolled speakers given enrolment (sums to 1); in the
        open set enrolled speaker j has prior (1 - outside) exp(log_prior_j).
    summary : Summary
        The LID aggregates, identification metrics, binary view, intervals and the
        settings behind them, as attributes (``summary.alid``; its mapping view,
        ``summary["alid"]``, is deprecated: :mod:`lidframe.core.summary`).
    calibrator : object
        The fitted calibrator.
    prior : object
    outside : float
        π_∅, the prior mass of "nobody enrolled" (0: the closed set;
        :mod:`lidframe.core.openset`), resolved when the prior asked for ``"auto"``.
    membership_bits : ndarray, shape (T,), or None
        Open set: membership disclosure, log2 p(enrolled | s) / (1 - π_∅) of an enrolled
        trial and its LID for an outsider trial; None in the closed set.
    top_posterior : ndarray, shape (T,), or None
        Open set: max_j p(j | s), the posterior of the attacker's best enrolled guess
        (an outsider trial above 0.5 is misattributed); None in the closed set.
    refit : RefitInputs or None
        What the summary's bootstrap refitted the calibrator from (the dev set, the fitted
        calibrator, the calibrator input of the trials the engine ran: the enrolled ones in
        the closed set, every trial in the open set; :mod:`lidframe.core.refit`), so that
        :func:`~lidframe.analyses.per_speaker.per_speaker` refits it on the same resampled
        dev speakers; None where the summary's intervals hold the calibrator fixed (or there
        are none).  Not part of :meth:`to_dict`.
    """

    lid: np.ndarray
    posterior_true: np.ndarray
    true_rank: np.ndarray
    is_outsider: np.ndarray
    trial_ids: np.ndarray
    trial_speakers: np.ndarray
    enrolled: np.ndarray
    log_prior: np.ndarray
    summary: Summary
    calibrator: object
    prior: object
    outside: float = 0.0
    membership_bits: np.ndarray | None = None
    top_posterior: np.ndarray | None = None
    refit: RefitInputs | None = attrs.field(default=None, repr=False)

    @property
    def is_impostor(self) -> np.ndarray:
        """Deprecated: :attr:`is_outsider` (a FutureWarning; removed in the next release)."""
        warnings.warn(
            "Result.is_impostor is now Result.is_outsider; the old name will be removed in the next release",
            FutureWarning,
            stacklevel=2,
        )
        return self.is_outsider

    @property
    def calibrator_fit(self) -> dict | None:
        """The fitted calibrator's record (its ``to_dict()``: class, parameters, fitted values), None where it has none."""
        to_dict = capabilities_of("calibrator", self.calibrator).to_dict
        return to_dict() if callable(to_dict) else None

    def to_dict(self) -> dict:
        """The summary plus the fitted calibrator's record (``calibrator_fit``, where it has one), JSON-able."""
        out = self.summary.to_dict()
        fit = self.calibrator_fit
        if fit is not None:
            out["calibrator_fit"] = fit
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """JSON text of :meth:`to_dict` (NaN written as null)."""
        return json.dumps(self.to_dict(), indent=indent)

    def to_frame(self) -> pd.DataFrame:
        """Per-trial table (pandas): trial_id, trial_spk, outsider, lid_bits, posterior_true, p_link_2.

        In the open set also ``membership_bits`` and ``top_posterior`` (before ``p_link_2``).
        ``p_link_2`` is the trial's linkability among N' = 2 candidates, its speaker and
        one other drawn at random: P(link) = 1 - (rank - 1) / (N - 1)
        (:func:`lidframe.metrics.legal.link_probabilities`; its mean over the enrolled
        trials is pi_link(2)); NaN for an outsider trial and where N < 2.
        """
        import pandas as pd

        columns = {
            "trial_id": self.trial_ids,
            "trial_spk": self.trial_speakers,
            "outsider": self.is_outsider.astype(int),
            "lid_bits": self.lid,
            "posterior_true": self.posterior_true,
        }
        if self.membership_bits is not None:
            columns["membership_bits"] = self.membership_bits
        if self.top_posterior is not None:
            columns["top_posterior"] = self.top_posterior
        columns["p_link_2"] = self._link_at_two()
        return pd.DataFrame(columns)

    def _link_at_two(self) -> np.ndarray:
        """P(link) at N' = 2 of every trial (NaN for an outsider trial, or every trial where N < 2)."""
        out = np.full(self.lid.shape, np.nan)
        closed = ~np.asarray(self.is_outsider, dtype=bool)
        if self.enrolled.size >= 2 and closed.any():
            out[closed] = link_probabilities(self.true_rank[closed] - 1, int(self.enrolled.size), [2])[0]
        return out


def result_of_run(
    eval_set: ScoreSet | EmbeddingSet,
    closed_rows: np.ndarray,
    run: EngineResult,
    posterior_closed: np.ndarray,
    open_trials: OpenSetTrials | None,
    log_prior: np.ndarray,
    summary: Summary,
    fitted: CalibratorLike,
    prior: PriorLike,
    outside: float,
    refit: RefitInputs | None = None,
) -> Result:
    """The :class:`Result` of :func:`~lidframe.core.evaluation.evaluate_fitted`: per-trial arrays over every eval trial.

    *run* ran the enrolled trials (rows *closed_rows* of *eval_set*), whose closed-set
    posteriors are *posterior_closed*, or in the open set every trial (*open_trials*);
    *refit*: what its bootstrap refitted the calibrator from (:attr:`Result.refit`).
    """
    if open_trials is not None:
        lid, posterior_true, true_rank = open_trials.lid_bits, open_trials.posterior_true, run.true_rank
    else:
        per_trial = functools.partial(_per_trial, eval_set.n_trials, closed_rows)
        lid = per_trial(run.lid_bits, np.nan, np.float64)
        posterior_true = per_trial(posterior_closed, np.nan, np.float64)
        true_rank = per_trial(run.true_rank, 0, np.int64)  # 0: outsider trial, no rank
    return Result(
        lid=lid,
        posterior_true=posterior_true,
        true_rank=true_rank,
        is_outsider=eval_set.is_outsider,
        trial_ids=eval_set.trial_ids,
        trial_speakers=eval_set.trial_speakers,
        enrolled=eval_set.enrolled,
        log_prior=log_prior,
        summary=summary,
        calibrator=fitted,
        prior=prior,
        outside=outside,
        membership_bits=None if open_trials is None else open_trials.membership_bits,
        top_posterior=None if open_trials is None else open_trials.top_posterior,
        refit=refit,
    )


def _per_trial(n_trials: int, rows: np.ndarray, values: np.ndarray, fill: float | int, dtype: type) -> np.ndarray:
    """An array of *n_trials* holding *values* at *rows* and *fill* elsewhere."""
    out: np.ndarray = np.full(n_trials, fill, dtype=dtype)
    out[rows] = values
    return out
