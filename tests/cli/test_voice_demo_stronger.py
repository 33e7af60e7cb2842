"""The real-voice demo's stronger attackers (issue 42): the fused rows and GE2E with AS-norm, tested on their pieces.

The demo takes 30+ minutes; here the fusion step runs on synthetic score files, the AS-norm
step on small data dirs of tones with the seeded random attacker (its embeddings come from
the utterance ids), and each is compared with a computation written here.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from lidframe.data.scoreset import ScoreSet
from lidframe.demo.voice.plan import ASNORM_TOP_K, _DemoRun


def make_run(tmp_path) -> _DemoRun:
    run = _DemoRun(tmp_path / "out", seed=0, epochs=1, jobs=1, progress=False, log=lambda m: None)
    run.out.mkdir()
    (run.out / "scores").mkdir()
    return run


def noisy_scores(rng, n_speakers: int, per_speaker: int, noise: float) -> ScoreSet:
    """A closed-set score set whose mated column stands out by 1 over *noise*-scaled Gaussian scores."""
    speakers = [f"s{j}" for j in range(n_speakers)]
    trial_speakers = np.repeat(speakers, per_speaker)
    scores = noise * rng.standard_normal((trial_speakers.size, n_speakers))
    scores[np.arange(trial_speakers.size), np.repeat(np.arange(n_speakers), per_speaker)] += 1.0
    ids = [f"t{i}" for i in range(trial_speakers.size)]
    return ScoreSet(scores, speakers, trial_speakers, ids)


def test_each_fused_row_is_the_fusion_of_its_systems_ge2e_and_ecapa_rows_fitted_on_dev(tmp_path):
    from lidframe.core.fusion import apply_fusion, fit_fusion
    from lidframe.data.provenance import ScoreFile
    from lidframe.demo.voice.stronger import _score_fusions

    run = make_run(tmp_path)
    rng = np.random.default_rng(5)
    scored, sets = {}, {}
    for label, noise in [
        ("mcadams/ge2e/semi-informed", 1.0),
        ("mcadams/ecapa/semi-informed", 2.0),
        ("pitch-spk/ge2e/semi-informed", 1.0),  # no ECAPA row: no fusion
    ]:
        scored[label] = {}
        for split, seed_shift in (("dev", 0), ("eval", 1)):
            s = noisy_scores(np.random.default_rng(rng.integers(1 << 32) + seed_shift), 6, 4, noise)
            path = tmp_path / f"{label.replace('/', '_')}_{split}.npz"
            s.save(path)
            scored[label][split], sets[label, split] = path, s
    fused = _score_fusions(run, scored)
    assert list(fused) == ["mcadams/fusion/semi-informed"]
    inputs = ["mcadams/ge2e/semi-informed", "mcadams/ecapa/semi-informed"]
    fusion = fit_fusion([sets[label, "dev"] for label in inputs])  # the defaults of lidframe fuse
    for split in ("dev", "eval"):
        want = apply_fusion(fusion, [sets[label, split] for label in inputs])
        got = ScoreSet.load(fused["mcadams/fusion/semi-informed"][split])
        np.testing.assert_allclose(got.scores, want.scores, rtol=0, atol=1e-12)
        assert list(got.trial_ids) == list(want.trial_ids) and list(got.enrolled) == list(want.enrolled)
        # its provenance names the four inputs with their digests, and the weights
        record = ScoreFile.of(split, fused["mcadams/fusion/semi-informed"][split]).provenance
        assert record.attacker.name == "fusion"
        settings = dict(record.attacker.settings)
        for k, (weight, label) in enumerate(zip(fusion.weights, inputs, strict=True), start=1):
            assert settings[f"weight {k}"].startswith(repr(float(weight)))
            assert scored[label]["dev"].name in settings[f"weight {k}"]
        files = {f.file.role: (f.file.path, f.file.sha256) for f in record.fused_from}
        assert files == {
            f"{s} {k}": (os.path.abspath(scored[label][s]), hashlib.sha256(scored[label][s].read_bytes()).hexdigest())
            for s in ("dev", "eval")
            for k, label in enumerate(inputs, start=1)
        }
    assert [a.name for a in run.attackers] == ["mcadams/fusion/semi-informed"]


def write_split_dirs(root, *, train_speakers: int):
    """The demo's five data dirs of tones under *root*: train speakers ``train-spk*``, the others ``spk*``."""
    from tests.data.provenance_dirs import write_audio_dir

    for k, name in enumerate(("dev_enrolls", "dev_trials", "eval_enrolls", "eval_trials")):
        write_audio_dir(root / name, f"{name}-", speakers=4, per_speaker=2, seed=k)
    train = write_audio_dir(root / "train", "train-", speakers=train_speakers, per_speaker=2, seed=9)
    utt2spk = [line.split() for line in (train / "utt2spk").read_text().splitlines()]
    (train / "utt2spk").write_text("".join(f"{utt} train-{speaker}\n" for utt, speaker in utt2spk))
    spk2utt = [line.split(maxsplit=1) for line in (train / "spk2utt").read_text().splitlines()]
    (train / "spk2utt").write_text("".join(f"train-{speaker} {utts}\n" for speaker, utts in spk2utt))
    return root


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def asnorm_here(raw, trial_cohort, enrol_cohort, k):
    """AS-norm written out: the mean and sample sd (ddof 1) of each side's top-k cohort scores."""

    def stats(c):
        top = -np.sort(-c, axis=1)[:, :k]
        return top.mean(axis=1), top.std(axis=1, ddof=1)

    mu_t, sd_t = stats(trial_cohort)
    mu_e, sd_e = stats(enrol_cohort)
    return 0.5 * ((raw - mu_e[None, :]) / sd_e[None, :] + (raw - mu_t[:, None]) / sd_t[:, None])


@pytest.mark.parametrize("train_speakers", [14, 4])
def test_the_asnorm_row_normalises_with_the_systems_train_speakers_and_says_so(tmp_path, train_speakers):
    pytest.importorskip("soundfile")
    from lidframe.attackers import RandomAttacker
    from lidframe.data.embedset import EmbeddingSet
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.provenance import ScoreFile
    from lidframe.demo.voice.stronger import _score_with_train_cohort

    run = make_run(tmp_path)
    root = write_split_dirs(tmp_path / "system", train_speakers=train_speakers)
    make = functools.partial(RandomAttacker, dim=8, seed=3)
    label = "system/ge2e-asnorm/semi-informed"
    scored = _score_with_train_cohort(run, label, make, ("random", {"dim": 8, "seed": 3}), root)
    k = min(ASNORM_TOP_K, train_speakers)
    embed = make().embed
    train = read_data_dir(root / "train", wav_paths="data-dir")
    train_speaker_ids = sorted({u.speaker for u in train})
    cohort = np.array([unit(embed([u for u in train if u.speaker == s])).mean(axis=0) for s in train_speaker_ids])
    for split, path in scored[label].items():
        enrol = read_data_dir(root / f"{split}_enrolls", wav_paths="data-dir")
        trials = read_data_dir(root / f"{split}_trials", wav_paths="data-dir")
        speakers = list(dict.fromkeys(u.speaker for u in enrol))
        profiles = np.array([unit(embed([u for u in enrol if u.speaker == s])).mean(axis=0) for s in speakers])
        t = unit(embed(trials))
        raw = t @ unit(profiles).T
        want = asnorm_here(raw, t @ unit(cohort).T, unit(profiles) @ unit(cohort).T, k)
        got = ScoreSet.load(path)
        np.testing.assert_allclose(got.scores, want, rtol=0, atol=1e-10)
        # the provenance names AS-norm, K and the cohort file (digested); the cohort holds the train speakers only
        record = ScoreFile.of(split, path).provenance
        settings = dict(record.attacker.settings)
        assert settings["score_norm"] == "asnorm" and settings["cohort_top_k"] == str(k)
        cohort_file = settings["cohort"]
        digests = {f.path: f.sha256 for f in record.attacker.files}
        assert digests[os.path.abspath(cohort_file)] == hashlib.sha256(Path(cohort_file).read_bytes()).hexdigest()
        held = EmbeddingSet.load(cohort_file)
        assert sorted(map(str, held.enrolled)) == train_speaker_ids
        assert not set(train_speaker_ids) & ({u.speaker for u in enrol} | {u.speaker for u in trials})
        assert record.scenario is not None and record.scenario["name"] == "semi-informed"


def test_the_comparison_says_whether_a_stronger_row_beats_the_best_single_attacker(tmp_path):
    from lidframe import evaluate
    from lidframe.demo.voice.outputs import ladder_table
    from lidframe.demo.voice.plan import demo_rows
    from lidframe.demo.voice.stronger import stronger_comparison, stronger_table
    from lidframe.stats.bootstrap import Bootstrap

    rows = [row for row in demo_rows() if row.system == "mcadams"]
    noise = {"ge2e/ignorant": 3.0, "ge2e/lazy-informed": 2.0, "ge2e/semi-informed": 1.5, "ecapa/semi-informed": 1.2}
    noise |= {"ge2e-asnorm/semi-informed": 1.25, "fusion/semi-informed": 0.4}
    results = {}
    for row in rows:
        level = noise[row.label.partition("/")[2]]
        dev, ev = (noisy_scores(np.random.default_rng(seed), 20, 5, level) for seed in (1, 2))
        results[row.label] = evaluate(dev, ev, calibrator="logistic", bootstrap=Bootstrap(n_boot=200, seed=0))
    comparison = stronger_comparison(rows, results, n_boot=500, seed=0)
    entry = comparison["mcadams"]
    singles = [r.label for r in rows if r.attacker in ("ge2e", "ecapa")]
    best = max(singles, key=lambda label: results[label].summary.alid)
    assert entry["best_single"]["label"] == best == "mcadams/ecapa/semi-informed"
    for attacker in ("fusion", "ge2e-asnorm"):
        label = f"mcadams/{attacker}/semi-informed"
        diff = results[label].lid.mean() - results[best].lid.mean()  # every trial enrolled, the same ids
        assert entry[attacker]["diff"] == pytest.approx(diff, abs=1e-12)
        assert entry[attacker]["alid"] == pytest.approx(results[label].lid.mean(), abs=1e-12)
    assert entry["fusion"]["beats"] == "yes" and entry["fusion"]["diff_low"] > 0
    text = stronger_table(comparison)
    assert "fusion/semi-informed" in text and "ecapa/semi-informed" in text and "yes" in text
    assert "fusion semi-informed" in ladder_table(rows, results).splitlines()[1]
