"""What a grid report must warn about: stale or unchecked cells, and per-trial files not checked.

The warnings open ``summary.md``, ``summary.html``, ``table.tex`` and ``report.html``
(:func:`report_warnings`); ``lidframe report`` also prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lidframe.data.fileio import StrPath

if TYPE_CHECKING:
    from lidframe.grid.freshness import Freshness
    from lidframe.grid.records import FinishedCell

__all__ = ["freshness_warnings", "report_warnings"]


def freshness_warnings(freshness: Freshness, results: Sequence[FinishedCell], out_dir: StrPath) -> list[str]:
    """What a report of *results* must say about their freshness: one line per problem, none when current.

    Parameters
    ----------
    freshness : Freshness
        From :func:`lidframe.grid.freshness.check_freshness`.
    results : sequence of FinishedCell
        The reported cells (:func:`~lidframe.grid.report.write.load_results`).
    out_dir : str or os.PathLike
        The grid folder (named in the rerun command).
    """
    from collections import Counter

    if freshness.unchecked is not None:
        return [
            "These numbers were not checked against the current inputs: "
            f"{freshness.unchecked}. A cell is current only if lidframe grid would not recompute it."
        ]
    stale = [r for r in results if r.cell_id in freshness.stale]
    if not stale:
        return []
    reasons = Counter(freshness.stale[r.cell_id] for r in stale).most_common()
    why = "; ".join(f"{reason} ({count})" for reason, count in reasons[:3])
    more = f"; {len(reasons) - 3} other reasons" if len(reasons) > 3 else ""
    components = ("system", "attacker", "mechanism", "scenario", "calibrator", "prior")
    cells = ", ".join(
        " / ".join(str(r[k]) for k in components if k != "scenario" or r.scenario is not None)  # "-" for none
        + f" / seed {r.seed}"
        for r in stale[:8]
    )
    cells += f" and {len(stale) - 8} more" if len(stale) > 8 else ""
    return [
        f"STALE: {len(stale)} of {len(results)} cells were computed from inputs that have changed since ({why}{more}), "
        f"so their numbers are not those of the current inputs: {cells}. "
        f"Rerun lidframe grid {freshness.spec} --out {out_dir} to recompute them."
    ]


def report_warnings(freshness: Freshness, results: Sequence[FinishedCell], out_dir: StrPath) -> list[str]:
    """Everything a report of *results* must warn about: :func:`freshness_warnings`, then unchecked per-trial files.

    Parameters
    ----------
    freshness : Freshness
        From :func:`lidframe.grid.freshness.check_freshness`.
    results : sequence of FinishedCell
        The reported cells (:func:`~lidframe.grid.report.write.load_results`); a cell whose ``per_trial_sha256`` is
        None (a store of an earlier layout) could not have its per-trial file checked.
    out_dir : str or os.PathLike
        The grid folder.
    """
    warnings = freshness_warnings(freshness, results, out_dir)
    unchecked = sum(1 for r in results if r.per_trial_sha256 is None)
    if unchecked:
        warnings.append(
            f"The per-trial files of {unchecked} of {len(results)} cells were not checked against their cells: "
            f"{Path(out_dir) / 'results.sqlite'} was written by an earlier lidframe, which stored no digest of them. "
            f"Rerun lidframe grid {freshness.spec or 'SPEC'} --out {out_dir} to recompute those cells and record them."
        )
    return warnings
