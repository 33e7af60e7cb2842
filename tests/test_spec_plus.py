"""A ``+`` in a component spec is a plus sign (issue 42): values keep it, everything else parses as before.

``urllib.parse.parse_qsl`` reads ``+`` as the space of HTML form encoding, so
``cohort=/data/a+b`` named the folder ``/data/a b`` and ``1e+3`` failed as a float. The
expected values here are the texts written in each spec; the queries without a ``+`` are
checked against ``parse_qsl`` itself (what every earlier lidframe parsed them into, so
nothing keyed on a parsed spec changes).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qsl

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lidframe import registry
from lidframe.attackers import RandomAttacker, Utterance, group_by_speaker
from lidframe.data.provenance import read_provenance
from lidframe.registry import create, parse_spec
from lidframe.registry.coercion import split_query
from lidframe.report.score_files import _merged_spec

#: Value text: any printable character but the query's own separators and escapes.
_VALUE = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="&=%#"), max_size=24)


class _Typed:
    """A component with one text and one float parameter (the types the spec's values are converted by)."""

    def __init__(self, *, text: str = "", scale: float = 1.0):
        self.text, self.scale = text, scale


@given(_VALUE)
def test_any_value_without_separators_round_trips_unchanged(value):
    spec = f"x?v={value}&w=1"  # in the middle: a spec's surrounding whitespace is trimmed
    assert split_query(spec) == ("x", [("v", value), ("w", "1")])
    assert parse_spec(f"t?text={value}&scale=2", _Typed) == ("t", {"text": value, "scale": 2.0})


@given(st.lists(st.tuples(_VALUE.filter(bool), _VALUE), max_size=4, unique_by=lambda kv: kv[0]))
def test_a_query_without_plus_parses_as_parse_qsl_parsed_it(pairs):
    # '%2B' escapes: no literal '+'; a last pair, since a spec's surrounding whitespace is trimmed
    query = "&".join([*(f"{k}={v}".replace("+", "%2B") for k, v in pairs), "end=1"])
    expected = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    assert split_query(f"name?{query}") == ("name", expected)


def test_a_plus_in_a_number_is_the_exponents_sign():
    assert parse_spec("t?scale=1e+3", _Typed)[1] == {"scale": 1000.0}
    assert parse_spec("x?n=1e+3")[1] == {"n": 1000.0}  # the literal guess too
    assert create("calibrator", "logistic?C=2.5e+1").C == 25.0
    assert parse_spec("fusion?of=a+b")[1] == {"of": "a+b"}
    # escapes still decode: %2B is a '+', %20 a space, %26 an '&'
    assert split_query("x?p=a%2Bb&q=a%20b&r=a%26b")[1] == [("p", "a+b"), ("q", "a b"), ("r", "a&b")]


@given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=24))
def test_a_merged_spec_reads_back_as_its_values(value):
    """``lidframe score``'s flags written into its spec (the provenance's) read back as given: ' ', '+', '&' too."""
    merged = _merged_spec("ecapa?device=cpu", {"checkpoint": value})
    assert split_query(merged) == ("ecapa", [("device", "cpu"), ("checkpoint", value)])


def _data_dir(folder: Path, utterances: list[Utterance]) -> Path:
    folder.mkdir(parents=True)
    (folder / "wav.scp").write_text("".join(f"{u.utt_id} {folder}/{u.utt_id}.wav\n" for u in utterances))
    (folder / "utt2spk").write_text("".join(f"{u.utt_id} {u.speaker}\n" for u in utterances))
    return folder


def _speakers(prefix: str, n: int, per: int, tag: str) -> list[Utterance]:
    return [Utterance(f"{tag}{s}_{k}", f"{prefix}{s}") for s in range(n) for k in range(per)]


def test_a_path_with_plus_reaches_the_attacker_as_written(tmp_path, capsys):
    from lidframe.cli import main

    enrol = _data_dir(tmp_path / "enrol", _speakers("s", 4, 2, "e"))
    trials = _data_dir(tmp_path / "trials", _speakers("s", 4, 2, "t"))
    cohort = _data_dir(tmp_path / "co+hort", _speakers("c", 5, 2, "c"))
    spec = f"random?score_norm=snorm&cohort={cohort}"
    assert create("attacker", spec).cohort == str(cohort)
    assert {p.parent for p in registry.spec_inputs("attacker", spec).files} == {cohort}
    out = tmp_path / "scores.npz"
    assert main(["score", "--attacker", spec, "--enrol", str(enrol), "--trials", str(trials), "--out", str(out)]) == 0
    capsys.readouterr()
    record = json.loads(read_provenance(out).to_json())["attacker"]
    assert dict(record["settings"])["cohort"] == str(cohort)
    # the scores of the attacker built with the folder itself (no spec)
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.scoreset import ScoreSet

    direct = RandomAttacker(score_norm="snorm", cohort=cohort).score(
        read_data_dir(trials), group_by_speaker(read_data_dir(enrol))
    )
    np.testing.assert_array_equal(ScoreSet.load(out).scores, direct.scores)


def test_a_grid_attacker_with_plus_in_its_path_reads_that_folder(tmp_path):
    from lidframe.grid.plan import plan_grid
    from lidframe.grid.spec import load_grid_spec

    cohort = _data_dir(tmp_path / "co+hort", _speakers("c", 5, 2, "c"))
    for split in ("dev", "eval"):
        _data_dir(tmp_path / f"{split}_enrol", _speakers(f"{split}s", 4, 2, f"{split}e"))
        _data_dir(tmp_path / f"{split}_trials", _speakers(f"{split}s", 4, 2, f"{split}t"))
    (tmp_path / "grid.toml").write_text(
        f'[grid]\nattackers = ["random?score_norm=snorm&cohort={cohort}"]\ncalibrators = ["logistic"]\n\n'
        "[systems.anon]\n"
        + "".join(
            f'{split} = {{ enrol = "{split}_enrol", trials = ["{split}_trials"] }}\n' for split in ("dev", "eval")
        )
    )
    (cell,) = plan_grid(load_grid_spec(tmp_path / "grid.toml"), tmp_path / "out").cells
    read = {key for key in cell.inputs if key.startswith("attacker file")}
    assert read == {f"attacker file {cohort / name}" for name in ("wav.scp", "utt2spk")}
