"""``lidframe evaluate``'s system name and its warnings: the same file twice, an open-set prior without outsiders (issue 41)."""

from __future__ import annotations

import json
import os
import re

import pytest

from lidframe.cli import main
from lidframe.cli.naming import default_system_name
from lidframe.data.simulate import simulate_system


@pytest.fixture(scope="module")
def sets():
    """A system whose dev set is large enough (20 speakers, 100 mated pairs) that no small-dev warning joins the ones tested."""
    return simulate_system(leakage=0.5, seed=4, n_enrolled=20, trials_per_speaker=5)


@pytest.mark.parametrize(
    "dev, eval, name",
    [
        ("s/mcadams_dev.npz", "s/mcadams_eval.npz", "mcadams"),
        ("libri_dev_b1.npz", "libri_test_b1.csv", "libri_b1"),
        ("SIM-DEV.npz", "sim-Eval.npz", "SIM-DEV/sim-Eval"),  # the shared part must match, case and all
        ("dev.npz", "eval.npz", "dev/eval"),
        ("b1_dev.npz", "b2_eval.npz", "b1_dev/b2_eval"),
        ("x/one.npz", "x/one.npz", "one"),
        ("development_pitch.npz", "pitch_evaluation.npz", "pitch"),
        ("devil.npz", "evaluator.npz", "devil/evaluator"),  # split words are whole words only
    ],
)
def test_the_default_name_is_the_shared_stem_or_the_pair(dev, eval, name):
    assert default_system_name(dev, eval) == name


def _table_name(out: str) -> str:
    """The system column of the printed table's one row (the line after its header)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("system"))
    return re.split(r"\s{2,}", lines[start + 1].strip())[0]


def test_evaluate_names_the_system_after_its_files_or_name(sets, tmp_path, capsys):
    dev, ev = sets
    dev.save(tmp_path / "pitch_dev.npz")
    ev.save(tmp_path / "pitch_eval.npz")
    argv = ["evaluate", "--dev", str(tmp_path / "pitch_dev.npz"), "--eval", str(tmp_path / "pitch_eval.npz")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert _table_name(captured.out) == "pitch" and "warning" not in captured.err
    assert main([*argv, "--name", "my system"]) == 0
    assert _table_name(capsys.readouterr().out) == "my system"


def test_the_same_file_as_dev_and_eval_warns_on_the_console_and_the_page(sets, tmp_path, capsys):
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    _, ev = sets
    ev.save(tmp_path / "eval.npz")
    os.symlink(tmp_path / "eval.npz", tmp_path / "dev.npz")  # a second name of the same file
    code = main(
        [
            "evaluate",
            "--dev",
            str(tmp_path / "dev.npz"),
            "--eval",
            str(tmp_path / "eval.npz"),
            "--report",
            str(tmp_path / "r"),
        ]
    )
    assert code == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("lidframe: warning:")]
    assert len(warnings) == 1 and "are the same file" in warnings[0] and "optimistic" in warnings[0]
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "are the same file" in page


def test_an_open_set_prior_on_data_without_outsiders_warns_on_the_console_and_the_page(sets, tmp_path, capsys):
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    dev, ev = sets
    assert ev.n_outsider_trials == 0  # simulated closed set
    dev.save(tmp_path / "a_dev.npz")
    ev.save(tmp_path / "a_eval.npz")
    base = ["evaluate", "--dev", str(tmp_path / "a_dev.npz"), "--eval", str(tmp_path / "a_eval.npz")]
    assert main([*base, "--prior", "uniform?outside=0.2", "--report", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    (warning,) = [line for line in err.splitlines() if line.startswith("lidframe: warning:")]
    assert "uniform?outside=0.2 is open-set (P(outside) = 0.2)" in warning and "no outsider trial" in warning
    assert "no outsider trial" in (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert main([*base, "--prior", "uniform", "--json", str(tmp_path / "closed.json")]) == 0  # closed set: no warning
    assert "warning" not in capsys.readouterr().err
    assert json.loads((tmp_path / "closed.json").read_text())["n_outsider_trials"] == 0
