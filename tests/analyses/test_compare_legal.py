"""The legal criteria of summary.json files side by side (lidframe.analyses.compare_legal, ``lidframe compare A.json B.json``).

The summaries are made by hand: a real summary's keys (so that it reads as one lidframe
wrote) with a ``legal`` block of numbers written here, so every number the comparison
shows -- each side's estimate, interval and chance, and A - B -- is checked against the
numbers the test put in.  A side without a criterion (absent with its reason, or a summary
without a legal block) shows its reason and no number.
"""

from __future__ import annotations

import json
import math

import pytest

import lidframe
from lidframe.analyses.compare_legal import compare_legal, read_summary_criteria
from lidframe.cli import main
from lidframe.data.simulate import simulate_system


@pytest.fixture(scope="module")
def base() -> dict:
    """The keys of a real summary (N = 6), without a legal block: what lidframe wrote before it computed one."""
    result = lidframe.evaluate(*simulate_system(leakage=0.3, seed=1, n_enrolled=6, trials_per_speaker=3))
    return json.loads(result.to_json())


def link(points: dict[int, tuple[float, float | None, float | None]]) -> dict:
    """A linkability block: N' -> (pi_link, low, high); chance 1/N'."""
    return {
        "points": [
            {"n_prime": k, "pi_link": v, "low": lo, "high": hi, "chance": 1 / k} for k, (v, lo, hi) in points.items()
        ]
    }


def single(n: int, pi: float, low: float | None = None, high: float | None = None, l: int = 1) -> dict:  # noqa: E741
    return {"n": n, "l": l, "pi_sing": pi, "low": low, "high": high, "chance": math.exp(-1), "draws": 20}


def write(folder, name: str, base: dict, n: int, legal: dict | None, *, drop: bool = False):
    """A summary file of N = *n* with the *legal* block (None: ``"legal": null``; *drop*: no key at all)."""
    record = {**base, "n_enrolled": n}
    if not drop:
        absent = {} if legal is None else legal.pop("absent", {})
        record["legal"] = None if legal is None else {
            "linkability": legal.get("linkability"), "singling_out": legal.get("singling_out"), "absent": absent,
            "n_enrolled": n, "n_trials": 60, "seed": 0, "level": 0.95, "method": "bca",
        }  # fmt: skip
    path = folder / f"{name}.json"
    path.write_text(json.dumps(record))
    return path


def rows_by_place(result, a: str, b: str) -> dict:
    return {(r.criterion, r.at): r for r in result.rows if (r.a, r.b) == (a, b)}


def test_same_n_every_point_side_by_side_with_its_difference(tmp_path, base):
    a = write(tmp_path, "a", base, 8, {"linkability": link({2: (0.9, 0.85, 0.95), 4: (0.7, 0.6, 0.8), 8: (0.5, 0.4, 0.6)}),
                                       "singling_out": single(8, 0.45, 0.40, 0.50)})  # fmt: skip
    b = write(tmp_path, "b", base, 8, {"linkability": link({2: (0.55, 0.5, 0.6), 4: (0.3, 0.25, 0.35), 8: (0.125, None, None)}),
                                       "singling_out": single(8, 0.36, 0.30, 0.42)})  # fmt: skip
    result = compare_legal({"a": read_summary_criteria(a), "b": read_summary_criteria(b)})
    rows = rows_by_place(result, "a", "b")
    assert list(rows) == [("pi_link", "N'=2"), ("pi_link", "N'=4"), ("pi_link", "N'=8"), ("pi_sing", "N")]
    for k, want_a, want_b in ((2, 0.9, 0.55), (4, 0.7, 0.3), (8, 0.5, 0.125)):
        r = rows[("pi_link", f"N'={k}")]
        assert (r.at_a, r.at_b, r.value_a, r.value_b) == (k, k, want_a, want_b)
        assert r.diff == want_a - want_b and r.chance_a == r.chance_b == 1 / k
        assert r.absent_a == r.absent_b == ""
    last = rows[("pi_link", "N'=8")]
    assert (last.low_a, last.high_a) == (0.4, 0.6) and math.isnan(last.low_b) and math.isnan(last.high_b)
    sing = rows[("pi_sing", "N")]
    assert (sing.at_a, sing.value_a, sing.low_a, sing.high_a) == (8, 0.45, 0.40, 0.50)
    assert sing.diff == 0.45 - 0.36 and sing.chance_a == math.exp(-1)


def test_different_n_compares_the_common_n_prime_and_each_own_rank1(tmp_path, base):
    a = write(tmp_path, "a", base, 8, {"linkability": link({2: (0.9, None, None), 4: (0.7, None, None), 8: (0.5, None, None)}),
                                       "singling_out": single(8, 0.45)})  # fmt: skip
    b = write(tmp_path, "b", base, 16, {"linkability": link({2: (0.6, None, None), 4: (0.4, None, None), 8: (0.2, None, None),
                                                             16: (0.1, None, None)}), "singling_out": single(16, 0.30)})  # fmt: skip
    rows = rows_by_place(compare_legal({"a": read_summary_criteria(a), "b": read_summary_criteria(b)}), "a", "b")
    assert list(rows) == [("pi_link", f"N'={k}") for k in (2, 4, 8)] + [("pi_link", "N'=N"), ("pi_sing", "N")]
    assert rows[("pi_link", "N'=8")].diff == 0.5 - 0.2  # the same N' = 8: comparable
    own = rows[("pi_link", "N'=N")]
    assert (own.at_a, own.value_a, own.chance_a, own.at_b, own.value_b, own.chance_b) == (
        8,
        0.5,
        1 / 8,
        16,
        0.1,
        1 / 16,
    )
    assert math.isnan(own.diff)  # rank-1 among 8 and among 16: each against its own chance, no difference made up
    sing = rows[("pi_sing", "N")]
    assert (sing.at_a, sing.at_b, sing.value_a, sing.value_b) == (8, 16, 0.45, 0.30) and math.isnan(sing.diff)


def test_a_criterion_left_out_shows_its_reason_and_no_number(tmp_path, base):
    why = "singling out needs at least 2 trials of every speaker"
    a = write(tmp_path, "a", base, 8, {"linkability": link({2: (0.9, None, None), 8: (0.5, None, None)}),
                                       "singling_out": single(8, 0.45)})  # fmt: skip
    b = write(tmp_path, "b", base, 8, {"linkability": link({2: (0.6, None, None), 8: (0.2, None, None)}),
                                       "singling_out": None, "absent": {"singling_out": why}})  # fmt: skip
    sing = rows_by_place(compare_legal({"a": read_summary_criteria(a), "b": read_summary_criteria(b)}), "a", "b")[
        ("pi_sing", "N")
    ]
    assert (sing.value_a, sing.absent_a, sing.absent_b, sing.at_b) == (0.45, "", why, None)
    assert all(math.isnan(v) for v in (sing.value_b, sing.low_b, sing.high_b, sing.chance_b, sing.diff))


@pytest.mark.parametrize("how", ["no legal key", "legal null"])
def test_an_older_summary_without_a_legal_block_says_so(tmp_path, base, how):
    a = write(tmp_path, "a", base, 8, {"linkability": link({2: (0.9, None, None), 4: (0.7, None, None), 8: (0.5, None, None)}),
                                       "singling_out": single(8, 0.45)})  # fmt: skip
    old = write(tmp_path, "old", base, 8, None, drop=how == "no legal key")
    found = read_summary_criteria(old)
    assert (
        found.legal is None
        and "old.json has no legal block" in found.missing
        and base["lidframe_version"] in found.missing
    )
    rows = rows_by_place(compare_legal({"a": read_summary_criteria(a), "old": found}), "a", "old")
    assert list(rows) == [("pi_link", "N'=2"), ("pi_link", "N'=N"), ("pi_sing", "N")]
    assert [(r.at_a, r.value_a) for r in rows.values()] == [(2, 0.9), (8, 0.5), (8, 0.45)]
    for r in rows.values():
        assert r.absent_b == found.missing and r.at_b is None
        assert math.isnan(r.value_b) and math.isnan(r.diff)


def test_the_command_prints_and_writes_the_comparison(tmp_path, base, capsys):
    a = write(tmp_path, "a", base, 8, {"linkability": link({2: (0.9, 0.85, 0.95), 8: (0.5, 0.4, 0.6)}),
                                       "singling_out": single(8, 0.45, 0.4, 0.5)})  # fmt: skip
    old = write(tmp_path, "old", base, 8, None, drop=True)
    assert main(["compare", str(a), str(old), "--names", "anon,plain", "--json", str(tmp_path / "cmp.json")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("legal criteria of 2 summaries side by side")
    (row,) = [line for line in lines if line.startswith("anon") and "N'=2" in line]
    assert row.split() == ["anon", "plain", "pi_link", "N'=2", "0.900", "0.850", "0.950", "0.500"] + ["-"] * 5
    assert "plain: pi_link and pi_sing not computed: " in out and "has no legal block" in out
    stored = json.loads((tmp_path / "cmp.json").read_text())
    assert stored["settings"]["names"] == ["anon", "plain"]
    assert [(r["criterion"], r["at"], r["value_a"], r["value_b"]) for r in stored["rows"]] == [
        ("pi_link", "N'=2", 0.9, None), ("pi_link", "N'=N", 0.5, None), ("pi_sing", "N", 0.45, None)
    ]  # fmt: skip


def test_real_summaries_compare_as_their_legal_blocks_say(tmp_path):
    """lidframe evaluate --json twice, then compare: the rows are the two blocks' numbers."""
    for name, leakage in (("x", 0.4), ("y", 0.1)):
        dev, ev = simulate_system(leakage=leakage, seed=2, n_enrolled=8, trials_per_speaker=3)
        dev.save(tmp_path / f"{name}_dev.npz")
        ev.save(tmp_path / f"{name}_eval.npz")
        argv = ["evaluate", "--dev", tmp_path / f"{name}_dev.npz", "--eval", tmp_path / f"{name}_eval.npz",
                "--json", tmp_path / f"{name}.json"]  # fmt: skip
        assert main([str(v) for v in argv]) == 0
    blocks = {n: json.loads((tmp_path / f"{n}.json").read_text())["legal"] for n in ("x", "y")}
    result = compare_legal({n: read_summary_criteria(tmp_path / f"{n}.json") for n in ("x", "y")})
    points = {n: {p["n_prime"]: p["pi_link"] for p in b["linkability"]["points"]} for n, b in blocks.items()}
    link_rows = [r for r in result.rows if r.criterion == "pi_link"]
    assert [r.at_a for r in link_rows] == sorted(points["x"]) == [2, 4, 8]
    for r in link_rows:
        assert (r.value_a, r.value_b) == (points["x"][r.at_a], points["y"][r.at_b])
    (sing,) = [r for r in result.rows if r.criterion == "pi_sing"]
    assert sing.diff == blocks["x"]["singling_out"]["pi_sing"] - blocks["y"]["singling_out"]["pi_sing"]
