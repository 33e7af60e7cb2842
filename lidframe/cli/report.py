"""``lidframe report``: tables, figures and ``report.html`` of a grid output folder."""

from __future__ import annotations

import argparse
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
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe.grid.report import write_report

    written = write_report(args.out_dir, figures=not args.no_figures)
    pages = [path for path in written if Path(path).name == "report.html"]
    print("\n".join(f"wrote {path}" for path in written if path not in pages))
    summary = Path(args.out_dir) / "report" / "summary.md"
    print()
    print(summary.read_text(encoding="utf-8"))
    for page in pages:  # the page last, where the eye lands
        print(f"wrote the audit report to {page}")
    return 0
