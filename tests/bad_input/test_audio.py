"""Bad audio through ``lidframe score``: every file a wav.scp names is refused, naming it, before any work.

Plus the audio that is *not* bad: multi-channel files are mixed down and other sample
rates resampled, checked against an independent computation (numpy mean, scipy's
``resample_poly`` directly).
"""

from __future__ import annotations

import errno
import math
import os
import struct
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="the audio attackers need torch (pip install -e '.[audio]')")
soundfile = pytest.importorskip("soundfile", reason="audio is read with soundfile (pip install -e '.[audio]')")

from lidframe.attackers.frontend import read_audio  # noqa: E402
from lidframe.cli import main  # noqa: E402
from tests.bad_input.audio_dirs import score_argv, scoring_dirs, write_data_dir  # noqa: E402
from tests.bad_input.conftest import assert_refused  # noqa: E402
from tests.voices import voice, write_voice  # noqa: E402


def refuse_trial(tmp_path, capsys, trial, expect, *extra):
    """Score with *trial* as the first trial's audio; assert the refusal."""
    enrol, trials = scoring_dirs(tmp_path, trial=trial)
    return assert_refused(
        score_argv(enrol, trials, tmp_path / "out.npz", *extra), capsys, expect=expect, watch=[tmp_path]
    )


def test_missing_audio_file(tmp_path, capsys):
    refuse_trial(tmp_path, capsys, tmp_path / "gone.wav", [str(tmp_path / "gone.wav"), "no such file"])


@pytest.mark.parametrize("wav_paths", ["cwd", "data-dir"])
def test_missing_enrolment_file_named_by_its_resolved_relative_path(tmp_path, capsys, wav_paths):
    """The message names the file looked for: against the current folder (the default, as Kaldi), or the data dir."""
    enrol, trials = scoring_dirs(tmp_path)
    (enrol / "wav.scp").write_text(f"e0 lost/e0.wav\ne1 {tmp_path / 'wav' / 'e1.wav'}\n")
    looked_for = Path.cwd() / "lost" / "e0.wav" if wav_paths == "cwd" else enrol / "lost" / "e0.wav"
    assert_refused(
        [*score_argv(enrol, trials, tmp_path / "out.npz"), "--wav-paths", wav_paths],
        capsys,
        expect=[str(looked_for), "no such file"],
        watch=[tmp_path],
    )


@pytest.mark.parametrize(
    "content",
    [
        b"this is a text file, not audio\n" * 20,
        b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
        b"RIFF\x24\x00\x00\x00WAVEfmt garbage" + b"\x00" * 64,
        bytes(np.random.default_rng(5).integers(0, 256, 4096, dtype=np.uint8)),
    ],
    ids=["text", "png", "broken-riff", "random-bytes"],
)
def test_non_audio_bytes(tmp_path, capsys, content):
    (tmp_path / "junk.wav").write_bytes(content)
    line = refuse_trial(tmp_path, capsys, tmp_path / "junk.wav", ["junk.wav", "cannot read audio", "not audio"])
    assert "BufferedReader" not in line  # libsndfile's reason, not a file object's repr


def test_zero_byte_file(tmp_path, capsys):
    (tmp_path / "zero.wav").write_bytes(b"")
    refuse_trial(tmp_path, capsys, tmp_path / "zero.wav", ["zero.wav", "empty file (0 bytes)"])


def test_wav_without_samples(tmp_path, capsys):
    soundfile.write(tmp_path / "silent.wav", np.zeros(0, np.float32), 16000)
    refuse_trial(tmp_path, capsys, tmp_path / "silent.wav", ["silent.wav", "empty audio (0 samples)"])


@pytest.mark.parametrize("keep", [0.6, 0.1])
def test_truncated_wav_is_refused_not_read_short(tmp_path, capsys, keep):
    full = write_voice(tmp_path / "full.wav", 0, 1, 1.0)  # 16000 samples of 16-bit PCM
    data = full.read_bytes()
    cut = 44 + int((len(data) - 44) * keep) // 2 * 2
    (tmp_path / "cut.wav").write_bytes(data[:cut])
    held = (cut - 44) // 2
    assert soundfile.info(str(tmp_path / "cut.wav")).frames == held  # libsndfile alone would read it short
    refuse_trial(
        tmp_path, capsys, tmp_path / "cut.wav", ["cut.wav", "truncated wav", "declares 16000", f"holds {held}"]
    )


def test_too_short_audio(tmp_path, capsys):
    soundfile.write(tmp_path / "blip.wav", voice(0, 0, 0.05), 16000)
    refuse_trial(tmp_path, capsys, tmp_path / "blip.wav", ["blip.wav", "0.050 s of audio", "at least 0.1 s"])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_non_finite_float_samples(tmp_path, capsys, bad):
    samples = voice(1, 1, 0.5)
    samples[1234] = bad
    soundfile.write(tmp_path / "float.wav", samples, 16000, subtype="FLOAT")
    refuse_trial(tmp_path, capsys, tmp_path / "float.wav", ["float.wav", "nan or inf samples"])


def test_sample_rate_below_telephone_band(tmp_path, capsys):
    soundfile.write(tmp_path / "slow.wav", voice(0, 0, 1.0, rate=4000), 4000)
    refuse_trial(tmp_path, capsys, tmp_path / "slow.wav", ["slow.wav", "sample rate 4000 hz", "at least 8000 hz"])


def test_folder_instead_of_file(tmp_path, capsys):
    (tmp_path / "adir.wav").mkdir()
    refuse_trial(tmp_path, capsys, tmp_path / "adir.wav", ["adir.wav", "is a folder", "expected an audio file"])


def test_a_fifo_listed_as_audio_is_named_and_never_opened(tmp_path, capsys, fifo):
    """A FIFO is never opened (the open would block until something writes to it): named as one."""
    pipe = fifo(tmp_path / "pipe.wav")
    refuse_trial(tmp_path, capsys, pipe, ["pipe.wav", "is a FIFO", "not a regular file", "expected an audio file"])


def test_dev_zero_listed_as_audio_is_named_as_a_device(tmp_path, capsys):
    refuse_trial(tmp_path, capsys, Path("/dev/zero"), ["/dev/zero", "is a character device", "expected an audio file"])


@pytest.mark.permissions
def test_unreadable_file(tmp_path, capsys):
    locked = write_voice(tmp_path / "locked.wav", 0, 1, 0.5)
    locked.chmod(0)
    try:
        refuse_trial(tmp_path, capsys, locked, ["locked.wav", "cannot", "read", "permission denied"])
    finally:
        locked.chmod(0o644)


def test_unreadable_file_as_the_os_reports_it(tmp_path, capsys, monkeypatch):
    """Root reads any file, so the refusal is also checked by failing the open as the OS does for others.

    Audio is opened by the one opener (``fileio.open_input``: ``os.open``), so that open is the one denied.
    """
    from lidframe.data import fileio

    locked = write_voice(tmp_path / "locked.wav", 0, 1, 0.5)
    real_open = os.open

    def deny(file, *args, **kwargs):
        if Path(file) == locked:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(fileio.os, "open", deny)
    refuse_trial(tmp_path, capsys, locked, ["locked.wav", "cannot be read", "permission denied"])


def test_a_bad_trial_file_is_refused_before_the_enrolment_is_embedded_and_cached(tmp_path, capsys):
    """The header pass over every file runs first: the cache (watched) stays empty."""
    (tmp_path / "junk.wav").write_bytes(b"not audio" * 100)
    cache = tmp_path / "cache"
    cache.mkdir()
    refuse_trial(tmp_path, capsys, tmp_path / "junk.wav", ["junk.wav", "not audio"], "--cache-dir", cache)
    assert list(cache.iterdir()) == []


def test_bad_audio_in_train_attacker_writes_no_checkpoint(tmp_path, capsys):
    wavs = tmp_path / "wav"
    wavs.mkdir()
    entries = [(f"u{s}", f"spk{s}", write_voice(wavs / f"u{s}.wav", s, 0, 0.5)) for s in range(2)]
    entries.append(("u2", "spk1", wavs / "nope.wav"))
    data = write_data_dir(tmp_path / "train", entries)
    assert_refused(
        ["train-attacker", "--arch", "xvector?tdnn_channels=8,8,8,8,16&lin_neurons=8", "--data", data,
         "--out", tmp_path / "x.ckpt", "--epochs", "1", "--device", "cpu"],
        capsys,
        expect=[str(wavs / "nope.wav"), "no such file"],
        watch=[tmp_path],
    )  # fmt: skip
    assert not (tmp_path / "x.ckpt").exists() and not (tmp_path / "x.ckpt.state").exists()


# ---------------------------------------------------------------- not refused
def test_multichannel_files_are_mixed_down_to_the_channel_mean(tmp_path):
    left, right = voice(0, 0, 0.5), voice(3, 2, 0.5)
    soundfile.write(tmp_path / "stereo.wav", np.stack([left, right], axis=1), 16000, subtype="FLOAT")
    mixed = read_audio(tmp_path / "stereo.wav")
    np.testing.assert_array_equal(mixed, (np.stack([left, right], axis=1)).mean(axis=1, dtype=np.float32))


@pytest.mark.parametrize("rate", [8000, 11025, 22050, 44100, 48000])
def test_other_rates_are_resampled_as_scipy_resample_poly_does(tmp_path, rate):
    from fractions import Fraction

    from scipy.signal import resample_poly

    from lidframe.attackers.frontend import probe_audio

    samples = voice(2, 1, 0.7, rate=rate)
    soundfile.write(tmp_path / "r.wav", samples, rate, subtype="FLOAT")
    ratio = Fraction(16000, rate)
    expected = resample_poly(samples, ratio.numerator, ratio.denominator).astype(np.float32)
    got = read_audio(tmp_path / "r.wav")
    assert got.shape == (math.ceil(len(samples) * 16000 / rate),)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    assert probe_audio(tmp_path / "r.wav") == (len(samples), rate)


def test_a_multichannel_and_a_resampled_file_score(tmp_path, capsys):
    enrol, trials = scoring_dirs(tmp_path)
    write_voice(tmp_path / "wav" / "t0.wav", 0, 1, 0.5, rate=44100, channels=6)  # replaces trial t0's audio
    assert main([str(a) for a in score_argv(enrol, trials, tmp_path / "out.npz")]) == 0
    assert "scored 2 trials" in capsys.readouterr().out


def test_wav_header_sizes_from_streaming_writers_are_not_called_truncated(tmp_path):
    """A WAV written to a pipe keeps a placeholder data size (0xFFFFFFFF): it is read, not refused."""
    path = write_voice(tmp_path / "stream.wav", 1, 2, 0.5)
    data = bytearray(path.read_bytes())
    offset = data.index(b"data") + 4
    data[offset : offset + 4] = struct.pack("<I", 0xFFFFFFFF)
    path.write_bytes(bytes(data))
    assert read_audio(path).shape == (8000,)


@pytest.mark.parametrize("jobs", ["0", "-2"])
def test_real_voice_demo_refuses_a_non_positive_jobs_before_any_work(tmp_path, capsys, jobs):
    from lidframe.demo import voice_demo_unavailable

    if voice_demo_unavailable() is not None:
        pytest.skip(f"the real-voice demo cannot run here: {voice_demo_unavailable()}")
    out = tmp_path / "d"
    assert_refused(["demo", "--out", out, "--jobs", jobs], capsys, expect=["--jobs", jobs], watch=[tmp_path])
    assert not out.exists()


def test_corpus_synth_refuses_a_non_positive_jobs_before_any_work(tmp_path, capsys):
    out = tmp_path / "c"
    assert_refused(
        ["corpus", "synth", "--out", out, "--jobs", "0"], capsys, expect=["jobs", "positive", "got 0"], watch=[tmp_path]
    )
    assert not out.exists()


# ---------------------------------------------------------------- lidframe anonymise
def anonymise_dir(root: Path, entries: list[tuple[str, str, object]] | None = None) -> Path:
    """A data dir of two 0.3 s utterances under *root* (``src``); *entries* replaces its ``(utt, speaker, path)``."""
    wavs = root / "wav"
    wavs.mkdir(parents=True, exist_ok=True)
    if entries is None:
        entries = [(f"u{s}", f"spk{s}", write_voice(wavs / f"u{s}.wav", s, 0, 0.3)) for s in range(2)]
    return write_data_dir(root / "src", entries)


def anonymise_argv(source: Path, out: Path) -> list[object]:
    return ["anonymise", "--method", "resample", "--ratio", "1.1", source, out]


@pytest.mark.parametrize(
    "kind, expect",
    [
        ("fifo", ["is a FIFO", "expected an audio file"]),
        ("/dev/zero", ["is a character device", "expected an audio file"]),
        ("text", ["cannot read audio", "not audio"]),
    ],
)
def test_anonymise_refuses_audio_that_is_not_a_sound_file_before_writing(kind, expect, tmp_path, capsys, fifo):
    """Every file wav.scp names is checked (a FIFO never opened) before the first is anonymised."""
    wavs = tmp_path / "wav"
    wavs.mkdir()
    good = write_voice(wavs / "u0.wav", 0, 0, 0.3)
    if kind == "fifo":
        bad = fifo(wavs / "pipe.wav")
    elif kind == "text":
        bad = wavs / "notes.wav"
        bad.write_text("not audio\n" * 100)
    else:
        bad = Path(kind)
    source = anonymise_dir(tmp_path, [("u0", "spk0", good), ("u1", "spk1", bad)])
    out = tmp_path / "out"
    assert_refused(
        anonymise_argv(source, out),
        capsys,
        expect=[str(bad), *expect, "utterance 'u1'", f"{source / 'wav.scp'}: line 2"],
        watch=[tmp_path],
    )
    assert not out.exists()  # the good utterance before it was not written either


@pytest.mark.parametrize(
    "utt_id",
    ["../escaped", "../../escaped", "a/b", "..", ".", "sub\\escaped", "a|b"],
    ids=["parent", "grandparent", "subfolder", "dotdot", "dot", "backslash", "pipe"],
)
def test_anonymise_refuses_an_utterance_id_that_is_not_a_file_name(utt_id, tmp_path, capsys):
    """Ids become file names (OUT/wav/<id>.wav): one that names another folder is refused before anything is
    written -- inside the output folder or outside it (its parent folders are watched)."""
    wavs = tmp_path / "wav"
    wavs.mkdir()
    entries = [("u0", "spk0", write_voice(wavs / "u0.wav", 0, 0, 0.3))]
    entries.append((utt_id, "spk1", write_voice(wavs / "u1.wav", 1, 0, 0.3)))
    source = anonymise_dir(tmp_path / "data", entries)
    out = tmp_path / "out"
    line = assert_refused(
        anonymise_argv(source, out),
        capsys,
        expect=[str(source / "wav.scp"), "line 2", repr(utt_id), "file name"],
        watch=[tmp_path],
    )
    assert "Traceback" not in line
    assert not out.exists() and not (tmp_path / "escaped.wav").exists()
    assert sorted(p.name for p in tmp_path.rglob("*.wav")) == ["u0.wav", "u1.wav"]  # the two inputs only


def test_anonymise_writes_wav_scp_atomically(tmp_path, monkeypatch):
    """wav.scp is written through lidframe.data.fileio.atomic_write: a failed write leaves no partial file."""
    import lidframe.audio.anonymise as anonymise
    from lidframe.data import fileio

    source = anonymise_dir(tmp_path)
    written: list[str] = []
    real_atomic_write = fileio.atomic_write

    def recording(path, *args, **kwargs):
        written.append(Path(path).name)
        return real_atomic_write(path, *args, **kwargs)

    monkeypatch.setattr(fileio, "atomic_write", recording)
    anonymise.anonymise_data_dir(source, tmp_path / "out", method="resample", ratio=1.1)
    assert written == ["wav.scp"]
    # absolute paths, found from any folder (by Kaldi too); relative to the data dir when asked
    wavs = [(tmp_path / "out" / "wav" / f"u{i}.wav").absolute() for i in range(2)]
    assert (tmp_path / "out" / "wav.scp").read_text() == f"u0 {wavs[0]}\nu1 {wavs[1]}\n"
    anonymise.anonymise_data_dir(source, tmp_path / "moves", method="resample", ratio=1.1, wav_paths="data-dir")
    assert (tmp_path / "moves" / "wav.scp").read_text() == "u0 wav/u0.wav\nu1 wav/u1.wav\n"
