"""Plain-text tables, the one aligner every ``lidframe`` command prints with.

:func:`text_table` lays out any header and rows (first column left-aligned, the others
right-aligned, two spaces between columns); :func:`format_table` is the LID comparison
table of evaluate summaries, one row per system, that the demos and ``evaluate`` print;
:func:`format_legal` the short block of the law's criteria that ``evaluate`` prints after it,
:func:`format_legal_systems` the same numbers of several systems, a row each (``voiceprivacy``);
:func:`format_verdict` a verdict policy's judgement of the run, limit by limit; :func:`format_verdicts` of
several systems (a grid's cells), a row each; :func:`format_worst_case` the worst case across
attackers, a row per system.

A missing value prints as ``-`` in every table: :func:`format_value` writes None and NaN
so, and :func:`text_table` writes so any cell that is None, a NaN or a NaN already
formatted (``nan``, ``-nan``, ``None``), whoever formatted it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lidframe.core.summary import Summary
from lidframe.metrics import catalogue
from lidframe.metrics.legal import SINGLING_OUT_CHANCE, linkability_chance

if TYPE_CHECKING:
    from lidframe.analyses.legal_criteria import LegalCriteria
    from lidframe.analyses.verdict import Verdict

__all__ = [
    "MISSING",
    "SUMMARY_COLUMNS",
    "format_legal",
    "format_legal_systems",
    "format_table",
    "format_value",
    "format_verdict",
    "format_verdicts",
    "format_worst_case",
    "is_missing",
    "summary_value",
    "text_table",
]

#: What a table prints for a missing value (None, NaN).
MISSING = "-"

#: Cells that are a missing value already formatted: str(None), and NaN as Python, numpy and
#: printf write it (``format(nan, "+.3f")`` is ``+nan``).
_MISSING_TEXT = frozenset({"none", "nan", "+nan", "-nan", "<na>"})

#: (summary key, column header, format) in printing order.
SUMMARY_COLUMNS = tuple((m.key, m.short, m.console_format()) for m in catalogue.table("console"))


def is_missing(value: Any) -> bool:
    """Whether *value* is a missing value: None, a NaN (Python, numpy), or one of those formatted as text."""
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip().lower() in _MISSING_TEXT
    if isinstance(value, numbers.Real):
        return math.isnan(value)
    return False


def format_value(value: Any, fmt: str = ".3f") -> str:
    """*value* formatted with *fmt*; ``-`` for None and NaN (numpy's too), strings as they are."""
    if is_missing(value):
        return MISSING
    if isinstance(value, str):
        return value
    return format(value, fmt)


def text_table(
    header: Sequence[str], rows: Iterable[Sequence[str]], *, align: str | None = None, rules: Iterable[int] = ()
) -> str:
    """Align *header* and *rows* (cells already text) as a table.

    Parameters
    ----------
    header : sequence of str
        Column titles.
    rows : iterable of sequences
        One sequence per row, as long as *header*: cells are text (or anything, written
        with ``str``); a missing value (:func:`is_missing`: None, NaN, ``"nan"``) is ``-``.
    align : str, optional
        One letter per column, ``l`` (pad on the right) or ``r`` (pad on the left); default
        ``l`` for the first column and ``r`` for the others (names, then numbers).
    rules : iterable of int
        Draw a line of ``-`` the width of the table after these body rows (0 = after the
        first body row).

    Returns
    -------
    str
        The lines joined by newlines, trailing blanks stripped.
    """
    body = [[MISSING if is_missing(cell) else str(cell) for cell in row] for row in rows]
    table = [list(header), *body]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    align = align or "l" + "r" * (len(header) - 1)
    lines = [
        "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(r, widths, align)).rstrip() for r in table
    ]
    for offset, after in enumerate(sorted(rules)):
        lines.insert(2 + after + offset, "-" * len(lines[0]))
    return "\n".join(lines)


def summary_value(summary: Summary | Mapping[str, Any], key: str) -> Any:
    """The value of metric *key* in a summary: a :class:`~lidframe.core.summary.Summary`'s (by
    :meth:`~lidframe.core.summary.Summary.value`), or a summary dict's (its JSON form); None where it has none."""
    if isinstance(summary, Summary):
        try:
            return summary.value(key)
        except KeyError:
            return None
    return summary.get(key)


def format_table(rows: Iterable[tuple[str, Summary | Mapping[str, Any]]], *, name_header: str = "system") -> str:
    """Format ``[(name, summary), ...]`` as the aligned LID comparison table (a Summary, or its JSON form).

    LID columns are in bits, EER a fraction, Cllr in bits; ``-`` marks an undefined
    value (e.g. LID- when no trial has LID <= 0).
    """
    header = [name_header] + [title for _, title, _ in SUMMARY_COLUMNS]
    body = [
        [str(name)] + [format_value(summary_value(summary, key), fmt) for key, _, fmt in SUMMARY_COLUMNS]
        for name, summary in rows
    ]
    return text_table(header, body)


def format_legal(criteria: LegalCriteria) -> str:
    """The law's criteria of an evaluation as text: pi_link at N' = 2 and N, pi_sing, each with its chance level.

    Parameters
    ----------
    criteria : LegalCriteria
        :func:`lidframe.analyses.legal_criteria.legal_criteria` of the run.

    Returns
    -------
    str
        A title line, a table (criterion, N' or N, estimate, low, high, chance) and a line
        for each criterion the eval set did not allow, saying why.
    """
    lines = ["singling out and linkability (docs/legal.md; inference is the LID above, chance 0 bit):"]
    rows = []
    curve, single = criteria.linkability, criteria.singling_out
    if curve is not None:
        shown = [p for p in curve.points if p.n_prime in (2, curve.n_enrolled)]
        for point in shown:
            at = f"N'={point.n_prime}" + (" = N (rank-1)" if point.n_prime == curve.n_enrolled else "")
            rows.append(["linkability pi_link", at] + _legal_numbers(point))
    if single is not None:
        rows.append(["singling out pi_sing", f"N={single.n}"] + _legal_numbers(single))
    if rows:
        lines.append(text_table(["criterion", "at", "estimate", "low", "high", "chance"], rows, align="llrrrr"))
    if single is not None:
        lines.append(
            f"pi_sing: {single.draws} seeded draws (seed {criteria.seed}) per enrolled speaker; chance e^-1 is the limit "
            "of many speakers and trials: a random attacker with few trials per speaker sits a little under it"
        )
    names = {"linkability": "linkability", "singling_out": "singling out"}
    lines += [f"{names[key]}: not computed: {why}" for key, why in criteria.absent.items()]
    return "\n".join(lines)


def _legal_numbers(record: Any) -> list[str]:
    """Estimate, low, high and chance of a linkability point or a singling-out record, as text."""
    estimate = record.pi_link if hasattr(record, "pi_link") else record.pi_sing
    return [format_value(v) for v in (estimate, record.low, record.high, record.chance)]


def format_legal_systems(rows: Iterable[tuple[str, LegalCriteria]], *, name_header: str = "system") -> str:
    """The law's criteria of several systems as text, a row each: :func:`format_legal`'s numbers, compact.

    Parameters
    ----------
    rows : iterable of (str, LegalCriteria)
        Each system's name and :func:`lidframe.analyses.legal_criteria.legal_criteria`
        (at least one).
    name_header : str
        The first column's title.

    Returns
    -------
    str
        A title line (with singling out's draws and seed), a table -- the system, N, then
        pi_link at N' = 2, pi_link at N' = N (the rank-1 rate) and pi_sing at N, each
        ``estimate [low, high]`` (the interval where one was computed) -- whose last row
        is the chance levels (1/N printed as a number where every row has the same N),
        and a line for each criterion a system's eval set did not allow, saying why (the
        systems that share a reason named on one line).
    """
    rows = list(rows)
    singles = [c.singling_out for _, c in rows if c.singling_out is not None]
    title = "singling out and linkability (docs/legal.md; inference is the LID above, chance 0 bit"
    if singles:
        title += f"; pi_sing: {singles[0].draws} seeded draws per enrolled speaker, seed {rows[0][1].seed}"
    body: list[list[str]] = []
    chances: set[float] = set()  # of pi_link(N): 1/N
    absent: dict[tuple[str, str], list[str]] = {}  # (criterion, why) -> the systems
    for name, criteria in rows:
        curve = criteria.linkability
        points = {} if curve is None else {p.n_prime: p for p in curve.points}
        rank1 = None if curve is None else points.get(curve.n_enrolled)
        chances.update([] if rank1 is None else [rank1.chance])
        cells = [_legal_cell(points.get(2)), _legal_cell(rank1), _legal_cell(criteria.singling_out)]
        body.append([name, str(criteria.n_enrolled), *cells])
        for key, why in criteria.absent.items():
            absent.setdefault((key, why), []).append(name)
    chance_n = format_value(next(iter(chances))) if len(chances) == 1 else "1/N"
    body.append(["chance", "", format_value(linkability_chance(2)), chance_n, format_value(SINGLING_OUT_CHANCE)])
    header = [name_header, "N", "pi_link N'=2", "pi_link N'=N (rank-1)", "pi_sing N"]
    lines = [title + "):", text_table(header, body, rules=[len(body) - 2])]
    names = {"linkability": "linkability", "singling_out": "singling out"}
    for (key, why), systems in absent.items():
        which = "every system" if len(systems) == len(rows) > 1 else ", ".join(systems)
        lines.append(f"{names[key]}: not computed ({which}): {why}")
    return "\n".join(lines)


def _legal_cell(record: Any) -> str:
    """``"0.950 [0.900, 1.000]"`` of a linkability point or a singling-out record (no interval: the estimate alone)."""
    if record is None:
        return MISSING
    estimate = format_value(record.pi_link if hasattr(record, "pi_link") else record.pi_sing)
    if is_missing(record.low) or is_missing(record.high):
        return estimate
    return f"{estimate} [{format_value(record.low)}, {format_value(record.high)}]"


def format_verdict(verdict: Verdict) -> str:
    """A verdict policy judged against the run, as text: the outcome, then one row per limit.

    Parameters
    ----------
    verdict : Verdict
        :func:`lidframe.analyses.verdict.judge` of the run.

    Returns
    -------
    str
        A title line (the policy, its file's SHA-256 prefix and the outcome), a table
        (limit, estimate, low, high, threshold, outcome) and the reason of every limit that
        did not pass.
    """
    policy = verdict.policy
    lines = [
        f"verdict of policy {policy.name!r} ({policy.path}, sha256 {policy.sha256[:12]}): {verdict.outcome.upper()}"
    ]
    rows = [
        [j.limit.describe(plain=True)]
        + [format_value(v) for v in (j.estimate, j.low, j.high, j.threshold)]
        + [j.outcome]
        for j in verdict.judgements
    ]
    lines.append(text_table(["limit", "estimate", "low", "high", "threshold", "outcome"], rows, align="lrrrrl"))
    lines += [
        f"{j.limit.describe(plain=True)}: {j.outcome}: {j.reason}" for j in verdict.judgements if j.outcome != "pass"
    ]
    return "\n".join(lines)


def format_verdicts(verdicts: Sequence[Verdict]) -> str:
    """A verdict policy judged against several systems (a grid's cells), as text: a row per system, a column per limit.

    Parameters
    ----------
    verdicts : sequence of Verdict
        :func:`lidframe.analyses.verdict.judge` of each system, under one policy (at least one).

    Returns
    -------
    str
        A title line (the policy, its file's SHA-256 prefix, the outcome over every system
        and how many pass), then a table: the system, its outcome, and each limit's outcome.
    """
    from lidframe.analyses.verdict import overall_outcome

    policy = verdicts[0].policy
    outcomes = [v.outcome for v in verdicts]
    overall = overall_outcome(outcomes)
    lines = [
        f"verdict of policy {policy.name!r} ({policy.path}, sha256 {policy.sha256[:12]}): {overall.upper()} "
        f"({outcomes.count('pass')} of {len(outcomes)} pass)"
    ]
    header = ["system", "verdict", *(limit.describe(plain=True) for limit in policy.limits)]
    rows = [[v.system, v.outcome, *(j.outcome for j in v.judgements)] for v in verdicts]
    lines.append(text_table(header, rows, align="l" * len(header)))
    return "\n".join(lines)


def _pick_text(pick: Mapping[str, Any] | None) -> tuple[str, str]:
    """(attacker, ``"0.52 [0.41, 0.63]"``) of one pick of a ``worst_case`` block, ``*`` after an unclear attacker."""
    if pick is None:
        return MISSING, MISSING
    value = format_value(pick["estimate"], ".2f")
    if pick["low"] is not None and pick["high"] is not None:
        value += f" [{format_value(pick['low'], '.2f')}, {format_value(pick['high'], '.2f')}]"
    return str(pick["attacker"]) + ("" if pick["clear"] else " *"), value


def format_worst_case(block: Mapping[str, Any]) -> str:
    """The worst case across attackers as text: per system, its worst attacker by ALID and by LID q99.

    Parameters
    ----------
    block : mapping
        The ``worst_case`` block of ``summary.json``
        (:func:`lidframe.analyses.worst_attacker.worst_case_json`).

    Returns
    -------
    str
        A title line, a table (the system, its number of attackers, the worst by ALID with
        its value and interval, the worst by LID q99 with its, and with a policy the
        system's verdict over its attackers), then a line for each pick that is not
        clearly the worst case (marked ``*``) and each limit an attacker fails or leaves undecided.
    """
    systems = block["systems"]
    judged = any("verdict" in entry for entry in systems.values())
    header = ["system", "attackers", "worst by ALID", "ALID [interval]", "worst by LIDq99", "LIDq99 [interval]"]
    rows, notes = [], []
    for system, entry in systems.items():
        row = [system, str(len(entry["attackers"]))]
        for key in ("alid", "lid_q99"):
            row += _pick_text(entry[key])
            if entry[key] is not None and not entry[key]["clear"]:
                notes.append(f"* {system}, {catalogue.metric(key).short}: {entry[key]['note']}")
        if judged:
            row.append(entry["verdict"]["outcome"] if "verdict" in entry else MISSING)
        rows.append(row)
        for limit in entry.get("verdict", {}).get("limits", []):
            if limit["outcome"] != "pass":
                notes.append(f"{system}: {limit['limit']}: {limit['outcome']} under {limit['attacker']}")
    if judged:
        header.append("verdict")
    title = "worst case across attackers (bits, with intervals where computed)"
    if "outcome" in block:
        title += f": the policy judged on each system's worst attacker: {block['outcome'].upper()}"
    return "\n".join([title, text_table(header, rows, align="lrlrlrl"[: len(header)]), *notes])
