"""``lidframe report``: tables, figures and ``report.html`` of a grid output folder."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

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
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe.data.runpaths import refuse_outputs_on_inputs
    from lidframe.grid.freshness import check_freshness
    from lidframe.grid.report.staleness import report_warnings
    from lidframe.grid.report.write import load_results, write_report

    # the page and tables go to OUT_DIR/report/: it may not hold the spec, nor lie inside an input
    refuse_outputs_on_inputs(folders={"OUT_DIR/report": Path(args.out_dir) / "report"}, inputs=[args.spec])
    freshness = check_freshness(args.out_dir, spec_path=args.spec)  # a --spec that is not a grid spec: exit 2
    written = write_report(args.out_dir, figures=not args.no_figures, freshness=freshness)
    for warning in report_warnings(freshness, load_results(args.out_dir), args.out_dir):
        warnings.warn(warning, stacklevel=1)  # printed as one line, "lidframe: warning: ..."
    pages = [path for path in written if Path(path).name == "report.html"]
    print("\n".join(f"wrote {path}" for path in written if path not in pages))
    summary = Path(args.out_dir) / "report" / "summary.md"
    print()
    print(summary.read_text(encoding="utf-8"))
    for page in pages:  # the page last, where the eye lands
        print(f"wrote the audit report to {page}")
    return 0
