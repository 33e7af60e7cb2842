"""Sensitivity of LID to the calibrator: one row per calibrator, the spread, the worst case.

LID is only as honest as the calibration that turns scores into LLRs, and every
calibrator assumes something (affine in z, Gaussian classes, a beta shape, nothing but
monotonicity).  :func:`sensitivity` runs the same dev/eval pair through several
calibrators -- and, given several priors, through each calibrator under each prior --
and reports, per metric, how far they disagree (``spread`` = max - min) and the *worst
case*: the value most favourable to the attacker (highest disclosure, lowest cost) and
the calibrator and prior that reach it -- an auditor reports the attacker's best
calibrator and prior, since a real attacker is free to pick them.

``dev_logloss_bits`` is each fitted calibrator's multiclass cross-entropy on the dev
rows, -mean log2 p(true speaker) under a uniform prior (= log2 N_dev - dev ALID): the
1-to-N objective itself, comparable across calibrators; lower fits the dev task better.

The result is a frozen :class:`SensitivityResult` record (one row per calibrator and
prior, the spread and worst case, and each row's full ``Result``; ``to_dict()`` /
``to_frame()``); :func:`lidframe.report.analysis_figures.plot_lid_ccdf` draws the LID
distribution per calibrator.

Open set
--------
With an open-set prior (``outside`` > 0, :mod:`lidframe.core.openset`) each calibrator is
fitted and evaluated as :func:`lidframe.evaluate` does it in the open set: every trial
has a LID, the LID metrics of a row are over every trial (the summary's), and
:meth:`SensitivityResult.lids` gives every trial's.  Each row then also has the open-set
metrics :data:`OPEN_SET_SENSITIVITY_METRICS` (ALID of the enrolled and of the outsider
trials, the enrolled trials' membership disclosure, the misattribution rate), with their
spread and worst case (the highest: the attacker's best calibrator, or the worst harm).
``dev_logloss_bits`` stays the closed-set 1-to-N objective on the enrolled dev rows.  In
the closed set rows, spread and worst case have no open-set key.  The priors of one
analysis are all closed-set or all open-set: a worst case over both would compare ALIDs
over different trials.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import attrs
import numpy as np

from lidframe.core.engine import Engine, check_engine
from lidframe.core.evaluation import evaluate
from lidframe.core.lid import lid_from_scores
from lidframe.core.result import Result
from lidframe.core.sets import SetLike, as_scoreset
from lidframe.data.records import ABSENT_WHEN_NONE, OMIT_FROM_DICT, RowRecord, TableRecord, as_rows
from lidframe.errors import InputError
from lidframe.metrics import catalogue
from lidframe.registry import (
    CalibratorLike,
    PriorLike,
    capabilities_of,
    describe_component,
    outside_of,
    resolve_calibrator,
    resolve_prior,
)

__all__ = [
    "DEFAULT_CALIBRATORS",
    "SENSITIVITY_METRICS",
    "OPEN_SET_SENSITIVITY_METRICS",
    "sensitivity",
    "SensitivityRow",
    "SensitivityResult",
]

#: Calibrators compared by default (Identity is left out: it is only meaningful for
#: scores that already are LLRs).
DEFAULT_CALIBRATORS = ("logistic", "isotonic", "beta", "gaussian", "temperature")

#: metric -> "max" or "min": which direction favours the attacker (the metric catalogue's directions).
SENSITIVITY_METRICS = {key: catalogue.attacker_prefers(key) for key in catalogue.TABLES["sensitivity"]}

#: Open set: metric -> direction favouring the attacker, from the summary's ``open_set``
#: (named as its bootstrap intervals are, :data:`lidframe.core.summary.OPEN_SET_INTERVALS`).
OPEN_SET_SENSITIVITY_METRICS = {
    key: catalogue.attacker_prefers(key) for key in catalogue.TABLES["sensitivity_open_set"]
}


#: The summary keys a row copies from each calibrator's evaluation.
_SUMMARY_KEYS = (
    "n_enrolled",
    "log2_n",
    "n_enrolled_trials",
    "eer",
    "alid",
    "pdr",
    "lid_pos",
    "lid_neg",
    "lid_q99",
    "lid_max",
    "cllr",
)


def _dev_logloss_bits(dev, calibrator, znorm_ddof: int, engine: Engine) -> float:
    closed = dev.closed_set() if dev.n_outsider_trials else dev
    n = closed.n_enrolled
    lid = lid_from_scores(
        closed.scores,
        closed.true_index,
        calibrator,
        np.full(n, -math.log(n)),
        znorm_ddof=znorm_ddof,
        tile_rows=engine.tile_rows,
        row_names=closed.trial_ids,
        threads=engine.cpu_threads(),
    )
    return float(math.log2(n) - lid.mean())


@attrs.frozen(eq=False, kw_only=True)
class SensitivityRow(RowRecord):
    """One calibrator of :func:`sensitivity` (a row of :class:`SensitivityResult`).

    Also a read-only mapping of its fields (``row["alid"]``,
    :class:`~lidframe.data.records.RowRecord`).  The metrics are those of the
    calibrator's evaluation summary (:func:`lidframe.evaluate`).

    Attributes
    ----------
    calibrator : str
        The calibrator as given: its spec, or its class name for an instance.
    prior : str
        The prior as given: its spec, or its description for an instance.
    describe : str
        The fitted calibrator with its parameters.
    n_enrolled : int
        N, the eval's enrolled speakers.
    log2_n : float
        log2 N (bits), the ceiling of LID under the uniform prior.
    n_enrolled_trials : int
        Eval trials whose speaker is enrolled (with a LID).
    eer : float
        Pairwise EER (a fraction; NaN without the binary view).
    alid, lid_pos, lid_neg, lid_q99, lid_max : float
        LID aggregates (bits): mean, mean over LID > 0, mean over LID <= 0, 99th
        percentile, maximum.
    pdr : float
        Share of trials with LID > 0.
    cllr : float
        Pairwise Cllr (bits; NaN without the binary view).
    dev_logloss_bits : float
        The fitted calibrator's multiclass cross-entropy on the dev rows (bits; module
        docstring).
    alid_enrolled, alid_outsider, membership_enrolled : float or None
        Open set: ALID of the enrolled trials, of the outsider trials (NaN without any)
        and the enrolled trials' mean membership disclosure (bits); None in the closed set.
    misattribution_rate : float or None
        Open set: share of outsider trials whose top enrolled posterior exceeds 0.5; None
        in the closed set.
    """

    calibrator: str
    prior: str
    describe: str
    n_enrolled: int
    log2_n: float
    n_enrolled_trials: int
    eer: float
    alid: float
    pdr: float
    lid_pos: float
    lid_neg: float
    lid_q99: float
    lid_max: float
    cllr: float
    dev_logloss_bits: float
    alid_enrolled: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    alid_outsider: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    membership_enrolled: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    misattribution_rate: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)


@attrs.frozen(eq=False)
class SensitivityResult(TableRecord):
    """Outcome of :func:`sensitivity`.

    ``to_dict()`` (JSON-able: ``rows``, ``spread``, ``worst_case``; NaN as None) and
    ``to_frame()`` (one row per calibrator and prior) come from
    :class:`~lidframe.data.records.TableRecord`.

    Attributes
    ----------
    rows : tuple of SensitivityRow
        One per calibrator and prior: the calibrators in the order given under the first
        prior, then under the next.
    spread : dict
        metric -> max - min over the rows (NaN-aware); in the open set also of
        :data:`OPEN_SET_SENSITIVITY_METRICS`.
    worst_case : dict
        metric -> ``{"value": v, "calibrator": spec, "prior": spec}``, the
        attacker-favourable extreme and the calibrator and prior that reach it (None
        for both when no row has the metric).
    results : dict
        row label -> the full :class:`~lidframe.core.evaluation.Result`: the calibrator
        spec, or ``"<calibrator> · <prior>"`` when the analysis has several priors.
    """

    rows: tuple[SensitivityRow, ...] = attrs.field(converter=as_rows)
    spread: dict
    worst_case: dict
    results: dict = attrs.field(metadata=OMIT_FROM_DICT)

    def lids(self) -> dict:
        """row label (as :attr:`results`) -> LID bits of the eval trials that have one: the enrolled trials, every trial in the open set."""
        return {spec: r.lid if r.outside > 0 else r.lid[~r.is_outsider] for spec, r in self.results.items()}

    def priors(self) -> list[str]:
        """The priors of the rows, as given, in order."""
        return list(dict.fromkeys(r.prior for r in self.rows))


def _prior_list(prior: str | PriorLike | Sequence[str | PriorLike]) -> list[str | PriorLike]:
    """*prior* as a list: one spec or instance, or a sequence of them (at least one, unique, all closed or all open)."""
    priors: list[str | PriorLike] = (
        list(prior) if isinstance(prior, (list, tuple)) else [cast("str | PriorLike", prior)]
    )
    if not priors:
        raise InputError("sensitivity needs at least one prior")
    keys = [_prior_key(p) for p in priors]
    if len(set(keys)) != len(keys):
        raise InputError(f"priors repeated: {keys}")
    open_set = [outside_of(resolve_prior(p)) != 0 for p in priors]
    if any(open_set) and not all(open_set):
        closed = [k for k, o in zip(keys, open_set) if not o]
        opened = [k for k, o in zip(keys, open_set) if o]
        raise InputError(
            f"priors {opened} are open-set (outside > 0) and {closed} closed-set: a worst case over both would "
            "compare disclosures over different trials; give priors of one kind"
        )
    return priors


def _prior_key(prior: str | PriorLike) -> str:
    return prior if isinstance(prior, str) else describe_component(prior)


def sensitivity(
    dev: SetLike,
    eval: SetLike,
    calibrators: Sequence[str | CalibratorLike] = DEFAULT_CALIBRATORS,
    prior: str | PriorLike | Sequence[str | PriorLike] = "uniform",
    *,
    znorm_ddof: int = 1,
    engine: Engine | None = None,
) -> SensitivityResult:
    """Evaluate one dev/eval pair under several calibrators (and priors): rows, spread, worst case.

    Parameters
    ----------
    dev, eval : ScoreSet or path
        As for :func:`lidframe.core.evaluation`.
    calibrators : sequence of str or calibrator
        Specs (``"isotonic?laplace=false"``) or instances; at least one, unique.
    prior : str or prior, or a sequence of them
        Applied to every calibrator alike; given several (a list or tuple, unique), each
        calibrator is evaluated under each, and the worst case is over both.  With
        ``outside`` > 0 the evaluations are open-set (module docstring); the priors must
        then all be.
    znorm_ddof : {0, 1}
    engine : Engine, optional
        Engine settings of every evaluation (default ``Engine()``; the tiles' threads and
        size, see :func:`lidframe.evaluate`).

    Returns
    -------
    SensitivityResult

    Raises
    ------
    InputError
        No calibrator or prior, one repeated, closed- and open-set priors mixed, or what
        :func:`lidframe.evaluate` refuses.
    """
    engine = check_engine(engine)
    dev = as_scoreset(dev, "dev")
    eval_set = as_scoreset(eval, "eval")
    calibrators, keys = _calibrator_keys(calibrators)
    priors = _prior_list(prior)
    if tuple(calibrators) == DEFAULT_CALIBRATORS and outside_of(resolve_prior(priors[0])) != 0:
        # the open set needs LLRs that are likelihood ratios: the default list leaves out those that are not
        keep = [capabilities_of("calibrator", resolve_calibrator(c)).absolute_llr for c in calibrators]
        calibrators = [c for c, k in zip(calibrators, keep) if k]
        keys = [k for k, ok in zip(keys, keep) if ok]
    rows, results = [], {}
    for each_prior in priors:
        prior_key = _prior_key(each_prior)
        for key, spec in zip(keys, calibrators):
            result = evaluate(dev, eval_set, calibrator=spec, prior=each_prior, znorm_ddof=znorm_ddof, engine=engine)
            logloss = _dev_logloss_bits(dev, result.calibrator, znorm_ddof, engine)
            rows.append(_sensitivity_row(key, prior_key, result, dev_logloss_bits=logloss))
            results[key if len(priors) == 1 else f"{key} · {prior_key}"] = result
    spread, worst = _spread_and_worst(rows)
    return SensitivityResult(rows=rows, spread=spread, worst_case=worst, results=results)


def _calibrator_keys(
    calibrators: Sequence[str | CalibratorLike],
) -> tuple[list[str | CalibratorLike], list[str]]:
    """*calibrators* as a list (at least one) and the key of each (its spec, or its class name), all unique."""
    calibrators = list(calibrators)
    if not calibrators:
        raise InputError("sensitivity needs at least one calibrator")
    keys = [c if isinstance(c, str) else type(c).__name__ for c in calibrators]
    if len(set(keys)) != len(keys):
        raise InputError(f"calibrators repeated: {keys}")
    return calibrators, keys


def _sensitivity_row(key: str, prior_key: str, result: Result, *, dev_logloss_bits: float) -> SensitivityRow:
    """The row of one calibrator (*key*) and prior: what its *result*'s summary measured (the open set's too)."""
    s = result.summary
    measured = {k: s.value(k) for k in _SUMMARY_KEYS}
    if s.open_set is not None:
        o = s.open_set
        measured.update(
            alid_enrolled=o.enrolled.alid,
            alid_outsider=math.nan if o.outsider is None else o.outsider.alid,
            membership_enrolled=o.membership_enrolled.alid,
            misattribution_rate=o.misattribution_rate,
        )
    return SensitivityRow(
        calibrator=key, prior=prior_key, describe=s.calibrator, **measured, dev_logloss_bits=dev_logloss_bits
    )


def _spread_and_worst(rows: Sequence[SensitivityRow]) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """:attr:`SensitivityResult.spread` and :attr:`~SensitivityResult.worst_case` of the *rows*, metric by metric."""
    spread: dict[str, float] = {}
    worst: dict[str, dict[str, Any]] = {}
    metrics = dict(SENSITIVITY_METRICS)
    if any(r.alid_enrolled is not None for r in rows):
        metrics.update(OPEN_SET_SENSITIVITY_METRICS)
    for metric, direction in metrics.items():
        values = np.array([_number(getattr(r, metric)) for r in rows], dtype=np.float64)
        if np.isnan(values).all():
            spread[metric] = float("nan")
            worst[metric] = {"value": float("nan"), "calibrator": None, "prior": None}
            continue
        spread[metric] = float(np.nanmax(values) - np.nanmin(values))
        pick = int(np.nanargmax(values) if direction == "max" else np.nanargmin(values))
        worst[metric] = {"value": float(values[pick]), "calibrator": rows[pick].calibrator, "prior": rows[pick].prior}
    return spread, worst


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)
