"""A cohort (or PLDA training) data dir follows the run's ``--wav-paths`` (issue 42).

The attacker ``listening`` opens every utterance's audio (its embedding is drawn from the
file's bytes and the speaker), so the scores depend on which files a data dir's relative
paths name.  The data dirs here list ``wav/<utt>.wav`` relative to themselves and the
command runs from another folder: only the data-dir convention finds the audio.  The
expected scores are those of the same attacker given copies of the data dirs that list
absolute paths (read by the default rule, no ``wav_paths`` involved).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lidframe import registry
from lidframe.data.kaldi import read_data_dir
from lidframe.data.provenance import read_provenance
from lidframe.data.scoreset import ScoreSet
from lidframe.data.utterance import group_by_speaker
from tests.bad_input.conftest import assert_refused
from tests.listening import Listening as BaseListening
from tests.listening import registered


class Listening(BaseListening):
    """The shared listening attacker with half its noise."""

    noise = 0.5


def _moving_dir(folder: Path, prefix: str, n_speakers: int, per_speaker: int) -> Path:
    """A data dir listing ``wav/<utt>.wav`` relative to itself (one that moves with its audio)."""
    (folder / "wav").mkdir(parents=True)
    tag = f"{prefix}-{folder.name}"
    utts = [(f"{tag}-{s}-{k}", f"{prefix}spk{s}") for s in range(n_speakers) for k in range(per_speaker)]
    for utt, _ in utts:
        (folder / "wav" / f"{utt}.wav").write_text(f"the audio of {utt}")
    (folder / "wav.scp").write_text("".join(f"{u} wav/{u}.wav\n" for u, _ in utts))
    (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
    return folder


def _absolute_copy(folder: Path, into: Path) -> Path:
    """*folder* with its ``wav.scp`` listing absolute paths (written here, line by line)."""
    into.mkdir(parents=True)
    lines = [line.split(maxsplit=1) for line in (folder / "wav.scp").read_text().splitlines()]
    (into / "wav.scp").write_text("".join(f"{utt} {folder / path}\n" for utt, path in lines))
    (into / "utt2spk").write_text((folder / "utt2spk").read_text())
    return into


@pytest.fixture()
def moved(tmp_path, monkeypatch):
    """enrol, trials and cohort data dirs under ``data/`` that list paths relative to themselves; cwd elsewhere."""
    data = tmp_path / "data"
    folders = {
        "enrol": _moving_dir(data / "enrol", "s", 4, 2),
        "trials": _moving_dir(data / "trials", "s", 4, 3),
        "cohort": _moving_dir(data / "cohort", "c", 6, 2),
    }
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # no wav/ here: only the data-dir convention finds the audio
    return folders


def test_lidframe_score_passes_wav_paths_down_to_the_cohort(tmp_path, moved, capsys):
    from lidframe.cli import main

    out = tmp_path / "scores.npz"
    spec = f"listening?score_norm=snorm&cohort={moved['cohort']}"
    argv = ["score", "--attacker", spec, "--enrol", moved["enrol"], "--trials", moved["trials"]]
    with registered(Listening):
        assert main([str(a) for a in [*argv, "--wav-paths", "data-dir", "--out", out]]) == 0
        assert "warning" not in capsys.readouterr().err  # no data dir of the run is read the Kaldi way
        copies = {name: _absolute_copy(folder, tmp_path / "absolute" / name) for name, folder in moved.items()}
        expected = Listening(score_norm="snorm", cohort=copies["cohort"]).score(
            read_data_dir(copies["trials"]), group_by_speaker(read_data_dir(copies["enrol"]))
        )
        np.testing.assert_allclose(ScoreSet.load(out).scores, expected.scores, rtol=1e-12, atol=1e-12)
        record = json.loads(read_provenance(out).to_json())["attacker"]
        assert dict(record["settings"])["wav_paths"] == "data-dir"
        audio = {Path(f["path"]).name for f in record["files"] if f["role"].startswith("cohort")} - {
            "wav.scp",
            "utt2spk",
        }
        assert audio == {p.name for p in (moved["cohort"] / "wav").iterdir()}  # the files read, in the provenance


def test_the_python_option_and_the_spec_find_the_cohorts_audio_in_its_data_dir(tmp_path, moved):
    spec = f"listening?score_norm=snorm&cohort={moved['cohort']}&wav_paths=data-dir"
    with registered(Listening):
        found = registry.spec_inputs("attacker", spec)
    assert {p for p in found.files if p.suffix == ".wav"} == set((moved["cohort"] / "wav").iterdir())
    attacker = Listening(score_norm="asnorm", cohort=moved["cohort"], cohort_top_k=3, wav_paths="data-dir")
    enrol = group_by_speaker(read_data_dir(moved["enrol"], wav_paths="data-dir"))
    scores = attacker.score(read_data_dir(moved["trials"], wav_paths="data-dir"), enrol)
    copy = _absolute_copy(moved["cohort"], tmp_path / "absolute")
    expected = Listening(score_norm="asnorm", cohort=copy, cohort_top_k=3).score(
        read_data_dir(moved["trials"], wav_paths="data-dir"), enrol
    )
    np.testing.assert_allclose(scores.scores, expected.scores, rtol=1e-12, atol=1e-12)


def test_a_plda_training_data_dir_follows_wav_paths_too(tmp_path, moved):
    train = _moving_dir(tmp_path / "data" / "train", "p", 8, 3)
    enrol = group_by_speaker(read_data_dir(moved["enrol"], wav_paths="data-dir"))
    trials = read_data_dir(moved["trials"], wav_paths="data-dir")
    got = Listening(backend="plda", plda_train=train, plda_dim=4, wav_paths="data-dir").score(trials, enrol)
    copy = _absolute_copy(train, tmp_path / "absolute")
    expected = Listening(backend="plda", plda_train=copy, plda_dim=4).score(trials, enrol)
    np.testing.assert_allclose(got.scores, expected.scores, rtol=1e-10, atol=1e-10)


def test_a_spec_stating_another_convention_than_the_run_is_refused(tmp_path, moved, capsys):
    (tmp_path / "out").mkdir()
    spec = f"listening?score_norm=snorm&cohort={moved['cohort']}&wav_paths=data-dir"
    argv = ["score", "--attacker", spec, "--enrol", str(moved["enrol"]), "--trials", str(moved["trials"])]
    with registered(Listening):
        assert_refused(
            [*argv, "--out", str(tmp_path / "out" / "s.npz")],
            capsys,
            expect=["wav_paths=data-dir", "--wav-paths cwd", "give --wav-paths data-dir"],
            watch=[tmp_path],
        )
