"""Synthesized corpus (skipped without espeak-ng) and the signal-processing anonymisers."""

import functools
import operator
import re
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (apt-get install espeak-ng)")
def test_corpus_rebuilt_with_another_seed_in_the_same_folder_holds_that_seeds_audio(tmp_path):
    from lidframe.audio.corpus import build_corpus

    def audio(folder):
        return {
            u.utt_id: (soundfile.read(u.path)[0].tobytes(), u.speaker)
            for split in ("train", "dev_enrolls", "dev_trials", "eval_enrolls", "eval_trials")
            for u in read_data_dir(folder / split)
        }

    build_corpus(tmp_path / "shared", voices=ESPEAK_VOICES, sentences=2, enrol=1, seed=0)
    report = build_corpus(tmp_path / "shared", voices=ESPEAK_VOICES, sentences=2, enrol=1, seed=1, jobs=2)
    build_corpus(tmp_path / "fresh", voices=ESPEAK_VOICES, sentences=2, enrol=1, seed=1)
    assert report["synthesized"] > 0  # seed 1 picks sentences seed 0 did not synthesize
    assert audio(tmp_path / "shared") == audio(tmp_path / "fresh")  # not the seed-0 audio under the same ids


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


def mcadams_frame_by_frame(x, alpha, rate=16000, order=20, win_ms=20.0):
    """The textbook McAdams loop, one frame at a time with SciPy's Levinson solver, np.roots, np.poly, lfilter."""
    from scipy.linalg import solve_toeplitz
    from scipy.signal import lfilter

    win_len = round(rate * win_ms / 1000.0)
    win_len += win_len % 2
    hop = win_len // 2
    window = np.hanning(win_len + 1)[:-1]
    padded = np.r_[np.zeros(hop), x, np.zeros(win_len)]
    out = np.zeros_like(padded)
    for start in range(0, padded.size - win_len + 1, hop):
        frame = padded[start : start + win_len] * window
        if not np.any(frame):
            continue
        r = np.correlate(frame, frame, mode="full")[frame.size - 1 : frame.size + order].copy()
        r[0] *= 1.0 + 1e-9
        a = np.r_[1.0, -solve_toeplitz(r[:order], r[1 : order + 1])]
        poles = np.roots(a)
        angles = np.angle(poles)
        moved = np.where(
            np.abs(poles.imag) > 1e-12, np.abs(poles) * np.exp(1j * np.sign(angles) * np.abs(angles) ** alpha), poles
        )
        out[start : start + win_len] += lfilter([1.0], np.real(np.poly(moved)), lfilter(a, [1.0], frame))
    return out[hop : hop + x.size]


def drawn_signal(kind, seed, samples):
    """Filtered noise; a noise-free harmonic quantised to 16-bit PCM (what a synthesizer writes); an impulse train."""
    rng = np.random.default_rng(seed)
    if kind == "noise":
        return np.convolve(rng.standard_normal(samples), [1.0, 0.9, 0.5], "same") * 0.1
    if kind == "pcm harmonic":
        t = np.arange(samples) / 16000
        x = sum(np.sin(2 * np.pi * 120.0 * k * t + k) / k for k in range(1, 12)) * 0.3
        return np.round(x * 32767) / 32767
    x = np.zeros(samples)
    x[rng.integers(0, samples, max(1, samples // 400))] = rng.uniform(-0.9, 0.9)
    return x


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    samples=st.integers(1, 2500),
    alpha=st.floats(0.5, 1.5),
    silent=st.integers(0, 1200),
    kind=st.sampled_from(["noise", "pcm harmonic", "impulses"]),
)
def test_batched_mcadams_equals_the_frame_by_frame_loop(seed, samples, alpha, silent, kind):
    # a drawn signal of any length (shorter than one frame included) with a stretch of exact
    # silence (frames that are all zero are skipped by both)
    x = np.r_[np.zeros(silent), drawn_signal(kind, seed, samples)]
    expected = mcadams_frame_by_frame(x, alpha)
    got = mcadams(x, alpha)
    assert got.shape == x.shape
    # LU (batched) and Levinson (the loop) solve the same normal equations; they differ by the
    # system's condition number times eps: ~1e-10 for noise and impulses, up to ~1e-6 for a
    # noise-free harmonic with more partials than the order-20 model has pole pairs
    tolerance = 1e-5 if kind == "pcm harmonic" else 1e-8
    np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance * max(1.0, np.max(np.abs(expected))))


def test_mcadams_passes_frames_of_underflowing_energy_through_and_refuses_nan():
    x = np.r_[harmonic(seconds=0.2) * 1e-170, harmonic(seconds=0.2)]  # the first half's energy underflows
    y = mcadams(x, 0.8)
    np.testing.assert_allclose(y[:2400], x[:2400], rtol=1e-12, atol=0)  # well inside the tiny half: unchanged
    # the loud half as the loop makes it (the loop itself fails on the tiny frames: Levinson
    # meets a singular minor; zeros it skips), to within the noise-free harmonic's solver
    # difference (test above; the tiny half adds ~1e-170)
    loud = np.where(np.arange(x.size) < 3200, 0.0, x)
    np.testing.assert_allclose(y, mcadams_frame_by_frame(loud, 0.8), rtol=0, atol=1e-5)
    x[1000] = np.nan
    with pytest.raises(InputError, match="McAdams needs finite samples; sample 1000 is not"):
        mcadams(x, 0.8)


def test_batched_mcadams_blocks_join_seamlessly(monkeypatch):
    import lidframe.audio.anonymise as anonymise
    from tests.voices import voice

    x = voice(1, 0, 1.0).astype(np.float64)  # 100 frames of 20 ms
    whole = mcadams(x, 0.8)
    monkeypatch.setattr(anonymise, "_MCADAMS_BLOCK", 7)  # blocks that end mid-signal, in odd places
    np.testing.assert_allclose(mcadams(x, 0.8), whole, rtol=0, atol=1e-12)
    np.testing.assert_allclose(whole, mcadams_frame_by_frame(x, 0.8), rtol=0, atol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("ratio", [0.8, 1.25])
def test_pitch_shift_changes_f0_by_the_ratio_at_the_same_duration(ratio):
    x = harmonic()
    y = pitch_shift(x, ratio)
    assert y.shape == x.shape
    measured = autocorrelation_f0(y[2000:14000]) / autocorrelation_f0(x[2000:14000])
    assert measured == pytest.approx(ratio, rel=0.02)


def pitch_shift_frame_by_frame(x, ratio, n_fft=1024, hop=256):
    """The textbook phase vocoder, one output frame at a time (what pitch_shift vectorises), then resampling."""
    from fractions import Fraction

    from scipy.signal import istft, resample_poly, stft

    _, _, spec = stft(x, nperseg=n_fft, noverlap=n_fft - hop, boundary="zeros", padded=True)
    steps = np.arange(0, spec.shape[1] - 1, 1.0 / ratio)
    steps = steps[steps < spec.shape[1] - 1]
    expected = 2 * np.pi * hop * np.arange(spec.shape[0]) / n_fft
    phase = np.angle(spec[:, 0])
    stretched = np.empty((spec.shape[0], steps.size), dtype=complex)
    for k, t in enumerate(steps):
        i = int(t)
        frac = t - i
        magnitude = (1 - frac) * np.abs(spec[:, i]) + frac * np.abs(spec[:, i + 1])
        stretched[:, k] = magnitude * np.exp(1j * phase)
        delta = np.angle(spec[:, i + 1]) - np.angle(spec[:, i]) - expected
        delta -= 2 * np.pi * np.round(delta / (2 * np.pi))
        phase = phase + expected + delta
    _, y = istft(stretched, nperseg=n_fft, noverlap=n_fft - hop, boundary=True)
    fraction = Fraction(ratio).limit_denominator(100)
    y = resample_poly(y, fraction.denominator, fraction.numerator)
    return y[: x.size] if y.size >= x.size else np.r_[y, np.zeros(x.size - y.size)]


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    samples=st.integers(1024, 9000),
    ratio=st.floats(0.25, 4.0).filter(lambda r: r != 1.0),
    kind=st.sampled_from(["noise", "pcm harmonic", "impulses"]),
)
def test_pitch_shift_equals_the_frame_by_frame_phase_vocoder_bit_for_bit(seed, samples, ratio, kind):
    x = drawn_signal(kind, seed, samples)
    np.testing.assert_array_equal(pitch_shift(x, ratio), pitch_shift_frame_by_frame(x, ratio))


@settings(max_examples=25, deadline=None)
@given(samples=st.integers(0, 1023), ratio=st.floats(0.25, 4.0), seed=st.integers(0, 2**32 - 1))
def test_pitch_shift_of_a_clip_shorter_than_one_frame_is_the_clip_followed_by_silence(samples, ratio, seed):
    # a clip under n_fft samples (64 ms) crashed in scipy's stft before; it is now shifted as
    # if silence followed it, and cut back to its own length
    x = drawn_signal("noise", seed, max(samples, 1))[:samples]
    y = pitch_shift(x, ratio)
    assert y.shape == x.shape and np.isfinite(y).all()
    if samples and ratio != 1.0:
        np.testing.assert_array_equal(
            y, pitch_shift_frame_by_frame(np.r_[x, np.zeros(1024 - samples)], ratio)[:samples]
        )


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
    mcadams = {"method": "mcadams", "alpha_range": (0.7, 0.9), "seed": 3, "wav_paths": "data-dir"}
    report = anonymise_data_dir(src, tmp_path / "out", **mcadams)
    alphas = report["alpha_per_speaker"]
    assert set(alphas) == {"A", "B"} and all(0.7 <= a <= 0.9 for a in alphas.values())
    again = anonymise_data_dir(src, tmp_path / "out2", **mcadams)
    assert again["alpha_per_speaker"] == alphas
    out = read_data_dir(tmp_path / "out")
    assert [(u.utt_id, u.speaker) for u in out] == utts
    data_dir = ["--wav-paths", "data-dir"]
    assert main(["anonymise", "--method", "pitch", "--ratio", "1.1", *data_dir, str(src), str(tmp_path / "p")]) == 0
    assert main(["anonymise", "--method", "pitch", "--ratio", "9", *data_dir, str(src), str(tmp_path / "q")]) == 2
    assert "--ratio must be within [0.25, 4], got 9.0" in capsys.readouterr().err  # the flag named (issue 27)


def test_anonymise_data_dirs_in_two_processes_writes_what_each_call_alone_writes(tmp_path):
    from lidframe.audio.anonymise import anonymise_data_dirs
    from tests.voices import write_voice

    src = tmp_path / "src"
    (src / "wav").mkdir(parents=True)
    utts = [("a1", "A"), ("b1", "B")]
    for i, (u, _) in enumerate(utts):
        write_voice(src / "wav" / f"{u}.wav", i, i, 0.3)
    (src / "wav.scp").write_text("".join(f"{u} wav/{u}.wav\n" for u, _ in utts))
    (src / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
    params = [
        {"method": "mcadams", "alpha_range": (0.6, 0.9), "per_utterance": True, "seed": 1, "wav_paths": "data-dir"},
        {"method": "pitch", "ratio": 1.2, "wav_paths": "data-dir"},
        {"method": "resample", "ratio_range": (0.8, 1.2), "seed": 2, "wav_paths": "data-dir"},
    ]
    pooled = anonymise_data_dirs([(src, tmp_path / f"pool{i}", p) for i, p in enumerate(params)], jobs=2)
    for i, p in enumerate(params):
        alone = anonymise_data_dir(src, tmp_path / f"alone{i}", **p)
        assert pooled[i] == alone
        for u, _ in utts:
            assert (tmp_path / f"pool{i}" / "wav" / f"{u}.wav").read_bytes() == (
                tmp_path / f"alone{i}" / "wav" / f"{u}.wav"
            ).read_bytes()
    with pytest.raises(InputError, match="method must be one of"):
        anonymise_data_dirs(
            [
                (src, tmp_path / "x", {"method": "pitch", "wav_paths": "data-dir"}),
                (src, tmp_path / "y", {"method": "nope"}),
            ],
            jobs=2,
        )
    with pytest.raises(InputError, match="jobs must be a positive number"):
        anonymise_data_dirs([], jobs=0)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (apt-get install espeak-ng)")
def test_voice_demo_end_to_end_and_another_seed_in_the_same_folder_reuses_nothing_stale(tmp_path):
    pytest.importorskip("torch")
    from lidframe.demo.voice import ECAPA_SYSTEMS, VOICE_DEMO_SYSTEMS, demo_rows, ge2e_unavailable, run_voice_demo

    voices = [f"espeak-{a}-{v}" for a in ("en-us", "en-gb", "en-029") for v in ("m1", "f2", "m3", "f4")]

    def demo(folder, seed, jobs):
        lines: list[str] = []
        table, summaries = run_voice_demo(
            tmp_path / folder, voices=voices, sentences=5, epochs=2, seed=seed, jobs=jobs, log=lines.append
        )
        return table, summaries, lines

    table, summaries, lines = demo("shared", 0, 2)
    # espeak-ng's formant voices only: no voice a word error rate holds for, so no utility column, and the rest runs
    assert any(line.startswith("the utility column is left out: ") for line in lines)
    assert table.endswith(next(line for line in lines if line.startswith("the utility column is left out: ")))
    ge2e = ge2e_unavailable() is None
    assert list(summaries) == [row.label for row in demo_rows(ge2e=ge2e)]
    assert "mcadams/ecapa/semi-informed" in table and (tmp_path / "shared" / "lid_ccdf.png").is_file()
    for summary in summaries.values():
        assert summary["lid_max"] <= summary["log2_n"] + 1e-9 and summary["n_enrolled"] == 6  # DEMO_SPLIT: half eval
    # seed 1 in the folder seed 0 filled picks other sentences and speakers: no cache it would
    # find by name (anonymised data dirs, checkpoints) may be reused; its anonymised audio is
    # what anonymise_data_dir makes of seed 1's corpus, and each system trains a new checkpoint
    _, _, lines = demo("shared", 1, 1)
    assert not [line for line in lines if "reused" in line and not line.startswith("corpus:")]
    assert not any(line.startswith("corpus: reused") for line in lines)  # some sentences are new: synthesized
    shared = tmp_path / "shared"
    for name, params in VOICE_DEMO_SYSTEMS.items():
        if params is None:
            continue
        for split in ("train", "eval_trials"):
            # the demo's data dirs name their audio relative to themselves
            expected = anonymise_data_dir(
                shared / "corpus" / split, tmp_path / "check" / name / split, seed=1, wav_paths="data-dir", **params
            )
            made = {
                u.utt_id: soundfile.read(u.path)[0]
                for u in read_data_dir(shared / "systems" / name / split, wav_paths="data-dir")
            }
            again = {
                u.utt_id: soundfile.read(u.path)[0]
                for u in read_data_dir(tmp_path / "check" / name / split, wav_paths="data-dir")
            }
            assert len(made) == expected["utterances"] and made.keys() == again.keys()
            assert all(np.array_equal(made[u], again[u]) for u in made)
    made = [p.name for p in (shared / "attackers").glob("*.ckpt")]
    for name in ECAPA_SYSTEMS:  # one per seed
        assert len([m for m in made if re.fullmatch(rf"{name}-[0-9a-f]{{12}}\.ckpt", m)]) == 2
    for name, params in VOICE_DEMO_SYSTEMS.items():
        if params and ge2e:
            assert len([m for m in made if re.fullmatch(rf"{name}-ge2e-[0-9a-f]{{12}}\.ckpt", m)]) == 2
