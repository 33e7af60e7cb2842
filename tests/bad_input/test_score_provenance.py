"""A score file whose provenance is damaged (issue 41): one line naming the file, exit 2, nothing written.

``lidframe evaluate`` reads the provenance of ``--dev`` and ``--eval`` before any work;
the scores themselves are good here, only the member ``provenance`` is broken.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.bad_input.conftest import assert_refused


def write(path, scores, member) -> None:
    arrays = {k: getattr(scores, k) for k in ("scores", "enrolled", "trial_speakers", "trial_ids")}
    np.savez(path, **arrays, provenance=member)


def good_document() -> dict:
    """A provenance document with one data dir and no audio (the random attacker's), every field valid."""
    return {
        "format": "lidframe score provenance",
        "version": 1,
        "lidframe_version": "0.3.0",
        "created": "2025-01-01T00:00:00+00:00",
        "command": None,
        "working_folder": None,
        "attacker": {
            "name": "random",
            "spec": "random",
            "settings": [],
            "code": None,
            "reads_audio": False,
            "files": [],
            "weights_sha256": None,
        },
        "data_dirs": [
            {
                "role": "enrol",
                "path": "/data/enrol",
                "n_utterances": 2,
                "n_speakers": 2,
                "tables": [{"role": "wav.scp", "path": "/data/enrol/wav.scp", "sha256": "0" * 64, "size_bytes": 9}],
                "audio": None,
            }
        ],
        "scenario": None,
        "software": [["lidframe", "0.3.0"]],
    }


def damaged(edit) -> bytes:
    document = good_document()
    edit(document)
    return json.dumps(document).encode()


CASES = {
    "not JSON": (b'{"format": "lidframe score provenance", ', ["not json (line 1", "member 'provenance'"]),
    "not an object": (b'"scores"', ["damaged provenance", "expected an object"]),
    "a table digest cut short": (
        damaged(lambda d: d["data_dirs"][0]["tables"][0].update(sha256="0" * 12)),
        ["damaged provenance", "data_dirs[0].tables[0].sha256", "64 lowercase hex digits"],
    ),
    "no data dirs": (damaged(lambda d: d.pop("data_dirs")), ["damaged provenance", "has no 'data_dirs'"]),
}


@pytest.mark.parametrize("split", ["dev", "eval"])
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_damaged_provenance_is_refused_before_any_work(case, split, folders, good_sets, capsys):
    data, out = folders
    member, words = CASES[case]
    good = {"dev": good_sets[0], "eval": good_sets[1]}
    write(data / f"{split}.npz", good[split], np.array(member))
    line = assert_refused(
        ["evaluate", "--dev", data / "dev.npz", "--eval", data / "eval.npz"]
        + ["--json", out / "summary.json", "--report", out / "report"],
        capsys,
        expect=[str(data / f"{split}.npz"), *words],
        watch=[data, out],
    )
    assert "write the score file again" in line or "not json" in line.lower()


def test_the_undamaged_document_is_read(folders, good_sets):
    from lidframe.data.provenance import read_provenance

    data, _ = folders
    write(data / "eval.npz", good_sets[1], np.array(json.dumps(good_document()).encode()))
    assert read_provenance(data / "eval.npz").to_dict() == good_document()
