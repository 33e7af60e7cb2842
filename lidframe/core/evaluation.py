"""``evaluate``: from a dev and an eval set to per-trial LID and its summary.

:func:`fit_calibrator` fits a calibrator on a dev set, :func:`evaluate_fitted` applies a
fitted one to an eval set, and :func:`evaluate` does both; they return a :class:`Result`
whose ``summary`` is a :class:`~lidframe.core.summary.Summary`
(:func:`~lidframe.core.summarise.summarise`).
:func:`as_set` / :func:`as_scoreset` read a score or embedding set given as a path.

Pipeline (the maths: ``docs/theory.md``; the path of one score: ``docs/architecture.md``)::

    dev  --row z-norm--> z --Calibrator.fit(z, mated?)--> fitted calibrator
    eval --row z-norm--> z --Calibrator.llr--> LLR (T, N) --+ log prior, log-softmax--> LID (bits)

An eval *embedding* set takes the same steps inside the streaming engine
(:func:`~lidframe.core.streaming.lid_from_embeddings`), without forming the (T, N) matrix;
:func:`~lidframe.core.dispatch.run_engine` picks the engine.  A dev embedding set is
scored in full (it must fit in memory).

Outsider trials (speaker not enrolled) are counted in ``summary.n_outsider_trials``
(eval) and ``summary.n_dev_outsider_trials``.  In the closed set (the prior's ``outside``
0, the default) they are left out of the calibration and of LID.  In the open set
(``outside`` > 0, :mod:`lidframe.core.openset`) every eval trial gets a LID -- an outsider
trial its membership disclosure -- and the dev set's outsider trials add their pairs to
the calibration as non-mated pairs.

Options come as records: bootstrap intervals as a :class:`~lidframe.stats.bootstrap.Bootstrap`
(``bootstrap=``, None for none) and the engine settings as an
:class:`~lidframe.core.engine.Engine` (``engine=``).  ``calibrator`` and ``prior`` are
keyword-only; given by position they still work for one release, with a FutureWarning.

Binary view
-----------
``binary_metrics`` asks for the binary view over all closed-set eval pairs (``eer``,
``eer_threshold``, ``cllr``, ``min_cllr``, ``min_dcf``, ``act_dcf``, ``dece_bits``,
``max_abs_llr_log10``, ``zebra_tag``, ``dsys``, ``dsys_method``;
:mod:`lidframe.metrics.binary_view`), by one of two methods (``summary.binary.method``).
The detection costs are measured at ``operating_point``
(:class:`~lidframe.metrics.detection.OperatingPoint`; default P_target = 0.01,
C_miss = C_fa = 1, SpeechBrain's ``minDCF`` defaults; the mapping view's
``binary_operating_point``).  The methods:

* ``"exact"`` holds every pair's LLR at once (T x N float64) and sorts it; an eval
  embedding set is then scored in full (its cosine matrix materialised);
* ``"binned"`` (eval embedding sets) counts the LLRs into per-class histograms of
  :data:`~lidframe.metrics.binned.DEFAULT_BINS` bins in the streaming pass (memory a few
  tiles; Cllr exact, the others within the bounds of :mod:`lidframe.metrics.binned`,
  ``summary.binary.error_bounds``).  Binned metrics have no bootstrap intervals.

True: exact for a score set, binned for an embedding set (any size).  ``"auto"``: exact,
except binned for an embedding set of more than :data:`BINARY_PAIR_LIMIT` (2**27) pairs
or on a cluster.  False: none (``summary.binary`` is None, the mapping view shows NaN;
memory a few tiles).  ``summary.binary_metrics`` says ``"computed"`` or ``"skipped: <why>"``.

Cluster
-------
``scheduler=`` (an address such as ``"tcp://10.0.0.5:8786"``, connected with a 10 s
timeout, or a ``distributed.Client``) runs the streaming engine of an eval embedding set on
a dask.distributed cluster: the eval trials are cut into blocks of rows, one task each,
and the enrolled profiles and the calibrator's map are sent once per worker
(:func:`lidframe.core.cluster.lid_on_cluster`); the numbers equal the single-process run
(LID to float64 rounding, ranks and binned counts exactly).  The binary view is then
binned at every size (the exact one needs every pair on the client).
``summary.scheduler`` records the address and ``summary.n_blocks`` the blocks.  Not an
:class:`~lidframe.core.engine.Engine` field: a client is a live connection, not a
setting, and where the blocks ran does not change a number.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeAlias, TypeVar, cast

import attrs
import numpy as np

from lidframe.core.dispatch import DENSE_ENGINE, run_engine
from lidframe.core.engine import Engine, check_engine, resolve_device
from lidframe.core.engine_result import EngineUsed
from lidframe.core.lid import LN2
from lidframe.core.openset import open_set_trials, resolve_outside
from lidframe.core.summarise import summarise
from lidframe.core.summary import Summary, check_misattribution_threshold
from lidframe.core.znorm import calibrator_input, check_ddof
from lidframe.data.embedset import EmbeddingSet, load_set
from lidframe.data.fileio import StrPath
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError
from lidframe.metrics.binary_view import check_operating_point
from lidframe.metrics.detection import OperatingPoint
from lidframe.registry import CalibratorLike, PriorLike, describe_component, resolve_calibrator, resolve_prior
from lidframe.stats.bootstrap import Bootstrap

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "evaluate",
    "evaluate_fitted",
    "fit_calibrator",
    "Result",
    "as_scoreset",
    "as_set",
    "naming_set",
    "set_label",
    "BINARY_PAIR_LIMIT",
    "Summary",
]

P = ParamSpec("P")
R = TypeVar("R")

#: ``binary_metrics="auto"`` computes the exact binary view of an eval *embedding* set (by
#: scoring it in full) up to this many (trial, enrolled speaker) pairs, and the binned one
#: (streamed, :mod:`lidframe.metrics.binned`) above: the exact one holds every pair's LLR,
#: 8 bytes each (1 GiB here); a score set of any size is already in memory (always exact).
BINARY_PAIR_LIMIT = 1 << 27


#: What :func:`evaluate` and the analyses accept as a set: a score set, an embedding set, or the path of either.
SetLike: TypeAlias = ScoreSet | EmbeddingSet | StrPath


def as_set(obj: SetLike, role: str) -> ScoreSet | EmbeddingSet:
    """*obj* if it is a ScoreSet or EmbeddingSet, else load either from a path; *role* names it in errors."""
    if isinstance(obj, (ScoreSet, EmbeddingSet)):
        return obj
    if isinstance(obj, (str, Path)):
        return load_set(obj)
    raise InputError(
        f"{role} must be a ScoreSet, an EmbeddingSet or the path of a .npz/.csv set, got {type(obj).__name__}"
    )


def set_label(data: ScoreSet | EmbeddingSet, role: str) -> str:
    """``'/data/eval.npz (eval)'`` for a set read from a file, ``'eval'`` for one built in memory."""
    return role if data.source is None else f"{data.source} ({role})"


@contextlib.contextmanager
def naming_set(data: ScoreSet | EmbeddingSet, role: str) -> Iterator[None]:
    """Begin the message of an :class:`InputError` raised in the block with :func:`set_label`.

    Z-norm, calibration and prior errors name a trial or a speaker; this adds which set
    (dev or eval) and which file it was read from, e.g. ``/data/eval.npz (eval): z-norm is
    undefined for 1 trials whose scores are all equal: 'u7'``.
    """
    try:
        yield
    except InputError as exc:
        raise InputError(f"{set_label(data, role)}: {exc}") from None


def as_scoreset(obj: SetLike, role: str) -> ScoreSet:
    """Like :func:`as_set`, with an embedding set turned into its (materialised) cosine ScoreSet."""
    obj = as_set(obj, role)
    if isinstance(obj, EmbeddingSet):
        with naming_set(obj, role):
            return obj.to_scoreset()
    return obj


def fit_calibrator(
    dev: ScoreSet,
    calibrator: str | CalibratorLike = "logistic",
    *,
    znorm_ddof: int = 1,
    outsider_pairs: bool = False,
) -> CalibratorLike:
    """Fit a calibrator on the row-z-normed pairs (or rows) of *dev*'s enrolled trials.

    A calibrator with a ``fit_rows(z, true_index)`` method is fitted on the (T, N) dev
    rows of the enrolled trials; others on the flattened pairs with labels 1 = mated.  A
    calibrator whose ``input_scale`` is ``"raw"`` gets the raw scores instead of z-scores.
    With *outsider_pairs* (the open set) the dev set's outsider trials add their N pairs
    each as non-mated pairs (a ``fit_rows`` calibrator, which needs a true column per
    row, still gets the enrolled rows only).

    Parameters
    ----------
    dev : ScoreSet
        Development scores; outsider trials are left out.
    calibrator : str or calibrator
        Registry name, ``"package.module:Class"``, or an instance (cloned, not modified).
    znorm_ddof : {0, 1}
        Delta degrees of freedom of the row z-norm.
    outsider_pairs : bool, default False
        Also fit on the outsider trials' pairs, as non-mated pairs (what
        :func:`evaluate` does in the open set).

    Returns
    -------
    calibrator
        A fitted copy.
    """
    znorm_ddof = check_ddof(znorm_ddof)
    calibrator = resolve_calibrator(calibrator)
    fit_rows = getattr(calibrator, "fit_rows", None)  # the optional whole-row hook
    with naming_set(dev, "dev"):
        if dev.n_outsider_trials == dev.n_trials:
            raise InputError("no trial's speaker is enrolled, so there is no mated pair to calibrate on")
        keep_outsiders = outsider_pairs and not callable(fit_rows)
        closed = dev.closed_set() if dev.n_outsider_trials and not keep_outsiders else dev
        z = calibrator_input(closed.scores, calibrator, znorm_ddof=znorm_ddof, row_names=closed.trial_ids)
        if np.may_share_memory(z, closed.scores):  # raw scores: the calibrator gets its own (writable) copy
            z = z.copy()
    try:  # a bad parameter value (C=-1) shows here too: name the calibrator as well as the set
        if callable(fit_rows):
            fitted = fit_rows(z, closed.true_index)
        else:
            fitted = calibrator.fit(z.ravel(), closed.mated_mask().ravel())
    except InputError as exc:
        raise InputError(
            f"{set_label(dev, 'dev')}: fitting calibrator {describe_component(calibrator)}: {exc}"
        ) from None
    return calibrator if fitted is None else fitted


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
        settings behind them, as attributes (``summary.alid``) and as a read-only
        mapping (``summary["alid"]``; :mod:`lidframe.core.summary`).
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

    @property
    def is_impostor(self) -> np.ndarray:
        """Deprecated: :attr:`is_outsider` (a FutureWarning; removed in the next release)."""
        warnings.warn(
            "Result.is_impostor is now Result.is_outsider; the old name will be removed in the next release",
            FutureWarning,
            stacklevel=2,
        )
        return self.is_outsider

    def to_dict(self) -> dict:
        """The summary plus the fitted calibrator's record (when it has ``to_dict``), JSON-able."""
        out = self.summary.to_dict()
        to_dict = getattr(self.calibrator, "to_dict", None)
        if callable(to_dict):
            out["calibrator_fit"] = to_dict()
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """JSON text of :meth:`to_dict` (NaN written as null)."""
        return json.dumps(self.to_dict(), indent=indent)

    def to_frame(self) -> pd.DataFrame:
        """Per-trial table (pandas): trial_id, trial_spk, outsider, lid_bits, posterior_true.

        In the open set also ``membership_bits`` and ``top_posterior``.
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
        return pd.DataFrame(columns)


def keyword_only(*names: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Make *names* (keyword-only parameters, in order) still accept a positional value, with a FutureWarning.

    For one release: a call that gives them by position warns which keyword to use and
    runs as the keyword call; more positional values than *names* are a TypeError.
    """

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        parameters = inspect.signature(func).parameters.values()
        n_positional = sum(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in parameters)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            extra = args[n_positional:]
            if extra:
                if len(extra) > len(names):
                    raise TypeError(
                        f"{func.__name__}() takes {n_positional} positional arguments but {len(args)} were given"
                    )
                given = names[: len(extra)]
                for name in given:
                    if name in kwargs:
                        raise TypeError(f"{func.__name__}() got multiple values for argument {name!r}")
                keywords = ", ".join(f"{name}=..." for name in given)
                warnings.warn(
                    f"{func.__name__}(): pass {keywords} by keyword; giving {' and '.join(given)} by position "
                    "is deprecated and stops working in the next release",
                    FutureWarning,
                    stacklevel=2,
                )
                kwargs.update(zip(given, extra))
            return func(*args[:n_positional], **kwargs)

        return cast("Callable[P, R]", wrapper)

    return decorate


@keyword_only("calibrator", "prior")
def evaluate(
    dev: SetLike,
    eval: SetLike,
    *,
    calibrator: str | CalibratorLike = "logistic",
    prior: str | PriorLike = "uniform",
    znorm_ddof: int = 1,
    binary_metrics: bool | Literal["auto"] = "auto",
    bootstrap: Bootstrap | None = None,
    engine: Engine | None = None,
    scheduler: str | Any | None = None,
    misattribution_threshold: float = 0.9,
    operating_point: OperatingPoint | None = None,
) -> Result:
    """Local Information Disclosure of an attacker on *eval*, calibrated on *dev*.

    Parameters
    ----------
    dev, eval : ScoreSet, EmbeddingSet or path
        Score sets (``.npz`` or long ``.csv`` paths are loaded) or embedding sets of a
        cosine attacker (:class:`~lidframe.data.embedset.EmbeddingSet`); dev and eval may
        have different enrolled speakers and sizes.  A dev embedding set is scored in
        full; an eval embedding set is streamed (module docstring).
    calibrator : str or calibrator, default "logistic"
        Registry name, ``"package.module:Class"`` or an instance (cloned and fitted on dev).
        Keyword-only (by position: a FutureWarning, for one release).
    prior : str or prior, default "uniform"
        ``"uniform"``, a spec string (``"uniform?outside=0.2"``) or a prior instance
        (``WatchList``, ``Explicit``, ...), applied to the eval enrolled speakers.  Its
        ``outside`` > 0 makes this an open-set evaluation (module docstring,
        :mod:`lidframe.core.openset`); ``outside="auto"`` takes the dev set's share of
        outsider trials.  Keyword-only, as *calibrator*.
    znorm_ddof : {0, 1}, default 1
        Row z-norm degrees of freedom (1 = reference code, 0 = the paper's example).
    binary_metrics : {"auto", True, False}, default "auto"
        The binary view over all closed-set eval pairs (:class:`~lidframe.core.summary_views.BinaryView`):
        exact or binned (module docstring), ``"auto"`` choosing by size; False: none.
    bootstrap : Bootstrap, optional
        Add bootstrap confidence intervals (:func:`lidframe.stats.bootstrap.bootstrap_ci`)
        with these settings (``summary.intervals`` for ALID, PDR, LID+, LID-, LID q99,
        LIDmax and, with the exact binary view, EER and Cllr).  None (default): none.
    engine : Engine, optional
        Engine settings (default ``Engine()``): ``tile_rows`` for every engine; device,
        precision, kernel and progress for the streaming engine of an eval embedding set
        (:func:`lidframe.core.streaming.lid_from_embeddings`); what ran is ``summary.engine``.
    scheduler : str or distributed.Client, optional
        Run the streaming engine of an eval embedding set on a dask.distributed cluster
        (a scheduler address or a client; module docstring).  A score set cannot be
        sharded (an InputError).
    misattribution_threshold : float, default 0.9
        Open set: the chosen threshold of ``summary.open_set.misattribution_rate_at_threshold``
        (the share of outsider trials whose top enrolled posterior exceeds it), in [0.5, 1).
    operating_point : OperatingPoint, optional
        Where the binary view's ``min_dcf`` and ``act_dcf`` are measured
        (:class:`~lidframe.metrics.detection.OperatingPoint`; default P_target = 0.01,
        C_miss = C_fa = 1).

    Returns
    -------
    Result

    Examples
    --------
    >>> from lidframe.data.simulate import simulate_system
    >>> dev, ev = simulate_system(leakage=1.0, seed=1)
    >>> res = evaluate(dev, ev)
    >>> res.summary.lid_max <= res.summary.log2_n
    True
    """
    dev = as_scoreset(dev, "dev")
    eval_set = as_set(eval, "eval")
    prior = resolve_prior(prior)
    outside, _source = resolve_outside(prior, dev)
    fitted = fit_calibrator(dev, calibrator, znorm_ddof=check_ddof(znorm_ddof), outsider_pairs=outside > 0)
    return evaluate_fitted(
        eval_set,
        fitted,
        prior=prior,
        dev=dev,
        znorm_ddof=znorm_ddof,
        binary_metrics=binary_metrics,
        bootstrap=bootstrap,
        engine=engine,
        scheduler=scheduler,
        misattribution_threshold=misattribution_threshold,
        operating_point=operating_point,
    )


def _binary_metrics_decision(eval_set, binary_metrics, *, on_cluster: bool = False) -> tuple[str, str | None]:
    """(status, method) for *binary_metrics* ("auto", True or False) on *eval_set*.

    status is ``"computed"`` or ``"skipped: <why>"``; method ``"exact"``, ``"binned"`` or None.
    *on_cluster*: the streaming engine runs on a cluster, so an embedding set is binned at any size.
    """
    if isinstance(binary_metrics, (bool, np.bool_)):
        if not binary_metrics:
            return "skipped: binary_metrics=False", None
    elif binary_metrics != "auto":
        raise InputError(f"binary_metrics must be 'auto', True or False, got {binary_metrics!r}")
    if not isinstance(eval_set, EmbeddingSet):
        return "computed", "exact"
    n_pairs = eval_set.n_trials * eval_set.n_enrolled
    if binary_metrics == "auto" and n_pairs <= BINARY_PAIR_LIMIT and not on_cluster:
        return "computed", "exact"
    return "computed", "binned"


def _check_option(value, cls, name: str):
    if value is not None and not isinstance(value, cls):
        raise InputError(f"{name} must be None or a record of type {cls.__name__}, got {type(value).__name__}")
    return value


def _check_scheduler(eval_set: ScoreSet | EmbeddingSet, scheduler: object) -> None:
    if scheduler is not None and not isinstance(eval_set, EmbeddingSet):
        raise InputError(
            f"{set_label(eval_set, 'eval')}: scheduler= shards an eval embedding set over a cluster; "
            "this is a score set (evaluate it without a scheduler)"
        )


def _scored_in_full(
    eval_set: ScoreSet | EmbeddingSet, binary_method: str | None, settings: Engine
) -> tuple[ScoreSet | EmbeddingSet, EngineUsed | None]:
    """An embedding set whose exact binary view is asked for as its cosine ScoreSet (and what ran), else as is."""
    if isinstance(eval_set, EmbeddingSet) and binary_method == "exact":
        resolve_device(settings.device)  # an explicit CUDA device this machine lacks: refused, as when streamed
        return as_scoreset(eval_set, "eval"), DENSE_ENGINE  # every pair's LLR is needed: scored in full (float64)
    return eval_set, None


def _enrolled_trials(
    eval_set: ScoreSet | EmbeddingSet, *, open_set: bool = False
) -> tuple[np.ndarray, ScoreSet | EmbeddingSet | None]:
    """(rows of the trials whose speaker is enrolled, those trials as a set); an InputError if there are none.

    In the open set the set of enrolled trials is not built (None): the engine runs on every trial.
    """
    closed_rows = np.flatnonzero(~eval_set.is_outsider)
    if closed_rows.size == 0:
        why = (
            "an open-set evaluation needs at least one enrolled trial (its identification disclosure)"
            if open_set
            else "so no trial has a LID (all are outsider trials)"
        )
        raise InputError(f"{set_label(eval_set, 'eval')}: no trial's speaker is enrolled, {why}")
    if open_set:
        return closed_rows, None
    return closed_rows, eval_set if closed_rows.size == eval_set.n_trials else eval_set.subset(closed_rows)


def _check_open_set_calibrator(fitted: CalibratorLike, outside: float) -> None:
    """An InputError for an open-set evaluation with a calibrator whose LLRs are right only up to a constant per row."""
    if outside > 0 and not getattr(fitted, "absolute_llr", True):
        raise InputError(
            f"calibrator {describe_component(fitted)} gives LLRs up to a constant per row, which cancels in the "
            "closed set only; the open set (outside > 0) needs LLRs that are likelihood ratios: use logistic, "
            "isotonic, beta or gaussian"
        )


def _per_trial(n_trials: int, rows: np.ndarray, values: np.ndarray, fill: float | int, dtype: type) -> np.ndarray:
    """An array of *n_trials* holding *values* at *rows* and *fill* elsewhere."""
    out: np.ndarray = np.full(n_trials, fill, dtype=dtype)
    out[rows] = values
    return out


@keyword_only("prior")
def evaluate_fitted(
    eval: SetLike,
    fitted: CalibratorLike,
    *,
    prior: str | PriorLike = "uniform",
    dev: ScoreSet | None = None,
    znorm_ddof: int = 1,
    binary_metrics: bool | Literal["auto"] = "auto",
    bootstrap: Bootstrap | None = None,
    engine: Engine | None = None,
    scheduler: str | Any | None = None,
    misattribution_threshold: float = 0.9,
    operating_point: OperatingPoint | None = None,
) -> Result:
    """:func:`evaluate` with an already fitted calibrator (fit once, evaluate under many priors).

    Parameters
    ----------
    fitted : calibrator
        A fitted calibrator, used as is (not copied).  For an open-set prior, fit it with
        ``fit_calibrator(..., outsider_pairs=True)`` as :func:`evaluate` does.
    dev : ScoreSet, optional
        Fills the dev sizes of the summary, and gives ``outside="auto"`` its estimate.
    eval, prior, znorm_ddof, binary_metrics, bootstrap, engine, scheduler, misattribution_threshold, operating_point
        As for :func:`evaluate` (``prior`` keyword-only; by position: a FutureWarning, for one release).

    Returns
    -------
    Result
    """
    eval_set = as_set(eval, "eval")
    bootstrap = _check_option(bootstrap, Bootstrap, "bootstrap")
    settings = check_engine(engine)
    threshold = check_misattribution_threshold(misattribution_threshold)
    operating_point = check_operating_point(operating_point)
    _check_scheduler(eval_set, scheduler)
    binary_status, binary_method = _binary_metrics_decision(eval_set, binary_metrics, on_cluster=scheduler is not None)
    eval_set, engine_used = _scored_in_full(eval_set, binary_method, settings)
    znorm_ddof = check_ddof(znorm_ddof)
    prior = resolve_prior(prior)
    outside, outside_source = resolve_outside(prior, dev)
    with naming_set(eval_set, "eval"):  # a watch-list id not enrolled in this file, ...
        log_prior = np.asarray(prior.log_prior(eval_set.enrolled), dtype=np.float64)
    _check_open_set_calibrator(fitted, outside)
    closed_rows, closed = _enrolled_trials(eval_set, open_set=outside > 0)
    run_set = eval_set if closed is None else closed  # the open set: every trial gets a LID
    with naming_set(run_set, "eval"):  # z-norm errors name the trial; this adds the file and split
        run = run_engine(
            run_set,
            fitted,
            log_prior,
            znorm_ddof=znorm_ddof,
            engine=settings,
            binary_method=binary_method,
            scheduler=scheduler,
            engine_used=engine_used,
            open_set=outside > 0,
        )
    closed_lid = run.lid_bits if outside == 0 else run.lid_bits[closed_rows]
    # exp(LID ln 2 + ln prior) can round to a hair above 1 when the attacker is certain: clipped
    posterior_closed = np.minimum(np.exp(closed_lid * LN2 + log_prior[eval_set.true_index[closed_rows]]), 1.0)
    open_trials = None
    if outside > 0:
        assert run.open_stats is not None  # every engine returns them with open_set=True
        with naming_set(run_set, "eval"):
            open_trials = open_set_trials(run.lid_bits, run.open_stats, run_set.true_index, log_prior, outside)
    summary = summarise(
        run,
        run_set,
        posterior_closed,
        n_outsider_trials=eval_set.n_outsider_trials,
        binary_status=binary_status,
        bootstrap=bootstrap,
        fitted=fitted,
        prior=prior,
        znorm_ddof=znorm_ddof,
        dev=dev,
        open_trials=open_trials,
        outside_source=outside_source,
        misattribution_threshold=threshold,
        operating_point=operating_point,
    )
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
    )
