"""The analysis and pipeline commands of the ``lidframe`` CLI (sensitivity, compare, nsweep,
score, dp-audit, grid, report); :mod:`lidframe.cli` holds the parser and ``main``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lidframe.cli.common import check_output_path, parse_prior, write_outputs
from lidframe.data.fileio import write_json
from lidframe.errors import InputError
from lidframe.registry import describe_component


def _split_specs(values) -> list[str]:
    specs = [spec.strip() for value in values for spec in value.split(",") if spec.strip()]
    if not specs:
        raise InputError("--calibrators: give at least one calibrator spec")
    return specs


def cmd_sensitivity(args) -> int:
    from lidframe.analyses.sensitivity import DEFAULT_CALIBRATORS, plot_lid_ccdf, sensitivity

    json_out = check_output_path(args.json, "--json")
    plot_out = check_output_path(args.plot, "--plot")
    specs = _split_specs(args.calibrators) if args.calibrators else list(DEFAULT_CALIBRATORS)
    prior = parse_prior(args.prior, args.watch_weight)
    result = sensitivity(args.dev, args.eval, specs, prior=prior, znorm_ddof=args.znorm_ddof)
    first = result.rows[0]
    print(
        f"eval: {args.eval}  (T = {first['n_trials']} trials, N = {first['n_enrolled']} enrolled; "
        f"LID <= log2 N = {first['log2_n']:.3f} bit under a uniform prior)"
    )
    print(f"dev:  {args.dev}   prior: {describe_component(prior)}")
    print()
    print(format_sensitivity_table(result))
    write_outputs(result, json_out, plot_out, plot_lid_ccdf, "LID CCDF plot")
    return 0


def format_sensitivity_table(result) -> str:
    """Text table: one row per calibrator, then the spread and the attacker's worst case."""
    from lidframe.analyses.sensitivity import SENSITIVITY_METRICS

    columns = [
        ("alid", "ALID"),
        ("pdr", "PDR"),
        ("lid_pos", "LID+"),
        ("lid_neg", "LID-"),
        ("lid_q99", "LIDq99"),
        ("lid_max", "LIDmax"),
        ("cllr", "Cllr"),
        ("dev_logloss_bits", "devLogLoss"),
    ]

    def cell(v):
        return "-" if v is None or (isinstance(v, float) and v != v) else f"{v:.3f}"

    body = [[r["calibrator"]] + [cell(r[k]) for k, _ in columns] for r in result.rows]
    body.append(["spread (max-min)"] + [cell(result.spread[k]) for k, _ in columns])
    body.append(["worst case"] + [cell(result.worst_case[k]["value"]) for k, _ in columns])
    body.append(["  reached by"] + [result.worst_case[k]["calibrator"] or "-" for k, _ in columns])
    header = ["calibrator"] + [title for _, title in columns]
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    lines = [
        "  ".join([r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]).rstrip()
        for r in [header] + body
    ]
    lines.insert(len(result.rows) + 1, "-" * len(lines[0]))
    directions = ", ".join(f"{t} {'max' if SENSITIVITY_METRICS[k] == 'max' else 'min'}" for k, t in columns)
    return "\n".join(lines) + f"\n(worst case = attacker's best calibrator per metric: {directions})"


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
    impostor = (
        frame["impostor"].astype(str).eq("1").to_numpy() if "impostor" in frame.columns else np.zeros(len(frame), bool)
    )
    bad = np.isnan(lid) & ~impostor
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InputError(f"{path}: line {r + 2} has lid_bits {frame['lid_bits'].iat[r]!r}; expected a number")
    keep = ~impostor
    return frame["trial_id"].to_numpy()[keep], frame["trial_spk"].to_numpy()[keep], lid[keep]


def cmd_compare(args) -> int:
    from lidframe.analyses.compare import compare_systems

    json_out = check_output_path(args.json, "--json")
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


def cmd_nsweep(args) -> int:
    from lidframe.analyses.nsweep import n_sweep, plot_n_sweep

    json_out = check_output_path(args.json, "--json")
    plot_out = check_output_path(args.plot, "--plot")
    sizes = None
    if args.sizes:
        try:
            sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
        except ValueError:
            raise InputError(f"--sizes {args.sizes!r}: expected comma-separated integers") from None
    result = n_sweep(
        args.dev,
        args.eval,
        args.calibrator,
        sizes=sizes,
        repeats=args.repeats,
        level=args.level,
        znorm_ddof=args.znorm_ddof,
        seed=args.seed,
    )
    print(
        f"disclosure vs database size (eval N = {result.n_enrolled}, calibrator {result.calibrator}; "
        f"{args.repeats} random draws of distractors per size, {args.level:.0%} interval over draws)"
    )
    print(
        f"{'n':>6s} {'log2n':>6s} {'ALID':>7s} {'[low':>7s} {'high]':>7s} {'PDR':>6s} {'LIDmax':>7s} {'[low':>7s} {'high]':>7s}"
    )
    for r in result.rows:
        print(
            f"{r['n']:6d} {r['log2_n']:6.2f} {r['alid']:7.3f} {r['alid_low']:7.3f} {r['alid_high']:7.3f} "
            f"{r['pdr']:6.3f} {r['lid_max']:7.3f} {r['lid_max_low']:7.3f} {r['lid_max_high']:7.3f}"
        )
    write_outputs(result, json_out, plot_out, plot_n_sweep, "N-sweep plot")
    return 0


def cmd_score(args) -> int:
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker
    from lidframe.registry import create

    out = check_output_path(args.out, "--out")
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
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker
    from lidframe.errors import preview
    from lidframe.privacy.audit import EmbeddingSplit

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


def cmd_dp_audit(args) -> int:
    from lidframe.privacy.audit import dp_audit, plot_dp_audit, simulated_splits

    json_out = check_output_path(args.json, "--json")
    plot_out = check_output_path(args.plot, "--plot")
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
        source = "simulated embeddings (lidframe.privacy.audit.simulated_splits: N = 40, d = 64, 10 trials per speaker)"
    rows = dp_audit(
        dev,
        ev,
        mus,
        clip_norm=args.clip,
        sensitivity=args.sensitivity,
        anonymise_enrolment=args.anonymise_enrolment,
        calibrator=args.calibrator,
        n_boot=args.bootstrap,
        seed=args.seed,
    )
    print(f"Gaussian speaker mechanism audit on {source}")
    print(
        f"clip U = {args.clip:g}, sensitivity {args.sensitivity}, enrolment "
        f"{'released through the mechanism' if args.anonymise_enrolment else 'clean (clipped)'}; "
        f"N = {rows[0]['n_enrolled']} (log2 N = {rows[0]['log2_n']:.2f}); 95% bootstrap intervals"
    )
    print(
        f"{'mu':>5s} {'sigma':>6s} {'EERbound':>8s} {'bayesEER':>8s} {'cosEER':>7s} {'MIbound':>8s} "
        f"{'bayesALID':>9s} {'cosALID':>8s} {'bayesMax':>8s} {'cosMax':>7s}  check"
    )
    for r in rows:
        check = "VIOLATION: " + "; ".join(r["violations"]) if r["violations"] else "ok"
        print(
            f"{r['mu']:5.2f} {r['sigma']:6.3f} {r['eer_bound']:8.3f} {r['bayes_eer']:8.3f} {r['cosine_eer']:7.3f} "
            f"{r['mi_bound_bits']:8.3f} {r['bayes_alid']:9.3f} {r['cosine_alid']:8.3f} {r['bayes_lid_max']:8.3f} "
            f"{r['cosine_lid_max']:7.3f}  {check}"
        )
    if json_out is not None:
        write_json(json_out, {"rows": rows})
    if plot_out is not None:
        plot_dp_audit(rows, plot_out)
        print(f"\nwrote the audit plot to {plot_out}")
    return 1 if any(r["violations"] for r in rows) else 0


def cmd_grid(args) -> int:
    from lidframe.grid.runner import run_grid

    counts = run_grid(
        args.spec,
        args.out,
        backend=args.backend,
        jobs=args.jobs,
        scheduler=args.scheduler,
        resume=not args.no_resume,
        force=args.force,
        progress=args.progress,
    )
    print(
        f"grid {args.spec}: {counts['cells']} cells, {counts['skipped']} already stored, {counts['ok']} computed, "
        f"{counts['error']} failed ({counts['fits']} calibrator fits, {counts['scored']} score sets computed); "
        f"store: {Path(args.out) / 'results.sqlite'}"
    )
    if counts["error"]:
        print("failed cells are stored with their error; see lidframe report or the results.sqlite 'error' column")
    return 1 if counts["error"] else 0


def cmd_report(args) -> int:
    from lidframe.grid.report import write_report

    written = write_report(args.out_dir, figures=not args.no_figures)
    print("\n".join(f"wrote {path}" for path in written))
    summary = Path(args.out_dir) / "report" / "summary.md"
    print()
    print(summary.read_text())
    return 0


def cmd_corpus(args) -> int:
    from lidframe.audio.corpus import available_voices, build_corpus

    if args.list_voices:
        voices = available_voices()
        for v in voices:
            print(f"{v.engine:7s} {v.speaker}")
        print(f"{len(voices)} voices")
        return 0
    if not args.out:
        raise InputError("corpus synth needs --out DIR (or --list-voices)")
    voices = [v.strip() for v in args.voices.split(",") if v.strip()] if args.voices else None
    report = build_corpus(
        args.out, voices=voices, sentences=args.sentences, enrol=args.enrol, seed=args.seed, progress=args.progress
    )
    engines = ", ".join(f"{n} {e}" for e, n in sorted(report["engines"].items()))
    sizes = ", ".join(f"{k} {len(v)}" for k, v in report["speakers"].items())
    print(
        f"synthesized {report['utterances']} utterances of {sum(report['engines'].values())} voices ({engines}); "
        f"speakers: {sizes}; data dirs in {args.out}"
    )
    return 0


def _parse_range(text, flag: str):
    """``"LOW,HIGH"`` as a float pair (None for no value)."""
    if not text:
        return None
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"{flag} {text!r}: expected LOW,HIGH") from None


def cmd_anonymise(args) -> int:
    from lidframe.audio.anonymise import anonymise_data_dir

    alpha_range = _parse_range(args.alpha_range, "--alpha-range")
    ratio_range = _parse_range(args.ratio_range, "--ratio-range")
    report = anonymise_data_dir(
        args.in_dir,
        args.out_dir,
        method=args.method,
        alpha=args.alpha,
        alpha_range=alpha_range,
        ratio=args.ratio,
        ratio_range=ratio_range,
        per_utterance=args.per_utterance,
        seed=args.seed,
    )
    print(f"anonymised {report['utterances']} utterances with {args.method} into {args.out_dir}")
    return 0


def cmd_train_attacker(args) -> int:
    from lidframe.attackers.training import train_attacker
    from lidframe.registry import create

    if args.arch.split("?")[0] not in ("ecapa", "xvector"):
        raise InputError(f"--arch {args.arch!r}: expected ecapa or xvector (with optional ?model options)")
    attacker = create("attacker", args.arch)
    history = train_attacker(
        attacker,
        args.data,
        args.out,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        init=args.init,
        device=args.device,
        precision=args.precision,
        seed=args.seed,
        progress=args.progress,
    )
    last = history[-1] if history else None
    if last:
        print(
            f"trained {args.arch} for {last['epoch']} epochs on {args.data}: loss {last['loss']:.4f}, "
            f"accuracy {last['accuracy']:.3f}; checkpoint {args.out}"
        )
    return 0


def cmd_longitudinal(args) -> int:
    from lidframe.analyses.longitudinal import longitudinal, plot_longitudinal

    json_out = check_output_path(args.json, "--json")
    plot_out = check_output_path(args.plot, "--plot")
    ks = [k.strip() for k in args.k.split(",") if k.strip()]
    rows = longitudinal(
        args.dev,
        args.eval,
        ks,
        fusion=args.fusion,
        calibrator=args.calibrator,
        groups_per_speaker=args.groups,
        n_boot=args.bootstrap,
        dp_mu=args.dp_mu,
        seed=args.seed,
    )
    print(
        f"longitudinal attacker: {args.fusion} fusion of k utterances per speaker, calibrator {args.calibrator}, "
        f"N = {rows[0]['n_enrolled']} (LID <= log2 N = {rows[0]['log2_n']:.3f} bit); 95% speaker-bootstrap CI of ALID"
    )
    dp = args.dp_mu is not None
    print(
        f"{'k':>4s} {'groups':>6s} {'skip':>4s} {'temp':>5s} {'ALID':>7s} {'[low':>7s} {'high]':>7s} {'PDR':>6s} "
        f"{'LID+':>6s} {'LID-':>7s} {'q99':>6s} {'LIDmax':>7s}"
        + (f" {'mu_k':>6s} {'EERbnd':>6s} {'MIbnd':>6s}" if dp else "")
    )
    for r in rows:
        ci = r.get("ci", {}).get("alid", [float("nan")] * 2)
        line = (
            f"{r['k']!s:>4s} {r['n_groups']:6d} {r['n_speakers_skipped']:4d} {r['temperature']:5.2f} "
            f"{r['alid']:7.3f} {ci[0]:7.3f} {ci[1]:7.3f} {r['pdr']:6.3f} {r['lid_pos']:6.3f} {r['lid_neg']:7.3f} "
            f"{r['lid_q99']:6.3f} {r['lid_max']:7.3f}"
        )
        if dp:
            line += f" {r['dp_mu_k']:6.2f} {r['dp_eer_bound']:6.3f} {r['dp_mi_bound_bits']:6.2f}"
        print(line)
    if json_out is not None:
        write_json(json_out, {"fusion": args.fusion, "rows": rows})
    if plot_out is not None:
        plot_longitudinal(rows, plot_out, title=f"Longitudinal disclosure ({args.fusion} fusion)")
        print(f"\nwrote the plot to {plot_out}")
    return 0
