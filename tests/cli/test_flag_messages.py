"""Messages name what the user typed: the flag of a bad value, the missing file, the help of the command.

The library's options records and analyses check their values under their Python names
(``n_boot``, ``clip_norm``, ``mu``); on the command line the same check names the flag
(``--n-boot must be ...``).  Checks the library does not make (a seed, a number of
permutations, a learning rate) are made as the flag is parsed.  Each expected line is
written out here, not built from the code.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from lidframe.cli import main
from lidframe.cli.main import build_parser
from lidframe.cli.options import name_the_flag
from lidframe.data.simulate import simulate_system

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """dev.npz / eval.npz (8 enrolled speakers) and their per-trial tables a.csv, b.csv, in one folder."""
    folder = tmp_path_factory.mktemp("flags")
    dev, ev = simulate_system(leakage=0.5, seed=2, n_enrolled=8, trials_per_speaker=6)
    dev.save(folder / "dev.npz")
    ev.save(folder / "eval.npz")
    for name, calibrator in (("a", "logistic"), ("b", "isotonic")):
        args = ["evaluate", "--dev", folder / "dev.npz", "--eval", folder / "eval.npz", "--calibrator", calibrator]
        assert main([str(a) for a in [*args, "--per-trial", folder / f"{name}.csv"]]) == 0
    (folder / "data").mkdir()  # a Kaldi data dir (its audio is never read: the checks come first)
    (folder / "data" / "wav.scp").write_text("u1 u1.wav\n")
    (folder / "data" / "utt2spk").write_text("u1 s1\n")
    return folder


def error_line(argv, capsys) -> str:
    """The one stderr line of a refused command (exit status 2, nothing on stdout)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2, (code, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.rstrip("\n")


def scoresets(folder):
    return ["--dev", folder / "dev.npz", "--eval", folder / "eval.npz"]


# (case id, command line after `lidframe` given the folder, the error line after "lidframe: error: ")
CASES = [
    # the library's checks, named by the flag
    ("n-boot", lambda d: ["evaluate", *scoresets(d), "--bootstrap", "--n-boot", "5"],
     "--n-boot must be an integer >= 100, got 5"),
    ("bootstrap-level", lambda d: ["evaluate", *scoresets(d), "--bootstrap", "--bootstrap-level", "1.5"],
     "--bootstrap-level must be in (0, 1), got 1.5"),
    ("compare n-boot", lambda d: ["compare", d / "a.csv", d / "b.csv", "--n-boot", "50"],
     "--n-boot must be an integer >= 100, got 50"),
    ("nsweep repeats", lambda d: ["nsweep", *scoresets(d), "--repeats", "0"],
     "--repeats must be a positive integer, got 0"),
    ("nsweep level", lambda d: ["nsweep", *scoresets(d), "--level", "2"], "--level must be in (0, 1), got 2.0"),
    ("nsweep sizes", lambda d: ["nsweep", *scoresets(d), "--sizes", "1,4"],
     "--sizes must be within 2..8 (the eval's N), got [1]"),
    ("longitudinal k", lambda d: ["longitudinal", *scoresets(d), "--k", "0"],
     "--k must be a positive integer or 'all', got 0"),
    ("longitudinal dp-mu", lambda d: ["longitudinal", *scoresets(d), "--k", "1", "--dp-mu", "-1"],
     "--dp-mu must be positive and finite, got -1.0"),
    ("dp-audit mu", lambda d: ["dp-audit", "--mu", "-1"], "--mu must be positive and finite, got -1.0"),
    ("dp-audit clip", lambda d: ["dp-audit", "--mu", "1", "--clip", "0"], "--clip must be positive and finite, got 0.0"),
    ("grid jobs", lambda d: ["grid", ROOT / "examples" / "grid.toml", "--out", d / "grid-out", "--jobs", "0"],
     "--jobs must be a positive number of worker processes, got 0"),
    ("anonymise alpha", lambda d: ["anonymise", "--method", "mcadams", "--alpha", "-1", d / "data", d / "anon"],
     "--alpha must be positive, got -1.0"),
    ("anonymise ratio", lambda d: ["anonymise", "--method", "pitch", "--ratio", "9", d / "data", d / "anon"],
     "--ratio must be within [0.25, 4], got 9.0"),
    ("anonymise ratio-range", lambda d: ["anonymise", "--method", "resample", "--ratio-range", "0.1,2", d / "data",
                                         d / "anon"],
     "--ratio-range 0.1,2: resampling ratio must be within [0.25, 4], got 0.1"),
    ("anonymise alpha-range", lambda d: ["anonymise", "--method", "mcadams", "--alpha-range", "0.9,0.5", d / "data",
                                         d / "anon"],
     "--alpha-range must be two increasing positive numbers, got (0.9, 0.5)"),
    ("corpus sentences", lambda d: ["corpus", "synth", "--out", d / "corpus", "--sentences", "30"],
     "--sentences must be within 1..24, got 30"),
    ("corpus enrol", lambda d: ["corpus", "synth", "--out", d / "corpus", "--enrol", "8"],
     "--enrol must be at least 1 and less than --sentences (8), got 8"),
    # checks the library does not make (a traceback before): made as the flag is parsed
    ("evaluate seed", lambda d: ["evaluate", *scoresets(d), "--bootstrap", "--seed", "-1"],
     "--seed must be a non-negative integer, got -1"),
    ("nsweep seed", lambda d: ["nsweep", *scoresets(d), "--seed", "-1"], "--seed must be a non-negative integer, got -1"),
    ("dp-audit seed", lambda d: ["dp-audit", "--mu", "1", "--seed", "-1"],
     "--seed must be a non-negative integer, got -1"),
    ("longitudinal groups", lambda d: ["longitudinal", *scoresets(d), "--groups", "0"],
     "--groups must be a positive integer, got 0"),
    ("compare permutations", lambda d: ["compare", d / "a.csv", d / "b.csv", "--permutations", "-1"],
     "--permutations must be a positive integer, got -1"),
    ("corpus seed", lambda d: ["corpus", "synth", "--out", d / "corpus", "--seed", "-2"],
     "--seed must be a non-negative integer, got -2"),
    ("train-attacker lr", lambda d: ["train-attacker", "--arch", "ecapa", "--data", d / "data", "--out", d / "m.ckpt",
                                     "--lr", "-1"],
     "--lr must be a positive, finite number, got -1.0"),
    ("train-attacker lr nan", lambda d: ["train-attacker", "--arch", "ecapa", "--data", d / "data", "--out",
                                         d / "m.ckpt", "--lr", "nan"],
     "--lr must be a positive, finite number, got nan"),
    ("train-attacker seed", lambda d: ["train-attacker", "--arch", "ecapa", "--data", d / "data", "--out",
                                       d / "m.ckpt", "--seed", "-1"],
     "--seed must be a non-negative integer, got -1"),
    ("train-attacker epochs", lambda d: ["train-attacker", "--arch", "ecapa", "--data", d / "data", "--out",
                                         d / "m.ckpt", "--epochs", "0"],
     "--epochs must be a positive integer, got 0"),
]  # fmt: skip


@pytest.mark.parametrize("argv, expected", [pytest.param(a, e, id=i) for i, a, e in CASES])
def test_a_bad_value_is_named_by_its_flag(sets, capsys, argv, expected):
    assert error_line(argv(sets), capsys) == f"lidframe: error: {expected}"


def test_a_value_from_a_spec_keeps_the_parameters_name(tmp_path, capsys):
    """Only a value the flag gave is named by the flag: ``batch_size=0`` in the spec stays ``batch_size``."""
    pytest.importorskip("torch", reason="the ecapa attacker needs torch (pip install -e '.[audio]')")
    pytest.importorskip("soundfile", reason="the voices are written with soundfile")
    from tests.bad_input.audio_dirs import ATTACKER as small
    from tests.bad_input.audio_dirs import scoring_dirs

    enrol, trials = scoring_dirs(tmp_path)
    base = ["score", "--enrol", enrol, "--trials", trials, "--out", tmp_path / "s.npz"]
    line = error_line([*base, "--attacker", small, "--batch-size", "0"], capsys)
    assert line == "lidframe: error: --batch-size must be a positive integer, got 0"
    line = error_line([*base, "--attacker", f"{small}&batch_size=0"], capsys)
    # the spec's value is checked against the attacker's declared range (issue 39), in its words
    assert line == "lidframe: error: attacker 'ecapa': batch_size must be an integer >= 1, or None, got 0"


def test_name_the_flag_replaces_only_words_of_a_flag_the_command_line_gave():
    parser = argparse.ArgumentParser()
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--n-boot", type=int, default=500)
    given = parser.parse_args(["--clip", "0"])
    assert name_the_flag("clip_norm must be positive and finite, got 0.0", parser, given) == (
        "--clip must be positive and finite, got 0.0"
    )
    # --n-boot was left at its default: the message is about some other n_boot
    assert name_the_flag("n_boot must be at least 100", parser, given) == "n_boot must be at least 100"
    # a parser without the flag, and words that are not at the start, are left alone
    assert name_the_flag("mu must be positive", parser, given) == "mu must be positive"
    assert name_the_flag("x.npz: clip_norm must be positive", parser, given) == "x.npz: clip_norm must be positive"
    assert name_the_flag("clip_normal is fine", parser, given) == "clip_normal is fine"


def test_every_flag_a_message_can_name_is_a_flag_of_some_command():
    from lidframe.cli.options import PARAMETER_FLAGS

    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = {f for command in subparsers.choices.values() for a in command._actions for f in a.option_strings}
    assert {f for candidates in PARAMETER_FLAGS.values() for f in candidates} <= flags


# ------------------------------------------------------------------ misspelled flags
@pytest.mark.parametrize(
    "argv, expected",
    [
        (
            ["evaluate", "--n-bot", "5"],
            "unrecognized arguments: --n-bot 5; did you mean --n-boot? (see lidframe evaluate --help)",
        ),
        (["nsweep", "--repeat=3x", "--zzz"], "unrecognized arguments: --zzz (see lidframe nsweep --help)"),
        (
            ["dp-audit", "--mu", "1", "--clip-norm", "2"],
            "unrecognized arguments: --clip-norm 2; did you mean --clip? (see lidframe dp-audit --help)",
        ),
        (
            ["evaluate", "--calibrater", "x", "--per_trial", "p.csv"],
            "unrecognized arguments: --calibrater x --per_trial p.csv; did you mean --calibrator or --per-trial? "
            "(see lidframe evaluate --help)",
        ),
    ],
    ids=["near", "none-near", "dp-audit", "two"],
)
def test_a_misspelled_flag_points_to_the_commands_help(sets, capsys, argv, expected):
    command, *rest = argv
    if command != "dp-audit":
        rest = [*scoresets(sets), *rest]
    if "--repeat=3x" in rest:  # an abbreviation of --repeats with a bad value: argparse's own message
        line = error_line([command, *rest], capsys)
        assert line == "lidframe: error: argument --repeats: invalid int value: '3x' (see lidframe nsweep --help)"
        rest.remove("--repeat=3x")
    assert error_line([command, *rest], capsys) == f"lidframe: error: {expected}"


# ------------------------------------------------------------------ missing files
@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--dev", "dev.npz", "--eval", "a.csv"],
        ["nsweep", "--dev", "a.csv", "--eval", "eval.npz"],
        ["longitudinal", "--dev", "a.csv", "--eval", "eval.npz"],
        ["compare", "a.csv", "b.csv"],
    ],
    ids=lambda argv: argv[0],
)
def test_a_missing_file_says_no_such_file_and_its_name(sets, capsys, monkeypatch, tmp_path, argv):
    for name in ("dev.npz", "eval.npz"):
        (tmp_path / name).write_bytes((sets / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    assert error_line(argv, capsys) == "lidframe: error: no such file: a.csv"


def test_a_missing_data_dir_says_so_and_its_name(sets, capsys, monkeypatch):
    monkeypatch.chdir(sets)
    line = error_line(["anonymise", "--method", "pitch", "nowhere", "anon-out"], capsys)
    assert line == "lidframe: error: no such data directory: nowhere"


# ------------------------------------------------------------------ help texts
def test_every_argument_of_every_command_has_help_text():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    bare = [
        f"{name} {action.option_strings[0] if action.option_strings else action.dest}"
        for name, command in subparsers.choices.items()
        for action in command._actions
        if not action.help and not isinstance(action, argparse._HelpAction)
    ]
    assert not bare, f"arguments without help text: {bare}"
