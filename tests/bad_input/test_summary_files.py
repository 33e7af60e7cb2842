"""Summary files read back by ``lidframe compare A.json B.json`` (issue 40): each refused in one line, nothing written.

``lidframe compare`` given summary JSONs sets their legal blocks side by side
(:mod:`lidframe.analyses.compare_legal`).  A file it cannot use -- not JSON, not an object,
not a summary lidframe wrote, a legal block that is not one as lidframe writes it (a key
missing, a share outside [0, 1], an N' outside 2..N), a FIFO -- is one line naming the
file and what was expected, before any output is written; a per-trial CSV beside a
summary is refused naming both.  A summary without a legal block is not an error
(tests/analyses/test_compare_legal.py).
"""

from __future__ import annotations

import json

import pytest

import lidframe
from lidframe.data.simulate import simulate_system
from tests.bad_input.conftest import assert_refused


@pytest.fixture(scope="module")
def summary() -> dict:
    """A summary as lidframe evaluate --json writes it, with its legal block (N = 6)."""
    from lidframe.analyses.legal_criteria import legal_criteria

    dev, ev = simulate_system(leakage=0.3, seed=1, n_enrolled=6, trials_per_speaker=3)
    result = lidframe.evaluate(dev, ev)
    return {**json.loads(result.to_json()), "legal": legal_criteria(result, ev, bootstrap=None).to_dict()}


def _edited(summary: dict, edit) -> dict:
    record = json.loads(json.dumps(summary))
    edit(record)
    return record


def _set_first_pi_link(value):
    return lambda r: r["legal"]["linkability"]["points"][0].__setitem__("pi_link", value)


CASES = {
    "not JSON": (lambda s: "{not json", ["bad.json", "not JSON (line 1", "lidframe evaluate --json"]),
    "a JSON list": (lambda s: json.dumps([s]), ["bad.json", "expected a JSON object", "got list"]),
    "not a summary": (lambda s: json.dumps({"legal": s["legal"]}), ["bad.json", "not a summary lidframe wrote"]),
    "a legal block that is a list": (
        lambda s: json.dumps(_edited(s, lambda r: r.__setitem__("legal", [1]))),
        ["bad.json", "legal block is a list", "expected an object or null"],
    ),
    "a legal block without absent": (
        lambda s: json.dumps(_edited(s, lambda r: r["legal"].pop("absent"))),
        ["bad.json", "legal block", "not a legal block as lidframe writes it", "absent"],
    ),
    "pi_link above 1": (
        lambda s: json.dumps(_edited(s, _set_first_pi_link(1.5))),
        ["bad.json", "pi_link at N'=2 is 1.5", "expected a share in [0, 1]"],
    ),
    "pi_link a string": (
        lambda s: json.dumps(_edited(s, _set_first_pi_link("high"))),
        ["bad.json", "not a legal block as lidframe writes it"],
    ),
    "pi_link null": (
        lambda s: json.dumps(_edited(s, _set_first_pi_link(None))),
        ["bad.json", "pi_link at N'=2 is nan", "expected a share in [0, 1]"],
    ),
    "an N' above N": (
        lambda s: json.dumps(_edited(s, lambda r: r["legal"]["linkability"]["points"][0].__setitem__("n_prime", 99))),
        ["bad.json", "a point at N'=99", "expected N' in 2..6"],
    ),
    "pi_sing below 0": (
        lambda s: json.dumps(_edited(s, lambda r: r["legal"]["singling_out"].__setitem__("pi_sing", -0.1))),
        ["bad.json", "pi_sing is -0.1", "expected a share in [0, 1]"],
    ),
    "singling out of no draws": (
        lambda s: json.dumps(_edited(s, lambda r: r["legal"]["singling_out"].__setitem__("draws", 0))),
        ["bad.json", "draws=0", "draws >= 1"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_summary_that_cannot_be_compared_is_one_line(tmp_path, capsys, summary, case):
    make, expect = CASES[case]
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    (data / "good.json").write_text(json.dumps(summary))
    (data / "bad.json").write_text(make(summary))
    argv = ["compare", data / "good.json", data / "bad.json", "--json", out / "cmp.json"]
    assert_refused(argv, capsys, expect=expect, watch=[data, out])


def test_a_per_trial_table_beside_a_summary_is_refused_naming_both(tmp_path, capsys, summary):
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    (data / "a.json").write_text(json.dumps(summary))
    (data / "b.csv").write_text("trial_id,trial_spk,lid_bits\nt1,s1,0.5\nt2,s1,0.1\n")
    line = assert_refused(
        ["compare", data / "a.json", data / "b.csv", "--json", out / "cmp.json"],
        capsys,
        expect=["a.json is a summary (.json)", "b.csv is not", "not both"],
        watch=[data, out],
    )
    assert line.count("\n") == 0


def test_a_fifo_as_a_summary_is_named_not_waited_on(tmp_path, capsys, summary, fifo):
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    (data / "good.json").write_text(json.dumps(summary))
    pipe = fifo(data / "pipe.json")
    argv = ["compare", data / "good.json", pipe, "--json", out / "cmp.json"]
    assert_refused(argv, capsys, expect=["pipe.json", "is a FIFO"], watch=[out])
