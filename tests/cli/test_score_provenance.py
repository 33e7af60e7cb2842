"""Provenance from audio to bit (issue 41): ``lidframe score`` writes it, ``evaluate`` carries it onto the page.

Data dirs of real tone files are built here (tests/data/provenance_dirs.py); every
digest the score file, the JSON and the page show is compared with :mod:`hashlib` over
those files, the score file's member read with plain numpy and json.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from lidframe import ScoreSet
from lidframe.attackers import RandomAttacker
from lidframe.cli import main
from lidframe.data.kaldi import read_data_dir
from lidframe.data.utterance import group_by_speaker
from tests.data.provenance_dirs import registered_audio_bytes, sha256_of, write_audio_dir

#: What the page and the JSON say of a score file without provenance (the issue's words).
NO_PROVENANCE = "no provenance recorded: scored outside lidframe score or before 0.3.0"


def run(argv, capsys) -> str:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def document(path: Path) -> dict:
    with np.load(path) as archive:
        return json.loads(archive["provenance"].item())


def audio_digest(folder: Path) -> tuple[list[list[str]], str]:
    """Each listed file's SHA-256 by utterance, and SHA-256 over ``sha256sum``'s lines of them, computed here."""
    listed = [line.split() for line in (folder / "wav.scp").read_text().splitlines()]
    pairs = [[utt, sha256_of(folder / wav)] for utt, wav in listed]
    text = "".join(f"{digest}  {utt}\n" for utt, digest in pairs)
    return pairs, hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture()
def dirs(tmp_path):
    """dev and eval, each an enrolment and a trial dir of tones (6 speakers)."""
    made = {}
    for split in ("dev", "eval"):
        made[split] = {
            "enrol": write_audio_dir(tmp_path / f"{split}_enrol", f"{split}e", speakers=6, per_speaker=2, seed=1),
            "trials": write_audio_dir(tmp_path / f"{split}_trials", f"{split}t", speakers=6, per_speaker=2, seed=2),
        }
    return made


def score(folders, out, attacker):
    return ["score", "--attacker", attacker, "--enrol", folders["enrol"], "--trials", folders["trials"], "--out", out]


def test_score_records_the_tables_the_attacker_the_scenario_and_the_time(dirs, tmp_path, capsys):
    out = tmp_path / "eval.npz"
    printed = run([*score(dirs["eval"], out, "random?seed=3"), "--scenario", "lazy-informed"], capsys)
    record = document(out)
    assert record["format"] == "lidframe score provenance" and record["version"] == 1
    assert record["attacker"]["spec"] == "random?seed=3" and record["attacker"]["settings"] == [["seed", "3"]]
    assert record["attacker"]["reads_audio"] is False and record["attacker"]["weights_sha256"] is None
    for entry, role in zip(record["data_dirs"], ("enrol", "trials")):
        folder = dirs["eval"][role]
        assert entry["role"] == role and entry["path"] == os.path.abspath(folder)
        assert {t["role"]: t["sha256"] for t in entry["tables"]} == {
            name: sha256_of(folder / name) for name in ("wav.scp", "utt2spk", "spk2utt")
        }
        assert entry["audio"] is None  # the random attacker never opens the audio: it is no input of the scores
    assert record["scenario"]["name"] == "lazy-informed" and record["scenario"]["code"] == "a-a"
    assert printed.splitlines()[0] == f"scenario {record['scenario']['stated']}"
    assert record["command"].startswith("lidframe score --attacker 'random?seed=3'")
    assert dict(record["software"])["numpy"] == np.__version__
    # the scores are those the attacker gives, provenance or not
    expected = RandomAttacker(seed=3).score(
        read_data_dir(dirs["eval"]["trials"]), group_by_speaker(read_data_dir(dirs["eval"]["enrol"]))
    )
    assert ScoreSet.load(out).equals(expected)


def test_an_attacker_that_reads_audio_has_each_file_digested_and_its_weights(dirs, tmp_path, capsys):
    checkpoint = tmp_path / "model.ckpt"
    checkpoint.write_text("adapted\n")
    out = tmp_path / "eval.npz"
    with registered_audio_bytes():
        run([*score(dirs["eval"], out, "audio-bytes?dim=3"), "--checkpoint", checkpoint], capsys)
    record = document(out)
    attacker = record["attacker"]
    assert attacker["settings"] == [["dim", "3"], ["checkpoint", str(checkpoint)]]
    assert attacker["files"] == [
        {
            "role": "checkpoint",
            "path": str(checkpoint),
            "sha256": sha256_of(checkpoint),
            "size_bytes": checkpoint.stat().st_size,
        }
    ]
    assert attacker["weights_sha256"] == sha256_of(checkpoint) and attacker["reads_audio"] is True
    for entry, role in zip(record["data_dirs"], ("enrol", "trials")):
        pairs, combined = audio_digest(dirs["eval"][role])
        assert entry["audio"] == {"n_files": len(pairs), "sha256": combined, "utterances": pairs}


@pytest.mark.slow
def test_evaluate_carries_the_provenance_onto_the_page_and_into_the_json(dirs, tmp_path, capsys):
    from tests.report.htmltree import parse

    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    checkpoint = tmp_path / "model.ckpt"
    checkpoint.write_text("adapted\n")
    with registered_audio_bytes():
        for split in ("dev", "eval"):
            run([*score(dirs[split], tmp_path / f"{split}.npz", "audio-bytes"), "--checkpoint", checkpoint], capsys)
    run(
        ["evaluate", "--dev", tmp_path / "dev.npz", "--eval", tmp_path / "eval.npz", "--no-bootstrap"]
        + ["--report", tmp_path / "report", "--json", tmp_path / "summary.json"],
        capsys,
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    for split in ("dev", "eval"):
        assert summary["provenance"][split] == {
            "path": str(tmp_path / f"{split}.npz"),
            "provenance": document(tmp_path / f"{split}.npz"),
        }
    page = parse((tmp_path / "report" / "report.html").read_text())
    for k, split in enumerate(("dev", "eval"), start=1):
        table = page.find("table", id=f"score-file-{k}")
        assert table.attrs["data-role"] == split
        rows = {
            tr.attrs["data-key"]: [td.text() for td in tr.find_all("td")] for tr in table.find("tbody").find_all("tr")
        }
        for role in ("enrol", "trials"):
            folder = dirs[split][role]
            assert rows[f"{role} wav.scp"] == [os.path.abspath(folder / "wav.scp"), sha256_of(folder / "wav.scp")]
            assert rows[f"{role} utt2spk"][1] == sha256_of(folder / "utt2spk")
            assert rows[f"{role} audio"][1] == audio_digest(folder)[1]
        assert rows["attacker checkpoint"] == [str(checkpoint), sha256_of(checkpoint)]
        assert rows["attacker weights"][1] == sha256_of(checkpoint)


@pytest.mark.slow
def test_a_score_file_without_provenance_still_evaluates_and_the_page_says_so(dirs, tmp_path, capsys):
    from tests.report.htmltree import parse

    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    run(score(dirs["dev"], tmp_path / "dev.npz", "random"), capsys)
    scores = RandomAttacker().score(
        read_data_dir(dirs["eval"]["trials"]), group_by_speaker(read_data_dir(dirs["eval"]["enrol"]))
    )
    arrays = {k: getattr(scores, k) for k in ("scores", "enrolled", "trial_speakers", "trial_ids")}
    np.savez(tmp_path / "old.npz", **arrays)  # as lidframe 0.2 wrote it
    run(
        ["evaluate", "--dev", tmp_path / "dev.npz", "--eval", tmp_path / "old.npz", "--no-bootstrap"]
        + ["--report", tmp_path / "report", "--json", tmp_path / "summary.json"],
        capsys,
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["provenance"]["eval"] == {
        "path": str(tmp_path / "old.npz"),
        "provenance": None,
        "note": NO_PROVENANCE,
    }
    assert summary["provenance"]["dev"]["provenance"] == document(tmp_path / "dev.npz")
    page = parse((tmp_path / "report" / "report.html").read_text())
    assert page.find("table", id="score-file-2").find("tr", **{"class": "no-provenance"}).text() == NO_PROVENANCE
    assert page.find("table", id="score-file-1").find_all("tr", **{"class": "no-provenance"}) == []


@pytest.mark.slow
def test_lidframe_report_carries_the_provenance_of_the_grids_fresh_score_files(dirs, tmp_path, capsys, monkeypatch):
    from tests.report.htmltree import parse

    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    for split in ("dev", "eval"):
        run(score(dirs[split], tmp_path / f"scored_{split}.npz", "random?seed=1"), capsys)
        scores = RandomAttacker(seed=2).score(
            read_data_dir(dirs[split]["trials"]), group_by_speaker(read_data_dir(dirs[split]["enrol"]))
        )
        scores.save(tmp_path / f"old_{split}.npz")  # without provenance
    (tmp_path / "grid.toml").write_text(
        '[grid]\ncalibrators = ["logistic"]\npriors = ["uniform"]\nseeds = [0]\n\n'
        '[systems.scored]\ndev = "scored_dev.npz"\neval = "scored_eval.npz"\n\n'
        '[systems.old]\ndev = "old_dev.npz"\neval = "old_eval.npz"\n'
    )
    run(["grid", "grid.toml", "--out", "out"], capsys)
    run(["report", "out"], capsys)
    page = parse((tmp_path / "out" / "report" / "report.html").read_text())
    tables = {t.attrs["data-role"]: t for t in page.find_all("table", **{"class": "score-file"})}
    assert sorted(tables) == ["old dev", "old eval", "scored dev", "scored eval"]
    for split in ("dev", "eval"):
        assert tables[f"old {split}"].find("tr", **{"class": "no-provenance"}).text() == NO_PROVENANCE
        rows = {
            tr.attrs["data-key"]: [td.text() for td in tr.find_all("td")]
            for tr in tables[f"scored {split}"].find_all("tr")
            if "data-key" in tr.attrs
        }
        assert rows["enrol wav.scp"][1] == sha256_of(dirs[split]["enrol"] / "wav.scp")
        assert rows["trials utt2spk"][1] == sha256_of(dirs[split]["trials"] / "utt2spk")
    # scored again: the grid's cells of that system are stale, and the page shows no provenance for numbers it is not of
    run(score(dirs["eval"], tmp_path / "scored_eval.npz", "random?seed=1"), capsys)
    run(["report", "out"], capsys)
    page = parse((tmp_path / "out" / "report" / "report.html").read_text())
    roles = sorted(t.attrs["data-role"] for t in page.find_all("table", **{"class": "score-file"}))
    assert roles == ["old dev", "old eval"]
