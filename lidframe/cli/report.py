"""``lidframe report``: tables, figures and ``report.html`` of a grid output folder.

With ``--policy P.toml`` every finished cell is judged against the verdict policy
(:func:`lidframe.analyses.verdict.judge` of its stored summary and legal block): the table
of verdicts is printed and shown on the page, and the exit status is
:data:`~lidframe.analyses.verdict.EXIT_NOT_MET` unless every cell passes.

Where a system has several attacks (attackers, rungs, calibrators, priors; score-file
systems named ``SYSTEM/ATTACKER``), the worst case across them is printed after the
tables (:func:`lidframe.report.text.format_worst_case`), shown on the page and written to
``report/summary.json``; with a policy, each system is judged on its worst case, and so
fails where any of its attackers makes it fail.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lidframe.analyses.verdict import Policy
    from lidframe.grid.records import FinishedCell

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="tables, figures and report.html of a grid output folder (into OUT_DIR/report/)"
    )
    parser.add_argument(
        "out_dir", metavar="OUT_DIR", nargs="?", default="grid-out", help="grid output folder (default grid-out)"
    )
    parser.add_argument(
        "--no-figures",
        action="store_true",
        help="only the tables: no PNG figures and no report.html (which need matplotlib and jinja2)",
    )
    parser.add_argument(
        "--spec",
        metavar="SPEC",
        help="the grid spec to check the cells' inputs against and to read the systems' utility files from "
        "(default: the one OUT_DIR/grid.json names); cells whose inputs changed since are reported as stale; a "
        "SPEC that is not there or not a valid grid spec is an error",
    )
    parser.add_argument(
        "--policy",
        metavar="P.toml",
        help="judge every cell against a verdict policy (TOML limits such as ALID <= x bits, docs/verdict.md), "
        "interval-aware; the verdict table is printed and shown on report.html, the policy file's SHA-256 among "
        "its inputs; exit status 3 unless every cell passes",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe.analyses.verdict import EXIT_NOT_MET, read_policy
    from lidframe.data.runpaths import refuse_outputs_on_inputs
    from lidframe.grid.freshness import check_freshness
    from lidframe.grid.report.staleness import report_warnings
    from lidframe.grid.report.write import load_results, write_report

    # the page and tables go to OUT_DIR/report/: it may not hold the spec or the policy, nor lie inside an input
    report_dir = Path(args.out_dir) / "report"
    refuse_outputs_on_inputs(folders={"OUT_DIR/report": report_dir}, inputs=[args.spec, args.policy])
    policy = None if args.policy is None else read_policy(args.policy)  # a bad policy: one line, before any work
    freshness = check_freshness(args.out_dir, spec_path=args.spec)  # a --spec that is not a grid spec: exit 2
    written = write_report(args.out_dir, figures=not args.no_figures, freshness=freshness, policy=policy)
    cells = load_results(args.out_dir)
    for warning in report_warnings(freshness, cells, args.out_dir):
        warnings.warn(warning, stacklevel=1)  # printed as one line, "lidframe: warning: ..."
    pages = [path for path in written if Path(path).name == "report.html"]
    print("\n".join(f"wrote {path}" for path in written if path not in pages))
    summary = Path(args.out_dir) / "report" / "summary.md"
    print()
    print(summary.read_text(encoding="utf-8"))
    outcome = "pass" if policy is None else _print_verdicts(policy, cells)
    _print_worst_case(cells, args.out_dir, policy)
    for page in pages:  # the page last, where the eye lands
        print(f"wrote the audit report to {page}")
    return 0 if outcome == "pass" else EXIT_NOT_MET


def _print_verdicts(policy: Policy, cells: Sequence[FinishedCell]) -> str:
    """Judge every finished cell against *policy*, print the table, and return the outcome over all of them.

    Each cell is judged on its stored summary and legal block, as the page judges it, and
    named by its components (:attr:`FinishedCell.name <lidframe.grid.records.FinishedCell.name>`).
    """
    from lidframe.analyses.verdict import judge, overall_outcome
    from lidframe.report.text import format_verdicts

    verdicts = [judge(policy, c.summary, c.legal, system=c.name) for c in cells]
    print()
    print(format_verdicts(verdicts))
    # over every cell, as over each system's worst case across its attackers: any fail fails
    return overall_outcome(v.outcome for v in verdicts)


def _print_worst_case(cells: Sequence[FinishedCell], out_dir: str, policy: Policy | None) -> None:
    """Print each system's worst case across its attackers (and its verdict), where a system has several."""
    from lidframe.report.build_grid import grid_worst_case
    from lidframe.report.text import format_worst_case

    block = grid_worst_case(cells, out_dir=out_dir, policy=policy)
    if block is not None:
        print()
        print(format_worst_case(block))
