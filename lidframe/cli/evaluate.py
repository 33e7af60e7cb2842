"""``lidframe evaluate``: LID of an eval set, calibrated on a dev set, as a table, JSON, per-trial CSV and report.html.

With ``--report DIR`` the headline carries speaker-bootstrap intervals by default (as if
``--bootstrap`` were given) when the eval set has at least :data:`REPORT_BOOTSTRAP_MIN_UNITS`
speakers with trials; with fewer, the console and the page say why there are none.
``--bootstrap`` computes them anyway, ``--no-bootstrap`` never.  ``--name`` names the
system (default: from the dev and eval files' names, :mod:`lidframe.cli.naming`) and ``--attacker`` the attacker that made the
scores (a name, or a spec ``NAME?key=value&...`` whose settings and checkpoint the page
shows, the checkpoint with its digest).  ``--utility U.json`` (with ``--report``) adds what
the system's anonymisation costs the speech: the JSON of ``lidframe utility --json`` on its
speech, read back with :func:`lidframe.utility.read_utility`, shown on the page beside the
disclosure (its section "Privacy and utility" and the privacy-utility chart).

Beside LID (inference) it computes the law's two other criteria of the eval set
(:func:`lidframe.analyses.legal_criteria.legal_criteria`): linkability pi_link(N') from the
ranks and singling out pi_sing(N) from the scores, with the run's bootstrap and ``--seed``,
each absent with its reason where the set does not allow it; printed after the intervals,
the ``legal`` block of ``--json`` and the page's section "Singling out, linkability, inference".
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.cli.evaluate_text import format_interval_table, format_open_set
from lidframe.cli.naming import evaluate_warnings
from lidframe.cli.options import (
    add_bootstrap_arguments,
    add_engine_arguments,
    add_output_arguments,
    add_scoreset_arguments,
    attacker_spec,
    bootstrap_from_args,
    check_output_paths,
    spec_files,
    system_name,
)
from lidframe.core.devsize import small_dev_warning
from lidframe.core.summary import Summary
from lidframe.report.text import format_legal, format_table, format_verdict

if TYPE_CHECKING:
    from lidframe.analyses.legal_criteria import LegalCriteria
    from lidframe.analyses.verdict import Policy, Verdict
    from lidframe.core.result import Result
    from lidframe.data.embedset import EmbeddingSet
    from lidframe.data.provenance import ScoreFile
    from lidframe.data.scoreset import ScoreSet
    from lidframe.report import Report
    from lidframe.stats.bootstrap import Bootstrap
    from lidframe.utility import Utility

__all__ = [
    "register",
    "run",
    "format_interval_table",
    "format_open_set",
    "misattribution_threshold",
    "REPORT_BOOTSTRAP_MIN_UNITS",
]

#: The fewest resampling units (speakers; trials with ``--bootstrap-unit trial``) with which ``--report``
#: computes intervals by default: a bootstrap over fewer draws too few units for its intervals to mean
#: much.  ``--bootstrap`` computes them anyway.
REPORT_BOOTSTRAP_MIN_UNITS = 10

# an eval embedding set with at least this many pairs shows progress on a terminal
_PROGRESS_PAIRS = 1 << 30
#: The binary view's detection costs, printed where the summary has them: (key, name).
_DCF_NAMES = (("min_dcf", "minDCF"), ("act_dcf", "actDCF"))

#: The default of ``--misattribution-threshold`` (``lidframe.evaluate``'s).
DEFAULT_MISATTRIBUTION_THRESHOLD = 0.9


def misattribution_threshold(text: str) -> float:
    """The value of ``--misattribution-threshold``: a number in [0.5, 1) (argparse ``type``)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.5 <= value < 1.0:  # NaN fails too
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a posterior threshold in [0.5, 1) (an outsider trial whose top enrolled "
            "posterior exceeds it counts as misattributed at that threshold)"
        )
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("evaluate", help="LID of an eval score set, calibrated on a dev score set")
    add_scoreset_arguments(parser)
    parser.add_argument(
        "--no-binary-metrics",
        action="store_true",
        help="skip the binary view (EER/Cllr/minCllr/ZEBRA/linkability over all T x N pairs; exact up to "
        "2^27 pairs, binned in the streaming pass above, with its error bounds in the JSON)",
    )
    add_engine_arguments(parser)
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="embedding-set eval: share the trials out in blocks over a dask.distributed cluster at ADDRESS "
        "(e.g. tcp://10.0.0.5:8786; same numbers as one process; binary metrics binned)",
    )
    add_output_arguments(
        parser, json="write the summary as JSON, with its legal block (linkability and singling out, docs/legal.md)"
    )
    parser.add_argument(
        "--per-trial",
        metavar="OUT.csv",
        help="write per-trial LID as CSV, with p_link_2, the trial's linkability among 2 candidates (open set: "
        "every trial's LID, and its membership_bits and top_posterior)",
    )
    parser.add_argument(
        "--per-speaker",
        metavar="OUT.csv",
        help="write per-speaker disclosure as CSV, most disclosed first (n_trials, ALID, LIDmax, PDR, "
        "rank-1 rate, EER of the speaker's own pairs; with --bootstrap, intervals from resampling each speaker's "
        "trials; open set: then a row per outsider speaker, flagged, with its membership disclosure and "
        "misattribution rate)",
    )
    parser.add_argument(
        "--per-speaker-sort",
        choices=("alid", "eer"),
        default="alid",
        help="the per-speaker table's worst speakers first: highest ALID (default), or lowest EER (the speakers "
        "the attacker verifies best)",
    )
    _add_report_arguments(parser)
    parser.add_argument(
        "--misattribution-threshold",
        type=misattribution_threshold,
        default=DEFAULT_MISATTRIBUTION_THRESHOLD,
        metavar="P",
        help="open set (a --prior with outside > 0): also report the share of outsider trials whose top enrolled "
        f"posterior exceeds P, in [0.5, 1) (default {DEFAULT_MISATTRIBUTION_THRESHOLD}; the share above 0.5 is "
        "always reported)",
    )
    add_bootstrap_arguments(parser, resample=True)
    parser.add_argument(
        "--no-bootstrap",
        dest="bootstrap",
        action="store_false",
        help="no intervals, not even the ones --report computes by default",
    )
    parser.add_argument(
        "--policy",
        metavar="P.toml",
        help="judge the run against a verdict policy (TOML limits such as ALID <= x bits, docs/verdict.md), "
        "interval-aware: a limit passes only where its interval's bound does; exit status 3 unless every limit "
        "passes; the verdict goes into --json and the report",
    )
    parser.set_defaults(run=run, bootstrap=None)  # None: --report decides (intervals by default)


def _add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """``--report`` and what the page shows beside the numbers: the system's name, its attacker, its utility."""
    parser.add_argument(
        "--report",
        metavar="DIR",
        help="write DIR/report.html, the audit report: headline with speaker-bootstrap intervals (by default, "
        f"from {REPORT_BOOTSTRAP_MIN_UNITS} speakers), per-speaker table, figures, settings, provenance and input "
        "digests (DIR is made if missing; needs jinja2 and matplotlib)",
    )
    parser.add_argument(
        "--name",
        metavar="NAME",
        help="the system's name in the table and the report (default: from the --dev and --eval file names)",
    )
    parser.add_argument(
        "--attacker",
        metavar="SPEC",
        help="the attacker that made the scores, for the report: a name, or a spec NAME?key=value&... "
        "(lidframe score's --attacker) whose settings the report shows, a file one names (checkpoint=...) "
        "with its SHA-256",
    )
    parser.add_argument(
        "--utility",
        metavar="U.json",
        help="with --report: the system's utility, the JSON that lidframe utility --json wrote on its speech "
        "(word error rate, rho_F0): the report sets it beside the disclosure in a privacy-utility chart",
    )


@attrs.frozen
class _Outputs:
    """The files ``lidframe evaluate`` writes (each checked before any work; None: not asked for)."""

    json: Path | None
    per_trial: Path | None
    per_speaker: Path | None
    report: Path | None

    @classmethod
    def check(cls, args: argparse.Namespace) -> _Outputs:
        """The output paths of *args*, refused (before any work) where one would clash or overwrite an input."""
        named = {"--json": args.json, "--per-trial": args.per_trial, "--per-speaker": args.per_speaker}
        inputs = [args.dev, args.eval, args.utility]
        inputs += spec_files("calibrator", args.calibrator) + spec_files("prior", args.prior)
        json_out, per_trial_out, per_speaker_out = check_output_paths(named, inputs=inputs)
        report_out = None
        if args.report is not None:
            from lidframe.report import check_report_dir

            report_out = check_report_dir(args.report, "--report", outputs=named, inputs=inputs)
        return cls(json_out, per_trial_out, per_speaker_out, report_out)


@attrs.frozen
class _Intervals:
    """The intervals of a run: the bootstrap (None: none), how it was chosen, and why there are none."""

    bootstrap: Bootstrap | None
    how: str
    why_none: str | None = None


def _intervals(args: argparse.Namespace, eval_set: ScoreSet | EmbeddingSet) -> _Intervals:
    """``--bootstrap``, ``--no-bootstrap``, or (neither) intervals by default with ``--report`` on a large enough set."""
    if args.bootstrap:
        return _Intervals(bootstrap_from_args(args), "--bootstrap")
    if args.bootstrap is False:
        return _Intervals(None, "--no-bootstrap", "--no-bootstrap given")
    if args.report is None:
        return _Intervals(None, "no --bootstrap")
    bootstrap = bootstrap_from_args(args)
    if bootstrap.unit == "speaker":
        enrolled = {str(s) for s in eval_set.enrolled}
        units = len({str(s) for s in eval_set.trial_speakers if str(s) in enrolled})
    else:
        units = int(eval_set.n_trials)
    if units < REPORT_BOOTSTRAP_MIN_UNITS:
        why = (
            f"the eval set has {units} {bootstrap.unit}{'' if units == 1 else 's'} with trials, too few for a "
            f"{bootstrap.unit} bootstrap to mean much (--report computes one from {REPORT_BOOTSTRAP_MIN_UNITS}; "
            "--bootstrap computes it anyway)"
        )
        return _Intervals(None, "none", why)
    return _Intervals(bootstrap, "--report's default")


def run(args: argparse.Namespace) -> int:
    """Run ``lidframe evaluate`` on the parsed *args*; the exit status."""
    from lidframe.analyses.legal_criteria import legal_criteria
    from lidframe.analyses.per_speaker import per_speaker
    from lidframe.analyses.verdict import EXIT_NOT_MET, judge, read_policy
    from lidframe.data.embedset import load_set
    from lidframe.data.provenance import ScoreFile

    outputs = _Outputs.check(args)
    system_name(args)  # a bad --name or --attacker: one line, before any work
    attacker = attacker_spec(args)
    utility = _read_utility(args)
    policy = None if args.policy is None else read_policy(args.policy)  # a bad policy: one line, before any work
    scored = [ScoreFile.of("dev", args.dev), ScoreFile.of("eval", args.eval)]  # a damaged provenance: one line
    eval_set = load_set(args.eval)
    intervals = _intervals(args, eval_set)
    bootstrap = intervals.bootstrap
    result = _evaluate(args, eval_set, bootstrap)
    for warning in evaluate_warnings(args.dev, args.eval, args.prior, result.summary):
        warnings.warn(warning, stacklevel=1)  # one line each, "lidframe: warning: ..."
    legal = legal_criteria(result, eval_set, bootstrap=bootstrap, seed=args.seed)
    _print_result(args, result.summary, intervals)
    print()
    print(format_legal(legal))
    verdict = None if policy is None else judge(policy, result.summary, legal, system=system_name(args))
    if verdict is not None:
        print()
        print(format_verdict(verdict))
    speakers = None
    if outputs.per_speaker is not None or outputs.report is not None:
        speakers = per_speaker(result, bootstrap=bootstrap, scores=eval_set, sort_by=args.per_speaker_sort)
    report = None
    if outputs.report is not None:
        report = _report(args, result, speakers, intervals, attacker, utility, legal, scored, policy)
    _write_outputs(outputs, result, speakers, report, legal, scored, verdict)
    if outputs.report is not None:
        print(f"\nwrote the audit report to {outputs.report}")
    dev_warning = small_dev_warning(result.summary.n_dev_enrolled, result.summary.n_dev_enrolled_trials)
    if dev_warning is not None:  # last, once everything is written (a failed run ends with its one error line)
        warnings.warn(dev_warning, stacklevel=1)  # printed as one line, "lidframe: warning: ..."; the page says it too
    return 0 if verdict is None or verdict.outcome == "pass" else EXIT_NOT_MET


def _evaluate(args: argparse.Namespace, eval_set: ScoreSet | EmbeddingSet, bootstrap: Bootstrap | None) -> Result:
    """``lidframe.evaluate`` of *eval_set* on the dev set: the flags' calibrator, prior and scheduler, and their options record."""
    from lidframe.core.engine import Engine
    from lidframe.core.evaluation import evaluate
    from lidframe.core.options import EvaluateOptions
    from lidframe.data.embedset import EmbeddingSet

    n_pairs = eval_set.n_trials * eval_set.n_enrolled
    engine = Engine(
        device=args.device,
        precision=args.precision,
        kernel=args.kernel,
        threads=args.threads,
        progress=isinstance(eval_set, EmbeddingSet) and n_pairs >= _PROGRESS_PAIRS and sys.stderr.isatty(),
    )
    options = EvaluateOptions(
        znorm_ddof=args.znorm_ddof,
        binary_metrics=False if args.no_binary_metrics else "auto",
        bootstrap=bootstrap,
        engine=engine,
        misattribution_threshold=args.misattribution_threshold,
    )
    return evaluate(
        args.dev, eval_set, calibrator=args.calibrator, prior=args.prior, scheduler=args.scheduler, options=options
    )


def _print_result(args: argparse.Namespace, s: Summary, intervals: _Intervals | None = None) -> None:
    """Print the inputs and settings behind the summary *s*, its table, the other metrics and its intervals.

    In the open set (``s.open_set``) also the open-set section (:func:`format_open_set`);
    the closed-set output is as it always was.
    """
    open_set = s.open_set
    dev_outsiders = ""
    if open_set is not None and s.n_dev_outsider_trials:
        dev_outsiders = f"; its {s.n_dev_outsider_trials} outsider trials calibrated as non-mated pairs"
    print(f"dev:  {args.dev}  ({s.n_dev_enrolled_trials} trials x {s.n_dev_enrolled} enrolled{dev_outsiders})")
    outsiders = "each with its membership disclosure" if open_set is not None else "excluded"
    print(
        f"eval: {args.eval}  ({s.n_enrolled_trials} trials x N = {s.n_enrolled} enrolled; "
        f"{s.n_outsider_trials} outsider trials {outsiders})"
    )
    znorm = "none (raw scores)" if s.znorm_ddof is None else s.znorm_ddof
    print(f"calibrator: {s.calibrator}   prior: {s.prior}   z-norm ddof: {znorm}")
    if args.attacker is not None:
        print(f"attacker: {args.attacker}")
    if s.engine is not None:
        _print_engine(s)
    if open_set is not None:
        outside = float(open_set.outside)
        print(
            "LID <= -log2 prior(true speaker, or nobody enrolled); uniform prior: LID <= log2(N / (1 - pi_0)) = "
            f"{s.log2_n - math.log2(1.0 - outside):.3f} bit (enrolled trial), -log2 pi_0 = "
            f"{-math.log2(outside):.3f} bit (outsider trial)"
        )
    else:
        print(f"LID <= -log2 prior(true speaker); uniform prior: LID <= log2 N = {s.log2_n:.3f} bit")
    print()
    print(format_table([(system_name(args), s)]))
    b = s.value  # the binary view's metrics by key (NaN when skipped)
    dcf = "".join(f"   {title} {b(key):.3f}" for key, title in _DCF_NAMES if b(key) is not None)
    print(
        f"\nrank-1 rate {s.rank1_rate:.3f} (chance 1/N {1.0 / s.n_enrolled:.3f})   rank disclosure {s.rank_disclosure_bits:.3f} bit   "
        f"multiclass Cllr {s.cllr_mc:.3f} bit   EER(threshold) {b('eer_threshold'):.3f}   "
        f"ZEBRA D_ECE {b('dece_bits'):.3f} bit, max|LLR| {b('max_abs_llr_log10'):.2f} ({b('zebra_tag')})   "
        f"D_sys {b('dsys'):.3f}{dcf}"
    )
    if open_set is not None:
        print()
        print(format_open_set(s))
    if s.bootstrap is not None:
        print()
        if intervals is not None and intervals.how == "--report's default":
            print("(intervals computed for --report by default; --no-bootstrap skips them)")
        print(format_interval_table(s))
    elif intervals is not None and intervals.why_none is not None and intervals.how == "none":
        print(f"\nno intervals: {intervals.why_none}")


def _print_engine(s: Summary) -> None:
    """Print which engine ran (dense, or streaming with its kernel, device and precision) and, if any, the cluster."""
    e = s.engine
    assert e is not None
    if e.kernel == "dense":
        print(
            "engine: cosine matrix materialised, float64 (exact binary metrics hold every pair; "
            "--no-binary-metrics streams)"
        )
    else:
        print(f"streaming engine: {e.kernel} on {e.device} in {e.precision} (T x N scores never materialised)")
        if s.binary is not None and s.binary.method == "binned":
            print(
                f"binary metrics: binned in the streaming pass ({s.binary.n_bins} bins per class; bounds in the JSON)"
            )
    if s.scheduler is not None:
        print(f"cluster: {s.n_blocks} blocks of trials on the dask scheduler {s.scheduler}")


def _write_outputs(
    outputs: _Outputs,
    result: Result,
    speakers: Any,
    report: Report | None,
    legal: LegalCriteria,
    scored: Sequence[ScoreFile] = (),
    verdict: Verdict | None = None,
) -> None:
    """Write the files asked for: every one or, on an error, none (JSON: the summary, ``legal``, ``provenance``, verdict)."""
    from lidframe.data.fileio import atomic_path, staged_outputs, write_json

    with staged_outputs():  # every file or, on an error, none
        if outputs.json is not None:
            provenance = {item.role: item.to_dict() for item in scored}
            verdict_block = {} if verdict is None else {"verdict": verdict.to_dict()}
            write_json(
                outputs.json,
                {**result.to_dict(), "legal": legal.to_dict(), "provenance": provenance, **verdict_block},
            )
        if outputs.per_trial is not None:
            with atomic_path(outputs.per_trial) as tmp:
                result.to_frame().to_csv(tmp, index=False, float_format="%.12g", na_rep="nan")
        if outputs.per_speaker is not None and speakers is not None:
            with atomic_path(outputs.per_speaker) as tmp:
                speakers.to_frame().to_csv(tmp, index=False, float_format="%.12g", na_rep="nan")
        if outputs.report is not None and report is not None:
            from lidframe.report import write_report

            write_report(outputs.report, report, make_folder=True)


def _read_utility(args: argparse.Namespace) -> Utility | None:
    """``--utility``, read before any work (one line naming the flag and the file when it is not a utility's JSON)."""
    if getattr(args, "utility", None) is None:
        return None
    from lidframe.errors import InputError
    from lidframe.utility.reading import read_utility

    if args.report is None:
        raise InputError(f"--utility {args.utility}: the utility is shown on the audit report; give --report DIR too")
    try:
        return read_utility(args.utility)
    except InputError as exc:
        raise InputError(f"--utility: {exc}") from None


def _report(
    args: argparse.Namespace,
    result,
    speakers,
    intervals: _Intervals,
    attacker: str | None,
    utility: Utility | None = None,
    legal: LegalCriteria | None = None,
    scored: Sequence[ScoreFile] = (),
    policy: Policy | None = None,
):
    """The report of this run: the Result, its per-speaker table, legal criteria and verdict, the inputs, the flags, the score files."""
    from lidframe.registry import spec_inputs
    from lidframe.report import AttackerSettings, command_line, report_from_results

    bootstrap = intervals.bootstrap
    label = system_name(args)
    inputs: dict[str, str | Path] = {"dev": args.dev, "eval": args.eval}
    if utility is not None:
        inputs["utility"] = args.utility
    for kind, spec in (("calibrator", args.calibrator), ("prior", args.prior)):
        files = spec_inputs(kind, spec).files
        for k, path in enumerate(files, start=1):
            inputs[f"{kind} file" + (f" {k}" if len(files) > 1 else "")] = path
    s = result.summary
    if bootstrap is not None:
        shown = f"{intervals.how}: {_bootstrap_text(bootstrap)}"
    else:
        shown = f"none: {intervals.why_none}" if intervals.why_none else "none (no --bootstrap)"
    settings = {
        "--calibrator": args.calibrator,
        "--prior": args.prior,
        "--znorm-ddof": args.znorm_ddof,
        **({"--misattribution-threshold": args.misattribution_threshold} if s.open_set is not None else {}),
        "binary metrics": s.binary_metrics,
        "intervals": shown,
    }
    if bootstrap is not None:
        note = getattr(speakers, "interval_note", None) if speakers is not None else None
        settings["per-speaker intervals"] = note or (
            "resampling each speaker's own trials (unit trial), same n_boot and seed"
        )
    if s.engine is not None:
        settings["engine"] = ", ".join(f"{k} {v}" for k, v in s.engine.to_dict().items())
    return report_from_results(
        {label: result},
        per_speaker={label: speakers},
        legal=None if legal is None else {label: legal},
        inputs=inputs,
        settings=settings,
        notes=[
            f"lidframe evaluate of {args.eval}, calibrated on {args.dev}.",
            *evaluate_warnings(args.dev, args.eval, args.prior, s),
        ],
        command=command_line(getattr(args, "argv", None)),
        attackers=[] if attacker is None else [AttackerSettings.from_spec(attacker)],
        no_intervals={label: intervals.why_none} if intervals.why_none else None,
        utility=None if utility is None else {label: utility},
        utility_note=None if utility is None else _utility_note(utility),
        score_files=scored,
        policy=policy,
    )


def _utility_note(utility: Utility) -> str:
    """What the utility of ``--utility`` was measured on, in words: its speech, its reference, its recogniser."""
    against = (
        f"; ρ_F0 against {utility.reference}"
        if utility.reference is not None
        else "; no ρ_F0 (measured without --reference)"
    )
    return (
        f"Utility read from --utility: WER of {utility.recogniser} on the {utility.utterances} utterances of "
        f"{utility.data}{against}."
    )


def _bootstrap_text(bootstrap) -> str:
    """``'level 0.95, bca, 1000 resamples of speakers, seed 0'``."""
    return (
        f"level {bootstrap.level:g}, {bootstrap.method}, {bootstrap.n_boot} resamples of {bootstrap.unit}s, "
        f"seed {bootstrap.seed}"
    )
