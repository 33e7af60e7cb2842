"""``lidframe evaluate`` with the law's criteria: the ``legal`` block of ``--json`` and the console block.

The block must equal what :func:`lidframe.analyses.legal.linkability_curve` and
:func:`~lidframe.analyses.legal.singling_out` give when called here on the same eval file,
with the bootstrap settings and the seed of the command line; a set with one trial per
speaker leaves singling out absent with its reason (exit 0, nothing refused).
"""

from __future__ import annotations

import json
import math

import pytest

from lidframe.analyses.legal import linkability_curve, singling_out
from lidframe.cli import main
from lidframe.data.simulate import simulate_system
from lidframe.stats.bootstrap import Bootstrap


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _sets(folder, trials_per_speaker: int, n_enrolled: int = 11):
    dev, ev = simulate_system(leakage=0.5, seed=8, n_enrolled=n_enrolled, trials_per_speaker=trials_per_speaker)
    dev.save(folder / "dev.npz")
    ev.save(folder / "eval.npz")
    return ["--dev", folder / "dev.npz", "--eval", folder / "eval.npz"]


def test_the_json_legal_block_is_the_two_analyses_on_the_same_set(tmp_path, capsys):
    data = _sets(tmp_path, trials_per_speaker=4)
    flags = ["--bootstrap", "--n-boot", "120", "--seed", "5", "--bootstrap-level", "0.9"]
    code, out, err = run(["evaluate", *data, *flags, "--json", tmp_path / "s.json"], capsys)
    assert code == 0, err
    legal = json.loads((tmp_path / "s.json").read_text())["legal"]
    boot = Bootstrap(n_boot=120, seed=5, level=0.9)
    curve = linkability_curve(tmp_path / "eval.npz", bootstrap=boot)
    single = singling_out(tmp_path / "eval.npz", seed=5, bootstrap=boot)
    assert legal["linkability"] == json.loads(json.dumps(curve.to_dict()))
    assert legal["singling_out"] == json.loads(json.dumps(single.to_dict()))
    assert legal["absent"] == {} and (legal["level"], legal["method"], legal["seed"]) == (0.9, "bca", 5)
    assert [p["n_prime"] for p in legal["linkability"]["points"]] == [2, 4, 8, 11]
    # the console block, after the intervals: pi_link at N' = 2 and N, pi_sing with its draws, each with chance
    block = out[out.index("singling out and linkability") :]
    assert out.index("bootstrap intervals") < out.index("singling out and linkability")
    two, n = legal["linkability"]["points"][0], legal["linkability"]["points"][-1]
    rows = {}  # "N'=2" -> its last four cells: estimate, low, high, chance
    for line in block.splitlines():
        if line.startswith(("linkability pi_link", "singling out pi_sing")):
            cells = line.split()
            rows[next(c for c in cells if c.startswith("N"))] = cells[-4:]
    assert rows["N'=2"] == [f"{two[k]:.3f}" for k in ("pi_link", "low", "high", "chance")]
    assert rows["N'=11"] == [f"{n[k]:.3f}" for k in ("pi_link", "low", "high", "chance")]
    assert "N'=11 = N (rank-1)" in block
    s = legal["singling_out"]
    assert rows["N=11"] == [f"{s[k]:.3f}" for k in ("pi_sing", "low", "high", "chance")]
    assert "20 seeded draws (seed 5)" in block and "a little under it" in block


def test_without_a_bootstrap_the_block_has_no_interval(tmp_path, capsys):
    data = _sets(tmp_path, trials_per_speaker=3)
    code, out, err = run(["evaluate", *data, "--json", tmp_path / "s.json"], capsys)
    assert code == 0, err
    legal = json.loads((tmp_path / "s.json").read_text())["legal"]
    assert legal["level"] is None
    assert all(p["low"] is None and p["high"] is None for p in legal["linkability"]["points"])
    assert legal["singling_out"]["low"] is None and legal["singling_out"]["pi_sing"] == pytest.approx(
        singling_out(tmp_path / "eval.npz", bootstrap=None).pi_sing, abs=0
    )
    assert "pi_sing" in out and not math.isnan(legal["singling_out"]["pi_sing"])


def test_one_trial_per_speaker_leaves_singling_out_absent_with_its_reason(tmp_path, capsys):
    data = _sets(tmp_path, trials_per_speaker=1, n_enrolled=12)
    code, out, err = run(["evaluate", *data, "--bootstrap", "--n-boot", "100", "--json", tmp_path / "s.json"], capsys)
    small_dev = "lidframe: warning: the dev set is too small to calibrate on"  # 12 dev trials (issue 41)
    assert code == 0 and all(line.startswith(small_dev) for line in err.splitlines()), err
    legal = json.loads((tmp_path / "s.json").read_text())["legal"]
    assert legal["singling_out"] is None and list(legal["absent"]) == ["singling_out"]
    why = legal["absent"]["singling_out"]
    assert why.startswith(str(tmp_path / "eval.npz")) and "at least 2 trials of every speaker" in why
    assert f"singling out: not computed: {why}" in out.splitlines()
    assert legal["linkability"]["points"][-1]["n_prime"] == 12  # linkability still there
