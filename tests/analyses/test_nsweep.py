"""N-sweep: subset LID against an independent per-trial computation, CLI and plot."""

import itertools
import json
import math

import numpy as np
import pytest

from lidframe import InputError, evaluate
from lidframe.analyses.nsweep import _subset_lid, default_sizes, nsweep
from lidframe.cli import main
from lidframe.data.simulate import simulate_system


def test_subset_lid_against_a_loop_and_full_size_equals_evaluate():
    rng = np.random.default_rng(0)
    llr = rng.normal(size=(30, 12))
    true = rng.integers(0, 12, 30)
    lid = _subset_lid(llr, true, 5, np.random.default_rng(1))
    # replay the same draws: keys, forced true column, the 5 smallest keys
    keys = np.random.default_rng(1).random((30, 12))
    for i in range(30):
        keys[i, true[i]] = -1
        cols = np.argsort(keys[i])[:5]
        assert true[i] in cols
        p = np.exp(llr[i, cols] - llr[i, cols].max())
        p /= p.sum()
        want = math.log2(5 * p[list(cols).index(true[i])])
        assert lid[i] == pytest.approx(want, abs=1e-12)
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=12)
    full = nsweep(dev, ev, sizes=[12]).rows[0]
    assert full["alid"] == pytest.approx(evaluate(dev, ev).summary["alid"], abs=1e-12)
    assert full["repeats"] == 1


def test_sweep_is_monotone_in_expectation_and_bounded():
    dev, ev = simulate_system(leakage=0.5, seed=4)
    rows = nsweep(dev, ev, repeats=10, seed=0).rows
    assert [r["n"] for r in rows] == default_sizes(29) == [2, 4, 8, 16, 29]
    alid = [r["alid"] for r in rows]
    assert all(a < b for a, b in itertools.pairwise(alid))
    assert all(r["lid_max"] <= r["log2_n"] + 1e-12 for r in rows)
    assert all(r["alid_low"] <= r["alid"] <= r["alid_high"] for r in rows)


def test_errors():
    dev, ev = simulate_system(leakage=0.5, seed=4, n_enrolled=6)
    with pytest.raises(InputError, match=r"within 2..6"):
        nsweep(dev, ev, sizes=[1, 3])
    with pytest.raises(InputError, match="repeats"):
        nsweep(dev, ev, repeats=0)


def test_cli_writes_json_and_plot(tmp_path, capsys):
    dev, ev = simulate_system(leakage=0.5, seed=5, n_enrolled=10)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    code = main(
        [
            "nsweep",
            "--dev",
            str(tmp_path / "dev.npz"),
            "--eval",
            str(tmp_path / "eval.npz"),
            "--sizes",
            "2,5,10",
            "--repeats",
            "5",
            "--json",
            str(tmp_path / "s.json"),
            "--plot",
            str(tmp_path / "s.png"),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "log2n" in out
    assert [r["n"] for r in json.loads((tmp_path / "s.json").read_text())["rows"]] == [2, 5, 10]
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    code = main(["nsweep", "--dev", str(tmp_path / "dev.npz"), "--eval", str(tmp_path / "eval.npz"), "--sizes", "2,x"])
    assert code == 2 and "expected comma-separated integers" in capsys.readouterr().err


class _NoEvidence:
    """A calibrator that learned nothing: the same LLR for every score."""

    def __init__(self, value: float) -> None:
        self.value = value

    def fit(self, scores, labels):
        return self

    def llr(self, scores):
        return np.full(np.shape(scores), self.value)


@pytest.mark.parametrize("value", [0.0, 0.3, -7.25, 1e3])
def test_no_evidence_gives_exactly_zero_disclosure_at_every_size(value):
    # a constant LLR row discloses 0 bit exactly; float noise (1e-16) would count in PDR
    dev, ev = simulate_system(leakage=0.0, seed=5, n_enrolled=13, trials_per_speaker=3)
    rows = nsweep(dev, ev, _NoEvidence(value), sizes=[2, 3, 7, 13], repeats=4, seed=1).rows
    for row in rows:
        assert row["alid"] == 0.0 and row["pdr"] == 0.0 and row["lid_max"] == 0.0, row
