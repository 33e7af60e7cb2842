"""The comparison tables as text: ``summary.md``, ``summary.html`` and ``table.tex``.

Each opens with the report's warnings, then the scenario table (with scenarios) and one
table per group of :func:`~lidframe.grid.report.comparison.paper_tables`, each followed
by its interval note, then the utility paragraph.  In the Markdown, ``|`` and ``\\`` in a
name are escaped (:func:`markdown_cell`) and names in headings are code spans that no
backtick in them ends; in the LaTeX, every special character is escaped
(:func:`latex_escape`).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lidframe.grid.report.columns import SCENARIO_COLUMNS, paper_columns
from lidframe.grid.report.comparison import (
    SCENARIO_NOTE,
    heading,
    interval_note,
    paper_tables,
    scenario_rows,
    shown_rows,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["latex_escape", "markdown_cell", "markdown_summary", "html_summary", "latex_table"]

#: LaTeX's special characters and what stands for each in text.
_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: object) -> str:
    """*text* for a LaTeX document: each of ``\\ & % $ # _ { } ~ ^`` escaped, line breaks made spaces.

    Examples
    --------
    >>> print(latex_escape("b3_50% & {x}"))
    b3\\_50\\% \\& \\{x\\}
    """
    return "".join(_LATEX.get(c, " " if c in "\r\n" else c) for c in str(text))


def markdown_cell(text: object) -> str:
    """*text* for a Markdown table cell: ``\\`` and ``|`` escaped, line breaks made spaces.

    Examples
    --------
    >>> print(markdown_cell("a|b"))
    a\\|b
    """
    return " ".join(str(text).replace("\\", "\\\\").replace("|", "\\|").split())


def _code(text: object) -> str:
    """*text* as a Markdown code span, fenced by more backticks than it holds in a row."""
    text = " ".join(str(text).split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _comment(text: object) -> str:
    """*text* on one line (a LaTeX comment ends at the line break)."""
    return " ".join(str(text).split())


def markdown_summary(
    frame: pd.DataFrame,
    results: Sequence[Mapping[str, Any]],
    warnings: Sequence[str] = (),
    utility: str | None = None,
) -> str:
    lines = ["# Grid report", ""]
    paper = paper_columns(frame)
    for warning in warnings:
        lines += [f"> **Warning.** {warning}", ""]
    scenarios = scenario_rows(list(frame["scenario"])) if "scenario" in frame.columns else []
    if scenarios:
        lines += ["## Scenarios", ""]
        lines.append("| " + " | ".join(SCENARIO_COLUMNS) + " |")
        lines.append("|---" * len(SCENARIO_COLUMNS) + "|")
        lines += ["| " + " | ".join(markdown_cell(cell) for cell in row) + " |" for row in scenarios]
        lines += ["", SCENARIO_NOTE, ""]
    seed = int(frame["seed"].min())
    for group, part in paper_tables(frame):
        lines += [f"## {heading(group, _code)}", ""]
        lines.append("| system | " + " | ".join(t for _, t, _ in paper) + " |")
        lines.append("|---|" + "---|" * len(paper))
        for shown in shown_rows(part):
            lines.append("| " + " | ".join(markdown_cell(cell) for cell in shown) + " |")
        lines.append("")
        note = interval_note(results, group, seed)
        if note:
            lines += [note + ".", ""]
    if utility:
        lines += [utility, ""]
    lines.append(
        "LID in bits (LID <= log2 N under a uniform prior); EER on the ROC convex hull; systems sorted by ALID."
    )
    return "\n".join(lines) + "\n"


def html_summary(
    frame: pd.DataFrame,
    results: Sequence[Mapping[str, Any]],
    warnings: Sequence[str] = (),
    utility: str | None = None,
) -> str:
    import pandas as pd

    paper = paper_columns(frame)
    parts = ["<!doctype html><meta charset='utf-8'><title>lidframe grid report</title>\n"]
    parts += [f"<p><strong>Warning.</strong> {html.escape(warning)}</p>\n" for warning in warnings]
    scenarios = scenario_rows(list(frame["scenario"])) if "scenario" in frame.columns else []
    if scenarios:
        parts.append("<h2>Scenarios</h2>\n")
        parts.append(pd.DataFrame(scenarios, columns=list(SCENARIO_COLUMNS)).to_html(index=False))
        parts.append(f"\n<p>{html.escape(SCENARIO_NOTE)}</p>\n")
    seed = int(frame["seed"].min())
    for group, part in paper_tables(frame):
        parts.append(f"<h2>{heading(group, lambda g: html.escape(str(g)))}</h2>\n")
        shown = pd.DataFrame(shown_rows(part), columns=["system"] + [k for k, _, _ in paper])
        parts.append(shown.to_html(index=False))
        note = interval_note(results, group, seed)
        if note:
            parts.append(f"\n<p>{html.escape(note)}.</p>\n")
    if utility:
        parts.append(f"<p>{html.escape(utility)}</p>\n")
    return "".join(parts)


def _latex_title(title: str) -> str:
    """A comparison column's title in LaTeX: LID+ and LID- with their signs raised, rho_F0 as math."""
    if title == "ρ_F0":
        return r"$\rho_{F0}$"
    if title.startswith("LID") and title != "LIDmax":
        return title.replace("+", "$^+$").replace("-", "$^-$")
    return title


def latex_table(
    frame: pd.DataFrame,
    results: Sequence[Mapping[str, Any]],
    warnings: Sequence[str] = (),
    utility: str | None = None,
) -> str:
    paper = paper_columns(frame)
    out = [_comment(f"% Warning. {warning}") for warning in warnings]
    if utility:
        out.append(_comment(f"% {utility}"))
    if "scenario" in frame.columns:
        for name, code, enrolment, trials, model in scenario_rows(list(frame["scenario"])):
            out.append(_comment(f"% scenario {name} ({code}): enrolment {enrolment}, trials {trials}, model {model}"))
    seed = int(frame["seed"].min())
    for group, part in paper_tables(frame):
        out.append(_comment(f"% {heading(group)}"))
        note = interval_note(results, group, seed)
        if note:
            out.append(_comment(f"% {note}"))
        out.append("\\begin{tabular}{l" + "r" * len(paper) + "}")
        out.append("\\hline")
        out.append("System & " + " & ".join(_latex_title(t) for _, t, _ in paper) + " \\\\")
        out.append("\\hline")
        for name, *values in shown_rows(part):
            out.append(f"{latex_escape(name)} & " + " & ".join(values) + " \\\\")
        out.append("\\hline")
        out.append("\\end{tabular}")
        out.append("")
    return "\n".join(out)
