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
``to_dict()`` / ``to_frame()``); :func:`plot_longitudinal` draws it.  :func:`draw_groups`
and :func:`fuse` are the grouping and fusion steps on their own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import attrs
import numpy as np
from scipy.optimize import minimize_scalar

from lidframe.core.evaluation import SetLike, as_scoreset, fit_calibrator, naming_set
from lidframe.core.znorm import calibrated_llr
from lidframe.data.fileio import StrPath
from lidframe.data.records import Row, TableRecord, as_rows
from lidframe.errors import InputError
from lidframe.metrics.aggregates import lid_summary
from lidframe.registry import CalibratorLike
from lidframe.stats.bootstrap import Bootstrap, bootstrap_ci

__all__ = ["FUSIONS", "LongitudinalResult", "longitudinal", "draw_groups", "fuse", "plot_longitudinal"]

FUSIONS = ("sum", "mean", "temperature")
_DEFAULT_BOOTSTRAP = Bootstrap()


@attrs.frozen(eq=False)
class LongitudinalResult(TableRecord):
    """Outcome of :func:`longitudinal`: one row per k.

    ``to_dict()`` (JSON-able: ``fusion``, ``rows``; NaN as None) and ``to_frame()`` (one
    row per k) come from :class:`~lidframe.data.records.TableRecord`.

    Attributes
    ----------
    fusion : {"sum", "mean", "temperature"}
        How the k LLRs of a group were fused.
    rows : tuple of dict
        One per k: ``k``, ``n_groups``, ``n_speakers_skipped``, ``temperature``,
        ``n_enrolled``, ``log2_n``, the :func:`lidframe.metrics.aggregates.lid_summary`
        keys, ``ci`` (metric -> [low, high], speaker bootstrap; with a bootstrap) and,
        with *dp_mu*, ``dp_mu_k``, ``dp_eer_bound``, ``dp_mi_bound_bits``.
    """

    fusion: str
    rows: tuple[Row, ...] = attrs.field(converter=as_rows)


def _parse_k(k, max_trials: int):
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
    closed = scoreset.closed_set() if scoreset.n_impostor_trials else scoreset
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
    counts = {s: int(c) for s, c in zip(*np.unique(ev.trial_speakers, return_counts=True))}
    max_trials = max(counts.values())
    log_prior = np.full(ev.n_enrolled, -math.log(ev.n_enrolled))
    dev_prior = np.full(dv.n_enrolled, -math.log(dv.n_enrolled))
    rows_out = []
    rng = np.random.default_rng(seed)
    for k_raw in ks:
        k = _parse_k(k_raw, max_trials)
        groups, skipped = draw_groups(ev.trial_speakers, k, rng, groups_per_speaker)
        temperature = 1.0
        if fusion == "temperature":
            dev_max = int(np.unique(dv.trial_speakers, return_counts=True)[1].max())
            dev_k = k if k == "all" else min(k, dev_max)  # dev groups of the same k where dev allows
            dev_groups, _ = draw_groups(dv.trial_speakers, dev_k, rng, groups_per_speaker)
            dev_sum = fuse(dev_llr, dev_groups, "sum")
            dev_true = dv.true_index[[g[0] for g in dev_groups]]
            result = minimize_scalar(
                lambda t: -_group_lid(t * dev_sum, dev_true, dev_prior).mean(),
                bounds=(0.0, 10.0),
                method="bounded",
                options={"xatol": 1e-8},
            )
            temperature = float(result.x)
        fused = fuse(llr, groups, fusion, temperature)
        true_cols = ev.true_index[[g[0] for g in groups]]
        lid = _group_lid(fused, true_cols, log_prior)
        row = {
            "k": k,
            "n_groups": len(groups),
            "n_speakers_skipped": skipped,
            "temperature": temperature,
            "n_enrolled": ev.n_enrolled,
            "log2_n": math.log2(ev.n_enrolled),
        }
        row.update(lid_summary(lid))
        if bootstrap is not None:
            speakers = ev.trial_speakers[[g[0] for g in groups]]
            if np.unique(speakers).size >= 2 and lid.size >= 2:
                intervals = bootstrap_ci(lid, bootstrap, speakers=speakers)
                row["ci"] = {m: [iv.low, iv.high] for m, iv in intervals.items()}
        if dp_mu is not None:
            from lidframe.privacy.mechanism import compose_mu, gdp_eer_bound, gdp_mi_bound_bits

            k_count = k if k != "all" else max_trials
            mu_k = compose_mu(dp_mu, int(k_count))
            row.update(dp_mu_k=mu_k, dp_eer_bound=gdp_eer_bound(mu_k), dp_mi_bound_bits=gdp_mi_bound_bits(mu_k))
        rows_out.append(row)
    return LongitudinalResult(fusion=fusion, rows=rows_out)


def plot_longitudinal(result: LongitudinalResult, path: StrPath, *, title: str | None = None) -> None:
    """ALID, LID q99 and LIDmax versus k (with the log2 N ceiling); written atomically."""
    from lidframe.plotting import pyplot, save_figure

    plt = pyplot()
    rows = result.rows
    labels = [str(r["k"]) for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for key, label, marker in (("alid", "ALID", "o"), ("lid_q99", "LID q99", "s"), ("lid_max", "LIDmax", "^")):
        y = np.array([r[key] for r in rows])
        ax.plot(x, y, marker=marker, label=label)
        if key == "alid" and all("ci" in r for r in rows):
            ci = np.array([r["ci"]["alid"] for r in rows])
            ax.fill_between(x, ci[:, 0], ci[:, 1], alpha=0.2)
    ax.axhline(rows[0]["log2_n"], color="0.3", ls=":", label=f"log2 N = {rows[0]['log2_n']:.2f}")
    ax.set_xticks(x)
    ax.set_xticklabels(labels)
    ax.set_xlabel("k (utterances fused per speaker)")
    ax.set_ylabel("bits")
    ax.set_title(title or "Longitudinal disclosure")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
