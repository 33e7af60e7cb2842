"""Plain-text tables of LID summaries, one row per system (what the CLI prints)."""

from __future__ import annotations

import math

__all__ = ["SUMMARY_COLUMNS", "format_table"]

#: (summary key, column header, format) in printing order.
SUMMARY_COLUMNS = (
    ("n_enrolled", "N", "d"),
    ("log2_n", "log2N", ".2f"),
    ("n_trials", "T", "d"),
    ("n_impostor_trials", "imp", "d"),
    ("eer", "EER", ".3f"),
    ("cllr", "Cllr", ".3f"),
    ("min_cllr", "minCllr", ".3f"),
    ("alid", "ALID", ".3f"),
    ("pdr", "PDR", ".3f"),
    ("lid_pos", "LID+", ".3f"),
    ("lid_neg", "LID-", ".3f"),
    ("lid_q99", "LIDq99", ".3f"),
    ("lid_max", "LIDmax", ".3f"),
)


def _cell(value, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, fmt)


def format_table(rows, *, name_header: str = "system") -> str:
    """Format ``[(name, summary dict), ...]`` as an aligned text table.

    LID columns are in bits, EER a fraction, Cllr in bits; ``-`` marks an undefined
    value (e.g. LID- when no trial has LID <= 0).
    """
    header = [name_header] + [title for _, title, _ in SUMMARY_COLUMNS]
    body = [[str(name)] + [_cell(summary.get(key), fmt) for key, _, fmt in SUMMARY_COLUMNS] for name, summary in rows]
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    lines = []
    for r in [header] + body:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
