"""Tables and figures from a grid's result store (what ``lidframe report OUT_DIR`` writes).

:func:`load_results` reads the store and :func:`tidy_table` makes the table;
:func:`write_report` writes into ``OUT_DIR/report/``:

``table.csv`` / ``table.parquet``
    the tidy table, one row per finished cell (system, attacker, calibrator, prior,
    seed, every summary metric, and ``<metric>_ci_low`` / ``_ci_high`` where the grid
    computed intervals), sorted by the cell's components; timings are left out so the
    same spec gives a byte-identical table.
``summary.md`` / ``summary.html``
    a comparison table like the LID paper's Table 4 per (attacker, calibrator, prior):
    systems sorted by ALID, with N, EER, ALID, PDR, LID+, LID-, LIDmax.
``table.tex``
    the same comparison as a LaTeX tabular.
``lid_ccdf.png``
    share of trials with LID > x per system (the paper's Fig. 4).
``eer_vs_lid.png``
    EER against ALID, with LIDmax, LID+ and LID- markers per system (Fig. 5).
``calibrator_sensitivity.png``
    ALID and LIDmax per calibrator and system.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lidframe.data.fileio import StrPath, atomic_path, atomic_write
from lidframe.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_results", "tidy_table", "write_report"]

_KEYS = ["system", "attacker", "mechanism", "calibrator", "prior", "seed"]
_PAPER = [
    ("n_enrolled", "N", "{:d}"),
    ("eer", "EER", "{:.2f}"),
    ("alid", "ALID", "{:.2f}"),
    ("pdr", "PDR", "{:.2f}"),
    ("lid_pos", "LID+", "{:.2f}"),
    ("lid_neg", "LID-", "{:.2f}"),
    ("lid_max", "LIDmax", "{:.2f}"),
]


def load_results(out_dir: StrPath) -> list[dict[str, Any]]:
    """Finished cells of a grid output folder: component columns, summary, per-trial path.

    Parameters
    ----------
    out_dir : str or os.PathLike
        The grid's output folder (holds ``results.sqlite``).

    Returns
    -------
    list of dict
        One record per cell with status ``ok``: ``system``, ``attacker``, ``mechanism``,
        ``calibrator``, ``prior``, ``seed``, ``summary`` (the parsed JSON summary) and
        ``per_trial`` (the per-trial file, relative to *out_dir*).
    """
    import sqlite3

    store = Path(out_dir) / "results.sqlite"
    if not store.is_file():
        raise InputError(f"{out_dir}: no results.sqlite here; run lidframe grid SPEC --out {out_dir} first")
    connection = sqlite3.connect(store)
    try:
        rows = connection.execute(
            "SELECT system, attacker, mechanism, calibrator, prior, seed, summary, per_trial FROM cells "
            "WHERE status = 'ok'"
        ).fetchall()
    finally:
        connection.close()
    return [dict(zip(_KEYS, r[:6]), summary=json.loads(r[6]), per_trial=r[7]) for r in rows]


def tidy_table(results: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per cell, every scalar metric and CI bound as columns, sorted by the components.

    Parameters
    ----------
    results : sequence of mapping
        Cell records as :func:`load_results` returns them.

    Returns
    -------
    pandas.DataFrame
        One row per cell: the component columns, then every scalar summary metric,
        ``<metric>_ci_low`` / ``<metric>_ci_high`` and ``long_<fusion>_k<k>_<metric>`` columns.
    """
    import pandas as pd

    rows = []
    for r in results:
        row = {k: r[k] for k in _KEYS}
        s = r["summary"]
        for key, value in s.items():
            if key in ("ci", "ci_settings", "calibrator_fit") or isinstance(value, (dict, list)):
                continue
            # the summary's "calibrator"/"prior" describe the fitted components; the cell's
            # own columns keep the spec strings
            row[f"{key}_describe" if key in _KEYS else key] = value
        for metric, (low, high) in (s.get("ci") or {}).items():
            row[f"{metric}_ci_low"], row[f"{metric}_ci_high"] = low, high
        for fusion, per_k in (s.get("longitudinal") or {}).items():  # k-utterance attacker columns
            for entry in per_k:
                for metric in ("alid", "pdr", "lid_q99", "lid_max"):
                    row[f"long_{fusion}_k{entry['k']}_{metric}"] = entry[metric]
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise InputError("no finished cells to report")
    return frame.sort_values(_KEYS, kind="stable").reset_index(drop=True)


def _paper_tables(frame: pd.DataFrame) -> list[tuple[tuple[str, str, str], pd.DataFrame]]:
    groups = []
    base = frame[frame["seed"] == frame["seed"].min()].copy()
    base["system"] = [s if m == "-" else f"{s} [{m}]" for s, m in zip(base["system"], base["mechanism"])]
    for (attacker, calibrator, prior), part in base.groupby(["attacker", "calibrator", "prior"], sort=True):
        groups.append(((attacker, calibrator, prior), part.sort_values("alid", ascending=False, kind="stable")))
    return groups


def _cell(fmt: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "-"
    return fmt.format(int(value) if fmt == "{:d}" else value)


def _markdown(frame: pd.DataFrame) -> str:
    lines = ["# Grid report", ""]
    for (attacker, calibrator, prior), part in _paper_tables(frame):
        lines += [f"## attacker `{attacker}`, calibrator `{calibrator}`, prior `{prior}`", ""]
        lines.append("| system | " + " | ".join(t for _, t, _ in _PAPER) + " |")
        lines.append("|---|" + "---|" * len(_PAPER))
        for _, row in part.iterrows():
            lines.append(f"| {row['system']} | " + " | ".join(_cell(f, row[k]) for k, _, f in _PAPER) + " |")
        lines.append("")
    lines.append(
        "LID in bits (LID <= log2 N under a uniform prior); EER on the ROC convex hull; systems sorted by ALID."
    )
    return "\n".join(lines) + "\n"


def _latex(frame: pd.DataFrame) -> str:
    out = []
    for (attacker, calibrator, prior), part in _paper_tables(frame):
        out.append(f"% attacker {attacker}, calibrator {calibrator}, prior {prior}")
        out.append("\\begin{tabular}{l" + "r" * len(_PAPER) + "}")
        out.append("\\hline")
        out.append(
            "System & "
            + " & ".join(
                t.replace("+", "$^+$").replace("-", "$^-$") if t.startswith("LID") and t != "LIDmax" else t
                for _, t, _ in _PAPER
            )
            + " \\\\"
        )
        out.append("\\hline")
        for _, row in part.iterrows():
            name = str(row["system"]).replace("_", "\\_")
            out.append(f"{name} & " + " & ".join(_cell(f, row[k]) for k, _, f in _PAPER) + " \\\\")
        out.append("\\hline")
        out.append("\\end{tabular}")
        out.append("")
    return "\n".join(out)


def _figures(results: Sequence[Mapping[str, Any]], frame: pd.DataFrame, folder: Path) -> list[str]:
    from lidframe.plotting import pyplot, save_figure, save_lid_ccdf

    plt = pyplot()
    written = []
    first = frame[
        (frame["attacker"] == frame["attacker"].iloc[0])
        & (frame["calibrator"] == frame["calibrator"].iloc[0])
        & (frame["prior"] == frame["prior"].iloc[0])
        & (frame["seed"] == frame["seed"].min())
        & (frame["mechanism"] == frame["mechanism"].iloc[0])
    ]
    by_key = {tuple(r[k] for k in _KEYS): r for r in results}
    lids = {}
    for _, row in first.sort_values("alid", ascending=False).iterrows():
        record = by_key[tuple(row[k] for k in _KEYS)]
        with np.load(Path(folder).parent / record["per_trial"], allow_pickle=False) as data:
            lids[row["system"]] = data["lid"][~np.isnan(data["lid"])]
    save_lid_ccdf(
        lids,
        folder / "lid_ccdf.png",
        title=f"LID per system ({first['attacker'].iloc[0]}, {first['calibrator'].iloc[0]}, {first['prior'].iloc[0]})",
    )
    written.append("lid_ccdf.png")

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    ax.scatter(first["eer"], first["alid"], marker="o", s=40, label="ALID", zorder=3)
    ax.scatter(first["eer"], first["lid_max"], marker="^", label="LIDmax")
    ax.scatter(first["eer"], first["lid_pos"], marker="+", label="LID+")
    ax.scatter(first["eer"], first["lid_neg"], marker="_", label="LID-")
    for _, row in first.iterrows():
        ax.annotate(
            str(row["system"]), (row["eer"], row["alid"]), fontsize=7, xytext=(3, 3), textcoords="offset points"
        )
    ax.axhline(0, color="0.6", lw=0.8)
    ax.set_xlabel("EER (ROC convex hull)")
    ax.set_ylabel("bits")
    ax.set_title("EER vs local information disclosure")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, folder / "eer_vs_lid.png")
    written.append("eer_vs_lid.png")

    base = frame[
        (frame["attacker"] == frame["attacker"].iloc[0])
        & (frame["prior"] == frame["prior"].iloc[0])
        & (frame["seed"] == frame["seed"].min())
        & (frame["mechanism"] == frame["mechanism"].iloc[0])
    ]
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
    fig.suptitle("Calibrator sensitivity")
    fig.tight_layout()
    save_figure(fig, folder / "calibrator_sensitivity.png")
    written.append("calibrator_sensitivity.png")
    if (frame["mechanism"] != "-").any():
        _dp_figure(frame, folder / "dp_vs_mu.png")
        written.append("dp_vs_mu.png")
    return written


def _dp_figure(frame: pd.DataFrame, path: Path) -> None:
    """Measured EER, ALID and LIDmax against mu per system, with the GDP bound curves."""
    from lidframe.plotting import pyplot, save_figure
    from lidframe.privacy.mechanism import gdp_eer_bound, gdp_mi_bound_bits
    from lidframe.registry import parse_spec

    plt = pyplot()
    part = frame[
        (frame["mechanism"] != "-")
        & (frame["calibrator"] == frame["calibrator"].iloc[0])
        & (frame["prior"] == frame["prior"].iloc[0])
        & (frame["seed"] == frame["seed"].min())
    ].copy()
    part["mu"] = [float(parse_spec(m)[1]["mu"]) for m in part["mechanism"]]
    grid = np.linspace(part["mu"].min() * 0.8, part["mu"].max() * 1.1, 200)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 4.0), dpi=120)
    left.plot(grid, [gdp_eer_bound(m) for m in grid], color="0.3", ls=":", label="bound Phi(-mu/2)")
    right.plot(grid, [gdp_mi_bound_bits(m) for m in grid], color="0.3", ls=":", label="MI bound")
    for (system, attacker), rows in part.groupby(["system", "attacker"], sort=True):
        rows = rows.sort_values("mu")
        left.plot(rows["mu"], rows["eer"], marker="o", label=f"{system} / {attacker}")
        right.plot(rows["mu"], rows["alid"], marker="o", label=f"{system} ALID")
        right.plot(rows["mu"], rows["lid_max"], marker="^", ls="--", label=f"{system} LIDmax")
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


def write_report(out_dir: StrPath, *, figures: bool = True) -> list[str]:
    """Write the report files of a grid output folder; return their paths.

    Parameters
    ----------
    out_dir : str or os.PathLike
        The grid's output folder; the files go to ``out_dir/report/`` (module docstring).
    figures : bool
        Also draw the PNG figures (needs matplotlib).

    Returns
    -------
    list of str
        Paths of the files written.
    """
    out = Path(out_dir)
    results = load_results(out)
    frame = tidy_table(results)
    folder = out / "report"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with atomic_path(folder / "table.csv") as tmp:
        frame.to_csv(tmp, index=False, float_format="%.10g", na_rep="nan")
    written.append("table.csv")
    try:
        with atomic_path(folder / "table.parquet", suffix=".parquet") as tmp:
            frame.to_parquet(tmp, index=False)
        written.append("table.parquet")
    except ImportError:
        pass  # pyarrow not installed: the CSV carries the same table
    markdown = _markdown(frame)
    with atomic_write(folder / "summary.md") as handle:
        handle.write(markdown)
    with atomic_write(folder / "summary.html") as handle:
        handle.write("<!doctype html><meta charset='utf-8'><title>lidframe grid report</title>\n")
        for group, part in _paper_tables(frame):
            handle.write(f"<h2>attacker {group[0]}, calibrator {group[1]}, prior {group[2]}</h2>\n")
            handle.write(part[["system"] + [k for k, _, _ in _PAPER]].to_html(index=False, float_format="%.2f"))
    with atomic_write(folder / "table.tex") as handle:
        handle.write(_latex(frame))
    written += ["summary.md", "summary.html", "table.tex"]
    if figures:
        written += _figures(results, frame, folder)
    return [str(folder / name) for name in written]
