"""``lidframe score``: score trial audio against enrolled speakers with an attacker (a T x N score set).

With ``--scenario NAME`` (:data:`lidframe.data.scenario.SCENARIOS`) the run also says
which rung of the threat-model ladder it stands for: one line naming the scenario, its
code, the enrolment side (``--enrol``), the trial side (``--trials``) and the model (the
attacker spec and its checkpoint, or its default weights).  What lidframe can check, it
checks before anything is read: ``semi-informed`` needs a model adapted on anonymised
training speech, so an attacker that takes a checkpoint must be given one (``--checkpoint``
or ``checkpoint=`` in ``--attacker``).  Which speech the folders hold it cannot check:
the line states what the run assumes.  The score set written is the same with or without
the flag.

An ``.npz`` score file also holds the run's provenance (:mod:`lidframe.data.provenance`,
made by :func:`lidframe.report.score_files.score_provenance`): the attacker's spec and settings, the digests of the
files it read (its checkpoint, its weights), of each data dir's tables and of the audio
they list (where the attacker reads audio), its scoring options (``score_norm``,
``cohort``, ``cohort_top_k`` in the spec: :mod:`lidframe.attackers.cohort`) with the digests
of the cohort's files, the scenario, the command line, the software and the time.  ``lidframe evaluate`` carries it onto its report and into its JSON.  A
``.csv`` has no room for it (a warning says so).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

from lidframe.cli.options import CheckedFlag, add_wav_paths_argument, check_output_paths, positive_int, spec_files
from lidframe.data.scenario import Scenario, check_scenario
from lidframe.errors import InputError

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("score", help="score trial audio against enrolled speakers with an attacker (T x N)")
    parser.add_argument(
        "--attacker", required=True, help="attacker spec: ecapa, xvector, precomputed, random, NAME?k=v"
    )
    parser.add_argument("--enrol", required=True, metavar="DIR", help="enrolment data dir (wav.scp, utt2spk)")
    parser.add_argument("--trials", required=True, action="append", metavar="DIR", help="trial data dir(s), repeatable")
    add_wav_paths_argument(parser)
    parser.add_argument("--out", required=True, metavar="SCORES.npz", help="output score set (.npz or long .csv)")
    parser.add_argument("--checkpoint", help="model checkpoint (SpeechBrain embedding_model.ckpt)")
    parser.add_argument("--embeddings", help="embedding file(s) for --attacker precomputed")
    parser.add_argument("--device", help="auto (default), cpu, cuda, ...")
    parser.add_argument(
        "--precision", choices=("fp32", "bf16"), help="neural attackers: inference precision (default: the attacker's)"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        action=CheckedFlag,
        check=positive_int,
        help="neural attackers: utterances per batch (default 32 on CUDA, 1 on CPU)",
    )
    parser.add_argument("--cache-dir", help="embedding cache folder")
    parser.add_argument("--enrolment", choices=("mean_of_normalised", "mean"), help="enrolment aggregation")
    _add_backend_arguments(parser)
    parser.add_argument(
        "--score-norm",
        choices=("none", "snorm", "asnorm"),
        help="embedding attackers: cohort score normalisation (S-norm, or AS-norm over the top-k cohort scores); "
        "needs --cohort",
    )
    parser.add_argument(
        "--cohort",
        metavar="DIR|SET.npz",
        help="the cohort of --score-norm: a data dir of other speakers than the enrolled and trial ones, or an "
        "embedding set (.npz) whose enrolled speakers are the cohort",
    )
    parser.add_argument(
        "--cohort-top-k",
        type=int,
        action=CheckedFlag,
        check=positive_int,
        metavar="K",
        help="--score-norm asnorm: how many of each side's largest cohort scores count (default 300)",
    )
    parser.add_argument(
        "--scenario",
        metavar="NAME",
        help="the threat-model scenario the run stands for: ignorant (original --enrol, o-a), lazy-informed or "
        "semi-informed (anonymised --enrol, a-a; semi-informed needs an adapted --checkpoint); stated in the output",
    )
    parser.set_defaults(run=run)


def _add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """``--backend``, ``--plda-train``, ``--plda-dim``: an embedding attacker's scoring back end."""
    parser.add_argument("--backend", choices=("cosine", "plda"), help="embedding attackers: scoring back end")
    parser.add_argument(
        "--plda-train",
        metavar="DIR|EMB.npz",
        help="--backend plda: its training set, a data dir the attacker embeds or an .npz of labelled embeddings",
    )
    parser.add_argument(
        "--plda-dim",
        type=int,
        action=CheckedFlag,
        check=positive_int,
        help="--backend plda: LDA dimension (default: the most the training set allows)",
    )


#: Attacker parameter of each flag that sets one (the run options are in RUN_OPTIONS).
_FLAG_PARAMS = {
    "--checkpoint": "checkpoint",
    "--embeddings": "path",
    "--enrolment": "enrolment",
    "--backend": "backend",
    "--plda-train": "plda_train",
    "--plda-dim": "plda_dim",
    "--device": "device",
    "--precision": "precision",
    "--batch-size": "batch_size",
    "--cache-dir": "cache_dir",
    "--score-norm": "score_norm",
    "--cohort": "cohort",
    "--cohort-top-k": "cohort_top_k",
}


def _attacker_params(args: argparse.Namespace) -> dict:
    """The attacker parameters the flags give, for the attacker of ``--attacker``.

    A run option (:data:`lidframe.attackers.base.RUN_OPTIONS`) that the attacker does not
    take does not apply to it: a one-line warning, and it is left out.  Any other flag that
    sets a parameter it does not take (an input such as ``--embeddings``, or
    ``--enrolment``) would change what is computed: an error naming the flag.  A device
    it takes is resolved here, before any data is read (an explicit CUDA device this
    machine lacks is refused).
    """
    from lidframe.attackers.base import RUN_OPTIONS
    from lidframe.core.engine import resolve_device
    from lidframe.registry import accepted_params

    name = args.attacker.partition("?")[0]
    takes = accepted_params("attacker", args.attacker)
    params = {}
    for flag, param in _FLAG_PARAMS.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is None or value == "":
            continue
        if takes is None or param in takes:
            params[param] = value
        elif param in RUN_OPTIONS:
            warnings.warn(
                f"{flag} does not apply to attacker {name!r}, which takes no {param} parameter; ignored",
                stacklevel=2,
            )
        else:
            raise InputError(
                f"{flag}: attacker {name!r} takes no {param!r} parameter (it takes {', '.join(takes) or 'none'})"
            )
    if "device" in params:
        resolve_device(params["device"])
    return {**params, **_wav_paths_param(args, takes)}


def _wav_paths_param(args: argparse.Namespace, takes: tuple[str, ...] | None) -> dict:
    """``--wav-paths`` passed down to the data dirs the attacker reads itself (a ``cohort``, a ``plda_train``).

    One convention reads every data dir of the run.  It is passed where the attacker takes
    ``wav_paths`` and the run's is not ``cwd`` (the attacker's default: the spec it records
    stays as before); an ``--attacker`` spec stating another convention is refused.
    """
    from lidframe.registry.coercion import split_query

    if takes is None or "wav_paths" not in takes:
        return {}
    stated = dict(split_query(args.attacker)[1]).get("wav_paths")
    if stated is not None and stated != args.wav_paths:
        raise InputError(
            f"--attacker {args.attacker!r}: wav_paths={stated}, but the run reads its data dirs with --wav-paths "
            f"{args.wav_paths}: one convention for every data dir (give --wav-paths {stated})"
        )
    return {} if args.wav_paths == "cwd" else {"wav_paths": args.wav_paths}


def _model(args: argparse.Namespace, params: dict, scenario: Scenario) -> str:
    """What the attacker scores with, in words; refuses ``semi-informed`` without an adapted checkpoint.

    Parameters
    ----------
    args : argparse.Namespace
        The command line (``--attacker``).
    params : dict
        The parameters the flags give (:func:`_attacker_params`); ``--checkpoint`` overrides
        ``checkpoint=`` in the spec, as :func:`lidframe.registry.create` applies them.
    scenario : Scenario

    Returns
    -------
    str
        ``"ecapa, checkpoint adapted.ckpt"``, ``"ecapa, its default weights"`` or
        ``"random, which loads no checkpoint"``.

    Raises
    ------
    InputError
        ``semi-informed`` with an attacker that takes a checkpoint and was given none: its
        default weights were not adapted on anonymised speech.
    """
    from lidframe.registry import accepted_params
    from lidframe.registry.coercion import split_query

    name, pairs = split_query(args.attacker)
    takes = accepted_params("attacker", args.attacker)
    if takes is not None and "checkpoint" not in takes:
        return f"{args.attacker}, which loads no checkpoint"
    checkpoint = params.get("checkpoint") or dict(pairs).get("checkpoint")
    if checkpoint:
        return f"{args.attacker}, checkpoint {checkpoint}"
    if scenario.adapted_model and takes is not None:
        raise InputError(
            f"--scenario {scenario.name}: attacker {name!r} must score with a model {scenario.model}; give its "
            "checkpoint with --checkpoint (or checkpoint= in --attacker): its default weights were not adapted"
        )
    return f"{args.attacker}, its default weights"


def _backend_data_dirs(attacker: object) -> list:
    """The data dir a PLDA back end was trained on, as ``[("plda_train", folder, utterances)]`` (none otherwise)."""
    from lidframe.attackers.plda_backend import training_data_dir

    found = training_data_dir(attacker)
    return [] if found is None else [found]


def _wav_paths_passed(args: argparse.Namespace) -> dict:
    """The ``wav_paths`` :func:`_wav_paths_param` passes down, read without checking the flags (for the inputs' list).

    The outputs are checked against the inputs before anything else is (a spec that does
    not read, or states another convention, is refused after, with its own message).
    """
    from lidframe.registry import accepted_params

    try:
        takes = accepted_params("attacker", args.attacker)
    except InputError:
        return {}
    return {} if takes is None or "wav_paths" not in takes or args.wav_paths == "cwd" else {"wav_paths": args.wav_paths}


def _with_wav_paths(spec: str, params: dict) -> str:
    """*spec* with the ``wav_paths`` passed down to it (:func:`_wav_paths_param`): its files found as the attacker finds them."""
    from lidframe.registry.coercion import split_query

    if "wav_paths" not in params or "wav_paths" in dict(split_query(spec)[1]):
        return spec
    return f"{spec}{'&' if '?' in spec else '?'}wav_paths={params['wav_paths']}"


def _cohort_dir(args: argparse.Namespace) -> str | None:
    """The cohort data dir ``--cohort`` or the attacker spec names (``cohort=DIR``): an input folder, nothing is written inside it."""
    from lidframe.registry.coercion import split_query

    cohort = args.cohort or dict(split_query(args.attacker)[1]).get("cohort")
    return cohort if cohort and Path(cohort).is_dir() else None


def run(args: argparse.Namespace) -> int:
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker
    from lidframe.registry import create
    from lidframe.report.score_files import score_provenance
    from lidframe.report.sections.provenance_model import command_line

    scenario = None if args.scenario is None else check_scenario(args.scenario, key="--scenario")
    if Path(args.out).suffix.lower() not in (".npz", ".csv"):
        raise InputError(f"--out {args.out}: expected a .npz or .csv score-set file")
    embeddings = [args.embeddings, *args.embeddings.split(",")] if args.embeddings else []
    inputs = [
        args.enrol,
        *args.trials,
        args.checkpoint,
        args.plda_train,
        *embeddings,
        *spec_files("attacker", _with_wav_paths(args.attacker, _wav_paths_passed(args))),
        _cohort_dir(args),
    ]
    (out,) = check_output_paths({"--out": args.out}, inputs=inputs)
    assert out is not None  # --out is required
    params = _attacker_params(args)
    model = None if scenario is None else _model(args, params, scenario)
    attacker = create("attacker", args.attacker, **params)
    enrol = read_data_dir(args.enrol, wav_paths=args.wav_paths)
    found_in = dict.fromkeys((u.utt_id for u in enrol), f"--enrol {args.enrol}")
    data_dirs = [("enrol", args.enrol, enrol)]
    for folder in args.trials:
        data_dirs.append(("trials", folder, read_data_dir(folder, wav_paths=args.wav_paths)))
        for utt in data_dirs[-1][2]:
            if (
                utt.utt_id in found_in
            ):  # a trial scored against its own enrolment would leak, a repeat would count twice
                raise InputError(f"--trials {folder}: utterance {utt.utt_id!r} is also in {found_in[utt.utt_id]}")
            found_in[utt.utt_id] = f"--trials {folder}"
    trials = [utt for _, _, utts in data_dirs[1:] for utt in utts]
    scores = attacker.score(trials, group_by_speaker(enrol))
    data_dirs.extend(_backend_data_dirs(attacker))
    stated = None
    if scenario is not None and model is not None:
        stated = scenario.stated(
            enrolment=f"--enrol {args.enrol}", trials=[f"--trials {t}" for t in args.trials], model=model
        )
    rung = None if scenario is None else {"name": scenario.name, "code": scenario.code, "stated": stated or ""}
    command = command_line(getattr(args, "argv", None))
    scores.save(
        out, provenance=score_provenance(args.attacker, params, attacker, data_dirs, command=command, scenario=rung)
    )
    if stated is not None:
        print(f"scenario {stated}")
    print(
        f"scored {scores.n_trials} trials against N = {scores.n_enrolled} enrolled speakers "
        f"({scores.n_outsider_trials} outsider trials) with {args.attacker}; wrote {out}"
    )
    return 0
