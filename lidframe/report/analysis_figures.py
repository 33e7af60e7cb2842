"""The figures of the analyses: the analyses compute, the report wing draws.

- :func:`per_speaker_figure`, :func:`save_per_speaker`: ALID per speaker
  (:func:`lidframe.analyses.per_speaker.per_speaker`), a sorted dot plot.
- :func:`plot_lid_ccdf`: the LID CCDF per calibrator of a
  :func:`lidframe.analyses.sensitivity.sensitivity` result.
- :func:`plot_nsweep`: disclosure against the database size
  (:mod:`lidframe.analyses.nsweep`).
- :func:`plot_longitudinal`: disclosure against k utterances fused
  (:func:`lidframe.analyses.longitudinal.longitudinal`).
- :func:`dp_audit_figure`, :func:`plot_dp_audit`: measured EER and ALID against the GDP
  bounds (:func:`lidframe.privacy.audit.dp_audit`), one colour per attacker.

Each ``plot_*`` / ``save_*`` function writes its file atomically (the format follows the
suffix: png, pdf, svg, ...).  Matplotlib is imported only when one is called
(``pip install 'lidframe[plot]'``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lidframe.data.fileio import StrPath
from lidframe.data.records import TableRecord
from lidframe.errors import InputError
from lidframe.metrics import catalogue
from lidframe.report.lid_figures import save_lid_ccdf
from lidframe.report.plotting import curve_styles, pyplot, save_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from lidframe.analyses.longitudinal import LongitudinalResult
    from lidframe.analyses.nsweep import NSweepResult
    from lidframe.analyses.sensitivity import SensitivityResult
    from lidframe.privacy.audit import DPAuditResult

__all__ = [
    "PER_SPEAKER_ALL_LABELS",
    "per_speaker_figure",
    "save_per_speaker",
    "plot_lid_ccdf",
    "plot_nsweep",
    "plot_longitudinal",
    "plot_dp_audit",
    "dp_audit_figure",
    "DP_ATTACKERS",
    "MI_BOUND_LABEL",
]

#: Up to this many speakers (and room for them), the per-speaker dot plot names every one.
PER_SPEAKER_ALL_LABELS = 40
_LABEL_HEIGHT_IN = 0.16  # vertical room of one 8-point label, inches


def per_speaker_figure(
    per_speaker: TableRecord,
    *,
    ax: Axes | None = None,
    n_labelled: int = 5,
    title: str | None = None,
) -> Figure:
    """Dot plot of ALID per speaker, sorted, with CI whiskers and the top and bottom speakers named.

    One row per enrolled speaker with trials (most disclosed at the top; an open-set
    table's outsider speakers, whose ALID is a membership disclosure, are left out and
    counted in the title); a dot at its ALID, a
    whisker from ``alid_low`` to ``alid_high`` when the rows have them; vertical guides
    at 0 bit, at the overall ALID (the trial-weighted mean of the rows) and at the
    ceiling log2 N.  With at most :data:`PER_SPEAKER_ALL_LABELS` speakers (and room for
    a label per row) every row is named with its trial count on the y axis; with more,
    only the *n_labelled* highest (red) and lowest (blue) are named, in the left margin
    with a leader line to their row, and the others are unnamed grey dots.

    Parameters
    ----------
    per_speaker : TableRecord
        A :class:`lidframe.analyses.per_speaker.PerSpeakerResult` (or any record whose rows have
        ``speaker``, ``n_trials``, ``alid`` and optionally ``alid_low``/``alid_high``);
        its ``log2_n``, ``bootstrap`` and ``n_speakers_without_trials`` are used when
        present.  Rows without trials (NaN ALID) are left out and counted in the title.
    ax : matplotlib Axes, optional
        Draw into this Axes; by default a new figure is sized to the number of speakers
        (7 inches wide, 3.2 to 10 inches high).
    n_labelled : int, default 5
        Speakers named at each end when not all are.
    title : str, optional
        Replaces the default title (which names the interval settings).

    Returns
    -------
    matplotlib.figure.Figure
        The figure of *ax* (or the new one); save it as SVG, PNG, ... (:func:`save_figure`).
    """
    if isinstance(n_labelled, bool) or not isinstance(n_labelled, int) or n_labelled < 1:
        raise InputError(f"n_labelled must be a positive integer, got {n_labelled!r}")
    rows = _speaker_rows(per_speaker)
    n = len(rows)
    own_figure = ax is None
    if ax is None:
        fig, ax = pyplot().subplots(figsize=(7.0, min(max(1.6 + 0.24 * n, 3.2), 10.0)), dpi=120)
    else:
        fig = cast("Figure", ax.figure)
    axes_height_in = ax.get_position().height * fig.get_figheight()
    rows_per_label = max(1.0, _LABEL_HEIGHT_IN * n / max(axes_height_in, 1e-3))
    named_all = n <= PER_SPEAKER_ALL_LABELS and rows_per_label <= 1.0
    k = 0 if named_all else min(n_labelled, n // 2)
    colour = np.full(n, "C0" if named_all else "0.5", dtype=object)
    colour[:k], colour[n - k :] = "C3", "C0"
    y = np.arange(n)[::-1].astype(np.float64)  # the most disclosed speaker at the top
    overall_name = (
        "ALID of the enrolled trials" if getattr(per_speaker, "n_outsider_speakers", None) else "overall ALID"
    )
    has_ci = _draw_speaker_dots(
        ax, rows, y, colour, log2_n=getattr(per_speaker, "log2_n", None), overall_name=overall_name
    )
    names = [f"{r['speaker']} ({r['n_trials']})" for r in rows]
    if named_all:
        ax.set_yticks(y)
        ax.set_yticklabels(names, fontsize=8)
        ax.set_ylabel("speaker (trials)")
    else:
        ax.set_yticks([])
        ax.set_ylabel(f"{n} speakers by ALID; the top and bottom {k} named (trials)", labelpad=4)
        _name_both_ends(ax, names, y, colour, k, rows_per_label)
    ax.set_xlabel("ALID (bits) of the speaker's trials")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title or _per_speaker_title(per_speaker, has_ci), fontsize=10)
    if own_figure:
        fig.tight_layout()
    return fig


def _speaker_rows(per_speaker: TableRecord) -> list:
    """The rows :func:`per_speaker_figure` draws: enrolled speakers with trials, the most disclosed first.

    Raises
    ------
    InputError
        No enrolled speaker with trials.
    """
    rows = [
        r
        for r in per_speaker.rows
        if r.get("n_trials", 0) > 0 and np.isfinite(r.get("alid", np.nan)) and not r.get("outsider", False)
    ]
    if not rows:
        raise InputError("the per-speaker table has no enrolled speaker with trials: nothing to plot")
    rows.sort(key=lambda r: (-r["alid"], r["speaker"]))
    return rows


def _draw_speaker_dots(
    ax: Axes, rows: list, y: np.ndarray, colour: np.ndarray, *, log2_n: float | None, overall_name: str = "overall ALID"
) -> bool:
    """The dots (ALID), whiskers (its interval, when every row has one) and guides of :func:`per_speaker_figure`.

    Parameters
    ----------
    ax : matplotlib Axes
    rows : list of row
        The speakers with trials, in drawing order (most disclosed first).
    y : ndarray, shape (S,)
        The row of each speaker on the y axis.
    colour : ndarray of str, shape (S,)
        Each speaker's colour.
    log2_n : float, optional
        Draw the ceiling log2 N (bits).
    overall_name : str
        The legend's name of the trial-weighted mean of the rows' ALID.

    Returns
    -------
    bool
        Whether the whiskers (intervals) were drawn.
    """
    n = len(rows)
    alid = np.array([r["alid"] for r in rows], dtype=np.float64)
    counts = np.array([r["n_trials"] for r in rows], dtype=np.float64)
    dot, whisker = (5.0, 1.2) if n <= 60 else (3.0, 0.6)
    has_ci = all("alid_low" in r and "alid_high" in r for r in rows)
    if has_ci:
        low = np.array([r["alid_low"] for r in rows], dtype=np.float64)
        high = np.array([r["alid_high"] for r in rows], dtype=np.float64)
        finite = np.isfinite(low) & np.isfinite(high)
        ax.hlines(y[finite], low[finite], high[finite], colors=list(colour[finite]), lw=whisker)
    ax.scatter(alid, y, s=dot**2, c=list(colour), zorder=3, edgecolors="none")
    ax.axvline(0.0, color="0.6", lw=0.8)
    overall = float(np.sum(alid * counts) / counts.sum())
    ax.axvline(overall, color="C1", lw=1.0, ls="--", label=f"{overall_name} {overall:.2f} bit")
    if log2_n is not None:
        ax.axvline(log2_n, color="0.3", lw=0.8, ls=":", label=f"log2 N = {log2_n:.2f} bit")
    ax.set_ylim(-1, n)
    return has_ci


def _name_both_ends(
    ax: Axes, names: list[str], y: np.ndarray, colour: np.ndarray, k: int, rows_per_label: float
) -> None:
    """Name the *k* top and *k* bottom speakers in the left margin, fanned out one label height apart."""
    n = len(names)
    for i in range(k):
        for row, label_y in ((i, (n - 1) - i * rows_per_label), (n - 1 - i, i * rows_per_label)):
            ax.annotate(
                names[row],
                xy=(0.0, y[row]),
                xycoords=("axes fraction", "data"),
                xytext=(-0.015, label_y),
                textcoords=("axes fraction", "data"),
                ha="right",
                va="center",
                fontsize=8,
                color=colour[row],
                arrowprops={"arrowstyle": "-", "lw": 0.5, "color": colour[row], "shrinkA": 0, "shrinkB": 0},
                annotation_clip=False,
            )


def _per_speaker_title(per_speaker: TableRecord, has_ci: bool) -> str:
    """'Disclosure per speaker', with the interval settings and the speakers left out."""
    settings = getattr(per_speaker, "bootstrap", None)
    note = []
    if has_ci and settings:
        calibrator = "refitted on resampled dev speakers" if settings.get("resample") == "dev+eval" else "held fixed"
        note.append(
            f"whiskers: {settings['level']:.0%} {settings['method']} CI, trials resampled within speaker, "
            f"calibrator {calibrator}"
        )
    missing = getattr(per_speaker, "n_speakers_without_trials", 0)
    if missing:
        note.append(f"{missing} enrolled speakers without trials not shown")
    outsiders = getattr(per_speaker, "n_outsider_speakers", None)
    if outsiders:
        note.append(f"{outsiders} outsider speakers (membership disclosure) in the table only")
    return "Disclosure per speaker" + (f"\n({'; '.join(note)})" if note else "")


def save_per_speaker(per_speaker: TableRecord, path: StrPath, *, n_labelled: int = 5, title: str | None = None) -> None:
    """:func:`per_speaker_figure` saved to *path* (format from the suffix: svg, png, ...) atomically.

    Parameters
    ----------
    per_speaker : TableRecord
        As for :func:`per_speaker_figure`.
    path : str or os.PathLike
    n_labelled, title
        As for :func:`per_speaker_figure`.
    """
    save_figure(per_speaker_figure(per_speaker, n_labelled=n_labelled, title=title), path)


def plot_lid_ccdf(result: SensitivityResult, path: StrPath, *, title: str | None = None) -> None:
    """Plot P(LID > x) per calibrator (log-scale y) and write it to *path* (PNG/PDF/SVG) atomically.

    Parameters
    ----------
    result : SensitivityResult
        What :func:`lidframe.analyses.sensitivity.sensitivity` returned.
    path : str or os.PathLike
    title : str, optional
        Default ``"LID tail per calibrator (N = <N>)"``.
    """
    save_lid_ccdf(
        result.lids(),
        path,
        log2_n=result.rows[0]["log2_n"],
        guides=True,
        title=title or f"LID tail per calibrator (N = {result.rows[0]['n_enrolled']})",
    )


def plot_nsweep(result: NSweepResult, path: StrPath, *, title: str | None = None) -> None:
    """Plot ALID and LIDmax (left) and PDR (right) versus log2 n, with their intervals; write *path* atomically.

    Parameters
    ----------
    result : NSweepResult
        What the N-sweep of :mod:`lidframe.analyses.nsweep` returned.
    path : str or os.PathLike
    title : str, optional
        Default names N and the calibrator.
    """
    plt = pyplot()
    frame = result.rows
    x = np.array([r["log2_n"] for r in frame])
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 4.0), dpi=120)
    for key, label in (("alid", "ALID"), ("lid_max", "LIDmax")):
        y = np.array([r[key] for r in frame])
        lo = np.array([r[f"{key}_low"] for r in frame])
        hi = np.array([r[f"{key}_high"] for r in frame])
        left.plot(x, y, marker="o", label=label)
        left.fill_between(x, lo, hi, alpha=0.25)
    left.plot(x, x, color="0.3", ls=":", label="ceiling log2 n")
    left.set_xlabel("log2 n (database size)")
    left.set_ylabel("bits")
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    y = np.array([r["pdr"] for r in frame])
    right.plot(x, y, marker="o", color="C2")
    right.fill_between(x, [r["pdr_low"] for r in frame], [r["pdr_high"] for r in frame], color="C2", alpha=0.25)
    right.set_xlabel("log2 n (database size)")
    pdr = catalogue.metric("pdr")
    right.set_ylabel(f"{pdr.label} ({pdr.description})")
    right.set_ylim(0, 1)
    right.grid(alpha=0.3)
    fig.suptitle(title or f"Disclosure vs database size (N = {result.n_enrolled}, {result.calibrator})")
    fig.tight_layout()
    save_figure(fig, path)


def plot_longitudinal(result: LongitudinalResult, path: StrPath, *, title: str | None = None) -> None:
    """ALID, LID q99 and LIDmax versus k (with the log2 N ceiling); written to *path* atomically.

    Parameters
    ----------
    result : LongitudinalResult
        What :func:`lidframe.analyses.longitudinal.longitudinal` returned; the ALID
        interval is shaded when every row has one.
    path : str or os.PathLike
    title : str, optional
        Default ``"Longitudinal disclosure"``.
    """
    plt = pyplot()
    rows = result.rows
    labels = [str(r["k"]) for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for key, label, marker in (("alid", "ALID", "o"), ("lid_q99", "LID q99", "s"), ("lid_max", "LIDmax", "^")):
        y = np.array([r[key] for r in rows])
        ax.plot(x, y, marker=marker, label=label)
        if key == "alid" and all("intervals" in r for r in rows):
            ci = np.array([r["intervals"]["alid"] for r in rows])
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


#: The two attackers of a DP audit, in the order of its rows' fields and of the page's systems.
DP_ATTACKERS = ("bayes", "cosine")
#: What the mutual-information bound bounds, as the DP figure's legend and the page say it.
MI_BOUND_LABEL = "MI bound mu^2/(2 ln 2): bounds ALID, not LIDmax"


def dp_audit_figure(
    result: DPAuditResult, *, styles: Mapping[str, Mapping[str, Any]] | None = None, title: str | None = None
) -> Figure:
    """Measured EER (left) and ALID / LIDmax (right) versus mu, with the GDP bound curves of one release.

    Each attacker has one colour and one marker in both panels: its EER (left) and its
    ALID (right) are solid lines with filled marks and the bootstrap intervals as error
    bars, its LIDmax a dashed line with hollow marks.  The bounds are grey dotted curves:
    Phi(-mu/2) under the EER, and mu^2/(2 ln 2) bits -- the mutual-information bound,
    which bounds ALID (an average), not LIDmax -- over it; the right panel's height
    follows the measured values and log2 N (above log2 N the bound says nothing), so that
    a bound far above them does not flatten them.

    Parameters
    ----------
    result : DPAuditResult
        What :func:`lidframe.privacy.audit.dp_audit` returned.
    styles : mapping of str to mapping, optional
        attacker (``"bayes"``, ``"cosine"``) -> style (``color``, ``marker``), to keep the
        colours of a page's other figures; by default :func:`curve_styles` of the two.
    title : str, optional
        Default names the mechanism and N.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from lidframe.privacy.mechanism import gdp_eer_bound, gdp_mi_bound_bits

    plt = pyplot()
    rows = result.rows
    mus = np.array([r["mu"] for r in rows])
    grid = np.linspace(max(mus.min() * 0.8, 1e-3), mus.max() * 1.1, 200)
    derived = curve_styles(list(DP_ATTACKERS))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 4.0), dpi=120)
    left.plot(grid, [gdp_eer_bound(m) for m in grid], color="0.3", ls=":", label="bound Phi(-mu/2) on EER")
    right.plot(grid, [gdp_mi_bound_bits(m) for m in grid], color="0.3", ls=":", label=MI_BOUND_LABEL)
    log2_n = float(rows[0]["log2_n"])
    right.axhline(log2_n, color="0.6", lw=0.8, ls="--", label=f"log2 N = {log2_n:.2f}")
    highest = log2_n
    for name in DP_ATTACKERS:
        style = {**derived[name], **dict((styles or {}).get(name) or {})}
        colour, marker = style["color"], style["marker"]
        eer = np.array([r[f"{name}_eer"] for r in rows])
        ci = np.array([(r[f"{name}_eer_low"], r[f"{name}_eer_high"]) for r in rows])
        left.errorbar(
            mus, eer, yerr=np.abs([eer - ci[:, 0], ci[:, 1] - eer]), color=colour, marker=marker, capsize=3,
            label=f"{name} EER",
        )  # fmt: skip
        alid = np.array([r[f"{name}_alid"] for r in rows])
        aci = np.array([(r[f"{name}_alid_low"], r[f"{name}_alid_high"]) for r in rows])
        right.errorbar(
            mus, alid, yerr=np.abs([alid - aci[:, 0], aci[:, 1] - alid]), color=colour, marker=marker, capsize=3,
            label=f"{name} ALID",
        )  # fmt: skip
        lid_max = np.array([r[f"{name}_lid_max"] for r in rows], dtype=np.float64)
        right.plot(mus, lid_max, color=colour, marker=marker, mfc="white", ls="--", label=f"{name} LIDmax")
        highest = max(highest, float(np.nanmax(lid_max)), float(np.nanmax(aci[:, 1])))
    left.set_xlabel("mu")
    left.set_ylabel("EER (pairs)")
    left.set_ylim(0, 0.55)
    right.set_xlabel("mu")
    right.set_ylabel("bits")
    right.set_ylim(-0.2, 1.15 * highest)
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title or f"Gaussian speaker mechanism: measured vs bounds (N = {rows[0]['n_enrolled']})")
    fig.tight_layout()
    return fig


def plot_dp_audit(result: DPAuditResult, path: StrPath, *, title: str | None = None) -> None:
    """:func:`dp_audit_figure` written to *path* (PNG/PDF/SVG, from the suffix) atomically.

    Parameters
    ----------
    result : DPAuditResult
        What :func:`lidframe.privacy.audit.dp_audit` returned.
    path : str or os.PathLike
    title : str, optional
        Default names the mechanism and N.
    """
    save_figure(dp_audit_figure(result, title=title), path)
