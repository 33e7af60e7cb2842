"""``lidframe voiceprivacy``: the full evaluation and report of a VoicePrivacy ``exp/`` folder, as it lies.

The VoicePrivacy 2024 and 2026 recipes leave, in each ASV model's results folder, the
embedding of every utterance they scored (and the scores).  This command reads them
(:mod:`lidframe.data.voiceprivacy_runs`) -- no model runs -- and, for the original speech
and each anonymised system found, calibrates on the dev datasets (``libri_dev_*``) and
evaluates the test datasets (``libri_test_*``) with ``lidframe.evaluate``, in three
views: both genders pooled, female, male.  Each view gets its folder in ``--out``::

    OUT/pooled/report.html   OUT/pooled/summary.json
    OUT/f/report.html        OUT/f/summary.json
    OUT/m/report.html        OUT/m/summary.json

one page with every system of the view (as ``lidframe evaluate --report`` makes it, the
per-speaker table, the section "Singling out, linkability, inference" and the input
digests included) and one JSON holding each system's ``lidframe evaluate --json`` record,
its ``legal`` block included: the law's criteria of the system's eval set in the view,
computed as ``lidframe evaluate`` computes them
(:func:`lidframe.analyses.legal_criteria.legal_criteria`, the view's bootstrap and
``--seed``); a criterion the view's data does not allow (singling out where a speaker
has one trial) is null with its reason.  The console prints each view's table and the
criteria of its systems (:func:`lidframe.report.text.format_legal_systems`).

With ``--scores DATA`` the recipe's own score files are read instead (its cosine or PLDA
scores, labelled by ``DATA/<trials dataset>/trials``); the recipe scores no pair across
genders, so there are no pooled view then, and its trial lists name no outsider's speaker,
so each outsider trial is a speaker heard once (no singling out where a view has one).

Everything is read and computed before anything is written; the files are then written
all or none (the view folders made for them are removed again on a failure).
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.cli.options import (
    add_bootstrap_arguments,
    add_engine_arguments,
    add_scoreset_arguments,
    bootstrap_from_args,
    check_output_paths,
)
from lidframe.errors import InputError

if TYPE_CHECKING:
    from lidframe.analyses.legal_criteria import LegalCriteria
    from lidframe.core.result import Result
    from lidframe.data.embedset import EmbeddingSet
    from lidframe.data.scoreset import ScoreSet
    from lidframe.data.voiceprivacy_runs import Runs, Source, System
    from lidframe.report import Report
    from lidframe.stats.bootstrap import Bootstrap

__all__ = ["register", "run", "JSON_FILE"]

#: The JSON file of each view's folder.
JSON_FILE = "summary.json"

_VIEW_TITLES = {"pooled": "both genders pooled", "f": "female speakers", "m": "male speakers"}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "voiceprivacy",
        help="evaluate and report a VoicePrivacy exp/ folder as it lies, per gender and pooled (no model runs)",
    )
    parser.add_argument(
        "exp",
        metavar="EXP_DIR",
        help="the recipe's exp/ folder (or one model's folder, one <distance>_out folder, or its emb_xvect): "
        "every <asv model>/<distance>_out/emb_xvect/libri_{dev,test}_{enrolls,trials_f,trials_m}<suffix> is read",
    )
    parser.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="write DIR/<view>/report.html and DIR/<view>/summary.json for the views pooled, f and m "
        "(DIR is made if missing; needs jinja2 and matplotlib)",
    )
    parser.add_argument(
        "--scores",
        metavar="DATA_DIR",
        help="read the recipe's score files (<distance>_out/<enrolls>-<trials>/scores) instead of its embedding "
        "cache, labelled by DATA_DIR/libri_{dev,test}_trials_{f,m}/trials; per gender only (the recipe scores "
        "no pair across genders)",
    )
    add_scoreset_arguments(parser, sets=False)
    add_engine_arguments(parser)
    add_bootstrap_arguments(parser, resample=True)
    parser.add_argument(
        "--no-bootstrap",
        dest="bootstrap",
        action="store_false",
        help="no intervals, not even the ones computed by default (from 10 speakers with trials)",
    )
    parser.set_defaults(run=run, bootstrap=None)


@attrs.frozen
class _View:
    """One view's outputs: its folder (made if missing), page and JSON."""

    name: str
    folder: Path
    report: Path
    json: Path


@attrs.frozen
class _Evaluated:
    """One system evaluated in one view: its Result, per-speaker table, legal criteria, why no intervals (None: it has)."""

    system: System
    result: Result
    speakers: Any
    legal: LegalCriteria
    why_no_intervals: str | None


def _check_outputs(args: argparse.Namespace, views: tuple[str, ...]) -> list[_View]:
    """The view folders' outputs, checked before any work (``--out`` may be new: then its folders are too)."""
    from lidframe.data.runpaths import check_outputs
    from lidframe.report import REPORT_FILE, check_report_dir, require_renderer

    # --out a writable folder (or one to make), apart from the results folder it reads (the one rule)
    out = check_outputs(folders={"--out": args.out}, inputs=[args.exp, args.scores])["--out"]
    assert out is not None
    checked = []
    for view in views:
        folder = out / view
        if out.is_dir():
            report = check_report_dir(folder, "--out")
            if folder.is_dir():
                check_output_paths({"--out": folder / JSON_FILE})
        else:
            report = folder / REPORT_FILE
        checked.append(_View(view, folder, report, folder / JSON_FILE))
    require_renderer()
    return checked


def _bootstrap(args: argparse.Namespace, eval_set: ScoreSet | EmbeddingSet) -> tuple[Bootstrap | None, str | None]:
    """``--bootstrap``, ``--no-bootstrap``, or intervals by default when the eval set has enough speakers; why none."""
    from lidframe.cli.evaluate import REPORT_BOOTSTRAP_MIN_UNITS

    if args.bootstrap is False:
        return None, "--no-bootstrap given"
    bootstrap = bootstrap_from_args(args)
    if args.bootstrap:
        return bootstrap, None
    enrolled = set(eval_set.enrolled.tolist())
    units = (
        len({s for s in eval_set.trial_speakers.tolist() if s in enrolled})
        if bootstrap.unit == "speaker"
        else int(eval_set.n_trials)
    )
    if units < REPORT_BOOTSTRAP_MIN_UNITS:
        return None, (
            f"the eval set has {units} {bootstrap.unit}{'' if units == 1 else 's'} with trials, too few for a "
            f"{bootstrap.unit} bootstrap to mean much (computed by default from {REPORT_BOOTSTRAP_MIN_UNITS}; "
            "--bootstrap computes it anyway)"
        )
    return bootstrap, None


def _sets(
    system: System, view: str, args: argparse.Namespace
) -> tuple[ScoreSet | EmbeddingSet, ScoreSet | EmbeddingSet]:
    """The dev and eval sets of *system* in *view*: from the embedding cache, or the score files with ``--scores``."""
    from lidframe.data.voiceprivacy_runs import SPLITS

    dev, test = SPLITS["dev"], SPLITS["eval"]
    if args.scores is not None:
        return system.score_set(dev, view, args.scores), system.score_set(test, view, args.scores)
    return system.embedding_set(dev, view), system.embedding_set(test, view)


def _evaluate(system: System, view: str, args: argparse.Namespace) -> _Evaluated:
    """``lidframe.evaluate`` of *system*'s test sets in *view*, calibrated on its dev sets; its per-speaker table and
    legal criteria (as ``lidframe evaluate`` computes them: the same bootstrap, ``--seed`` for singling out's draws)."""
    from lidframe.analyses.legal_criteria import legal_criteria
    from lidframe.analyses.per_speaker import per_speaker
    from lidframe.core.engine import Engine
    from lidframe.core.evaluation import evaluate
    from lidframe.core.options import EvaluateOptions

    dev, eval_set = _sets(system, view, args)
    bootstrap, why_none = _bootstrap(args, eval_set)
    options = EvaluateOptions(
        znorm_ddof=args.znorm_ddof,
        bootstrap=bootstrap,
        engine=Engine(device=args.device, precision=args.precision, kernel=args.kernel, threads=args.threads),
    )
    try:
        result = evaluate(dev, eval_set, calibrator=args.calibrator, prior=args.prior, options=options)
        legal = legal_criteria(result, eval_set, bootstrap=bootstrap, seed=args.seed)
    except InputError as exc:
        raise InputError(f"{system.label}, {view}: {exc}") from None
    return _Evaluated(system, result, per_speaker(result, bootstrap=bootstrap), legal, why_none)


def _record(args: argparse.Namespace, view: str, evaluated: list[_Evaluated]) -> dict[str, Any]:
    """The JSON of one view: what was read, and each system's ``lidframe evaluate --json`` record (``legal`` in it)."""
    from lidframe.data.voiceprivacy_runs import SPLITS

    def parts(system: System, split: str) -> list[str]:
        trials = [f"trials_{view}"] if view != "pooled" else ["trials_f", "trials_m"]
        return [system.dataset(split, part) for part in ("enrolls", *trials)]

    return {
        "view": view,
        "source": "scores" if args.scores is not None else "embeddings",
        "exp": str(args.exp),
        "systems": {
            e.system.label: {
                "name": e.system.name,
                "attacker": e.system.attacker,
                "results": str(e.system.results),
                "suffix": e.system.suffix,
                "dev": parts(e.system, SPLITS["dev"]),
                "eval": parts(e.system, SPLITS["eval"]),
                "summary": {**e.result.to_dict(), "legal": e.legal.to_dict()},
            }
            for e in evaluated
        },
    }


def _report(args: argparse.Namespace, view: str, evaluated: list[_Evaluated], source: Source) -> Report:
    """The page of one view: every system's Result, per-speaker table, legal criteria, input files and settings."""
    from lidframe.data.voiceprivacy_runs import SPLITS
    from lidframe.report import command_line, report_from_results

    inputs: dict[str, Path] = {}
    for e in evaluated:
        for split in SPLITS.values():
            inputs.update(e.system.files(split, view, source, args.scores))
    labels = [e.system.label for e in evaluated]
    no_intervals = {e.system.label: e.why_no_intervals for e in evaluated if e.why_no_intervals is not None}
    read = "the recipe's score files" if source == "scores" else "the recipe's embedding cache (cosine attacker)"
    return report_from_results(
        {e.system.label: e.result for e in evaluated},
        title=f"VoicePrivacy results: {_VIEW_TITLES[view]}",
        per_speaker={e.system.label: e.speakers for e in evaluated},
        legal={e.system.label: e.legal for e in evaluated},
        inputs=inputs,
        settings={
            "--calibrator": args.calibrator,
            "--prior": args.prior,
            "--znorm-ddof": args.znorm_ddof,
            "view": f"{view} ({_VIEW_TITLES[view]})",
            "source": read,
        },
        notes=[
            f"lidframe voiceprivacy of {args.exp}: {len(labels)} system(s), {read}; calibrated on "
            f"{SPLITS['dev']}_*, evaluated on {SPLITS['eval']}_*; no model was run.",
        ],
        command=command_line(getattr(args, "argv", None)),
        no_intervals=no_intervals or None,
    )


def _print_runs(runs: Runs, source: Source) -> None:
    """Print the systems found and what was not read."""
    print(f"VoicePrivacy results: {len(runs.systems)} system(s) read from the {source}")
    for system in runs.systems:
        suffix = repr(system.suffix) if system.suffix else "none: the original speech"
        print(f"  {system.label}: {system.results} (suffix {suffix})")
    if runs.ignored:
        print(f"  not read (not libri_{{dev,test}}_{{enrolls,trials_f,trials_m}}): {', '.join(runs.ignored)}")
    if source == "scores":
        print("  pooled view: none from the score files (the recipe scores no pair across genders)")


def _write(views: list[_View], records: dict[str, dict], reports: dict[str, Report]) -> None:
    """Write every view's JSON and page, all or none (folders made here are removed on a failure)."""
    from lidframe.data.fileio import staged_outputs, write_json
    from lidframe.report import write_report

    made = [
        folder for folder in dict.fromkeys([views[0].folder.parent, *(v.folder for v in views)]) if not folder.exists()
    ]
    try:
        for folder in made:
            folder.mkdir()
        with staged_outputs():
            for view in views:
                write_json(view.json, records[view.name])
                write_report(view.report, reports[view.name])
    except BaseException:
        for folder in reversed(made):  # innermost first; empty again, the staged files removed
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def _view(args: argparse.Namespace, view: str, runs: Runs, source: Source) -> tuple[dict[str, Any], Report]:
    """The work of one view: every system evaluated, its table and legal criteria printed; its JSON and page."""
    from lidframe.report.text import format_legal_systems, format_table

    evaluated = [_evaluate(system, view, args) for system in runs.systems]
    print(f"\n{view}: {_VIEW_TITLES[view]}")
    print(format_table([(e.system.label, e.result.summary) for e in evaluated]))
    print()
    print(format_legal_systems([(e.system.label, e.legal) for e in evaluated]))
    return _record(args, view, evaluated), _report(args, view, evaluated, source)


def run(args: argparse.Namespace) -> int:
    """Run ``lidframe voiceprivacy`` on the parsed *args*; the exit status."""
    from lidframe.data.voiceprivacy import GENDERS
    from lidframe.data.voiceprivacy_runs import VIEWS, find_systems

    source: Source = "scores" if args.scores is not None else "embeddings"
    views = _check_outputs(args, GENDERS if source == "scores" else VIEWS)
    runs = find_systems(args.exp, source=source)
    _print_runs(runs, source)
    records, reports = {}, {}
    for view in views:
        records[view.name], reports[view.name] = _view(args, view.name, runs, source)
    _write(views, records, reports)
    print(f"\nwrote {', '.join(str(v.report) for v in views)} and their {JSON_FILE}")
    return 0
