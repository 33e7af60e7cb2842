"""Synthesized corpus (skipped without espeak-ng) and the signal-processing anonymisers."""

import functools
import operator
import shutil

import numpy as np
import pytest

from lidframe import InputError
from lidframe.audio.anonymise import anonymise_data_dir, mcadams, pitch_shift, resample_shift
from lidframe.cli import main
from lidframe.data.kaldi import read_data_dir

soundfile = pytest.importorskip("soundfile")

ESPEAK_VOICES = ["espeak-en-us-m1", "espeak-en-gb-f2", "espeak-en-029-m3"]


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (apt-get install espeak-ng)")
def test_corpus_builder_on_three_voices(tmp_path):
    from lidframe.audio.corpus import build_corpus

    report = build_corpus(tmp_path / "c", voices=ESPEAK_VOICES, sentences=2, enrol=1)
    assert report["utterances"] == 6 and report["engines"] == {"espeak": 3}
    assert sorted(functools.reduce(operator.iadd, report["speakers"].values(), [])) == sorted(ESPEAK_VOICES)
    seen = set()
    for name in ("train", "dev_enrolls", "dev_trials", "eval_enrolls", "eval_trials"):
        utts = read_data_dir(tmp_path / "c" / name)
        for u in utts:
            info = soundfile.info(u.path)
            assert info.samplerate == 16000 and info.channels == 1 and info.frames > 8000
            seen.add(u.utt_id)
        assert (tmp_path / "c" / name / "text").read_text().count("\n") == len(utts)
        assert (tmp_path / "c" / name / "spk2utt").is_file()
    assert len(seen) == 6
    again = build_corpus(tmp_path / "c", voices=ESPEAK_VOICES, sentences=2, enrol=1)  # resumes: files kept
    assert report["synthesized"] == 6 and again["synthesized"] == 0  # the rerun reused every wav file
    assert {**again, "synthesized": 6} == report


def test_corpus_without_engines_names_the_packages(monkeypatch, tmp_path):
    import lidframe.audio.corpus as corpus

    monkeypatch.setattr(corpus.shutil, "which", lambda name: None)
    with pytest.raises(InputError, match="no speech engine found .* apt-get install espeak-ng flite"):
        corpus.build_corpus(tmp_path / "c")


def harmonic(f0=150.0, seconds=1.0, rate=16000):
    t = np.arange(int(seconds * rate)) / rate
    return sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 10)) * 0.2


def autocorrelation_f0(signal, rate=16000):
    signal = signal - signal.mean()
    ac = np.correlate(signal, signal, "full")[signal.size - 1 :]
    lo, hi = rate // 400, rate // 60
    lag = lo + np.argmax(ac[lo:hi])
    # parabolic interpolation of the peak for sub-sample precision
    a, b, c = ac[lag - 1], ac[lag], ac[lag + 1]
    return rate / (lag + 0.5 * (a - c) / (a - 2 * b + c))


def test_mcadams_alpha_one_returns_the_input_and_other_alphas_do_not():
    from tests.voices import voice

    x = voice(2, 1, 1.0).astype(np.float64)
    # the residual re-filtered through the same LPC filter is the frame; Hann windows at
    # 50 % overlap sum to 1: only the roots/poly round trip remains (stated bound 1e-9)
    assert np.max(np.abs(mcadams(x, 1.0) - x)) < 1e-9
    y = mcadams(x, 0.8)
    assert y.shape == x.shape and np.max(np.abs(y - x)) > 0.05
    with pytest.raises(InputError, match="alpha must be positive"):
        mcadams(x, 0.0)


@pytest.mark.parametrize("ratio", [0.8, 1.25])
def test_pitch_shift_changes_f0_by_the_ratio_at_the_same_duration(ratio):
    x = harmonic()
    y = pitch_shift(x, ratio)
    assert y.shape == x.shape
    measured = autocorrelation_f0(y[2000:14000]) / autocorrelation_f0(x[2000:14000])
    assert measured == pytest.approx(ratio, rel=0.02)


def test_resample_shift_scales_pitch_and_duration():
    x = harmonic()
    y = resample_shift(x, 1.25)
    assert y.size == pytest.approx(x.size / 1.25, abs=2)
    assert autocorrelation_f0(y[1000:11000]) / autocorrelation_f0(x[1000:11000]) == pytest.approx(1.25, rel=0.02)


def test_anonymise_data_dir_keeps_ids_and_draws_one_alpha_per_speaker(tmp_path, capsys):
    from tests.voices import write_voice

    src = tmp_path / "src"
    (src / "wav").mkdir(parents=True)
    utts = [("a1", "A"), ("a2", "A"), ("b1", "B")]
    for i, (u, _) in enumerate(utts):
        write_voice(src / "wav" / f"{u}.wav", i, i, 0.5)
    (src / "wav.scp").write_text("".join(f"{u} wav/{u}.wav\n" for u, _ in utts))
    (src / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
    report = anonymise_data_dir(src, tmp_path / "out", method="mcadams", alpha_range=(0.7, 0.9), seed=3)
    alphas = report["alpha_per_speaker"]
    assert set(alphas) == {"A", "B"} and all(0.7 <= a <= 0.9 for a in alphas.values())
    again = anonymise_data_dir(src, tmp_path / "out2", method="mcadams", alpha_range=(0.7, 0.9), seed=3)
    assert again["alpha_per_speaker"] == alphas
    out = read_data_dir(tmp_path / "out")
    assert [(u.utt_id, u.speaker) for u in out] == utts
    assert main(["anonymise", "--method", "pitch", "--ratio", "1.1", str(src), str(tmp_path / "p")]) == 0
    assert main(["anonymise", "--method", "pitch", "--ratio", "9", str(src), str(tmp_path / "q")]) == 2
    assert "pitch ratio must be within" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (apt-get install espeak-ng)")
def test_voice_demo_end_to_end_on_a_small_corpus(tmp_path):
    pytest.importorskip("torch")
    from lidframe.cli.voice_demo import run_voice_demo

    voices = [f"espeak-{a}-{v}" for a in ("en-us", "en-gb", "en-029") for v in ("m1", "f2", "m3", "f4")]
    table, summaries = run_voice_demo(tmp_path / "demo", voices=voices, sentences=5, epochs=2, log=lambda m: None)
    assert set(summaries) == {f"{s}/{c}" for s in ("plain", "mcadams", "pitch") for c in ("logistic", "isotonic")} | {
        "random/logistic"
    }
    assert "plain/logistic" in table and (tmp_path / "demo" / "lid_ccdf.png").is_file()
    for summary in summaries.values():
        assert summary["lid_max"] <= summary["log2_n"] + 1e-9 and summary["n_enrolled"] == 3
