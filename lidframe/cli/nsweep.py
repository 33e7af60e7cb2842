"""``lidframe nsweep``: disclosure versus database size n (subsampled enrolment)."""

from __future__ import annotations

import argparse

from lidframe.cli.options import (
    CheckedFlag,
    add_output_arguments,
    add_renamed_flag,
    add_scoreset_arguments,
    add_threads_argument,
    check_output_paths,
    non_negative_int,
    refuse_prior,
    spec_files,
    write_outputs,
)
from lidframe.errors import InputError
from lidframe.report.text import format_value, text_table

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("nsweep", help="disclosure versus database size n (subsampled enrolment)")
    add_scoreset_arguments(parser, prior=False)
    refuse_prior(
        parser,
        "the N-sweep is a closed-set analysis, LID under a uniform prior over each trial's n enrolled candidates "
        "(outsider trials left out)",
    )
    parser.add_argument("--sizes", help="comma-separated database sizes (default: 2, 4, 8, ... and N)")
    parser.add_argument("--repeats", type=int, default=20, help="random distractor draws per size (default 20)")
    parser.add_argument(
        "--level", type=float, default=0.95, metavar="LEVEL", help="interval level over draws (default 0.95)"
    )
    add_renamed_flag(parser, "--ci-level", "--level", type=float)
    parser.add_argument(
        "--seed", type=int, action=CheckedFlag, check=non_negative_int, default=0, help="random seed (default 0)"
    )
    add_threads_argument(parser)
    add_output_arguments(parser, json="write the rows as JSON", plot="write the plot (needs matplotlib)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe.analyses.nsweep import nsweep
    from lidframe.core.engine import Engine
    from lidframe.report.analysis_figures import plot_nsweep

    inputs = [args.dev, args.eval, *spec_files("calibrator", args.calibrator)]
    json_out, plot_out = check_output_paths({"--json": args.json, "--plot": args.plot}, inputs=inputs)
    sizes = None
    if args.sizes:
        try:
            sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
        except ValueError:
            raise InputError(f"--sizes {args.sizes!r}: expected comma-separated integers") from None
    result = nsweep(
        args.dev,
        args.eval,
        args.calibrator,
        sizes=sizes,
        repeats=args.repeats,
        level=args.level,
        znorm_ddof=args.znorm_ddof,
        seed=args.seed,
        engine=Engine(threads=args.threads),
    )
    print(
        f"disclosure vs database size (eval N = {result.n_enrolled}, calibrator {result.calibrator}; "
        f"{args.repeats} random draws of distractors per size, {args.level:.0%} interval over draws)"
    )
    header = ["n", "log2n", "ALID", "[low", "high]", "PDR", "LIDmax", "[low", "high]"]
    body = [
        [str(r.n), format_value(r.log2_n, ".2f"),
         *(format_value(v) for v in (r.alid, r.alid_low, r.alid_high, r.pdr, r.lid_max, r.lid_max_low, r.lid_max_high))]
        for r in result.rows
    ]  # fmt: skip
    print(text_table(header, body))
    write_outputs(result, json_out, plot_out, plot_nsweep, "N-sweep plot")
    return 0
