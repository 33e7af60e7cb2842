"""``lidframe score --scenario``: the line that states the rung, what it refuses, and that nothing else changes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lidframe import ScoreSet
from lidframe.cli import main
from lidframe.data.kaldi import read_data_dir
from lidframe.data.utterance import group_by_speaker
from tests.grid.scenario_data import Adaptable, ladder_system, registered_adaptable


@pytest.fixture()
def data(tmp_path):
    """eval's anonymised enrolment, original enrolment and trials (6 speakers), and an adapted checkpoint."""
    dirs = ladder_system(tmp_path)["eval"]
    (tmp_path / "adapted.ckpt").write_text("0.9\n")
    with registered_adaptable():
        yield tmp_path, dirs


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def score(dirs, out, *extra, enrol="enrol"):
    return ["score", "--enrol", dirs[enrol], "--trials", dirs["trials"], "--out", out, *extra]


def test_without_the_flag_the_output_is_the_one_line_it_was(data, capsys):
    folder, dirs = data
    code, out, err = run(score(dirs, folder / "s.npz", "--attacker", "random"), capsys)
    assert code == 0, err
    assert (
        out
        == f"scored 18 trials against N = 6 enrolled speakers (0 outsider trials) with random; wrote {folder / 's.npz'}\n"
    )


@pytest.mark.parametrize("name", ["ignorant", "lazy-informed", "semi-informed"])
def test_the_score_set_is_the_same_with_the_flag(data, capsys, name):
    folder, dirs = data
    assert run(score(dirs, folder / "plain.npz", "--attacker", "random"), capsys)[0] == 0
    assert run(score(dirs, folder / "rung.npz", "--attacker", "random", "--scenario", name), capsys)[0] == 0
    with np.load(folder / "plain.npz") as plain, np.load(folder / "rung.npz") as rung:
        assert sorted(plain.files) == sorted(rung.files)  # no new key
        for key in set(plain.files) - {"provenance"}:  # the provenance states the rung (and the time)
            np.testing.assert_array_equal(plain[key], rung[key])
        assert json.loads(rung["provenance"].item())["scenario"]["name"] == name
        assert json.loads(plain["provenance"].item())["scenario"] is None


def test_ignorant_states_the_original_enrolment_and_the_clear_model(data, capsys):
    folder, dirs = data
    out_file = folder / "s.npz"
    code, out, err = run(
        score(dirs, out_file, "--attacker", "adaptable", "--scenario", "ignorant", enrol="original_enrol"), capsys
    )
    assert code == 0, err
    assert out.splitlines() == [
        f"scenario ignorant (o-a): enrolment original speech (--enrol {dirs['original_enrol']}), trials anonymised "
        f"speech (--trials {dirs['trials']}), model trained on clear speech (adaptable, its default weights)",
        f"scored 18 trials against N = 6 enrolled speakers (0 outsider trials) with adaptable; wrote {out_file}",
    ]


def test_lazy_informed_with_two_trial_folders_and_a_given_checkpoint(data, capsys):
    folder, dirs = data
    more = folder / "more_trials"
    more.mkdir()
    (more / "wav.scp").write_text("x-anon-more-0 x.wav\n")
    (more / "utt2spk").write_text("x-anon-more-0 evalspk0\n")
    code, out, err = run(
        [
            *score(dirs, folder / "s.npz", "--attacker", "adaptable", "--checkpoint", folder / "adapted.ckpt"),
            "--trials",
            more,
        ]
        + ["--scenario", "lazy-informed"],
        capsys,
    )
    assert code == 0, err
    assert out.splitlines()[0] == (
        f"scenario lazy-informed (a-a): enrolment anonymised speech (--enrol {dirs['enrol']}), trials anonymised "
        f"speech (--trials {dirs['trials']}, --trials {more}), model trained on clear speech "
        f"(adaptable, checkpoint {folder / 'adapted.ckpt'})"
    )


@pytest.mark.parametrize("where", ["flag", "spec"])
def test_semi_informed_scores_with_the_adapted_checkpoint_it_names(data, capsys, where):
    folder, dirs = data
    checkpoint = folder / "adapted.ckpt"
    attacker = (
        ["--attacker", "adaptable", "--checkpoint", checkpoint]
        if where == "flag"
        else [
            "--attacker",
            f"adaptable?checkpoint={checkpoint}",
        ]
    )
    code, out, err = run(score(dirs, folder / "s.npz", *attacker, "--scenario", "semi-informed"), capsys)
    assert code == 0, err
    spec = "adaptable" if where == "flag" else f"adaptable?checkpoint={checkpoint}"
    assert out.splitlines()[0].endswith(
        f"model adapted on anonymised training speech ({spec}, checkpoint {checkpoint})"
    )
    assert out.splitlines()[0].startswith("scenario semi-informed (a-a): enrolment anonymised speech (--enrol ")
    want = Adaptable(checkpoint=str(checkpoint)).score(
        read_data_dir(dirs["trials"]), group_by_speaker(read_data_dir(dirs["enrol"]))
    )
    np.testing.assert_allclose(ScoreSet.load(folder / "s.npz").scores, want.scores, rtol=0, atol=1e-12)


def test_semi_informed_without_an_adapted_checkpoint_is_refused_in_one_line(data, capsys):
    folder, dirs = data
    code, out, err = run(
        score(dirs, folder / "s.npz", "--attacker", "adaptable", "--scenario", "semi-informed"), capsys
    )
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("lidframe: error: --scenario semi-informed: attacker 'adaptable' ")
    assert "adapted on anonymised training speech" in lines[0] and "--checkpoint" in lines[0]
    assert not (folder / "s.npz").exists()


@pytest.mark.parametrize("name", ["ignorant", "lazy-informed", "semi-informed"])
@pytest.mark.parametrize("attacker", ["random", "precomputed"])
def test_attackers_of_no_model_score_in_every_scenario_and_say_so(data, capsys, name, attacker):
    folder, dirs = data
    extra = ["--attacker", attacker]
    if attacker == "precomputed":
        ids = [u.utt_id for d in dirs.values() for u in read_data_dir(d)]
        np.savez(folder / "emb.npz", utt_ids=np.array(ids), vectors=np.random.default_rng(0).normal(size=(len(ids), 4)))
        extra += ["--embeddings", folder / "emb.npz"]
    code, out, err = run(score(dirs, folder / "s.npz", *extra, "--scenario", name), capsys)
    assert code == 0, err
    assert out.splitlines()[0].endswith(f"({attacker}, which loads no checkpoint)")


@pytest.mark.parametrize("bad", ["informed", "Ignorant", "o-a", ""])
def test_an_unknown_scenario_is_one_line_naming_the_three(data, capsys, bad):
    folder, dirs = data
    code, out, err = run(score(dirs, folder / "s.npz", "--attacker", "random", "--scenario", bad), capsys)
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"lidframe: error: --scenario: unknown scenario {bad!r}; expected one of ignorant, lazy-informed, semi-informed"
    ]
    assert not Path(folder / "s.npz").exists()
