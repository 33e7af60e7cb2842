"""The real-voice demo's score files hold the provenance ``lidframe score`` writes (issue 41), tested on its pieces.

The demo itself takes 30+ minutes; here its scoring step
(:func:`lidframe.demo.voice.attackers._score_both_splits`) runs on small data dirs of tones
made here, with a cheap attacker that reads the audio, and the record is compared with
:mod:`hashlib` over the files.
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

from lidframe.data.provenance import ScoreFile
from lidframe.demo.voice.plan import _DemoRun
from tests.data.provenance_dirs import AudioBytes, registered_audio_bytes, sha256_of, write_audio_dir

pytest.importorskip("soundfile")


@pytest.fixture()
def roots(tmp_path):
    """A plain root and a system's root, each with the demo's four data dirs of tones."""
    made = {}
    for name in ("plain", "system"):
        for k, dir_name in enumerate(("dev_enrolls", "dev_trials", "eval_enrolls", "eval_trials")):
            write_audio_dir(tmp_path / name / dir_name, f"{name}{k}-", speakers=3, per_speaker=2, seed=k)
        made[name] = tmp_path / name
    return made


def combined(folder) -> str:
    """SHA-256 over ``<file sha256>  <utterance>`` lines of the data dir's audio, computed here."""
    lines = []
    for line in (folder / "wav.scp").read_text().splitlines():
        utt, wav = line.split()
        lines.append(f"{sha256_of(folder / wav)}  {utt}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def test_each_split_records_its_rung_its_attacker_and_the_digests_of_its_data(roots, tmp_path):
    from lidframe.demo.voice.attackers import _score_both_splits

    run = _DemoRun(tmp_path / "out", seed=0, epochs=1, jobs=1, progress=False, log=lambda m: None)
    run.out.mkdir()
    checkpoint = tmp_path / "adapted.ckpt"
    checkpoint.write_text("adapted\n")
    attacker = AudioBytes(checkpoint=str(checkpoint))
    with registered_audio_bytes():
        scored = _score_both_splits(
            run,
            attacker,
            "system/audio-bytes/ignorant",
            roots["plain"],
            roots["system"],
            ("audio-bytes", {"checkpoint": checkpoint}),
        )
    assert set(scored) == {"dev", "eval"}
    for split, path in scored.items():
        with np.load(path) as archive:
            record = json.loads(archive["provenance"].item())
        assert ScoreFile.of(split, path).provenance.to_dict() == record
        enrol, trials = roots["plain"] / f"{split}_enrolls", roots["system"] / f"{split}_trials"
        assert [(d["role"], d["path"]) for d in record["data_dirs"]] == [
            ("enrol", os.path.abspath(enrol)),
            ("trials", os.path.abspath(trials)),
        ]
        for entry, folder in zip(record["data_dirs"], (enrol, trials)):
            assert {t["role"]: t["sha256"] for t in entry["tables"]} == {
                name: sha256_of(folder / name) for name in ("wav.scp", "utt2spk", "spk2utt")
            }
            assert entry["audio"]["sha256"] == combined(folder)
        assert record["scenario"]["name"] == "ignorant" and str(enrol) in record["scenario"]["stated"]
        assert record["attacker"]["files"][0]["sha256"] == sha256_of(checkpoint)
        assert record["attacker"]["weights_sha256"] == sha256_of(checkpoint)
    # every file was hashed once for the run, though both splits and both records name the tables
    files = sum(
        len(os.listdir(roots[n] / d / "wav")) + 3
        for n, d in (
            ("plain", "dev_enrolls"),
            ("plain", "eval_enrolls"),
            ("system", "dev_trials"),
            ("system", "eval_trials"),
        )
    )
    assert run.digests.hashed == files + 1  # and the checkpoint


def test_a_row_that_is_no_rung_has_no_scenario(roots, tmp_path):
    from lidframe.attackers import RandomAttacker
    from lidframe.demo.voice.attackers import _score_both_splits

    run = _DemoRun(tmp_path / "out", seed=0, epochs=1, jobs=1, progress=False, log=lambda m: None)
    run.out.mkdir()
    scored = _score_both_splits(
        run, RandomAttacker(seed=0), "random", roots["plain"], roots["plain"], ("random", {"seed": 0})
    )
    record = ScoreFile.of("random dev", scored["dev"]).provenance
    assert record.scenario is None and record.attacker.spec == "random" and record.attacker.settings == (("seed", "0"),)
    assert all(d.audio is None for d in record.data_dirs)  # the random attacker reads no audio
