"""A :class:`~lidframe.report.model.Report` as one self-contained HTML page.

:func:`render_html` fills the Jinja2 template ``templates/report.html.j2`` (autoescaping
on: every label and setting is escaped) with the report's tables and inline SVG
figures; the stylesheet and the table-sorting script are inlined from
``templates/report.css`` and ``templates/report.js``.  The page makes no network request:
its Content-Security-Policy allows nothing but inline styles, ``data:`` images and
the one script, by hash.  :func:`write_report` writes it atomically; a command with a
``--report DIR`` flag checks ``DIR/report.html`` with :func:`check_report_dir` before any
work and writes it with ``write_report(..., make_folder=True)``.

The tables and headline cards, their numbers formatted, come from
:mod:`lidframe.report.tables`; the figures from :mod:`lidframe.report.figures`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.util
import os
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.data.fileio import StrPath, atomic_write, check_output_dir, check_output_path, real_path
from lidframe.errors import InputError
from lidframe.report.model import Report
from lidframe.report.sections import absent_sections, absent_system_sections
from lidframe.report.tables import (
    BIASED_LOW_NOTE,
    NOT_COMPUTED,
    Card,
    Table,
    attacker_tables,
    calibrator_tables,
    comparison_table,
    dp_audit_table,
    environment_table,
    fit_notes,
    headline_card,
    ladder_table,
    misattribution_table,
    open_set_table,
    per_speaker_table,
    sensitivity_table,
    settings_table,
    utility_intervals_note,
    utility_table,
)

if TYPE_CHECKING:
    from lidframe.report.figures import FigureMaker

__all__ = [
    "render_html",
    "write_report",
    "check_report_dir",
    "require_renderer",
    "REPORT_FILE",
]

#: The page's file name inside a ``--report DIR`` folder.
REPORT_FILE = "report.html"
#: What rendering needs, and how to get it.
_RENDER_HINT = "the HTML report needs jinja2 and matplotlib: pip install 'lidframe[report]'"


# ------------------------------------------------------------------ page
@attrs.frozen
class SystemSection:
    """The section of one system: links to its cards, its figures, sensitivity and per-speaker tables."""

    anchor: str
    name: str
    cards: tuple[Card, ...]
    figures: tuple[Any, ...]
    sensitivity: tuple[tuple[Table, tuple[str, ...], tuple[Any, ...]], ...]
    per_speaker: tuple[tuple[Table, tuple[Any, ...]], ...]


def _anchor(prefix: str, index: int) -> str:
    return f"{prefix}-{index}"


def _asset(name: str) -> str:
    return resources.files("lidframe.report").joinpath("templates", name).read_text(encoding="utf-8")


def require_renderer() -> None:
    """Check, without importing them, that jinja2 and matplotlib are installed (rendering needs both).

    Raises
    ------
    InputError
        One of them is missing (with the ``pip install`` that brings both).
    """
    missing = [name for name in ("jinja2", "matplotlib") if importlib.util.find_spec(name) is None]
    if missing:
        raise InputError(f"{_RENDER_HINT} ({' and '.join(missing)} not installed)")


def _environment():
    try:
        import jinja2
    except ImportError:
        raise InputError(_RENDER_HINT) from None
    return jinja2.Environment(
        loader=jinja2.PackageLoader("lidframe.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_html(report: Report) -> str:
    """The page of *report*: one self-contained HTML document (inline CSS, JS and SVG).

    Parameters
    ----------
    report : Report

    Returns
    -------
    str
        The HTML text.

    Raises
    ------
    InputError
        jinja2 or matplotlib is not installed.
    """
    if not isinstance(report, Report):
        raise InputError(f"render_html needs a lidframe.report.Report, got {type(report).__name__}")
    environment = _environment()
    from lidframe.report.figures import FigureMaker
    from lidframe.report.plotting import pyplot

    pyplot()  # the clear error without matplotlib, before any work
    maker = FigureMaker(report)
    cards = [headline_card(s, k) for k, s in enumerate(report.systems, start=1)]
    overview = maker.overview()
    ladder_figures = maker.ladder()
    utility_figures = maker.utility()
    open_set_figures = maker.open_set()
    dp_figures = maker.dp_audit()
    sections = _system_sections(report, maker, cards)
    comparison = comparison_table(report)
    calibrators, without_fit = calibrator_tables(report)
    biased_low = any(c.biased_low for c in cards) or any(
        cell.biased_low
        for table in [comparison, *(t for s in sections for t, _ in s.per_speaker)]
        for row in table.rows
        for cell in row
    )
    script = _asset("report.js")
    script_hash = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    template = environment.get_template("report.html.j2")
    return template.render(
        report=report,
        provenance=report.provenance,
        cards=cards,
        counts=_counts(report),
        biased_low=biased_low,
        biased_low_note=BIASED_LOW_NOTE,
        comparison=comparison,
        overview=overview,
        ladder=ladder_table(report.ladder) if report.ladder is not None else None,
        ladder_figures=ladder_figures,
        utility=_utility_shown(report, utility_figures),
        open_set_table=open_set_table(report),
        misattribution_table=misattribution_table(report),
        open_set_figures=open_set_figures,
        open_set_auto=any(s.open_set is not None and s.open_set.outside_source == "auto" for s in report.systems),
        dp_table=dp_audit_table(report.dp_audit) if report.dp_audit is not None else None,
        dp_figures=dp_figures,
        dp_reason=report.dp_audit.rows[0].get("bounds_reason") if report.dp_audit is not None else None,
        sections=sections,
        absent=absent_sections(report),
        system_absent=absent_system_sections(report),
        settings_table=settings_table(report),
        fit_notes=fit_notes(report),
        calibrator_tables=calibrators,
        without_fit=without_fit,
        environment=environment_table(report.provenance.environment),
        attackers=attacker_tables(report.provenance.attackers),
        stylesheet=_asset("report.css"),
        script=script,
        script_hash=script_hash,
        not_computed=NOT_COMPUTED,
    )


@attrs.frozen
class UtilityShown:
    """The section "Privacy and utility" of a page: its table, the brackets' note, the caller's note, the chart."""

    table: Table
    intervals: str
    note: str | None
    left_out: tuple[str, ...]
    figures: tuple[Any, ...]


def _utility_shown(report: Report, figures: list[Any]) -> UtilityShown | None:
    """What the utility section shows; None without a utility (the section then says why)."""
    table = utility_table(report)
    if table is None:
        return None
    charted = {label for entry in report.utility for label in entry.labels}
    left_out = tuple(dict.fromkeys((s.system or s.name) for s in report.systems if s.label not in charted))
    return UtilityShown(table, utility_intervals_note(report.utility), report.utility_note, left_out, tuple(figures))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _counts(report: Report) -> str:
    """The header's count: the systems under audit (not the rows, not the attackers), and the rows when more.

    ``"1 system"``, ``"2 systems, 8 cells"`` (a grid), ``"3 systems, 6 rows"`` (a DP audit:
    the mechanism at each mu, each attacked twice).
    """
    systems = _plural(len(report.audited_systems()), "system")
    rows = len(report.systems)
    if rows == len(report.audited_systems()):
        return systems
    return f"{systems}, {_plural(rows, 'cell' if report.kind == 'grid' else 'row')}"


def _system_sections(report: Report, maker: FigureMaker, cards: list[Card]) -> list[SystemSection]:
    """One section per system name: its cards, figures, sensitivity and per-speaker tables.

    The figures are drawn in page order (each cell's sensitivity and per-speaker figures,
    then the system's LID figures), so that their numbers, and SVG ids, follow the page.
    """
    sections = []
    for index, name in enumerate(report.system_names(), start=1):
        cells = [s for s in report.systems if s.name == name]
        sensitivity = []
        per_speaker = []
        for k, system in enumerate(cells, start=1):
            if system.sensitivity is not None:
                table, worst = sensitivity_table(system, f"sensitivity-{index}-{k}")
                sensitivity.append((table, tuple(worst), tuple(maker.sensitivity(system))))
            if system.per_speaker is not None:
                per_speaker.append(
                    (per_speaker_table(system, f"per-speaker-{index}-{k}"), tuple(maker.per_speaker(system)))
                )
        sections.append(
            SystemSection(
                anchor=_anchor("system", index),
                name=name,
                cards=tuple(cards[report.systems.index(s)] for s in cells),
                figures=tuple(maker.system(name)),
                sensitivity=tuple(sensitivity),
                per_speaker=tuple(per_speaker),
            )
        )
    return sections


def check_report_dir(
    folder: StrPath,
    label: str = "--report",
    *,
    outputs: Mapping[str, StrPath | None] | None = None,
    inputs: Iterable[StrPath] = (),
) -> Path:
    """``folder/report.html`` after checking, before any work, that the page can be written there.

    Parameters
    ----------
    folder : str or os.PathLike
        The report folder: an existing writable folder, or a new one whose parent is
        (:func:`lidframe.data.fileio.check_output_dir`); it is made when the page is written.
    label : str
        What names it in the message (the flag, ``"--report"``).
    outputs : mapping of str to path, optional
        The run's other outputs (flag -> path): none may be the page or its folder.
    inputs : iterable of path
        The run's inputs: none may be the page itself.

    Returns
    -------
    pathlib.Path
        The page's path, ``folder / "report.html"``.

    Raises
    ------
    InputError
        The folder cannot be made or written, ``report.html`` there is a folder or a
        read-only file, the page or its folder is another output, the page is an input
        of the run, or jinja2 or
        matplotlib is missing (:func:`require_renderer`).
    """
    checked = check_output_dir(folder, label)
    target = checked / REPORT_FILE
    if checked.is_dir():
        check_output_path(target, label)
    key, folder_key = real_path(target), real_path(checked)
    for flag, path in (outputs or {}).items():
        if path is not None and real_path(path) == key:
            raise InputError(
                f"{flag} {os.fspath(path)}: the same file as the page of {label}; give each output its own file"
            )
        if path is not None and real_path(path) == folder_key:
            raise InputError(
                f"{flag} {os.fspath(path)}: the folder of {label} {os.fspath(folder)}; give each output its own path"
            )
    for source in inputs:
        if real_path(source) == key:
            raise InputError(
                f"{label} {os.fspath(folder)}: its {REPORT_FILE} is an input of this run ({os.fspath(source)})"
            )
    require_renderer()
    return target


def write_report(path: StrPath, report: Report, *, make_folder: bool = False) -> Path:
    """Render *report* and write it to *path* atomically (a failed render writes nothing).

    Parameters
    ----------
    path : str or os.PathLike
        The ``.html`` file; its folder must exist, unless *make_folder*.
    report : Report
    make_folder : bool
        Make *path*'s folder when it is missing (its parent must exist); it is removed
        again when the page cannot be written.

    Returns
    -------
    pathlib.Path
        *path*.

    Notes
    -----
    The page is rendered before anything is written; inside
    :func:`lidframe.data.fileio.staged_outputs` its rename waits with the command's
    other outputs.
    """
    target = Path(path)
    made = make_folder and not target.parent.exists()
    if made:
        check_output_dir(target.parent, "report folder")
    else:
        check_output_path(target, "report")
    page = render_html(report)
    if made:
        target.parent.mkdir()
    try:
        with atomic_write(target, encoding="utf-8") as handle:
            handle.write(page)
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                target.parent.rmdir()  # only when empty: nothing else was written there
        raise
    return target
