"""An output is never an input: every command refuses, before writing, an output on or inside one of its inputs.

One rule (:func:`lidframe.data.runpaths.refuse_outputs_on_inputs`) for every command that
writes: no output may resolve (symlinks followed) to an input file -- a data dir's audio
included, wherever it lies -- nor lie inside an input data dir, and an output folder may
not hold an input.  Each case below points an output of one command at one of its inputs
and checks the refusal (exit 2, one line, no traceback) and that the input's bytes did
not change.  :func:`test_every_output_option_goes_through_the_one_rule` finds the output
options of every command from its parser, so a new command cannot forget the rule.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from lidframe.data.simulate import simulate_system
from tests.bad_input.audio_dirs import write_data_dir
from tests.bad_input.conftest import assert_refused
from tests.voices import write_voice


class Run:
    """The inputs of the cases, made in one folder (``root``).

    ``scores/``: a dev and an eval score set, two per-trial tables, a watch list.
    ``wav/``: the audio of the data dir ``corpus`` (listed as ``../wav/...``, as
    ``lidframe corpus`` lays it out); ``local/``: a data dir holding its own audio, and a
    ``text`` (for ``utility``); ``emb.npz``: embeddings of every utterance; ``init.ckpt``:
    a checkpoint to fine-tune from; ``case/grid.toml``: a grid spec over the score sets.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        scores = root / "scores"
        scores.mkdir()
        dev, ev = simulate_system(leakage=0.5, seed=5, n_enrolled=4, trials_per_speaker=3)
        self.dev, self.eval = scores / "dev.npz", scores / "eval.npz"
        dev.save(self.dev)
        ev.save(self.eval)
        self.tables = []
        for name in ("a", "b"):
            table = scores / f"{name}.csv"
            table.write_text("trial_id,trial_spk,lid_bits\nt0,s0,0.5\nt1,s1,0.25\n")
            self.tables.append(table)
        self.watch = scores / "ids.txt"
        self.watch.write_text("".join(f"{s}\n" for s in ev.enrolled[:2]))
        wavs = root / "wav"
        wavs.mkdir()
        entries = [(f"c{s}{k}", f"spk{s}", f"../wav/c{s}{k}.wav") for s in range(2) for k in range(2)]
        for utt, _, _ in entries:
            write_voice(wavs / f"{utt}.wav", int(utt[1]), int(utt[2]), 0.2)
        self.corpus = write_data_dir(root / "corpus", entries)
        self.audio = wavs / "c00.wav"
        local = [(f"l{s}", f"spk{s}", f"l{s}.wav") for s in range(2)]
        self.local = write_data_dir(root / "local", local)
        for utt, _, _ in local:
            write_voice(self.local / f"{utt}.wav", int(utt[1]), 3, 0.2)
        (self.local / "text").write_text("l0 hello world\nl1 good morning\n")
        ids = [u for u, _, _ in entries + local]
        self.embeddings = root / "emb.npz"
        np.savez(self.embeddings, utt_ids=np.array(ids), vectors=np.random.default_rng(0).normal(size=(len(ids), 8)))
        self.init = root / "init.ckpt"
        self.init.write_bytes(b"weights to fine-tune from")
        case = root / "case"
        case.mkdir()
        self.spec = case / "grid.toml"
        self.spec.write_text(
            '[grid]\ncalibrators = ["logistic"]\npriors = ["uniform"]\nseeds = [0]\n\n'
            f'[systems.alpha]\ndev = "{self.dev}"\neval = "{self.eval}"\n'
        )


def _evaluate(r: Run, *flags: object) -> list[object]:
    return ["evaluate", "--dev", r.dev, "--eval", r.eval, *flags]


def _through_a_link(r: Run) -> Path:
    """A second name of the eval set: a symlink to it in another folder."""
    link = r.root / "elsewhere.npz"
    link.symlink_to(r.eval)
    return link


def _report_over_utility(r: Run) -> list[object]:
    """``--report DIR`` where DIR's ``report.html`` is the ``--utility`` file read by the same run."""
    folder = r.root / "audit"
    folder.mkdir()
    (folder / "report.html").write_text("{}")
    return _evaluate(r, "--utility", folder / "report.html", "--report", folder)


#: case -> (the command line, the words of the message, the input that must stay as it was)
CASES: dict[str, Callable[[Run], tuple[list[object], list[str], Path]]] = {
    "evaluate --json onto --dev": lambda r: (_evaluate(r, "--json", r.dev), ["--json", "is an input"], r.dev),
    "evaluate --per-speaker through a symlink to --eval": lambda r: (
        _evaluate(r, "--per-speaker", _through_a_link(r)),
        ["--per-speaker", "is an input", "eval.npz"],
        r.eval,
    ),
    "evaluate --per-trial onto the watch list of --prior": lambda r: (
        _evaluate(r, "--prior", f"watchlist?file={r.watch}", "--per-trial", r.watch),
        ["--per-trial", "ids.txt", "is an input"],
        r.watch,
    ),
    "evaluate --report over its --utility": lambda r: (
        _report_over_utility(r),
        ["--report", "report.html", "is an input"],
        r.root / "audit" / "report.html",
    ),
    "compare --json onto a table": lambda r: (
        ["compare", *r.tables, "--json", r.tables[1]],
        ["--json", "b.csv", "is an input"],
        r.tables[1],
    ),
    "nsweep --json onto --eval": lambda r: (
        ["nsweep", "--dev", r.dev, "--eval", r.eval, "--json", r.eval],
        ["--json", "is an input"],
        r.eval,
    ),
    "longitudinal --json onto --dev": lambda r: (
        ["longitudinal", "--dev", r.dev, "--eval", r.eval, "--json", r.dev],
        ["--json", "is an input"],
        r.dev,
    ),
    "sensitivity --json onto --eval": lambda r: (
        ["sensitivity", "--dev", r.dev, "--eval", r.eval, "--json", r.eval],
        ["--json", "is an input"],
        r.eval,
    ),
    "dp-audit --json onto --embeddings": lambda r: (
        ["dp-audit", "--mu", "1", "--embeddings", r.embeddings, "--json", r.embeddings],
        ["--json", "emb.npz", "is an input"],
        r.embeddings,
    ),
    "dp-audit --report inside a data dir": lambda r: (
        ["dp-audit", "--mu", "1", "--embeddings", r.embeddings, "--dev-enrol", r.local, "--report", r.local / "r"],
        ["--report", "lies inside", "local", "an input folder"],
        r.local / "wav.scp",
    ),
    "score --out inside --enrol": lambda r: (
        ["score", "--attacker", "random", "--enrol", r.corpus, "--trials", r.local, "--out", r.corpus / "s.npz"],
        ["--out", "lies inside", "corpus", "an input folder"],
        r.corpus / "wav.scp",
    ),
    "score --out onto --embeddings": lambda r: (
        ["score", "--attacker", "precomputed", "--embeddings", r.embeddings, "--enrol", r.corpus, "--trials", r.local]
        + ["--out", r.embeddings],
        ["--out", "emb.npz", "is an input"],
        r.embeddings,
    ),
    "train-attacker --out onto wav.scp": lambda r: (
        ["train-attacker", "--arch", "xvector", "--data", r.local, "--out", r.local / "wav.scp"],
        ["--out", "wav.scp", "lies inside", "an input folder"],
        r.local / "wav.scp",
    ),
    "train-attacker --out onto a wav inside the data dir": lambda r: (
        ["train-attacker", "--arch", "xvector", "--data", r.local, "--out", r.local / "l0.wav"],
        ["--out", "l0.wav", "is an input", "listed in", "wav.scp"],
        r.local / "l0.wav",
    ),
    "train-attacker --out onto a wav the data dir lists from elsewhere": lambda r: (
        ["train-attacker", "--arch", "xvector", "--data", r.corpus, "--out", r.audio],
        ["--out", "c00.wav", "is an input", "listed in", "wav.scp"],
        r.audio,
    ),
    "train-attacker --out onto --init": lambda r: (
        ["train-attacker", "--arch", "xvector", "--data", r.corpus, "--init", r.init, "--out", r.init],
        ["--out", "init.ckpt", "is an input"],
        r.init,
    ),
    "train-attacker's state file onto --init": lambda r: (
        ["train-attacker", "--arch", "xvector", "--data", r.corpus, "--init", _state_named_init(r)]
        + ["--out", r.root / "w.ckpt"],
        ["--out (its training state)", "w.ckpt.state", "is an input"],
        r.root / "w.ckpt.state",
    ),
    "utility --per-utterance onto the reference transcripts": lambda r: (
        ["utility", "--data", r.local, "--per-utterance", r.local / "text"],
        ["--per-utterance", "text", "lies inside", "an input folder"],
        r.local / "text",
    ),
    "utility --json onto the audio of --reference": lambda r: (
        ["utility", "--data", r.local, "--reference", r.corpus, "--json", r.audio],
        ["--json", "c00.wav", "is an input", "listed in"],
        r.audio,
    ),
    "anonymise OUT_DIR inside IN_DIR": lambda r: (
        ["anonymise", "--method", "resample", r.local, r.local / "anon"],
        ["OUT_DIR", "lies inside", "an input folder"],
        r.local / "wav.scp",
    ),
    "anonymise OUT_DIR holding IN_DIR": lambda r: (
        ["anonymise", "--method", "resample", r.local, r.root],
        ["OUT_DIR", "holds", "an input of this run"],
        r.local / "wav.scp",
    ),
    "anonymise OUT_DIR holding the audio IN_DIR lists": lambda r: (
        ["anonymise", "--method", "resample", r.corpus, r.root / "wav"],
        ["OUT_DIR", "holds", "c00.wav", "listed in"],
        r.audio,
    ),
    "grid --out holding the spec": lambda r: (
        ["grid", r.spec, "--out", r.spec.parent],
        ["--out", "holds", "grid.toml"],
        r.spec,
    ),
    "grid --out holding a score set the spec names": lambda r: (
        ["grid", r.spec, "--out", r.dev.parent],
        ["grid output folder", "holds", "dev.npz"],
        r.dev,
    ),
    "report's folder holding --spec": lambda r: (
        ["report", r.root / "grid-out", "--spec", _spec_in_report_folder(r)],
        ["OUT_DIR/report", "holds", "grid.toml"],
        r.root / "grid-out" / "report" / "grid.toml",
    ),
}


def _spec_in_report_folder(r: Run) -> Path:
    """The grid spec moved into ``grid-out/report/``, where ``lidframe report grid-out`` writes."""
    folder = r.root / "grid-out" / "report"
    folder.mkdir(parents=True)
    return r.spec.replace(folder / "grid.toml")


def _state_named_init(r: Run) -> Path:
    """A checkpoint to fine-tune from named as the training state of ``--out w.ckpt`` would be."""
    return r.init.replace(r.root / "w.ckpt.state")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("case", list(CASES))
def test_an_output_on_an_input_is_refused_before_anything_is_written(case, tmp_path, capsys):
    run = Run(tmp_path)
    argv, expect, kept = CASES[case](run)
    before = _digest(kept)
    assert_refused(argv, capsys, expect=expect, watch=[tmp_path])
    assert _digest(kept) == before


def test_an_output_beside_the_inputs_is_not_refused(tmp_path):
    """The rule is not a blanket refusal: outputs next to a data dir, or in a folder beside the inputs, are fine."""
    from lidframe.data.runpaths import check_outputs

    run = Run(tmp_path)
    (tmp_path / "out").mkdir()
    check_outputs(
        {"--json": tmp_path / "corpus.json", "--out": tmp_path / "out" / "x.ckpt"},
        folders={"OUT_DIR": tmp_path / "anon"},
        inputs=[run.corpus, run.local, run.dev, run.init, None],
    )


# ------------------------------------------------ every command's outputs go through the rule
#: dests that name an output; so does a flag whose metavar starts with OUT or whose help starts with "write"/"output"
_OUTPUT_DESTS = {"out", "output", "out_dir", "output_dir", "json", "plot", "report"}


def _is_output(action: argparse.Action) -> bool:
    """Whether *action* names a file or folder the command writes (a path-valued option, not a switch)."""
    if action.nargs == 0 or action.choices is not None or action.help == argparse.SUPPRESS:
        return False
    metavar, words = str(action.metavar or "").upper(), (action.help or "").lower()
    return (
        action.dest in _OUTPUT_DESTS
        or action.dest.startswith(("per_", "out_", "output_"))
        or metavar.startswith("OUT")
        or words.startswith(("write", "output"))
    )


def _commands() -> dict[str, argparse.ArgumentParser]:
    from lidframe.cli.main import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(subparsers.choices)


def _output_options() -> list[tuple[str, str]]:
    return [(name, a.dest) for name, command in _commands().items() for a in command._actions if _is_output(a)]


class _Reached(Exception):
    """Raised by the spy at the rule: the command checked its outputs before doing anything else."""


def _value(action: argparse.Action, folder: Path) -> list[str]:
    """A value for *action* that gets a command to its output check: a choice, a number, or an existing path."""
    if action.choices is not None:
        return [str(next(iter(action.choices)))]
    if action.type in (int, float):
        return ["1"]
    path = folder / f"in_{action.dest}"
    if "DIR" in str(action.metavar or "").upper() or action.dest.endswith("dir"):
        path.mkdir(exist_ok=True)
    else:
        path.touch()
    return [str(path)] * (2 if action.nargs == "+" else 1)


def _argv(command: str, parser: argparse.ArgumentParser, output: argparse.Action, folder: Path) -> list[str]:
    argv = [command]
    for action in parser._actions:
        if action is output or not (action.required or not action.option_strings):
            continue
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        argv += [*action.option_strings[:1], *_value(action, folder)]
    given = str(folder / f"o_{output.dest}.csv")  # .csv: a suffix every file output takes (score's --out)
    return [*argv, *output.option_strings[:1], given]


def test_the_output_options_are_found():
    """The parsers' output options, as the test below finds them, include those of the issue (not a vacuous walk)."""
    found = set(_output_options())
    assert {("train-attacker", "out"), ("utility", "per_utterance"), ("anonymise", "out_dir"), ("grid", "out")} <= found
    assert {("evaluate", "report"), ("dp-audit", "plot"), ("corpus", "out"), ("demo", "out"), ("score", "out")} <= found
    assert ("anonymise", "per_utterance") not in found and ("train-attacker", "layers") not in found  # switches


@pytest.mark.parametrize(("command", "dest"), _output_options())
def test_every_output_option_goes_through_the_one_rule(command, dest, tmp_path, monkeypatch):
    """Each output option of each command reaches the rule, before the command reads or writes anything else.

    The rule is replaced by a spy that records the outputs it gets and stops the run at the
    first call that names one; the command gets placeholder inputs (empty files and folders),
    so a command that reads an input before checking its outputs fails here as well.
    """
    from lidframe.cli import main
    from lidframe.data import runpaths

    seen: list[str] = []

    def spy(files=None, *, folders=None, inputs=()):
        given = [os.path.abspath(p) for p in [*(files or {}).values(), *(folders or {}).values()] if p is not None]
        if given:
            seen.extend(given)
            raise _Reached

    monkeypatch.setattr(runpaths, "refuse_outputs_on_inputs", spy)
    monkeypatch.chdir(tmp_path)
    parser = _commands()[command]
    output = next(a for a in parser._actions if a.dest == dest)
    argv = _argv(command, parser, output, tmp_path)
    try:
        code = main(argv)
    except _Reached:
        code = None
    target = os.path.abspath(argv[-1])
    assert any(p == target or p.startswith(target + os.sep) for p in seen), (
        f"lidframe {command} {output.option_strings or [dest]}: exit {code} without passing its output to "
        "lidframe.data.runpaths.refuse_outputs_on_inputs first"
    )


# ------------------------------------------------ symlink loops and full disks
@pytest.mark.parametrize(
    "argv",
    [
        lambda loop, r: [
            "score",
            "--attacker",
            "random",
            "--enrol",
            loop,
            "--trials",
            r.local,
            "--out",
            r.root / "s.npz",
        ],
        lambda loop, r: ["utility", "--data", loop],
        lambda loop, r: ["train-attacker", "--arch", "xvector", "--data", loop, "--out", r.root / "x.ckpt"],
        lambda loop, r: ["anonymise", "--method", "resample", loop, r.root / "anon"],
    ],
    ids=["score --enrol", "utility --data", "train-attacker --data", "anonymise IN_DIR"],
)
def test_a_symlink_loop_as_a_data_dir_says_symlink_loop(argv, tmp_path, capsys):
    run = Run(tmp_path)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    line = assert_refused(argv(loop, run), capsys, expect=["loop", "is a symlink loop"], watch=[tmp_path])
    assert "no such" not in line


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_leaves_no_empty_anonymise_folder(tmp_path, capsys, monkeypatch):
    """The first audio file cannot be written: OUT_DIR and OUT_DIR/wav, made by the run, are gone again."""
    soundfile = pytest.importorskip("soundfile")
    run = Run(tmp_path)
    monkeypatch.setattr(soundfile, "write", _disk_full)
    out = tmp_path / "anon"
    assert_refused(
        ["anonymise", "--method", "resample", "--wav-paths", "data-dir", run.local, out],
        capsys,
        expect=["no space left on device"],
        watch=[tmp_path],
    )
    assert not out.exists()


def test_a_full_disk_leaves_an_existing_anonymise_folder_as_it_was(tmp_path, capsys, monkeypatch):
    soundfile = pytest.importorskip("soundfile")
    run = Run(tmp_path)
    monkeypatch.setattr(soundfile, "write", _disk_full)
    out = tmp_path / "anon"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert_refused(
        ["anonymise", "--method", "resample", "--wav-paths", "data-dir", run.local, out],
        capsys,
        expect=["no space left"],
        watch=[tmp_path],
    )
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_a_full_disk_leaves_no_empty_demo_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(np, "savez", _disk_full)
    out = tmp_path / "demo"
    assert_refused(["demo", "--simulated", "--out", out], capsys, expect=["no space left"], watch=[tmp_path])
    assert not out.exists()


def test_no_empty_folders_left_keeps_files_and_what_was_there(tmp_path):
    """The helper removes only the empty folders the failed block made, bottom up."""
    from lidframe.data.runpaths import no_empty_folders_left

    out = tmp_path / "out"
    (out / "old" / "empty").mkdir(parents=True)
    with pytest.raises(OSError), no_empty_folders_left(out):
        (out / "new" / "deeper").mkdir(parents=True)
        (out / "kept").mkdir()
        (out / "kept" / "done.wav").write_bytes(b"a finished file")
        raise OSError(errno.ENOSPC, "full")
    left = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert left == ["kept", "kept/done.wav", "old", "old/empty"]
