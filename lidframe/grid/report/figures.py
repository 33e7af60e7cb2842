"""The PNG figures of a grid report.

``lid_ccdf.png`` and ``eer_vs_lid.png`` are the overview figures of ``report.html``, drawn
by the same code (:class:`lidframe.report.figures.FigureMaker`);
``calibrator_sensitivity.png`` shows ALID and LIDmax per calibrator and system;
``dp_vs_mu.png``, in a grid with mechanisms, the measured EER, ALID and LIDmax against mu
with the GDP bounds.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lidframe.grid.records import NONE

if TYPE_CHECKING:
    import pandas as pd

    from lidframe.report.model import Report

__all__ = ["write_figures"]


def write_figures(frame: pd.DataFrame, folder: Path, report: Report) -> list[str]:
    from lidframe.report.figures import FigureMaker
    from lidframe.report.plotting import plain_text, pyplot, save_figure

    plt = pyplot()
    written = []
    # the overview figures of report.html (lid_ccdf, eer_vs_lid), drawn by the same code
    for name, fig, _ in FigureMaker(report).overview_figures():
        save_figure(fig, folder / f"{name}.png")
        written.append(f"{name}.png")

    base = frame[
        (frame["attacker"] == frame["attacker"].iloc[0])
        & (frame["prior"] == frame["prior"].iloc[0])
        & (frame["seed"] == frame["seed"].min())
        & (frame["mechanism"] == frame["mechanism"].iloc[0])
    ]
    if "scenario" in frame.columns:  # one scenario per bar (a score-file system's cells have none)
        base = base[base["scenario"].isin([base["scenario"].iloc[0], NONE])]
    systems = sorted(base["system"].unique())
    calibrators = list(dict.fromkeys(base["calibrator"]))
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.0), dpi=120)
    width = 0.8 / max(1, len(calibrators))
    for i, calibrator in enumerate(calibrators):
        part = base[base["calibrator"] == calibrator].set_index("system").reindex(systems)
        for ax, metric in zip(axes, ("alid", "lid_max")):
            ax.bar(np.arange(len(systems)) + i * width, part[metric], width, label=calibrator)
    for ax, title in zip(axes, ("ALID (bits)", "LIDmax (bits)")):
        ax.set_xticks(np.arange(len(systems)) + 0.4 - width / 2)
        ax.set_xticklabels(systems, rotation=30, ha="right", fontsize=8)
        ax.set_title(title)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=8)
    shown = f"prior {base['prior'].iloc[0]}"
    if frame["attacker"].nunique() > 1:
        shown += f", attacker {base['attacker'].iloc[0]}"
    if frame["mechanism"].nunique() > 1:
        shown += f", mechanism {base['mechanism'].iloc[0]}"
    if "scenario" in frame.columns and frame["scenario"].nunique() > 1:
        shown += f", scenario {base['scenario'].iloc[0]}"
    fig.suptitle(plain_text(f"Calibrator sensitivity ({shown})"), fontsize=10)
    fig.tight_layout()
    save_figure(fig, folder / "calibrator_sensitivity.png")
    written.append("calibrator_sensitivity.png")
    if (frame["mechanism"] != NONE).any():  # the tidy frame's components are text: "-" for none
        _dp_figure(frame, folder / "dp_vs_mu.png")
        written.append("dp_vs_mu.png")
    return written


def _dp_figure(frame: pd.DataFrame, path: Path) -> None:
    """Measured EER, ALID and LIDmax against mu per system, with the GDP bound curves.

    Each system and attacker has one colour and marker in both panels (ALID solid, LIDmax
    dashed with hollow marks); the legend says the mutual-information bound is on ALID.
    """
    from lidframe.privacy.mechanism import gdp_eer_bound, gdp_mi_bound_bits
    from lidframe.registry import parse_spec
    from lidframe.report.analysis_figures import MI_BOUND_LABEL
    from lidframe.report.plotting import curve_styles, pyplot, save_figure

    plt = pyplot()
    part = frame[
        (frame["mechanism"] != NONE)  # a frame column: "-" for none, as table.csv writes it
        & (frame["calibrator"] == frame["calibrator"].iloc[0])
        & (frame["prior"] == frame["prior"].iloc[0])
        & (frame["seed"] == frame["seed"].min())
    ].copy()
    part["mu"] = [float(parse_spec(m)[1]["mu"]) for m in part["mechanism"]]
    grid = np.linspace(part["mu"].min() * 0.8, part["mu"].max() * 1.1, 200)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 4.0), dpi=120)
    left.plot(grid, [gdp_eer_bound(m) for m in grid], color="0.3", ls=":", label="bound Phi(-mu/2) on EER")
    right.plot(grid, [gdp_mi_bound_bits(m) for m in grid], color="0.3", ls=":", label=MI_BOUND_LABEL)
    if "scenario" in part.columns:  # a system in each scenario is its own line
        part["system"] = [s if c == NONE else f"{s} ({c})" for s, c in zip(part["system"], part["scenario"])]
    groups = list(part.groupby(["system", "attacker"], sort=True))
    styles = curve_styles([f"{system} / {attacker}" for (system, attacker), _ in groups])
    for (system, attacker), rows in groups:  # one colour and marker per system and attacker, in both panels
        rows = rows.sort_values("mu")
        name = f"{system} / {attacker}"
        colour, marker = styles[name]["color"], styles[name]["marker"]
        left.plot(rows["mu"], rows["eer"], color=colour, marker=marker, label=name)
        right.plot(rows["mu"], rows["alid"], color=colour, marker=marker, label=f"{name} ALID")
        right.plot(
            rows["mu"], rows["lid_max"], color=colour, marker=marker, mfc="white", ls="--", label=f"{name} LIDmax"
        )
    left.set_xlabel("mu")
    left.set_ylabel("EER")
    right.set_xlabel("mu")
    right.set_ylabel("bits")
    right.set_ylim(-0.2, max(1.0, float(part["lid_max"].max()) * 1.2))
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"Gaussian speaker mechanism in the grid ({part['calibrator'].iloc[0]}, {part['prior'].iloc[0]})")
    fig.tight_layout()
    save_figure(fig, path)
