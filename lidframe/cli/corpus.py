"""``lidframe corpus synth``: synthesize a multi-speaker corpus (espeak-ng, MBROLA, flite) as Kaldi data dirs."""

from __future__ import annotations

import argparse

from lidframe.cli.options import CheckedFlag, add_wav_paths_argument, non_negative_int
from lidframe.data.runpaths import check_outputs, no_empty_folders_left
from lidframe.errors import InputError
from lidframe.report.text import text_table

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("corpus", help="synthesize a multi-speaker corpus (espeak-ng, mbrola, flite)")
    parser.add_argument("action", choices=("synth",), help="synth: synthesize the corpus into --out")
    parser.add_argument("--out", metavar="DIR", help="output folder (wav/ and Kaldi data dirs)")
    parser.add_argument("--voices", help="comma-separated voice ids (default: all installed; see --list-voices)")
    parser.add_argument("--sentences", type=int, default=8, help="sentences per voice (default 8)")
    parser.add_argument("--enrol", type=int, default=3, help="enrolment sentences per dev/eval speaker (default 3)")
    parser.add_argument(
        "--seed", type=int, action=CheckedFlag, check=non_negative_int, default=0, help="random seed (default 0)"
    )
    parser.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="speech engines run at once (default: the CPU count)"
    )
    parser.add_argument("--list-voices", action="store_true", help="list the voices installed here and exit")
    parser.add_argument("--progress", action="store_true", help="show a progress bar while synthesizing")
    add_wav_paths_argument(parser, writes="every data dir's wav.scp")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe.audio.corpus import SENTENCES, available_voices, build_corpus

    if args.list_voices:
        installed = available_voices()
        print(text_table(["engine", "voice"], [[v.engine, v.speaker] for v in installed]))
        print(f"{len(installed)} voices")
        return 0
    if not args.out:
        raise InputError("corpus synth needs --out DIR (or --list-voices)")
    check_outputs(folders={"--out": args.out})  # a corpus reads no input
    if not 1 <= args.sentences <= len(SENTENCES):
        raise InputError(f"--sentences must be within 1..{len(SENTENCES)}, got {args.sentences}")
    if not 1 <= args.enrol < args.sentences:
        raise InputError(f"--enrol must be at least 1 and less than --sentences ({args.sentences}), got {args.enrol}")
    voices = [v.strip() for v in args.voices.split(",") if v.strip()] if args.voices else None
    from lidframe.runtime.workers import default_jobs

    jobs = default_jobs() if args.jobs is None else args.jobs
    with no_empty_folders_left(args.out):  # the audio made before a failure stays, for a rerun to reuse
        report = build_corpus(
            args.out,
            voices=voices,
            sentences=args.sentences,
            enrol=args.enrol,
            seed=args.seed,
            jobs=jobs,
            progress=args.progress,
            wav_paths=args.wav_paths,
        )
    engines = ", ".join(f"{n} {e}" for e, n in sorted(report["engines"].items()))
    sizes = ", ".join(f"{k} {len(v)}" for k, v in report["speakers"].items())
    print(
        f"synthesized {report['utterances']} utterances of {sum(report['engines'].values())} voices ({engines}); "
        f"speakers: {sizes}; data dirs in {args.out}"
    )
    return 0
