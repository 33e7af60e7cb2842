"""The ``lidframe`` command line.

``lidframe evaluate --dev DEV --eval EVAL [--calibrator NAME] [--prior SPEC] [--znorm-ddof 0|1]
[--device auto|cpu|cuda] [--precision ...] [--json OUT] [--per-trial OUT.csv]`` (DEV/EVAL: score
sets or embedding sets) and ``lidframe demo [--out DIR]``.

Bad input prints one line, ``lidframe: error: ...``, on stderr and exits with status 2;
output files are written only after everything has been computed, each atomically, so a
failed run leaves none behind.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from lidframe.cli import commands
from lidframe.cli.common import check_output_path, parse_prior
from lidframe.core.streaming import KERNELS
from lidframe.data.embedset import EmbeddingSet, load_set
from lidframe.data.fileio import write_json
from lidframe.errors import InputError

__all__ = ["main", "build_parser"]

EXIT_INPUT = 2
# an eval embedding set with more pairs than this skips the binary metrics (their pair
# LLRs alone would take 8 bytes each); one with at least _PROGRESS_PAIRS shows progress
_BINARY_PAIR_LIMIT = 1 << 27
_PROGRESS_PAIRS = 1 << 30


def _cmd_evaluate(args) -> int:
    from lidframe.cli.table import format_table
    from lidframe.core.evaluation import evaluate
    from lidframe.data.fileio import atomic_path

    json_out = check_output_path(args.json, "--json")
    per_trial_out = check_output_path(args.per_trial, "--per-trial")
    prior = parse_prior(args.prior, args.watch_weight)
    eval_set = load_set(args.eval)
    binary = not args.no_binary_metrics
    big = eval_set.n_trials * eval_set.n_enrolled
    if isinstance(eval_set, EmbeddingSet) and binary and big > _BINARY_PAIR_LIMIT:
        binary = False
        print(
            f"note: binary metrics (EER, Cllr, ...) need all {big:,} pair LLRs in memory; skipped "
            f"(reported as NaN) and LID streamed from the embeddings instead",
            file=sys.stderr,
        )
    result = evaluate(
        args.dev,
        eval_set,
        binary_metrics=binary,
        device=args.device,
        precision=args.precision,
        kernel=args.kernel,
        progress=big >= _PROGRESS_PAIRS and sys.stderr.isatty(),
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
    if "engine" in s:
        e = s["engine"]
        if e["kernel"] == "dense":
            print(
                "engine: cosine matrix materialised, float64 (binary metrics need every pair; --no-binary-metrics streams)"
            )
        else:
            print(
                f"streaming engine: {e['kernel']} on {e['device']} in {e['precision']} (T x N scores never materialised)"
            )
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


def _cmd_demo(args) -> int:
    from lidframe.audio.corpus import INSTALL_HINT, available_voices

    if not args.simulated and available_voices():
        from lidframe.cli.voice_demo import run_voice_demo

        out = args.out or "demo-out"
        print(
            f"lidframe demo: real voices (synthesized here), trained attackers, caches in {out}/ "
            "(lidframe demo --simulated for the seconds-fast simulated version)"
        )
        table, _ = run_voice_demo(out, seed=args.seed, epochs=args.epochs, progress=args.progress)
        print(table)
        print(f"\nwrote the LID CCDF plot to {Path(out) / 'lid_ccdf.png'}")
        return 0
    from lidframe.cli.demo import run_demo

    if not args.simulated:
        print(f"lidframe demo: no speech engine here ({INSTALL_HINT}); showing the simulated demo")
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
    names = {
        "alid": "ALID",
        "pdr": "PDR",
        "lid_pos": "LID+",
        "lid_neg": "LID-",
        "lid_q99": "LIDq99",
        "lid_max": "LIDmax",
        "eer": "EER",
        "cllr": "Cllr",
    }
    for key, (low, high) in summary["ci"].items():
        fmt = lambda v: "-" if v is None or v != v else f"{v:.3f}"  # noqa: E731
        lines.append(f"{names.get(key, key):10s} {fmt(summary[key]):>9s} {fmt(low):>9s} {fmt(high):>9s}")
    return "\n".join(lines)


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
        "--ci-unit",
        choices=("speaker", "trial"),
        default="speaker",
        help="resampling unit: speaker (cluster bootstrap, default) or trial",
    )
    parser.add_argument("--ci-method", choices=("bca", "percentile"), default="bca", help="interval type (default bca)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``lidframe`` command."""
    from lidframe.core.evaluation import _lidframe_version

    parser = argparse.ArgumentParser(
        prog="lidframe", description="Local Information Disclosure audits of voice anonymisation (1-to-N linkage)."
    )
    parser.add_argument("--version", action="version", version=f"lidframe {_lidframe_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
    ev.add_argument(
        "--no-binary-metrics",
        action="store_true",
        help="skip EER/Cllr/minCllr over all T x N pairs (they hold every pair's LLR in memory)",
    )
    ev.add_argument(
        "--device",
        default="auto",
        help="embedding-set eval: auto (CUDA when available, default), cpu, cuda, cuda:1, ...",
    )
    ev.add_argument(
        "--precision",
        default="auto",
        choices=("auto", "float64", "float32", "bfloat16", "fp64", "fp32", "bf16"),
        help="embedding-set eval: product precision (auto: float64 on CPU, bfloat16 on CUDA)",
    )
    ev.add_argument(
        "--kernel", default="auto", choices=KERNELS, help="embedding-set eval: streaming path (default auto)"
    )
    ev.add_argument("--json", metavar="OUT", help="write the summary as JSON")
    ev.add_argument("--per-trial", metavar="OUT.csv", help="write per-trial LID as CSV")
    _add_ci_arguments(ev)
    ev.set_defaults(func=_cmd_evaluate)

    cmp_ = sub.add_parser("compare", help="paired comparison of systems from their per-trial LID tables")
    cmp_.add_argument(
        "tables", nargs="+", metavar="PER_TRIAL.csv", help="lidframe evaluate --per-trial outputs, 2 or more"
    )
    cmp_.add_argument("--names", help="comma-separated system names (default: file stems)")
    cmp_.add_argument("--unit", choices=("speaker", "trial"), default="speaker", help="resampling/permutation unit")
    cmp_.add_argument("--bootstrap", type=int, default=2000, metavar="B", help="bootstrap resamples (default 2000)")
    cmp_.add_argument("--permutations", type=int, default=5000, help="permutations (default 5000)")
    cmp_.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    cmp_.add_argument("--seed", type=int, default=0)
    cmp_.add_argument("--json", metavar="OUT", help="write the comparison rows as JSON")
    cmp_.set_defaults(func=commands.cmd_compare)

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
    sw.set_defaults(func=commands.cmd_nsweep)

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
    sc.set_defaults(func=commands.cmd_score)

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
    dp.set_defaults(func=commands.cmd_dp_audit)

    gr = sub.add_parser("grid", help="run a systems x attackers x calibrators x priors grid (resumable)")
    gr.add_argument("spec", metavar="SPEC.toml")
    gr.add_argument("--out", default="grid-out", metavar="DIR", help="output folder (default grid-out)")
    gr.add_argument("--backend", choices=("local", "dask"), default="local")
    gr.add_argument("--jobs", type=int, default=1, help="worker processes of the local backend (default 1)")
    gr.add_argument("--scheduler", metavar="ADDR", help="dask.distributed scheduler address (backend dask)")
    gr.add_argument("--force", action="store_true", help="recompute cells that are already stored")
    gr.add_argument("--no-resume", action="store_true", help="same as --force")
    gr.add_argument("--progress", action="store_true", help="show a progress bar over cells")
    gr.set_defaults(func=commands.cmd_grid)

    rp = sub.add_parser("report", help="tables and figures of a grid output folder")
    rp.add_argument(
        "out_dir", metavar="OUT_DIR", nargs="?", default="grid-out", help="grid output folder (default grid-out)"
    )
    rp.add_argument("--no-figures", action="store_true")
    rp.set_defaults(func=commands.cmd_report)

    co = sub.add_parser("corpus", help="synthesize a multi-speaker corpus (espeak-ng, mbrola, flite)")
    co.add_argument("action", choices=("synth",))
    co.add_argument("--out", metavar="DIR", help="output folder (wav/ and Kaldi data dirs)")
    co.add_argument("--voices", help="comma-separated voice ids (default: all installed; see --list-voices)")
    co.add_argument("--sentences", type=int, default=8, help="sentences per voice (default 8)")
    co.add_argument("--enrol", type=int, default=3, help="enrolment sentences per dev/eval speaker (default 3)")
    co.add_argument("--seed", type=int, default=0)
    co.add_argument("--list-voices", action="store_true", help="list the voices installed here and exit")
    co.add_argument("--progress", action="store_true")
    co.set_defaults(func=commands.cmd_corpus)

    an = sub.add_parser("anonymise", help="anonymise a Kaldi data dir (mcadams, pitch, resample)")
    an.add_argument("--method", required=True, choices=("mcadams", "pitch", "resample"))
    an.add_argument("--alpha", type=float, default=0.8, help="McAdams coefficient (default 0.8)")
    an.add_argument("--alpha-range", metavar="LOW,HIGH", help="McAdams: one alpha per speaker drawn in this range")
    an.add_argument("--ratio", type=float, default=1.2, help="pitch / resampling ratio (default 1.2)")
    an.add_argument("--ratio-range", metavar="LOW,HIGH", help="pitch / resample: ratio drawn per speaker in this range")
    an.add_argument("--per-utterance", action="store_true", help="draw alpha / ratio per utterance, not per speaker")
    an.add_argument("--seed", type=int, default=0)
    an.add_argument("in_dir", metavar="IN_DIR")
    an.add_argument("out_dir", metavar="OUT_DIR")
    an.set_defaults(func=commands.cmd_anonymise)

    tr = sub.add_parser(
        "train-attacker", help="train a speaker encoder (AAM softmax) on a data dir: the semi-informed attacker"
    )
    tr.add_argument(
        "--arch", required=True, help="ecapa or xvector, with model options: ecapa?channels=256,256,256,256,768"
    )
    tr.add_argument("--data", required=True, metavar="DIR", help="training data dir (wav.scp, utt2spk)")
    tr.add_argument("--out", required=True, metavar="CKPT", help="encoder checkpoint (state dict; state in CKPT.state)")
    tr.add_argument("--init", metavar="CKPT", help="fine-tune from this checkpoint")
    tr.add_argument("--epochs", type=int, default=10)
    tr.add_argument("--batch-size", type=int, default=16)
    tr.add_argument("--lr", type=float, default=1e-3)
    tr.add_argument("--device", default="auto")
    tr.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--progress", action="store_true", help="tqdm bar with loss and accuracy")
    tr.set_defaults(func=commands.cmd_train_attacker)

    lo = sub.add_parser("longitudinal", help="disclosure when the attacker fuses k utterances of one speaker")
    lo.add_argument("--dev", required=True)
    lo.add_argument("--eval", required=True)
    lo.add_argument(
        "--k", default="1,2,4,8,all", help="group sizes, comma-separated; 'all' = every trial (default 1,2,4,8,all)"
    )
    lo.add_argument("--fusion", choices=("sum", "mean", "temperature"), default="sum")
    lo.add_argument("--calibrator", default="logistic")
    lo.add_argument(
        "--groups", type=int, default=10, help="groups drawn per speaker for 1 < k < its trials (default 10)"
    )
    lo.add_argument("--bootstrap", type=int, default=1000, metavar="B")
    lo.add_argument("--dp-mu", type=float, help="also print the composed Gaussian-mechanism bounds at mu sqrt(k)")
    lo.add_argument("--seed", type=int, default=0)
    lo.add_argument("--json", metavar="OUT")
    lo.add_argument("--plot", metavar="OUT.png")
    lo.set_defaults(func=commands.cmd_longitudinal)

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
    sens.set_defaults(func=commands.cmd_sensitivity)

    demo = sub.add_parser("demo", help="the main job: real synthesized voices where engines exist, else simulated")
    demo.add_argument("--out", metavar="DIR", help="also write score sets, summary.json and table.txt here")
    demo.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    demo.add_argument(
        "--simulated", action="store_true", help="the simulated demo (seconds) even where speech engines are installed"
    )
    demo.add_argument("--epochs", type=int, default=15, help="attacker training epochs of the real-voice demo")
    demo.add_argument("--progress", action="store_true")
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
