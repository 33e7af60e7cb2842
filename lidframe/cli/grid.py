"""``lidframe grid``: run a systems x attackers x calibrators x priors grid (cached, resumable)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("grid", help="run a systems x attackers x calibrators x priors grid (resumable)")
    parser.add_argument("spec", metavar="SPEC.toml", help="the grid spec (docs/grids.md; e.g. examples/grid.toml)")
    parser.add_argument("--out", default="grid-out", metavar="DIR", help="output folder (default grid-out)")
    parser.add_argument(
        "--backend",
        choices=("local", "dask"),
        default="local",
        help="local worker processes (default) or a dask.distributed cluster (--scheduler)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes of the local backend (default 1)")
    parser.add_argument("--scheduler", metavar="ADDR", help="dask.distributed scheduler address (backend dask)")
    parser.add_argument(
        "--force", action="store_true", help="recompute every cell (stored cells whose inputs changed always are)"
    )
    parser.add_argument("--no-resume", action="store_true", help="same as --force")
    parser.add_argument(
        "--progress",
        action="store_true",
        help="show progress bars while the spec is checked, the cells are planned and computed",
    )
    parser.set_defaults(run=run)


def _note(line: str) -> None:
    """A status line on stderr (a large grid says what it checks and plans before it goes quiet for seconds)."""
    print(f"lidframe: {line}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from lidframe.data.runpaths import refuse_outputs_on_inputs
    from lidframe.grid.runner import run_grid

    # the spec first, before it is read (run_grid checks the files it names, once it has read it)
    refuse_outputs_on_inputs(folders={"--out": args.out}, inputs=[args.spec])
    run = run_grid(
        args.spec,
        args.out,
        backend=args.backend,
        jobs=args.jobs,
        scheduler=args.scheduler,
        resume=not args.no_resume,
        force=args.force,
        progress=args.progress,
        log=print,
        note=_note,
    )
    recomputed = f" ({run.recomputed} stored with inputs that changed)" if run.recomputed else ""
    print(
        f"grid {args.spec}: {run.cells} cells, {run.skipped} already stored, {run.ok} computed"
        f"{recomputed}, {run.error} failed ({run.fits} calibrator fits, {run.scored} score sets "
        f"computed); store: {Path(args.out) / 'results.sqlite'}"
    )
    if run.error:
        print("failed cells are stored with their error; see lidframe report or the results.sqlite 'error' column")
    return 1 if run.error else 0
