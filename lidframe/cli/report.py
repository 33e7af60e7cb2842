"""``lidframe report``: tables and figures of a grid output folder."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="tables and figures of a grid output folder")
    parser.add_argument(
        "out_dir", metavar="OUT_DIR", nargs="?", default="grid-out", help="grid output folder (default grid-out)"
    )
    parser.add_argument("--no-figures", action="store_true")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe.grid.report import write_report

    written = write_report(args.out_dir, figures=not args.no_figures)
    print("\n".join(f"wrote {path}" for path in written))
    summary = Path(args.out_dir) / "report" / "summary.md"
    print()
    print(summary.read_text())
    return 0
