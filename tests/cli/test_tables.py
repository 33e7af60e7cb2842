"""Every table the CLI prints writes a missing value as ``-``: never ``nan``, ``None`` or ``-nan``."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from lidframe.analyses.legal import LinkabilityCurve, LinkabilityPoint, SinglingOut
from lidframe.analyses.legal_criteria import LegalCriteria
from lidframe.cli import main
from lidframe.data.simulate import simulate_system
from lidframe.report.text import format_legal_systems, format_value, text_table

#: A cell that is a missing value as Python, numpy or printf would write it.
NAN_WORD = re.compile(r"(?<![\w.])[+-]?(nan|none|<na>)(?![\w.])", re.IGNORECASE)


def test_text_table_writes_every_kind_of_missing_value_as_a_dash():
    cells = ["x", None, float("nan"), np.float32("nan"), np.float64("nan"), "nan", "-nan", "None", 1, "ok"]
    table = text_table([f"c{i}" for i in range(len(cells))], [cells])
    assert table.splitlines()[1].split() == ["x", "-", "-", "-", "-", "-", "-", "-", "1", "ok"]


@pytest.mark.parametrize(
    "value, fmt, text",
    [
        (None, ".3f", "-"),
        (float("nan"), ".3f", "-"),
        (np.float32("nan"), ".3f", "-"),  # not a Python float: it used to print "nan"
        (np.float64("nan"), "+.3f", "-"),
        (-0.1234, "+.3f", "-0.123"),
        (np.float32(0.5), ".2f", "0.50"),
        ("text", ".3f", "text"),
    ],
)
def test_format_value(value, fmt, text):
    assert format_value(value, fmt) == text


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A system whose every trial discloses (no LID <= 0: LID- and NDR are undefined), and its per-trial tables."""
    folder = tmp_path_factory.mktemp("plain")
    dev, ev = simulate_system(leakage=1.0, seed=0, n_enrolled=8, trials_per_speaker=6)
    dev.save(folder / "dev.npz")
    ev.save(folder / "eval.npz")
    for name, calibrator in (("a", "logistic"), ("b", "temperature")):
        argv = ["evaluate", "--dev", folder / "dev.npz", "--eval", folder / "eval.npz", "--calibrator", calibrator]
        assert main([str(a) for a in [*argv, "--per-trial", folder / f"{name}.csv"]]) == 0
    return folder


def printed(argv, capsys) -> str:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_longitudinal_prints_a_dash_for_an_undefined_lid_minus(plain, capsys):
    out = printed(
        ["longitudinal", "--dev", plain / "dev.npz", "--eval", plain / "eval.npz", "--k", "1,all", "--n-boot", "100"],
        capsys,
    )
    lines = out.splitlines()
    header = lines[1].split()
    rows = [line.split() for line in lines[2:4]]
    assert [row[header.index("LID-")] for row in rows] == ["-", "-"]
    assert not NAN_WORD.search(out), out


@pytest.mark.parametrize("command", ["nsweep", pytest.param("compare", marks=pytest.mark.slow), "longitudinal"])
def test_no_table_prints_nan(plain, capsys, command):
    scoresets = ["--dev", plain / "dev.npz", "--eval", plain / "eval.npz"]
    argv = {
        "nsweep": ["nsweep", *scoresets, "--sizes", "2,8", "--repeats", "3"],
        "compare": ["compare", plain / "a.csv", plain / "b.csv", "--n-boot", "100", "--permutations", "50"],
        "longitudinal": ["longitudinal", *scoresets, "--k", "1", "--n-boot", "100", "--dp-mu", "1"],
    }[command]
    out = printed(argv, capsys)
    assert not NAN_WORD.search(out), out


def _criteria(n: int, pi: tuple[float, float], single: float | None, *, bounds=None) -> LegalCriteria:
    """A legal block of N = *n*: pi_link at 2 and N, pi_sing (None: absent); *bounds* the intervals of all three."""
    low, high = bounds or (math.nan, math.nan)
    curve = LinkabilityCurve(
        points=[LinkabilityPoint(n_prime=k, pi_link=p, low=low, high=high, chance=1 / k) for k, p in zip((2, n), pi)],
        n_enrolled=n,
        n_trials=3 * n,
    )
    singled = (
        None if single is None else SinglingOut(n=n, l=1, pi_sing=single, low=low, high=high, chance=0.3679, draws=20)
    )
    absent = {} if single is not None else {"singling_out": "speakers 'a' and 'b' are heard once"}
    return LegalCriteria(linkability=curve, singling_out=singled, absent=absent, n_enrolled=n, n_trials=3 * n, seed=7)


def test_the_legal_criteria_of_several_systems_are_a_row_each_with_the_chance_levels():
    text = format_legal_systems(
        [("plain", _criteria(4, (0.875, 0.5), 0.6, bounds=(0.25, 1.0))), ("anon", _criteria(4, (0.5, 0.25), None))]
    )
    lines = text.splitlines()
    assert lines[0].endswith("pi_sing: 20 seeded draws per enrolled speaker, seed 7):")
    assert lines[2].split() == [
        "plain",
        "4",
        "0.875",
        "[0.250,",
        "1.000]",
        "0.500",
        "[0.250,",
        "1.000]",
        "0.600",
        "[0.250,",
        "1.000]",
    ]
    assert lines[3].split() == ["anon", "4", "0.500", "0.250", "-"]  # no interval: the estimate alone
    assert set(lines[4]) == {"-"} and lines[5].split() == ["chance", "0.500", "0.250", "0.368"]
    assert lines[6:] == ["singling out: not computed (anon): speakers 'a' and 'b' are heard once"]
    # different N: chance 1/N is no one number; a reason every system shares said once
    text = format_legal_systems([("a", _criteria(4, (0.5, 0.25), None)), ("b", _criteria(8, (0.5, 0.125), None))])
    assert text.splitlines()[5].split() == ["chance", "0.500", "1/N", "0.368"]
    assert text.splitlines()[6:] == ["singling out: not computed (every system): speakers 'a' and 'b' are heard once"]
