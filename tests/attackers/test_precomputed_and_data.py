"""Precomputed embeddings in every format, Kaldi data directories and score files."""

import os

import numpy as np
import pandas as pd
import pytest

from lidframe import InputError
from lidframe.attackers import PrecomputedEmbeddings, Utterance, group_by_speaker
from lidframe.data.kaldi import read_data_dir, read_trials, scoreset_from_kaldi, voiceprivacy_split


@pytest.fixture()
def vectors():
    rng = np.random.default_rng(0)
    ids = [f"u{i}" for i in range(6)]
    return ids, rng.normal(size=(6, 5))


def cosine(a, b):
    return (a @ b.T) / np.linalg.norm(a, axis=1)[:, None] / np.linalg.norm(b, axis=1)[None, :]


def test_every_format_gives_the_same_embeddings(tmp_path, vectors):
    ids, vec = vectors
    np.savez(tmp_path / "a.npz", utt_ids=np.array(ids), vectors=vec)
    np.savez(tmp_path / "b.npz", **dict(zip(ids, vec)))
    np.save(tmp_path / "c.npy", vec)
    (tmp_path / "c.ids").write_text("\n".join(ids) + "\n")
    kaldiio = pytest.importorskip("kaldiio")
    kaldiio.save_ark(
        str(tmp_path / "d.ark"), {u: v.astype(np.float32) for u, v in zip(ids, vec)}, scp=str(tmp_path / "d.scp")
    )
    pytest.importorskip("pyarrow")
    pd.DataFrame({"utterance_id": ids, "speaker_id": ["s"] * 6, "embedding": list(vec)}).to_parquet(
        tmp_path / "e.parquet"
    )
    (tmp_path / "f.SCP").write_text((tmp_path / "d.scp").read_text())  # suffixes are case-insensitive
    utts = [Utterance(u, "s") for u in reversed(ids)]
    want = vec[::-1]
    for name, tol in (
        ("a.npz", 0),
        ("b.npz", 0),
        ("c.npy", 0),
        ("d.ark", 1e-6),
        ("d.scp", 1e-6),
        ("f.SCP", 1e-6),
        ("e.parquet", 0),
    ):
        got = PrecomputedEmbeddings(path=tmp_path / name).embed(utts)
        np.testing.assert_allclose(got, want, atol=tol, err_msg=name)


def test_scoring_and_enrolment_aggregations(tmp_path, vectors):
    ids, vec = vectors
    np.savez(tmp_path / "a.npz", utt_ids=np.array(ids), vectors=vec)
    enrol = [Utterance("u0", "A"), Utterance("u1", "A"), Utterance("u2", "B"), Utterance("u3", "B")]
    trials = [Utterance("u4", "A"), Utterance("u5", "C")]
    for how in ("mean_of_normalised", "mean"):
        scores = PrecomputedEmbeddings(path=tmp_path / "a.npz", enrolment=how).score(trials, group_by_speaker(enrol))
        unit = vec / np.linalg.norm(vec, axis=1, keepdims=True)
        base = unit if how == "mean_of_normalised" else vec
        profiles = np.stack([base[[0, 1]].mean(0), base[[2, 3]].mean(0)])
        np.testing.assert_allclose(scores.scores, cosine(vec[[4, 5]], profiles), atol=1e-12)
        assert scores.enrolled.tolist() == ["A", "B"] and scores.is_outsider.tolist() == [False, True]


def test_precomputed_errors(tmp_path, vectors):
    ids, vec = vectors
    np.savez(tmp_path / "a.npz", utt_ids=np.array(ids), vectors=vec)
    attacker = PrecomputedEmbeddings(path=tmp_path / "a.npz")
    with pytest.raises(InputError, match="no embedding for utterance id.s. 'zz'"):
        attacker.embed([Utterance("zz", "s")])
    np.save(tmp_path / "c.npy", vec)
    with pytest.raises(InputError, match="needs its ids in c.ids"):
        PrecomputedEmbeddings(path=tmp_path / "c.npy").embed([Utterance("u0", "s")])
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(InputError, match="unknown embeddings format '.txt'"):
        PrecomputedEmbeddings(path=tmp_path / "a.txt").table
    with pytest.raises(InputError, match="also in an earlier embeddings file"):
        PrecomputedEmbeddings(path=[tmp_path / "a.npz", tmp_path / "a.npz"]).table


def write_dir(folder, wav, utt2spk):
    folder.mkdir(parents=True)
    (folder / "wav.scp").write_text(wav)
    (folder / "utt2spk").write_text(utt2spk)
    return folder


def test_data_dir_reading_and_errors(tmp_path):
    d = write_dir(tmp_path / "ok", "a1 audio/a1.wav\nb1 /abs/b1.wav\n", "a1 A\nb1 B\n")
    utts = read_data_dir(d)
    assert [(u.utt_id, u.speaker) for u in utts] == [("a1", "A"), ("b1", "B")]
    # a relative path against the current folder, as Kaldi reads it; against the data dir when asked
    assert utts[0].path == os.path.join(os.getcwd(), "audio", "a1.wav") and utts[1].path == "/abs/b1.wav"
    utts = read_data_dir(d, wav_paths="data-dir")
    assert utts[0].path == str(d / "audio" / "a1.wav") and utts[1].path == "/abs/b1.wav"
    bad = write_dir(tmp_path / "bad", "a1 x.wav\nc1 y.wav\n", "a1 A\nb1 B\n")
    with pytest.raises(InputError, match="no speaker for 'c1'; no audio for 'b1'"):
        read_data_dir(bad)
    dup = write_dir(tmp_path / "dup", "a1 x.wav\na1 y.wav\n", "a1 A\n")
    with pytest.raises(InputError, match="utterance 'a1' appears twice"):
        read_data_dir(dup)
    (d / "trials").write_text("A a1 target\nB a1 nontarget\n")
    assert read_trials(d / "trials") == [("A", "a1", True), ("B", "a1", False)]
    (d / "trials").write_text("A a1 maybe\n")
    with pytest.raises(InputError, match="label 'maybe'"):
        read_trials(d / "trials")


def test_voiceprivacy_split_pools_or_separates_genders(tmp_path):
    write_dir(tmp_path / "libri_test_enrolls", "e1 e1.wav\ne2 e2.wav\ne3 e3.wav\n", "e1 F1\ne2 M1\ne3 F2\n")
    write_dir(tmp_path / "libri_test_trials_f", "t1 t1.wav\nt2 t2.wav\n", "t1 F1\nt2 F2\n")
    write_dir(tmp_path / "libri_test_trials_m", "t3 t3.wav\n", "t3 M1\n")
    pooled = voiceprivacy_split(tmp_path)["all"]
    assert len(group_by_speaker(pooled[0])) == 3 and len(pooled[1]) == 3
    apart = voiceprivacy_split(tmp_path, pooled=False)
    assert sorted(group_by_speaker(apart["f"][0])) == ["F1", "F2"] and [u.utt_id for u in apart["m"][1]] == ["t3"]


def test_kaldi_scores_into_a_scoreset(tmp_path):
    (tmp_path / "scores").write_text("A t1 0.9\nB t1 0.1\nA t2 0.2\nB t2 0.7\n")
    (tmp_path / "key").write_text("A t1 target\nB t1 nontarget\nA t2 nontarget\nB t2 target\n")
    s = scoreset_from_kaldi(tmp_path / "scores", key_path=tmp_path / "key")
    assert s.enrolled.tolist() == ["A", "B"] and s.trial_speakers.tolist() == ["A", "B"]
    np.testing.assert_array_equal(s.scores, [[0.9, 0.1], [0.2, 0.7]])
    (tmp_path / "scores").write_text("A t1 0.9\nB t1 0.1\nA t2 0.2\n")
    with pytest.raises(InputError, match=r"missing pair \(enroll_spk 'B', trial_id 't2'\)"):
        scoreset_from_kaldi(tmp_path / "scores", key_path=tmp_path / "key")
    with pytest.raises(InputError, match="trial speakers unknown"):
        scoreset_from_kaldi(tmp_path / "scores")
