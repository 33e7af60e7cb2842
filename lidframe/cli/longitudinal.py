"""``lidframe longitudinal``: disclosure when the attacker fuses k utterances of one speaker."""

from __future__ import annotations

import argparse

from lidframe.cli.options import (
    CheckedFlag,
    add_bootstrap_arguments,
    add_output_arguments,
    add_scoreset_arguments,
    bootstrap_from_args,
    check_output_paths,
    comma_list,
    positive_int,
    refuse_prior,
    spec_files,
)
from lidframe.report.text import format_value, text_table

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "longitudinal", help="disclosure when the attacker fuses k utterances of one speaker"
    )
    add_scoreset_arguments(parser, prior=False, znorm=False)
    refuse_prior(
        parser,
        "the longitudinal attacker is a closed-set analysis, LID under a uniform prior over the N enrolled "
        "speakers (outsider trials left out)",
    )
    parser.add_argument(
        "--k", default="1,2,4,8,all", help="group sizes, comma-separated; 'all' = every trial (default 1,2,4,8,all)"
    )
    parser.add_argument(
        "--fusion",
        choices=("sum", "mean", "temperature"),
        default="sum",
        help="how the k utterances' LLRs are fused: summed (default), averaged, or summed and scaled by a factor fitted on dev",
    )
    parser.add_argument(
        "--groups",
        type=int,
        action=CheckedFlag,
        check=positive_int,
        default=10,
        help="groups drawn per speaker for 1 < k < its trials (default 10)",
    )
    add_bootstrap_arguments(parser, switch=False, unit=False, method=False, resample=True)
    parser.add_argument("--dp-mu", type=float, help="also print the composed Gaussian-mechanism bounds at mu sqrt(k)")
    add_output_arguments(parser, json="write the rows as JSON", plot="write the plot (needs matplotlib)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe.analyses.longitudinal import longitudinal
    from lidframe.data.fileio import staged_outputs, write_json
    from lidframe.report.analysis_figures import plot_longitudinal

    inputs = [args.dev, args.eval, *spec_files("calibrator", args.calibrator)]
    json_out, plot_out = check_output_paths({"--json": args.json, "--plot": args.plot}, inputs=inputs)
    result = longitudinal(
        args.dev,
        args.eval,
        comma_list(args.k, "--k"),
        fusion=args.fusion,
        calibrator=args.calibrator,
        groups_per_speaker=args.groups,
        bootstrap=(bootstrap := bootstrap_from_args(args)),
        dp_mu=args.dp_mu,
        seed=args.seed,
    )
    rows = result.rows
    print(
        f"longitudinal attacker: {args.fusion} fusion of k utterances per speaker, calibrator {args.calibrator}, "
        f"N = {rows[0].n_enrolled} (LID <= log2 N = {rows[0].log2_n:.3f} bit); "
        f"{args.bootstrap_level:.0%} speaker-bootstrap CI of ALID ({bootstrap.covers(brief=True)})"
    )
    dp = args.dp_mu is not None
    header = ["k", "groups", "skip", "temp", "ALID", "[low", "high]", "PDR", "LID+", "LID-", "q99", "LIDmax"]
    if dp:
        header += ["mu_k", "EERbnd", "MIbnd"]
    body = []
    for r in rows:
        ci = r.intervals["alid"].bounds if r.intervals and "alid" in r.intervals else (None, None)
        line = [str(r.k), str(r.n_groups), str(r.n_speakers_skipped), format_value(r.temperature, ".2f"),
                *(format_value(v) for v in (r.alid, ci[0], ci[1], r.pdr, r.lid_pos, r.lid_neg, r.lid_q99, r.lid_max))]  # fmt: skip
        if r.dp is not None:
            line += [
                format_value(r.dp.mu_k, ".2f"),
                format_value(r.dp.eer_bound),
                format_value(r.dp.mi_bound_bits, ".2f"),
            ]
        body.append(line)
    print(text_table(header, body))
    with staged_outputs():  # both files or, on an error, neither
        if json_out is not None:
            write_json(json_out, result.to_dict())
        if plot_out is not None:
            plot_longitudinal(result, plot_out, title=f"Longitudinal disclosure ({args.fusion} fusion)")
    if plot_out is not None:
        print(f"\nwrote the plot to {plot_out}")
    return 0
