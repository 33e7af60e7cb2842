"""The ``lidframe`` command line.

``lidframe evaluate --dev DEV --eval EVAL [--calibrator NAME] [--prior SPEC] [--znorm-ddof 0|1]
[--json OUT] [--per-trial OUT.csv]`` and ``lidframe demo [--out DIR]``.

Bad input prints one line, ``lidframe: error: ...``, on stderr and exits with status 2;
output files are written only after everything has been computed, each atomically, so a
failed run leaves none behind.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

from lidframe.components import describe_component
from lidframe.errors import InputError
from lidframe.fileio import write_json

__all__ = ["main", "build_parser", "parse_prior"]

EXIT_INPUT = 2


def parse_prior(spec: str, watch_weight: float = 10.0):
    """Build a prior from a CLI spec.

    ``watchlist:FILE`` (one speaker id per line; each listed speaker gets *watch_weight*
    times the prior mass of the others) and ``explicit:FILE`` (CSV ``enroll_spk,prior``)
    are shorthands; anything else is a component spec for
    :func:`lidframe.registry.create` (``uniform``, ``watchlist?file=ids.txt&weight=5``,
    ``mypkg.priors:Mine?x=1``).
    """
    from lidframe.priors import Explicit, WatchList, read_id_list, read_prior_table
    from lidframe.registry import create

    kind, sep, path = spec.partition(":")
    if kind == "watchlist" and sep and path:
        return WatchList(read_id_list(path), watch_weight)
    if kind == "explicit" and sep and path:
        return Explicit(read_prior_table(path))
    return create("prior", spec)


def _check_output_path(path, flag: str):
    if path is None:
        return None
    path = Path(path)
    if not path.parent.is_dir():
        raise InputError(f"{flag} {path}: folder {path.parent} does not exist")
    return path


def _cmd_evaluate(args) -> int:
    from lidframe.evaluate import evaluate
    from lidframe.fileio import atomic_path
    from lidframe.table import format_table

    json_out = _check_output_path(args.json, "--json")
    per_trial_out = _check_output_path(args.per_trial, "--per-trial")
    prior = parse_prior(args.prior, args.watch_weight)
    result = evaluate(
        args.dev,
        args.eval,
        calibrator=args.calibrator,
        prior=prior,
        znorm_ddof=args.znorm_ddof,
        ci=args.ci,
        n_boot=args.bootstrap,
        ci_level=args.ci_level,
        ci_unit=args.ci_unit,
        ci_method=args.ci_method,
        seed=args.seed,
    )
    s = result.summary
    print(f"dev:  {args.dev}  ({s['n_dev_trials']} trials x {s['n_dev_enrolled']} enrolled)")
    print(
        f"eval: {args.eval}  ({s['n_trials']} trials x N = {s['n_enrolled']} enrolled; "
        f"{s['n_impostor_trials']} impostor trials excluded)"
    )
    znorm = "none (raw scores)" if s["znorm_ddof"] is None else s["znorm_ddof"]
    print(f"calibrator: {s['calibrator']}   prior: {s['prior']}   z-norm ddof: {znorm}")
    print(f"LID <= -log2 prior(true speaker); uniform prior: LID <= log2 N = {s['log2_n']:.3f} bit")
    print()
    print(format_table([(Path(args.eval).stem, s)]))
    print(
        f"\nrank-1 rate {s['rank1_rate']:.3f}   rank disclosure {s['rank_disclosure_bits']:.3f} bit   "
        f"multiclass Cllr {s['cllr_mc']:.3f} bit   EER(threshold) {s['eer_threshold']:.3f}   "
        f"ZEBRA D_ECE {s['dece_bits']:.3f} bit, max|LLR| {s['max_abs_llr_log10']:.2f} ({s['zebra_tag']})   "
        f"D_sys {s['dsys']:.3f}"
    )
    if args.ci:
        print()
        print(format_ci_table(s))
    if json_out is not None:
        write_json(json_out, result.to_dict())
    if per_trial_out is not None:
        with atomic_path(per_trial_out) as tmp:
            result.to_frame().to_csv(tmp, index=False, float_format="%.12g", na_rep="nan")
    return 0


def _write_outputs(result, json_out, plot_out, plot, what: str) -> None:
    """Write the result's JSON record and its plot, where asked for (each atomically)."""
    if json_out is not None:
        write_json(json_out, result.to_dict())
    if plot_out is not None:
        plot(result, plot_out)
        print(f"\nwrote {what} to {plot_out}")


def _split_specs(values) -> list[str]:
    specs = [spec.strip() for value in values for spec in value.split(",") if spec.strip()]
    if not specs:
        raise InputError("--calibrators: give at least one calibrator spec")
    return specs


def _cmd_sensitivity(args) -> int:
    from lidframe.sensitivity_analysis import DEFAULT_CALIBRATORS, plot_lid_ccdf, sensitivity

    json_out = _check_output_path(args.json, "--json")
    plot_out = _check_output_path(args.plot, "--plot")
    specs = _split_specs(args.calibrators) if args.calibrators else list(DEFAULT_CALIBRATORS)
    prior = parse_prior(args.prior, args.watch_weight)
    result = sensitivity(args.dev, args.eval, specs, prior=prior, znorm_ddof=args.znorm_ddof)
    first = result.rows[0]
    print(f"eval: {args.eval}  (T = {first['n_trials']} trials, N = {first['n_enrolled']} enrolled; "
          f"LID <= log2 N = {first['log2_n']:.3f} bit under a uniform prior)")
    print(f"dev:  {args.dev}   prior: {describe_component(prior)}")
    print()
    print(format_sensitivity_table(result))
    _write_outputs(result, json_out, plot_out, plot_lid_ccdf, "LID CCDF plot")
    return 0


def format_sensitivity_table(result) -> str:
    """Text table: one row per calibrator, then the spread and the attacker's worst case."""
    from lidframe.sensitivity_analysis import SENSITIVITY_METRICS

    columns = [("alid", "ALID"), ("pdr", "PDR"), ("lid_pos", "LID+"), ("lid_neg", "LID-"), ("lid_q99", "LIDq99"),
               ("lid_max", "LIDmax"), ("cllr", "Cllr"), ("dev_logloss_bits", "devLogLoss")]
    def cell(v):
        return "-" if v is None or (isinstance(v, float) and v != v) else f"{v:.3f}"
    body = [[r["calibrator"]] + [cell(r[k]) for k, _ in columns] for r in result.rows]
    body.append(["spread (max-min)"] + [cell(result.spread[k]) for k, _ in columns])
    body.append(["worst case"] + [cell(result.worst_case[k]["value"]) for k, _ in columns])
    body.append(["  reached by"] + [result.worst_case[k]["calibrator"] or "-" for k, _ in columns])
    header = ["calibrator"] + [title for _, title in columns]
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    lines = ["  ".join([r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]).rstrip()
             for r in [header] + body]
    lines.insert(len(result.rows) + 1, "-" * len(lines[0]))
    directions = ", ".join(f"{t} {'max' if SENSITIVITY_METRICS[k] == 'max' else 'min'}" for k, t in columns)
    return "\n".join(lines) + f"\n(worst case = attacker's best calibrator per metric: {directions})"


def _cmd_demo(args) -> int:
    from lidframe.demo import run_demo

    table, _ = run_demo(args.out, seed=args.seed)
    print("lidframe demo: simulated systems (see docs/quickstart.md), logistic calibrator, uniform prior")
    print(table)
    if args.out:
        print(f"\nwrote score sets, summary.json and table.txt to {args.out}")
    return 0


def format_ci_table(summary: dict) -> str:
    """The bootstrap intervals of an evaluate summary as text."""
    settings = summary["ci_settings"]
    lines = [
        f"{settings['level']:.0%} bootstrap intervals ({settings['method']}, {settings['n_boot']} resamples of "
        f"{settings['unit']}s, seed {settings['seed']}; LIDmax: percentile, biased low -- prefer LIDq99)",
        f"{'metric':10s} {'estimate':>9s} {'low':>9s} {'high':>9s}",
    ]
    names = {"alid": "ALID", "pdr": "PDR", "lid_pos": "LID+", "lid_neg": "LID-", "lid_q99": "LIDq99",
             "lid_max": "LIDmax", "eer": "EER", "cllr": "Cllr"}
    for key, (low, high) in summary["ci"].items():
        fmt = lambda v: "-" if v is None or v != v else f"{v:.3f}"  # noqa: E731
        lines.append(f"{names.get(key, key):10s} {fmt(summary[key]):>9s} {fmt(low):>9s} {fmt(high):>9s}")
    return "\n".join(lines)


def _read_per_trial(path):
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype={"trial_id": str, "trial_spk": str}, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{path}: cannot read per-trial LID table ({str(exc).splitlines()[0]})") from None
    missing = [c for c in ("trial_id", "trial_spk", "lid_bits") if c not in frame.columns]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)}; expected the output of lidframe evaluate --per-trial"
        )
    lid = pd.to_numeric(frame["lid_bits"], errors="coerce").to_numpy()
    impostor = frame["impostor"].astype(str).eq("1").to_numpy() if "impostor" in frame.columns else np.zeros(len(frame), bool)
    bad = np.isnan(lid) & ~impostor
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InputError(f"{path}: line {r + 2} has lid_bits {frame['lid_bits'].iat[r]!r}; expected a number")
    keep = ~impostor
    return frame["trial_id"].to_numpy()[keep], frame["trial_spk"].to_numpy()[keep], lid[keep]


def _cmd_compare(args) -> int:
    from lidframe.compare import compare_systems

    json_out = _check_output_path(args.json, "--json")
    names = args.names.split(",") if args.names else [Path(p).stem for p in args.tables]
    if len(names) != len(args.tables):
        raise InputError(f"--names gives {len(names)} names for {len(args.tables)} tables")
    if len(set(names)) != len(names):
        raise InputError(f"system names must be unique, got {names}")
    systems = {name: _read_per_trial(path) for name, path in zip(names, args.tables)}
    rows = compare_systems(
        systems, unit=args.unit, n_boot=args.bootstrap, n_perm=args.permutations, level=args.level, seed=args.seed
    )
    print(
        f"paired comparison on {len(next(iter(systems.values()))[0])} trials: {args.level:.0%} paired bootstrap "
        f"intervals and permutation p-values over {args.unit}s ({args.bootstrap} resamples, {args.permutations} "
        f"permutations, seed {args.seed}); p_holm: Holm-adjusted within each metric"
    )
    header = f"{'A':>12s} {'B':>12s} {'metric':>8s} {'A':>8s} {'B':>8s} {'A-B':>8s} {'low':>8s} {'high':>8s} {'p':>8s} {'p_holm':>8s}"
    print(header)
    for r in rows:
        print(
            f"{r['a']:>12s} {r['b']:>12s} {r['metric']:>8s} {r['value_a']:8.3f} {r['value_b']:8.3f} {r['diff']:+8.3f} "
            f"{r['low']:+8.3f} {r['high']:+8.3f} {r['p_value']:8.4f} {r['p_holm']:8.4f}"
        )
    if json_out is not None:
        settings = {k: v for k, v in vars(args).items() if k != "func"}
        write_json(json_out, {"settings": settings, "rows": rows})
    return 0


def _cmd_nsweep(args) -> int:
    from lidframe.nsweep import n_sweep, plot_n_sweep

    json_out = _check_output_path(args.json, "--json")
    plot_out = _check_output_path(args.plot, "--plot")
    sizes = None
    if args.sizes:
        try:
            sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
        except ValueError:
            raise InputError(f"--sizes {args.sizes!r}: expected comma-separated integers") from None
    result = n_sweep(
        args.dev, args.eval, args.calibrator, sizes=sizes, repeats=args.repeats, level=args.level,
        znorm_ddof=args.znorm_ddof, seed=args.seed,
    )
    print(
        f"disclosure vs database size (eval N = {result.n_enrolled}, calibrator {result.calibrator}; "
        f"{args.repeats} random draws of distractors per size, {args.level:.0%} interval over draws)"
    )
    print(f"{'n':>6s} {'log2n':>6s} {'ALID':>7s} {'[low':>7s} {'high]':>7s} {'PDR':>6s} {'LIDmax':>7s} {'[low':>7s} {'high]':>7s}")
    for r in result.rows:
        print(
            f"{r['n']:6d} {r['log2_n']:6.2f} {r['alid']:7.3f} {r['alid_low']:7.3f} {r['alid_high']:7.3f} "
            f"{r['pdr']:6.3f} {r['lid_max']:7.3f} {r['lid_max_low']:7.3f} {r['lid_max_high']:7.3f}"
        )
    _write_outputs(result, json_out, plot_out, plot_n_sweep, "N-sweep plot")
    return 0


def _cmd_score(args) -> int:
    from lidframe.attackers.base import group_by_speaker
    from lidframe.kaldi_data import read_data_dir
    from lidframe.registry import create

    out = _check_output_path(args.out, "--out")
    if out.suffix.lower() not in (".npz", ".csv"):
        raise InputError(f"--out {out}: expected a .npz or .csv score-set file")
    extra = {}
    if args.checkpoint:
        extra["checkpoint"] = args.checkpoint
    if args.embeddings:
        extra["path"] = args.embeddings
    for flag in ("device", "batch_size", "cache_dir", "enrolment", "precision"):
        value = getattr(args, flag)
        if value is not None:
            extra[flag] = value
    attacker = create("attacker", args.attacker, **extra)
    enrol = read_data_dir(args.enrol)
    trials = [u for folder in args.trials for u in read_data_dir(folder)]
    scores = attacker.score(trials, group_by_speaker(enrol))
    scores.save(out)
    print(
        f"scored {scores.n_trials} trials against N = {scores.n_enrolled} enrolled speakers "
        f"({scores.n_impostor_trials} impostor trials) with {args.attacker}; wrote {out}"
    )
    return 0


def _embedding_split(table, enrol_dir, trials_dir):
    from lidframe.attackers.base import group_by_speaker
    from lidframe.dp_audit import EmbeddingSplit
    from lidframe.errors import preview
    from lidframe.kaldi_data import read_data_dir

    enrol = group_by_speaker(read_data_dir(enrol_dir))
    trials = read_data_dir(trials_dir)
    missing = [u.utt_id for utts in enrol.values() for u in utts if u.utt_id not in table]
    missing += [u.utt_id for u in trials if u.utt_id not in table]
    if missing:
        raise InputError(f"no embedding for utterance id(s) {preview(missing)}")
    return EmbeddingSplit(
        {s: np.stack([table[u.utt_id] for u in utts]) for s, utts in enrol.items()},
        np.stack([table[u.utt_id] for u in trials]),
        np.array([u.speaker for u in trials]),
        np.array([u.utt_id for u in trials]),
    )


def _cmd_dp_audit(args) -> int:
    from lidframe.dp_audit import dp_audit, plot_dp_audit, simulated_splits

    json_out = _check_output_path(args.json, "--json")
    plot_out = _check_output_path(args.plot, "--plot")
    try:
        mus = [float(x) for x in args.mu.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"--mu {args.mu!r}: expected comma-separated numbers") from None
    split_flags = (args.dev_enrol, args.dev_trials, args.enrol, args.trials)
    if args.embeddings:
        if not all(split_flags):
            raise InputError("--embeddings needs --dev-enrol, --dev-trials, --enrol and --trials data dirs")
        from lidframe.attackers.precomputed import read_embeddings

        table = read_embeddings(args.embeddings)
        dev = _embedding_split(table, args.dev_enrol, args.dev_trials)
        ev = _embedding_split(table, args.enrol, args.trials)
        source = str(args.embeddings)
    else:
        if any(split_flags):
            raise InputError("data dirs need --embeddings; without it the audit runs on simulated embeddings")
        dev, ev = simulated_splits(seed=args.seed)
        source = "simulated embeddings (lidframe.dp_audit.simulated_splits: N = 40, d = 64, 10 trials per speaker)"
    rows = dp_audit(dev, ev, mus, clip_norm=args.clip, sensitivity=args.sensitivity,
                    anonymise_enrolment=args.anonymise_enrolment, calibrator=args.calibrator, n_boot=args.bootstrap,
                    seed=args.seed)
    print(f"Gaussian speaker mechanism audit on {source}")
    print(f"clip U = {args.clip:g}, sensitivity {args.sensitivity}, enrolment "
          f"{'released through the mechanism' if args.anonymise_enrolment else 'clean (clipped)'}; "
          f"N = {rows[0]['n_enrolled']} (log2 N = {rows[0]['log2_n']:.2f}); 95% bootstrap intervals")
    print(f"{'mu':>5s} {'sigma':>6s} {'EERbound':>8s} {'bayesEER':>8s} {'cosEER':>7s} {'MIbound':>8s} "
          f"{'bayesALID':>9s} {'cosALID':>8s} {'bayesMax':>8s} {'cosMax':>7s}  check")
    for r in rows:
        check = "VIOLATION: " + "; ".join(r["violations"]) if r["violations"] else "ok"
        print(f"{r['mu']:5.2f} {r['sigma']:6.3f} {r['eer_bound']:8.3f} {r['bayes_eer']:8.3f} {r['cosine_eer']:7.3f} "
              f"{r['mi_bound_bits']:8.3f} {r['bayes_alid']:9.3f} {r['cosine_alid']:8.3f} {r['bayes_lid_max']:8.3f} "
              f"{r['cosine_lid_max']:7.3f}  {check}")
    if json_out is not None:
        write_json(json_out, {"rows": rows})
    if plot_out is not None:
        plot_dp_audit(rows, plot_out)
        print(f"\nwrote the audit plot to {plot_out}")
    return 1 if any(r["violations"] for r in rows) else 0


def _cmd_grid(args) -> int:
    from lidframe.grid import run_grid

    counts = run_grid(args.spec, args.out, backend=args.backend, jobs=args.jobs, scheduler=args.scheduler,
                      resume=not args.no_resume, force=args.force, progress=args.progress)
    print(
        f"grid {args.spec}: {counts['cells']} cells, {counts['skipped']} already stored, {counts['ok']} computed, "
        f"{counts['error']} failed ({counts['fits']} calibrator fits, {counts['scored']} score sets computed); "
        f"store: {Path(args.out) / 'results.sqlite'}"
    )
    if counts["error"]:
        print("failed cells are stored with their error; see lidframe report or the results.sqlite 'error' column")
    return 1 if counts["error"] else 0


def _cmd_report(args) -> int:
    from lidframe.report import write_report

    written = write_report(args.out_dir, figures=not args.no_figures)
    print("\n".join(f"wrote {path}" for path in written))
    summary = Path(args.out_dir) / "report" / "summary.md"
    print()
    print(summary.read_text())
    return 0


def _cmd_plugins(args) -> int:
    from lidframe import registry

    kinds = registry.KINDS if args.kind is None else (args.kind,)
    status = registry.check_all(args.kind) if args.check else {}
    rows = [("kind", "name", "target", "origin") + (("status",) if args.check else ())]
    for kind in kinds:
        for name, entry in registry.entries(kind).items():
            row = (kind, name, entry.target, entry.origin)
            if args.check:
                row += ("ok" if status.get((kind, name)) is None else "BROKEN (see warning)",)
            rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return 1 if any(v is not None for v in status.values()) else 0


def _add_ci_arguments(parser) -> None:
    parser.add_argument("--ci", action="store_true", help="add bootstrap confidence intervals")
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="B", help="bootstrap resamples (default 1000)")
    parser.add_argument("--ci-level", type=float, default=0.95, help="confidence level (default 0.95)")
    parser.add_argument(
        "--ci-unit", choices=("speaker", "trial"), default="speaker",
        help="resampling unit: speaker (cluster bootstrap, default) or trial",
    )
    parser.add_argument("--ci-method", choices=("bca", "percentile"), default="bca", help="interval type (default bca)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``lidframe`` command."""
    from lidframe.evaluate import _lidframe_version

    parser = argparse.ArgumentParser(
        prog="lidframe", description="Local Information Disclosure audits of voice anonymisation (1-to-N linkage)."
    )
    parser.add_argument("--version", action="version", version=f"lidframe {_lidframe_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("evaluate", help="LID of an eval score set, calibrated on a dev score set")
    ev.add_argument("--dev", required=True, help="dev score set (.npz or long .csv) to fit the calibrator on")
    ev.add_argument("--eval", required=True, help="eval score set (.npz or long .csv)")
    ev.add_argument(
        "--calibrator",
        default="logistic",
        help="calibrator spec: NAME or package.module:Class, with optional ?key=value&... parameters (default logistic)",
    )
    ev.add_argument(
        "--prior",
        default="uniform",
        help="uniform (default), watchlist:FILE (one id per line), explicit:FILE (CSV enroll_spk,prior), "
        "or any prior spec NAME?key=value&...",
    )
    ev.add_argument(
        "--watch-weight",
        type=float,
        default=10.0,
        help="prior mass of a watch-listed speaker relative to the others (default 10)",
    )
    ev.add_argument("--znorm-ddof", type=int, choices=(0, 1), default=1, help="row z-norm ddof (default 1)")
    ev.add_argument("--json", metavar="OUT", help="write the summary as JSON")
    ev.add_argument("--per-trial", metavar="OUT.csv", help="write per-trial LID as CSV")
    _add_ci_arguments(ev)
    ev.set_defaults(func=_cmd_evaluate)

    cmp_ = sub.add_parser("compare", help="paired comparison of systems from their per-trial LID tables")
    cmp_.add_argument("tables", nargs="+", metavar="PER_TRIAL.csv", help="lidframe evaluate --per-trial outputs, 2 or more")
    cmp_.add_argument("--names", help="comma-separated system names (default: file stems)")
    cmp_.add_argument("--unit", choices=("speaker", "trial"), default="speaker", help="resampling/permutation unit")
    cmp_.add_argument("--bootstrap", type=int, default=2000, metavar="B", help="bootstrap resamples (default 2000)")
    cmp_.add_argument("--permutations", type=int, default=5000, help="permutations (default 5000)")
    cmp_.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    cmp_.add_argument("--seed", type=int, default=0)
    cmp_.add_argument("--json", metavar="OUT", help="write the comparison rows as JSON")
    cmp_.set_defaults(func=_cmd_compare)

    sw = sub.add_parser("nsweep", help="disclosure versus database size n (subsampled enrolment)")
    sw.add_argument("--dev", required=True)
    sw.add_argument("--eval", required=True)
    sw.add_argument("--calibrator", default="logistic")
    sw.add_argument("--sizes", help="comma-separated database sizes (default: 2, 4, 8, ... and N)")
    sw.add_argument("--repeats", type=int, default=20, help="random distractor draws per size (default 20)")
    sw.add_argument("--level", type=float, default=0.95, help="interval level over draws (default 0.95)")
    sw.add_argument("--znorm-ddof", type=int, choices=(0, 1), default=1)
    sw.add_argument("--seed", type=int, default=0)
    sw.add_argument("--json", metavar="OUT")
    sw.add_argument("--plot", metavar="OUT.png", help="write the plot (needs matplotlib)")
    sw.set_defaults(func=_cmd_nsweep)

    sc = sub.add_parser("score", help="score trial audio against enrolled speakers with an attacker (T x N)")
    sc.add_argument("--attacker", required=True, help="attacker spec: ecapa, xvector, precomputed, random, NAME?k=v")
    sc.add_argument("--enrol", required=True, metavar="DIR", help="enrolment data dir (wav.scp, utt2spk)")
    sc.add_argument("--trials", required=True, action="append", metavar="DIR", help="trial data dir(s), repeatable")
    sc.add_argument("--out", required=True, metavar="SCORES.npz", help="output score set (.npz or long .csv)")
    sc.add_argument("--checkpoint", help="model checkpoint (SpeechBrain embedding_model.ckpt)")
    sc.add_argument("--embeddings", help="embedding file(s) for --attacker precomputed")
    sc.add_argument("--device", help="auto (default), cpu, cuda, ...")
    sc.add_argument("--precision", choices=("fp32", "bf16"))
    sc.add_argument("--batch-size", type=int)
    sc.add_argument("--cache-dir", help="embedding cache folder")
    sc.add_argument("--enrolment", choices=("mean_of_normalised", "mean"), help="enrolment aggregation")
    sc.set_defaults(func=_cmd_score)

    dp = sub.add_parser("dp-audit", help="Gaussian speaker mechanism: measured EER/ALID vs the GDP bounds")
    dp.add_argument("--mu", required=True, help="mu value(s), comma-separated for a sweep")
    dp.add_argument("--clip", type=float, default=1.0, help="clipping norm U (default 1)")
    dp.add_argument("--sensitivity", choices=("diameter", "radius"), default="diameter")
    dp.add_argument("--anonymise-enrolment", action="store_true", help="release enrolment embeddings too")
    dp.add_argument("--calibrator", default="logistic", help="calibrator of the cosine attacker")
    dp.add_argument("--embeddings", help="embedding file (as for the precomputed attacker); default: simulated")
    dp.add_argument("--dev-enrol", metavar="DIR")
    dp.add_argument("--dev-trials", metavar="DIR")
    dp.add_argument("--enrol", metavar="DIR")
    dp.add_argument("--trials", metavar="DIR")
    dp.add_argument("--bootstrap", type=int, default=500, metavar="B")
    dp.add_argument("--seed", type=int, default=0)
    dp.add_argument("--json", metavar="OUT")
    dp.add_argument("--plot", metavar="OUT.png")
    dp.set_defaults(func=_cmd_dp_audit)

    gr = sub.add_parser("grid", help="run a systems x attackers x calibrators x priors grid (resumable)")
    gr.add_argument("spec", metavar="SPEC.toml")
    gr.add_argument("--out", default="grid-out", metavar="DIR", help="output folder (default grid-out)")
    gr.add_argument("--backend", choices=("local", "dask"), default="local")
    gr.add_argument("--jobs", type=int, default=1, help="worker processes of the local backend (default 1)")
    gr.add_argument("--scheduler", metavar="ADDR", help="dask.distributed scheduler address (backend dask)")
    gr.add_argument("--force", action="store_true", help="recompute cells that are already stored")
    gr.add_argument("--no-resume", action="store_true", help="same as --force")
    gr.add_argument("--progress", action="store_true", help="show a progress bar over cells")
    gr.set_defaults(func=_cmd_grid)

    rp = sub.add_parser("report", help="tables and figures of a grid output folder")
    rp.add_argument("out_dir", metavar="OUT_DIR")
    rp.add_argument("--no-figures", action="store_true")
    rp.set_defaults(func=_cmd_report)

    plugins = sub.add_parser("plugins", help="list registered attackers, calibrators and priors")
    plugins.add_argument("--kind", choices=("attacker", "calibrator", "prior"), help="only this kind")
    plugins.add_argument(
        "--check", action="store_true", help="import each component and check its contract (exit 1 if any fails)"
    )
    plugins.set_defaults(func=_cmd_plugins)

    sens = sub.add_parser("sensitivity", help="how LID moves across calibrators (one row per calibrator)")
    sens.add_argument("--dev", required=True, help="dev score set (.npz or long .csv)")
    sens.add_argument("--eval", required=True, help="eval score set (.npz or long .csv)")
    sens.add_argument(
        "--calibrators",
        action="append",
        metavar="SPECS",
        help="comma-separated calibrator specs, repeatable (default logistic,isotonic,beta,gaussian,temperature)",
    )
    sens.add_argument("--prior", default="uniform", help="as for evaluate")
    sens.add_argument("--watch-weight", type=float, default=10.0, help="as for evaluate")
    sens.add_argument("--znorm-ddof", type=int, choices=(0, 1), default=1, help="row z-norm ddof (default 1)")
    sens.add_argument("--json", metavar="OUT", help="write rows, spread and worst case as JSON")
    sens.add_argument("--plot", metavar="OUT.png", help="write the LID CCDF per calibrator (needs matplotlib)")
    sens.set_defaults(func=_cmd_sensitivity)

    demo = sub.add_parser("demo", help="the main job on the embedded default data (simulated systems)")
    demo.add_argument("--out", metavar="DIR", help="also write score sets, summary.json and table.txt here")
    demo.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    demo.set_defaults(func=_cmd_demo)
    return parser


def _one_line(text) -> str:
    return " ".join(str(text).split())


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"lidframe: warning: {_one_line(message)}", file=sys.stderr)


def main(argv=None) -> int:
    """Entry point of the ``lidframe`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return args.func(args)
        except InputError as exc:
            print(f"lidframe: error: {_one_line(exc)}", file=sys.stderr)
            return EXIT_INPUT
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"lidframe: error: {where}{_one_line(exc.strerror or exc)}", file=sys.stderr)
            return EXIT_INPUT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
