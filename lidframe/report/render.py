"""A :class:`~lidframe.report.model.Report` as one self-contained HTML page.

:func:`render_html` fills the Jinja2 template ``templates/report.html.j2`` (autoescaping
on: every label and setting is escaped) with the report's tables and inline SVG
figures; the stylesheet and the table-sorting script are inlined from
``templates/report.css`` and ``templates/report.js``.  The page makes no network request:
its Content-Security-Policy allows nothing but inline styles, ``data:`` images and
the one script, by hash.  :func:`write_report` writes it atomically; a command with a
``--report DIR`` flag checks ``DIR/report.html`` with :func:`check_report_dir` before any
work and writes it with ``write_report(..., make_folder=True)``.

The page is its sections (:data:`lidframe.report.sections.PAGE_SECTIONS`, each
system's :data:`~lidframe.report.sections.SYSTEM_SECTIONS`): each section's module makes
what it shows (its tables, numbers formatted, and its figures, drawn with
:class:`lidframe.report.figures.FigureMaker`), or says why it does not apply, and its
template (``templates/sections/<key>.html.j2``) puts that on the page.  The summary's
sections come first (``<div id="summary">``, ending with ``<p id="summary-end">``); the
appendices follow, each in a ``<details>`` with its letter (collapsed on screen; the
print stylesheet and script open them).  The template is filled twice: the first time to
read off the page the metrics it shows (``data-metric-key``), the second with the
glossary of exactly those (:mod:`lidframe.report.sections.glossary`).
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
from typing import Any

import attrs

from lidframe.data import runpaths
from lidframe.data.fileio import StrPath, atomic_write, check_output_dir, check_output_path, real_path
from lidframe.errors import InputError
from lidframe.report.model import Report
from lidframe.report.sections import (
    APPENDIX,
    NOT_APPLICABLE_CLASS,
    PAGE_SECTIONS,
    SUMMARY,
    SYSTEM_SECTIONS,
    Page,
    Shown,
)
from lidframe.report.sections.glossary import metric_keys_of
from lidframe.report.sections.systems import SystemSection, system_sections
from lidframe.report.tables import BIASED_LOW_NOTE, NOT_COMPUTED

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
    page = Page.of(report, FigureMaker(report))
    # each section in page order, so that the figures are numbered (and their SVG ids made) in page order
    before = [section.shown(page) for section in PAGE_SECTIONS if not section.after_systems]
    systems = system_sections(page, SYSTEM_SECTIONS)
    after = [section.shown(page) for section in PAGE_SECTIONS if section.after_systems]
    template = environment.get_template("report.html.j2")
    context = _context(report, page, before, systems, after)
    # laid out once to read off the metrics it shows, then again with the glossary of exactly those
    keys = metric_keys_of(template.render(**context))
    glossary = attrs.evolve(page, metric_keys=keys)
    before = [s.section.shown(glossary) if s.section.key == "glossary" else s for s in before]
    return template.render(**_context(report, page, before, systems, after))


def _context(
    report: Report, page: Page, before: list[Shown], systems: list[SystemSection], after: list[Shown]
) -> dict[str, Any]:
    """What the page's template is filled with: the summary's sections, the appendices (lettered), the assets."""
    script = _asset("report.js")
    script_hash = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    appendices = [s.section.key for s in before if s.section.part == APPENDIX]
    appendices += [s.anchor for s in systems] + [s.section.key for s in after]
    return {
        "report": report,
        "provenance": report.provenance,
        "counts": _counts(report),
        "biased_low": _biased_low(page, [*before, *after], systems),
        "biased_low_note": BIASED_LOW_NOTE,
        "summary": [s for s in before if s.section.part == SUMMARY],
        "before": [s for s in before if s.section.part == APPENDIX],
        "systems": systems,
        "after": after,
        "letters": {anchor: _letter(k) for k, anchor in enumerate(appendices)},
        "not_applicable": NOT_APPLICABLE_CLASS,
        "stylesheet": _asset("report.css"),
        "script": script,
        "script_hash": script_hash,
        "not_computed": NOT_COMPUTED,
    }


def _letter(index: int) -> str:
    """The letter of the appendix number *index* (from 0): A to Z, then AA, AB, ..."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def _biased_low(page: Page, shown: list[Shown], systems: list[SystemSection]) -> bool:
    """Whether the note under the headlines that LIDmax's interval is biased low is due.

    It is when a headline card, the comparison table or a per-speaker table shows an
    interval of LIDmax.
    """
    comparison = next(s.content for s in shown if s.section.key == "comparison")
    tables = [comparison.table]
    for system in systems:
        for sub in system.subsections:
            if sub.section.key == "per-speaker":
                tables += [item.table for item in sub.items]
    return any(c.biased_low for c in page.cards) or any(
        cell.biased_low for table in tables for row in table.rows for cell in row
    )


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


def check_report_dir(
    folder: StrPath,
    label: str = "--report",
    *,
    outputs: Mapping[str, StrPath | None] | None = None,
    inputs: Iterable[StrPath | None] = (),
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
    inputs : iterable of path or None
        The run's inputs (None: not given): the page may not be one, nor lie inside an
        input folder (:func:`lidframe.data.runpaths.refuse_outputs_on_inputs`).

    Returns
    -------
    pathlib.Path
        The page's path, ``folder / "report.html"``.

    Raises
    ------
    InputError
        The folder cannot be made or written, ``report.html`` there is a folder or a
        read-only file, the page or its folder is another output, the page is an input
        of the run or lies inside an input folder, or jinja2 or matplotlib is missing
        (:func:`require_renderer`).
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
    runpaths.refuse_outputs_on_inputs({label: target}, inputs=inputs)  # not an input, nor inside an input folder
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
