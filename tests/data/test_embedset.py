"""EmbeddingSet files and evaluate/CLI on embedding sets (streaming vs materialised)."""

import importlib.util

import numpy as np
import pytest

from lidframe import Engine, evaluate
from lidframe.cli import main
from lidframe.data.embedset import EmbeddingSet, load_set
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError


def make_set(seed, n_trials=300, n_enrolled=40, dim=24, outsiders=3):
    rng = np.random.default_rng(seed)
    enrol = rng.normal(size=(n_enrolled, dim))
    speaker = rng.integers(0, n_enrolled + outsiders, n_trials)  # ids >= N are not enrolled
    trial = np.where(
        (speaker < n_enrolled)[:, None], enrol[np.minimum(speaker, n_enrolled - 1)], rng.normal(size=(n_trials, dim))
    )
    trial = trial + 1.3 * rng.normal(size=(n_trials, dim))
    return EmbeddingSet(
        trial,
        enrol,
        [f"s{j}" for j in range(n_enrolled)],
        [f"s{k}" for k in speaker],
        [f"u{i}" for i in range(n_trials)],
    )


def test_save_load_roundtrip_and_kind_detection(tmp_path):
    emb = make_set(0)
    emb.save(tmp_path / "e.npz")
    back = load_set(tmp_path / "e.npz")
    assert isinstance(back, EmbeddingSet)
    assert np.array_equal(back.trial_vectors, emb.trial_vectors) and np.array_equal(back.trial_ids, emb.trial_ids)
    scores = emb.to_scoreset()
    scores.save(tmp_path / "s.npz")
    assert isinstance(load_set(tmp_path / "s.npz"), ScoreSet)
    # the implied scores are cosines (independent computation)
    t, e = emb.trial_vectors, emb.enrol_vectors
    want = (t @ e.T) / np.outer(np.linalg.norm(t, axis=1), np.linalg.norm(e, axis=1))
    np.testing.assert_allclose(scores.scores, want, rtol=0, atol=1e-14)
    assert np.array_equal(scores.true_index, emb.true_index) and emb.n_outsider_trials == scores.n_outsider_trials > 0


def test_bad_files_are_named(tmp_path):
    emb = make_set(1)
    np.savez(
        tmp_path / "missing.npz",
        trial_vectors=emb.trial_vectors,
        enrolled=emb.enrolled,
        trial_speakers=emb.trial_speakers,
    )
    with pytest.raises(InputError, match=r"missing.npz: missing key\(s\) enrol_vectors"):
        load_set(tmp_path / "missing.npz")
    vectors = np.array(emb.trial_vectors)
    vectors[7, 2] = np.inf
    np.savez(
        tmp_path / "nan.npz",
        trial_vectors=vectors,
        enrol_vectors=emb.enrol_vectors,
        enrolled=emb.enrolled,
        trial_speakers=emb.trial_speakers,
        trial_ids=emb.trial_ids,
    )
    with pytest.raises(InputError, match=r"nan.npz: trial vectors hold NaN or inf: 'u7'"):
        load_set(tmp_path / "nan.npz")
    with pytest.raises(InputError, match="enrolled has shape"):
        EmbeddingSet(emb.trial_vectors, emb.enrol_vectors, emb.enrolled[:-1], emb.trial_speakers)
    with pytest.raises(InputError, match="exceeds"):
        emb.to_scoreset(max_values=100)


@pytest.mark.parametrize("calibrator", ["logistic", "isotonic", "temperature"])
def test_evaluate_streams_an_embedding_set_like_its_score_set(calibrator):
    dev, ev = make_set(2), make_set(3)
    streamed = evaluate(
        dev, ev, calibrator=calibrator, prior="uniform", binary_metrics=False, engine=Engine(device="cpu")
    )
    dense = evaluate(dev.to_scoreset(), ev.to_scoreset(), calibrator=calibrator, binary_metrics=False)
    assert streamed.summary["engine"] == {"kernel": "numpy", "device": "cpu", "precision": "float64"}
    assert "engine" not in dense.summary
    np.testing.assert_allclose(streamed.lid, dense.lid, rtol=0, atol=1e-9)  # NaN at the same outsider rows
    for key in ("alid", "pdr", "lid_max", "rank1_rate", "rank_disclosure_bits", "cllr_mc"):
        assert streamed.summary[key] == pytest.approx(dense.summary[key], abs=1e-9), key
    with_binary = evaluate(dev, ev, calibrator=calibrator)
    assert with_binary.summary["engine"]["kernel"] == "dense"
    assert with_binary.summary["eer"] == pytest.approx(
        evaluate(dev.to_scoreset(), ev.to_scoreset(), calibrator=calibrator).summary["eer"]
    )


def test_cli_on_embedding_sets(tmp_path, capsys):
    make_set(4).save(tmp_path / "dev.npz")
    make_set(5).save(tmp_path / "eval.npz")
    base = ["evaluate", "--dev", str(tmp_path / "dev.npz"), "--eval", str(tmp_path / "eval.npz"), "--device", "cpu"]
    assert main(base + ["--no-binary-metrics", "--precision", "fp32", "--json", str(tmp_path / "s.json")]) == 0
    out = capsys.readouterr().out
    assert "streaming engine: numpy on cpu in float32" in out
    assert '"precision": "float32"' in (tmp_path / "s.json").read_text()
    assert main(base + ["--no-binary-metrics", "--kernel", "triton", "--per-trial", str(tmp_path / "p.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # without torch, the triton kernel is refused for lack of torch
    reason = (
        "kernel 'triton' needs Triton and a CUDA device"
        if importlib.util.find_spec("torch")
        else "kernel 'triton' needs PyTorch"
    )
    assert len(err) == 1 and reason in err[0]
    assert not (tmp_path / "p.csv").exists()
