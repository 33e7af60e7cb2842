"""examples/grid.toml says how it was made and how to run it: those commands exist and do what it says."""

from __future__ import annotations

import re
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest

from lidframe.cli import main
from lidframe.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "grid.toml"


def comment_commands() -> dict[str, list[str]]:
    """The ``lidframe`` commands of the spec's leading comment, by command name (run from the repository root)."""
    comment = "\n".join(line[1:] for line in SPEC.read_text().splitlines() if line.startswith("#"))
    lines = re.findall(r"`(lidframe [^`]+)`", comment) + re.findall(r"^\s{4,}(lidframe .+)$", comment, flags=re.M)
    commands = [shlex.split(part) for line in lines for part in line.split("&&")]
    assert all(words[0] == "lidframe" for words in commands), commands
    return {words[1]: words[1:] for words in commands}


def test_the_comment_names_commands_and_flags_that_exist():
    commands = comment_commands()
    assert set(commands) == {"demo", "grid", "report"}
    parser = build_parser()
    for argv in commands.values():
        parser.parse_args(argv)  # an unknown command or flag exits 2


def test_the_comment_makes_the_score_sets_the_spec_reads_and_reports_the_grid_it_runs():
    commands = comment_commands()
    demo, grid, report = (build_parser().parse_args(commands[name]) for name in ("demo", "grid", "report"))
    # the simulated demo (without --simulated a machine with speech engines runs the
    # real-voice demo, whose score sets are others), seed 0, into the folder the spec reads
    assert demo.simulated and demo.seed == 0
    spec = tomllib.loads(SPEC.read_text())
    files = {ROOT / "examples" / system[role] for system in spec["systems"].values() for role in ("dev", "eval")}
    assert {path.parent for path in files} == {(ROOT / demo.out).resolve()}
    assert all(path.exists() for path in files)  # tests/test_docs.py checks they are the demo's
    assert (ROOT / grid.spec).resolve() == SPEC
    assert report.out_dir == grid.out  # the report reads the grid the first command wrote


@pytest.mark.slow
def test_the_comments_grid_command_runs(tmp_path, monkeypatch, capsys):
    """Run the comment's grid and report commands as written, in a copy of the repository's examples/."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    commands = comment_commands()
    assert main(commands["grid"]) == 0, capsys.readouterr().err
    assert main(commands["report"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "30 cells" in out and (tmp_path / "grid-out" / "report" / "report.html").exists()
