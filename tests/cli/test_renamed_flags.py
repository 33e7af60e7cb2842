"""Flags renamed in this release: the old name gives the new flag's numbers, says so once, and is not in --help.

``--ci``, ``--ci-level``, ``--ci-unit`` and ``--ci-method`` are now ``--bootstrap``,
``--bootstrap-level``, ``--bootstrap-unit`` and ``--bootstrap-method``; nsweep's
``--ci-level`` (a level over random draws, not a bootstrap) is now ``--level``.  The
expected warning lines are written out here, not built from the module.
"""

import json

import pytest

from lidframe.cli import main
from lidframe.data.simulate import simulate_system

#: old flag -> new flag, written out by hand.
RENAMED = {
    "--ci": "--bootstrap",
    "--ci-level": "--bootstrap-level",
    "--ci-unit": "--bootstrap-unit",
    "--ci-method": "--bootstrap-method",
}


def warning_line(old: str, new: str) -> str:
    return f"lidframe: warning: {old} is now {new}; the old name will be removed in the next release"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("renamed")
    dev, ev = simulate_system(leakage=0.5, seed=5, n_enrolled=8, trials_per_speaker=6)
    dev.save(folder / "dev.npz")
    ev.save(folder / "eval.npz")
    return folder


def run(argv, capsys):
    """(exit status, stdout, stderr without the warning about this small dev set, issue 41's, not a flag's)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    small_dev = "lidframe: warning: the dev set is too small to calibrate on"
    return code, out, "".join(line for line in err.splitlines(keepends=True) if not line.startswith(small_dev))


def test_the_old_bootstrap_flags_give_the_new_flags_numbers_and_say_so_once_each(pair, capsys):
    base = ["evaluate", "--dev", pair / "dev.npz", "--eval", pair / "eval.npz", "--n-boot", "200", "--seed", "3"]
    values = {"--ci-level": "0.9", "--ci-unit": "trial", "--ci-method": "percentile"}
    old = [*base, "--ci", "--ci"]  # repeated: still one line
    new = [*base, "--bootstrap"]
    for flag, value in values.items():
        old += [flag, value]
        new += [RENAMED[flag], value]
    code, old_out, old_err = run([*old, "--json", pair / "old.json"], capsys)
    assert code == 0, old_err
    code, new_out, new_err = run([*new, "--json", pair / "new.json"], capsys)
    assert code == 0 and new_err == ""
    old_record = json.loads((pair / "old.json").read_text())
    assert old_record == json.loads((pair / "new.json").read_text())
    assert old_record["bootstrap"] == {
        "n_boot": 200,
        "level": 0.9,
        "unit": "trial",
        "method": "percentile",
        "seed": 3,
        "resample": "dev+eval",
    }
    assert old_out == new_out and "90% bootstrap intervals (percentile, 200 resamples of trials, seed 3" in old_out
    assert sorted(old_err.splitlines()) == sorted(warning_line(o, n) for o, n in RENAMED.items())


def test_nsweep_ci_level_is_now_level(pair, capsys):
    base = ["nsweep", "--dev", pair / "dev.npz", "--eval", pair / "eval.npz", "--repeats", "3", "--sizes", "2,4"]
    code, old_out, old_err = run([*base, "--ci-level", "0.8", "--json", pair / "n_old.json"], capsys)
    assert code == 0
    assert old_err.splitlines() == [warning_line("--ci-level", "--level")]
    code, new_out, new_err = run([*base, "--level", "0.8", "--json", pair / "n_new.json"], capsys)
    assert code == 0 and new_err == "" and old_out == new_out and "80% interval over draws" in new_out
    assert json.loads((pair / "n_old.json").read_text()) == json.loads((pair / "n_new.json").read_text())


def test_an_old_flag_keeps_its_checks(pair, capsys):
    base = ["evaluate", "--dev", pair / "dev.npz", "--eval", pair / "eval.npz"]
    code, _, err = run([*base, "--ci-unit", "planet"], capsys)
    assert code == 2 and "argument --ci-unit: invalid choice: 'planet'" in err
    code, _, err = run([*base, "--ci-level", "high"], capsys)
    assert code == 2 and "argument --ci-level: invalid float value: 'high'" in err


@pytest.mark.parametrize(
    ("command", "new_flags"),
    [
        ("evaluate", ["--bootstrap", "--bootstrap-level", "--bootstrap-unit", "--bootstrap-method"]),
        ("compare", ["--bootstrap-level", "--bootstrap-unit"]),
        ("dp-audit", ["--bootstrap-level"]),
        ("longitudinal", ["--bootstrap-level"]),
        ("nsweep", ["--level"]),
    ],
)
def test_help_shows_only_the_new_names(command, new_flags, capsys):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for flag in new_flags:
        assert f"{flag} " in text or f"{flag}\n" in text, flag
    assert "--ci" not in text
