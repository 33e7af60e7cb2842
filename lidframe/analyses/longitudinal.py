"""Longitudinal linkage: disclosure when an attacker fuses k utterances of one (unknown) speaker.

Per-trial LID measures one utterance at a time.  An attacker who collects k anonymised
utterances that it knows come from one person -- a user's voice-assistant requests, a
podcast's episodes -- fuses their evidence.  :func:`longitudinal` groups the eval trials
of each speaker into groups of k (seeded draws without replacement, ``groups_per_speaker``
per speaker; k = 1 uses every trial once; ``"all"`` one group of all a speaker's trials),
fuses each group's calibrated LLRs per enrolled speaker, and computes the group's LID,

    LID_g = log2( p_g,true / prior_true ),   p_g = softmax_j( F_j + log prior_j ),

with the fusion F:

``sum``
    sum of the k LLRs: the exact posterior if the utterances are independent given the
    speaker -- and an over-count when they are not (same session, same channel).
``mean``
    mean LLR, the sum at temperature 1/k: honest when the k utterances are near copies
    of each other, and on average conservative for independent ones -- but not never
    more confident than one utterance: with N = 3 the rows [0, 0, -30] and [0, -30, 0]
    give LID 0.585 bit each and their mean 1.585 bits.
``temperature``
    tau times the sum, tau fitted on dev groups of the same k by multiclass log-loss:
    between the two, learned from data with the same dependence structure.

Speakers with fewer than k eval trials are left out of that k (counted in the result);
a k larger than every speaker's trial count is an error.  Under a Gaussian speaker
mechanism with parameter mu, k releases compose to mu sqrt(k); with ``dp_mu`` the
result carries the EER and mutual-information bounds at each k.

The result is a frozen :class:`LongitudinalResult` record (one row per k;
``to_dict()`` / ``to_frame()``); :func:`lidframe.report.analysis_figures.plot_longitudinal`
draws it.  :func:`draw_groups` and :func:`fuse` are the grouping and fusion steps on their own.

A closed-set analysis by definition: the prior is uniform over the N enrolled speakers
given enrolment (there is no prior to give, so no ``outside``; :mod:`lidframe.core.openset`),
the eval groups are drawn from the trials whose speaker is enrolled (outsider trials are
left out: a group of an outsider's utterances has no true enrolled speaker to fuse
towards), and the calibrator is fitted on the dev set's enrolled trials only, as
:func:`lidframe.evaluate` fits it in the closed set.  A grid runs it in its
``uniform``-prior cells only, never in an open-set cell.

**Intervals.**  Each k's metrics get a speaker-bootstrap interval (the groups of a
speaker resampled together, :func:`~lidframe.stats.bootstrap.bootstrap_ci`).  With
``Bootstrap(resample="dev+eval")`` (the default) the dev speakers are resampled too, as
the headline's intervals of :func:`lidframe.evaluate` do (:mod:`lidframe.core.refit`):
resample b refits the calibrator on dev resample b (the second stream of
``bootstrap.seed``, the same draws at every k, so the refits are made once), recomputes
every eval trial's LLRs under it, fuses the same groups and takes their LIDs; with
``fusion="temperature"`` it refits tau too, on the same dev groups under the refitted
calibrator, each group weighted by the mean count of its trials in the resample.  With
``resample="eval"`` the calibrator (and tau) are held fixed, as before 0.3.0.  The result
says which (``resample``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs
import numpy as np
from scipy import sparse
from scipy.optimize import minimize_scalar

from lidframe.core.evaluation import fit_calibrator
from lidframe.core.refit import dev_refits
from lidframe.core.sets import SetLike, as_scoreset, naming_set
from lidframe.core.znorm import calibrated_llr, calibrator_input
from lidframe.data.records import ABSENT_WHEN_NONE, RowRecord, TableRecord, as_rows, nested_row
from lidframe.errors import InputError
from lidframe.metrics.aggregates import lid_summary
from lidframe.registry import CalibratorLike
from lidframe.stats.bootstrap import Bootstrap, bootstrap_ci
from lidframe.stats.interval import Interval
from lidframe.stats.weighted import DevResampling, EvalSample

if TYPE_CHECKING:
    from lidframe.data.scoreset import ScoreSet

__all__ = [
    "FUSIONS",
    "ComposedBounds",
    "LongitudinalRow",
    "LongitudinalResult",
    "longitudinal",
    "draw_groups",
    "fuse",
]

FUSIONS = ("sum", "mean", "temperature")
_DEFAULT_BOOTSTRAP = Bootstrap()


@attrs.frozen(eq=False, kw_only=True)
class ComposedBounds(RowRecord):
    """The Gaussian-mechanism bounds of k composed releases (``LongitudinalRow.dp``).

    Attributes
    ----------
    mu_k : float
        mu sqrt(k), the GDP parameter of k releases of mu each.
    eer_bound : float
        Phi(-mu_k / 2), the lowest EER (a fraction) an attacker can reach.
    mi_bound_bits : float
        mu_k^2 / (2 ln 2), the bound (bits) on the mutual information, hence on ALID.
    """

    mu_k: float
    eer_bound: float
    mi_bound_bits: float


@attrs.frozen(eq=False, kw_only=True)
class LongitudinalRow(RowRecord):
    """One group size k of :func:`longitudinal` (a row of :class:`LongitudinalResult`).

    Also a read-only mapping of its fields (``row["alid"]``,
    :class:`~lidframe.data.records.RowRecord`): ``intervals`` is a key only of rows with
    intervals, and ``dp_mu_k``, ``dp_eer_bound``, ``dp_mi_bound_bits`` only of rows with
    *dp_mu*.

    Attributes
    ----------
    k : int or "all"
        Utterances fused per group.
    n_groups : int
        Groups drawn (each a speaker's k trials); their LIDs make the metrics.
    n_speakers_skipped : int
        Speakers left out for having fewer than k eval trials.
    temperature : float
        The factor of the summed LLRs: fitted on dev for ``fusion="temperature"``, else 1.
    n_enrolled : int
        N, the eval's enrolled speakers.
    log2_n : float
        log2 N (bits), the ceiling of LID under the uniform prior.
    alid, lid_pos, lid_neg, lid_max, lid_min, lid_q50, lid_q90, lid_q99 : float
        Aggregates of the groups' LIDs (bits): mean, mean over LID > 0 and over LID <= 0
        (NaN when that side is empty), maximum, minimum and quantiles
        (:func:`lidframe.metrics.aggregates.lid_summary`).
    pdr, ndr : float
        Share of groups with LID > 0, and with LID <= 0.
    intervals : dict of str to Interval, or None
        metric -> :class:`~lidframe.stats.interval.Interval`, the speaker-bootstrap interval
        of each :func:`lidframe.stats.bootstrap.bootstrap_ci` metric (its ends ``[low,
        high]`` in the mapping and the JSON); None without a bootstrap, or with fewer than
        two speakers or groups.
    dp : ComposedBounds or None
        The composed Gaussian-mechanism bounds at this k; None without *dp_mu*.
    """

    k: int | str
    n_groups: int
    n_speakers_skipped: int
    temperature: float
    n_enrolled: int
    log2_n: float
    alid: float
    pdr: float
    ndr: float
    lid_pos: float
    lid_neg: float
    lid_max: float
    lid_min: float
    lid_q50: float
    lid_q90: float
    lid_q99: float
    intervals: dict[str, Interval] | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    dp: ComposedBounds | None = attrs.field(default=None, metadata=nested_row(ComposedBounds, optional=True))


@attrs.frozen(eq=False)
class LongitudinalResult(TableRecord):
    """Outcome of :func:`longitudinal`: one row per k.

    ``to_dict()`` (JSON-able: ``fusion``, ``rows``; NaN as None) and ``to_frame()`` (one
    row per k) come from :class:`~lidframe.data.records.TableRecord`.

    Attributes
    ----------
    fusion : {"sum", "mean", "temperature"}
        How the k LLRs of a group were fused.
    rows : tuple of LongitudinalRow
        One per k, in the order asked for.
    resample : {"dev+eval", "eval"} or None
        What the rows' intervals cover: ``"dev+eval"``, the calibrator refitted on each
        resample of the dev speakers; ``"eval"``, held fixed; None without intervals.
    """

    fusion: str
    rows: tuple[LongitudinalRow, ...] = attrs.field(converter=as_rows)
    resample: str | None = None


def _parse_k(k: int | str, max_trials: int) -> int | Literal["all"]:
    if k == "all":
        return "all"
    if isinstance(k, str):
        try:
            k = int(k)
        except ValueError:
            raise InputError(f"k must be a positive integer or 'all', got {k!r}") from None
    if not (isinstance(k, (int, np.integer)) and k >= 1):
        raise InputError(f"k must be a positive integer or 'all', got {k!r}")
    if k > max_trials:
        raise InputError(f"k = {k} exceeds the trial count of every speaker (at most {max_trials} trials per speaker)")
    return int(k)


def draw_groups(
    speakers: np.ndarray, k: int | Literal["all"], rng: np.random.Generator, groups_per_speaker: int = 10
) -> tuple[list[np.ndarray], int]:
    """Row-index groups of k trials of one speaker each, and the number of speakers left out.

    Parameters
    ----------
    speakers : ndarray of str (T,)
        Speaker of each (closed-set) trial.
    k : int or "all"
    rng : numpy.random.Generator
    groups_per_speaker : int
        Draws per speaker for 1 < k < its trial count.
    """
    groups: list[np.ndarray] = []
    skipped = 0
    for speaker in np.unique(speakers):
        rows = np.flatnonzero(speakers == speaker)
        if k == "all":
            groups.append(rows)
        elif k == 1:
            groups.extend(rows[:, None])
        elif rows.size < k:
            skipped += 1
        elif rows.size == k:
            groups.append(rows)
        else:
            groups.extend(rng.choice(rows, size=k, replace=False) for _ in range(groups_per_speaker))
    return groups, skipped


def fuse(llr: np.ndarray, groups: Sequence[np.ndarray], fusion: str, temperature: float = 1.0) -> np.ndarray:
    """Fused LLRs (G, N) of row groups of a (T, N) LLR matrix."""
    if fusion not in FUSIONS:
        raise InputError(f"fusion must be one of {FUSIONS}, got {fusion!r}")
    total = np.stack([llr[g].sum(axis=0) for g in groups])
    if fusion == "sum":
        return total
    if fusion == "mean":
        return total / np.array([len(g) for g in groups])[:, None]
    return temperature * total


def _group_lid(fused: np.ndarray, true_cols: np.ndarray, log_prior: np.ndarray) -> np.ndarray:
    a = fused + log_prior
    peak = a.max(axis=1)
    log_norm = peak + np.log(np.exp(a - peak[:, None]).sum(axis=1))
    rows = np.arange(fused.shape[0])
    return (fused[rows, true_cols] - log_norm) / math.log(2.0)


def _llr_matrix(scoreset, calibrator, znorm_ddof):
    closed = scoreset.closed_set() if scoreset.n_outsider_trials else scoreset
    return closed, calibrated_llr(closed.scores, calibrator, znorm_ddof=znorm_ddof, row_names=closed.trial_ids)


def longitudinal(
    dev: SetLike,
    eval: SetLike,
    ks: Sequence[int | str] = (1, 2, 4, 8, "all"),  # str: "all" or the digits of a k
    *,
    fusion: str = "sum",
    calibrator: str | CalibratorLike = "logistic",
    groups_per_speaker: int = 10,
    znorm_ddof: int = 1,
    bootstrap: Bootstrap | None = _DEFAULT_BOOTSTRAP,
    dp_mu: float | None = None,
    seed: int = 0,
) -> LongitudinalResult:
    """Per-k disclosure of a multi-utterance attacker (module docstring); uniform prior.

    Parameters
    ----------
    dev, eval : ScoreSet or path
    ks : sequence of int or "all"
        Utterances fused per group.
    fusion : {"sum", "mean", "temperature"}
    calibrator : str or calibrator
        Fitted once on dev (row z-norm with *znorm_ddof* unless its ``input_scale`` is raw).
    groups_per_speaker : int
        Seeded draws per speaker for 1 < k < its trial count.
    znorm_ddof : {0, 1}
    bootstrap : Bootstrap or None, default ``Bootstrap()``
        Settings of the interval of each k's metrics (resampling speakers' groups);
        None: no intervals.
    dp_mu : float, optional
        Gaussian-mechanism parameter for the composed bounds.
    seed : int
        Seed of the group draws (the intervals use ``bootstrap.seed``).

    Returns
    -------
    LongitudinalResult
        The fusion and one row per k (see :class:`LongitudinalResult`).
    """
    if fusion not in FUSIONS:
        raise InputError(f"fusion must be one of {FUSIONS}, got {fusion!r}")
    dev = as_scoreset(dev, "dev")
    eval_set = as_scoreset(eval, "eval")
    fitted = fit_calibrator(dev, calibrator, znorm_ddof=znorm_ddof)
    with naming_set(eval_set, "eval"):  # a z-norm error names the trial; this adds the file and split
        ev, llr = _llr_matrix(eval_set, fitted, znorm_ddof)
    dv, dev_llr = _llr_matrix(dev, fitted, znorm_ddof)
    refits = None
    if bootstrap is not None and bootstrap.resample == "dev+eval":
        refits = _Refits.of(dev, fitted, znorm_ddof, ev)
    max_trials = int(np.unique(ev.trial_speakers, return_counts=True)[1].max())
    rows = []
    rng = np.random.default_rng(seed)
    for k_raw in ks:
        k = _parse_k(k_raw, max_trials)
        groups, skipped = draw_groups(ev.trial_speakers, k, rng, groups_per_speaker)
        tau = None
        if fusion == "temperature":  # drawn after the eval groups: the seed gives the same draws
            tau = _Temperature.of(dv, k, rng, groups_per_speaker)
        row = _row(ev, llr, groups, fusion, tau, dev_llr, bootstrap, refits)
        rows.append(
            LongitudinalRow(
                k=k,
                n_groups=len(groups),
                n_speakers_skipped=skipped,
                n_enrolled=ev.n_enrolled,
                log2_n=math.log2(ev.n_enrolled),
                dp=None if dp_mu is None else _composed_bounds(dp_mu, max_trials if k == "all" else int(k)),
                **row,
            )
        )
    covered = None if bootstrap is None else ("eval" if refits is None else "dev+eval")
    return LongitudinalResult(fusion=fusion, rows=rows, resample=covered)


def _row(
    ev: ScoreSet,
    llr: np.ndarray,
    groups: list[np.ndarray],
    fusion: str,
    tau: _Temperature | None,
    dev_llr: np.ndarray,
    bootstrap: Bootstrap | None,
    refits: _Refits | None,
) -> dict:
    """The temperature, the aggregates and the intervals of one k's *groups* (LongitudinalRow's fields)."""
    temperature = 1.0 if tau is None else tau.fit(dev_llr)
    first_trials = [g[0] for g in groups]
    true_cols = ev.true_index[first_trials]
    log_prior = np.full(ev.n_enrolled, -math.log(ev.n_enrolled))
    lid = _group_lid(fuse(llr, groups, fusion, temperature), true_cols, log_prior)
    speakers = ev.trial_speakers[first_trials]
    intervals = None
    if bootstrap is not None and np.unique(speakers).size >= 2 and lid.size >= 2:
        dev = None
        if refits is not None:
            scale = _fusion_matrix(groups, llr.shape[0], fusion)  # fuse(llr, groups, fusion) = scale @ llr

            def evaluate(dev_weights: np.ndarray) -> list[EvalSample]:
                out = []
                for llr_map, weights in zip(refits.maps(dev_weights), dev_weights, strict=True):
                    t = 1.0 if tau is None else tau.fit(np.asarray(llr_map(refits.dev_x)), weights)
                    fused = t * (scale @ np.asarray(llr_map(refits.eval_x)))
                    out.append(EvalSample(_group_lid(fused, true_cols, log_prior)))
                return out

            dev = DevResampling(speakers=refits.dev_speakers, evaluate=evaluate)
        intervals = bootstrap_ci(lid, bootstrap, speakers=speakers, dev=dev)
    return {"temperature": temperature, **lid_summary(lid), "intervals": intervals}


def _fusion_matrix(groups: Sequence[np.ndarray], n_trials: int, fusion: str) -> sparse.csr_matrix:
    """(G, T) sparse weights that fuse (T, N) LLRs into the groups' (G, N), tau left out: 1, or 1/k for the mean."""
    sizes = np.array([len(g) for g in groups])
    rows = np.repeat(np.arange(len(groups)), sizes)
    values = np.repeat(1.0 / sizes, sizes) if fusion == "mean" else np.ones(rows.size)
    return sparse.csr_matrix((values, (rows, np.concatenate(groups))), shape=(len(groups), n_trials))


@attrs.frozen(eq=False)
class _Refits:
    """The calibrator refitted on dev resamples (:func:`lidframe.core.refit.dev_refits`) and what its maps apply to."""

    dev_speakers: np.ndarray  # (T_dev,): the speaker of each dev trial it is fitted on (closed set)
    dev_x: np.ndarray  # (T_dev, N_dev): their calibrator input
    eval_x: np.ndarray  # (T, N): that of the closed eval trials
    maps: Any  # maps(weights (b, T_dev)) -> b LLR maps, kept across the ks

    @classmethod
    def of(cls, dev: ScoreSet, fitted: CalibratorLike, znorm_ddof: int, ev: ScoreSet) -> _Refits:
        data, maps = dev_refits(dev, fitted, znorm_ddof=znorm_ddof, outsider_pairs=False, fits={})
        eval_x = calibrator_input(ev.scores, fitted, znorm_ddof=znorm_ddof, row_names=ev.trial_ids)
        return cls(np.asarray(data.trials.trial_speakers), data.x, eval_x, maps)


@attrs.frozen(eq=False)
class _Temperature:
    """tau of the temperature fusion: the factor of summed LLRs that minimises the log-loss of dev groups of k."""

    groups: list[np.ndarray]  # dev groups of k trials of one speaker (drawn once)
    true_cols: np.ndarray  # (G,): their true columns
    log_prior: np.ndarray  # (N_dev,): uniform
    sums: sparse.csr_matrix  # (G, T_dev): sums @ dev_llr, each group's summed LLRs

    @classmethod
    def of(
        cls, dv: ScoreSet, k: int | Literal["all"], rng: np.random.Generator, groups_per_speaker: int
    ) -> _Temperature:
        """The dev groups of *k* (of the same k where dev allows), drawn from *rng*."""
        dev_max = int(np.unique(dv.trial_speakers, return_counts=True)[1].max())
        dev_k: int | Literal["all"] = k if k == "all" else min(k, dev_max)
        groups, _ = draw_groups(dv.trial_speakers, dev_k, rng, groups_per_speaker)
        true_cols = dv.true_index[[g[0] for g in groups]]
        log_prior = np.full(dv.n_enrolled, -math.log(dv.n_enrolled))
        return cls(groups, true_cols, log_prior, _fusion_matrix(groups, dv.n_trials, "sum"))

    def fit(self, dev_llr: np.ndarray, trial_weights: np.ndarray | None = None) -> float:
        """tau on the dev LLRs (T_dev, N_dev), each group's log-loss weighted by its trials' mean weight (default 1).

        Held fixed (no weights) the groups are summed as :func:`fuse` sums them, bit for bit.
        A dev resample that draws no speaker with a group (the groups come from the dev
        speakers with k trials, the resample from every dev speaker) weighs every group 0:
        tau is then fitted on every group, under that resample's refitted calibrator.
        """
        if trial_weights is not None and not (self.sums @ trial_weights).any():
            trial_weights = None
        if trial_weights is None:
            dev_sum, weights = fuse(dev_llr, self.groups, "sum"), None
        else:
            dev_sum = self.sums @ dev_llr
            weights = (self.sums @ trial_weights) / self.sums.sum(axis=1).A1
        result = minimize_scalar(
            lambda t: -np.average(_group_lid(t * dev_sum, self.true_cols, self.log_prior), weights=weights),
            bounds=(0.0, 10.0),
            method="bounded",
            options={"xatol": 1e-8},
        )
        return float(result.x)


def _composed_bounds(dp_mu: float, k: int) -> ComposedBounds:
    """The GDP bounds of k releases through a Gaussian mechanism of parameter *dp_mu*."""
    from lidframe.privacy.mechanism import compose_mu, gdp_eer_bound, gdp_mi_bound_bits

    mu_k = compose_mu(dp_mu, k)
    return ComposedBounds(mu_k=mu_k, eer_bound=gdp_eer_bound(mu_k), mi_bound_bits=gdp_mi_bound_bits(mu_k))
