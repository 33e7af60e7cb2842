"""The page's section "Privacy and utility": what each system's anonymisation costs the speech.

Its record is a :class:`SystemUtility` per system (the report's
:attr:`~lidframe.report.model.Report.utility`): the system's
:class:`lidframe.utility.Utility` record and the report's rows it belongs to, checked
and built by :func:`utility_of`.  The section shows the table (:func:`utility_table`:
WER and ρ_F0 with their intervals) and the privacy-utility chart
(:mod:`lidframe.report.sections.utility_chart`), and says why it does not apply to a
page without a utility (:func:`absent`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from lidframe.errors import InputError, preview, quote
from lidframe.report.sections.utility_chart import utility_figures, utility_interval
from lidframe.report.tables import Column, Table, count, decimal3, number_cell, percent, text_cell

if TYPE_CHECKING:
    from lidframe.report.figures import InlineFigure
    from lidframe.report.model import Report
    from lidframe.report.sections import Page
    from lidframe.utility import Utility

__all__ = [
    "SystemUtility",
    "check_utility",
    "utility_of",
    "utility_intervals_note",
    "utility_table",
    "UtilitySection",
    "show",
    "absent",
]


def _labels_tuple(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(item) for item in items)


@attrs.frozen(eq=False)
class SystemUtility:
    """What a system's anonymisation costs the speech, and the report's rows (its attackers, rungs) it belongs to.

    Attributes
    ----------
    system : str
        The system, as the builder's caller names it (``report_from_results``'s
        ``systems=`` values, or a label that is its own system; a grid's system).
    utility : Utility
        :func:`lidframe.utility.utility` of the system's speech (WER, ρ_F0 and their
        intervals).
    labels : tuple of str
        The labels of the report's rows of this system (each a point of the
        privacy-utility chart), in page order; at least one.
    """

    system: str
    utility: Utility
    labels: tuple[str, ...] = attrs.field(converter=_labels_tuple)


def check_utility(entries: Iterable[SystemUtility], labels: Sequence[str]) -> None:
    """Check a report's utility against its rows: each entry a SystemUtility whose labels are rows, none shared.

    Parameters
    ----------
    entries : iterable of SystemUtility
    labels : sequence of str
        The labels of the report's rows.

    Raises
    ------
    InputError
        An entry that is not a SystemUtility, without labels, with a label that is not a
        row of the report, or a row that belongs to two entries.
    """
    owner: dict[str, str] = {}
    for entry in entries:
        if not isinstance(entry, SystemUtility):
            raise InputError(f"a report's utility must be SystemUtility records, got a {type(entry).__name__}")
        if not entry.labels:
            raise InputError(f"utility of {quote(entry.system)}: no row of the report belongs to it")
        for label in entry.labels:
            if label not in labels:
                raise InputError(
                    f"utility of {quote(entry.system)}: {quote(label)} is not a system of the report "
                    f"(its labels: {preview(labels)})"
                )
            if label in owner:
                raise InputError(
                    f"utility: row {quote(label)} belongs to both {quote(owner[label])} and {quote(entry.system)}"
                )
            owner[label] = entry.system


def utility_of(
    utility: Mapping[str, Utility] | None, utility_note: str | None, rows: Sequence[tuple[str, str]], *, where: str
) -> tuple[tuple[SystemUtility, ...], str | None]:
    """Each system's utility with the labels of its rows, checked; and the note, checked.

    Parameters
    ----------
    utility : mapping of str to Utility, or None
        system -> :func:`lidframe.utility.utility` of its speech.
    utility_note : str or None
    rows : sequence of (str, str)
        (label, system) of every row of the report, in page order.
    where : str
        What the systems are (``"the systems"``, ``"the grid's systems"``), for the message.

    Returns
    -------
    tuple of SystemUtility, str or None
        In the order of the systems' first rows.

    Raises
    ------
    InputError
        *utility* not a mapping, a value that is not a Utility record, a system that is
        none of the report's (naming them), or a note that is not a non-empty string.
    """
    if utility_note is not None and (not isinstance(utility_note, str) or not utility_note.strip()):
        raise InputError(f"utility_note must be a non-empty sentence, got {utility_note!r:.80}")
    note = None if utility_note is None else utility_note.strip()
    if utility is None:
        return (), note
    if not isinstance(utility, Mapping):
        raise InputError(f"utility must map each system to its Utility record, got {type(utility).__name__}")
    from lidframe.utility.evaluate import Utility

    systems = list(dict.fromkeys(system for _, system in rows))
    for system, record in utility.items():
        if not isinstance(record, Utility):
            raise InputError(
                f"utility of {quote(str(system))} is a {type(record).__name__}, not a lidframe.utility.Utility record "
                "(lidframe.utility.utility(), or read_utility() of lidframe utility --json)"
            )
        if system not in systems:
            raise InputError(f"utility given for {quote(str(system))}, which is not one of {where}: {preview(systems)}")
    out = tuple(
        SystemUtility(system, utility[system], [label for label, owner in rows if owner == system])
        for system in systems
        if system in utility
    )
    return out, note


def _utility_bootstrap_text(utility: Utility) -> str:
    settings = utility.bootstrap or {}
    if not utility.intervals or not settings:
        return "no intervals (measured without a bootstrap; lidframe utility --bootstrap adds them)"
    level = settings.get("level")
    words = [f"{100 * float(level):g} % bootstrap intervals" if level is not None else "bootstrap intervals"]
    detail = []
    if settings.get("n_boot") is not None:
        unit = {"speaker": "speakers", "trial": "utterances"}.get(str(settings.get("unit")))
        detail.append(f"{count(settings['n_boot'])} resamples" + (f" of {unit}" if unit else ""))
    for key, name in (("method", ""), ("seed", "seed ")):
        if settings.get(key) is not None:
            detail.append(f"{name}{settings[key]}")
    return words[0] + (f" ({', '.join(detail)})" if detail else "")


def utility_intervals_note(entries: Sequence[SystemUtility]) -> str:
    """What the brackets of the utility table are: one sentence when every system's are alike, else per system.

    ``"In brackets: 95 % bootstrap intervals (1,000 resamples of speakers, bca, seed 0)."``,
    or ``"In brackets: plain: ...; mcadams: no intervals (...)."``.
    """
    texts = {entry.system: _utility_bootstrap_text(entry.utility) for entry in entries}
    if len(set(texts.values())) == 1:
        return f"In brackets: {next(iter(texts.values()))}."
    return "In brackets: " + "; ".join(f"{system}: {text}" for system, text in texts.items()) + "."


def utility_table(report: Report) -> Table | None:
    """One row per system with a utility: WER and ρ_F0 with their intervals, the sizes, the recogniser, the speech.

    Parameters
    ----------
    report : Report

    Returns
    -------
    Table or None
        None when no system of *report* has a utility.  WER as a percentage, ρ_F0 with
        three decimals (:data:`NOT_COMPUTED` without the original speech, or where no
        utterance had frames voiced in both), each with its interval in brackets.
    """
    if not report.utility:
        return None
    columns = (
        Column("system", False),
        Column(
            "WER",
            True,
            "word error rate of the recogniser on the system's speech: substitutions + deletions + insertions over "
            "the reference words, summed over the utterances",
            key="wer",
        ),
        Column(
            "ρ_F0",
            True,
            "mean over the utterances of the correlation of each one's F0 contour with the original's (— without "
            "the original speech)",
            key="rho_f0",
        ),
        Column("utterances", True, "utterances recognised"),
        Column("speakers", True, "speakers of the speech (its utt2spk): the bootstrap's units"),
        Column("reference words", True, "words of the reference transcripts, the WER's denominator"),
        Column("recogniser", False, "the recogniser with its settings"),
        Column("speech", False, "the data dir measured (its wav.scp and text)"),
    )
    rows = []
    for entry in report.utility:
        u = entry.utility
        rows.append(
            (
                text_cell(entry.system),
                number_cell(u.wer, percent, utility_interval(u, "wer")),
                number_cell(u.rho_f0, decimal3, utility_interval(u, "rho_f0")),
                number_cell(u.utterances, count),
                number_cell(u.speakers, count),
                number_cell(u.reference_words, count),
                text_cell(u.recogniser),
                text_cell(u.data),
            )
        )
    caption = "Utility: what each system's anonymisation costs the speech (word error rate and ρ_F0)"
    return Table("utility-table", caption, columns, tuple(rows))


@attrs.frozen
class UtilitySection:
    """What the section shows: its table, the brackets' note, the caller's note, the systems left out, the chart."""

    table: Table
    intervals: str
    note: str | None
    left_out: tuple[str, ...]
    figures: tuple[InlineFigure, ...]


def show(page: Page) -> UtilitySection:
    """The section of *page* (which has a utility: :func:`absent` says None)."""
    report = page.report
    table = utility_table(report)
    assert table is not None
    charted = {label for entry in report.utility for label in entry.labels}
    left_out = tuple(dict.fromkeys((s.system or s.name) for s in report.systems if s.label not in charted))
    figures = tuple(utility_figures(page.maker))
    return UtilitySection(table, utility_intervals_note(report.utility), report.utility_note, left_out, figures)


#: How to measure a system's utility, the first step of every page's advice.
_MEASURE_UTILITY = (
    "lidframe utility --data DIR --reference ORIGINAL --bootstrap --json U.json measures it on the system's "
    "(anonymised) speech, against the original speech it was made from (docs/utility.md)"
)


def absent(report: Report) -> str | None:
    """Why the section does not apply to *report* (no system's utility), and how its kind of page gets one.

    The caller's note on why there is none (the demo's: no recogniser here) comes first.
    None when it applies.
    """
    if report.utility:
        return None
    reason = _reason(report)
    if report.utility_note:
        return f"{report.utility_note.rstrip('.')}. {reason}"
    return reason


def _reason(report: Report) -> str:
    """Why a page has no privacy-utility section, and how the kind of page gets one."""
    if report.kind == "dp-audit":
        return (
            "Not applicable: a DP audit releases speaker embeddings through the Gaussian mechanism; there is no "
            "speech whose words a recogniser could get wrong, so no word error rate or ρ_F0 to set beside the "
            "disclosure."
        )
    if report.kind == "grid":
        then = (
            'then give each system of the grid spec its utility = "U.json" key, and lidframe report draws the '
            "privacy-utility chart"
        )
    else:
        then = (
            "then lidframe evaluate --report DIR --utility U.json draws the privacy-utility chart; from Python, "
            "report_from_results(..., utility={system: read_utility('U.json')})"
        )
    return (
        "Not measured: no system's utility (the word error rate of a recogniser and ρ_F0 on its speech) was given, "
        f"so the disclosure above stands without what the anonymisation costs the speech. {_MEASURE_UTILITY}; "
        f"{then}. The real-voice demo (lidframe demo) measures it for its systems."
    )
