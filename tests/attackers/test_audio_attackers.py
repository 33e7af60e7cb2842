"""Audio attackers: SpeechBrain fixture equivalence, batching, checkpoints, audio errors, cache, e2e."""

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
soundfile = pytest.importorskip("soundfile")

from lidframe import InputError, ScoreSet  # noqa: E402
from lidframe.attackers import EcapaTdnn, Utterance, XVector  # noqa: E402
from lidframe.attackers.ecapa_model import EcapaTdnnModel  # noqa: E402
from lidframe.attackers.frontend import Fbank, read_audio, sentence_mean_norm  # noqa: E402
from lidframe.attackers.layers import Lengths  # noqa: E402
from lidframe.attackers.neural import load_checkpoint  # noqa: E402
from lidframe.attackers.xvector_model import XvectorModel  # noqa: E402
from lidframe.cli import main  # noqa: E402
from tests.voices import write_voice  # noqa: E402

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "speechbrain"
UTTS = ("utt1", "utt2", "utt3")
ECAPA_FIX = {"channels": [128, 128, 128, 128, 384], "attention_channels": 64, "lin_neurons": 192}
XVEC_FIX = {"tdnn_channels": [128, 128, 128, 128, 384], "lin_neurons": 128}


@pytest.fixture(scope="module")
def models():
    ecapa = EcapaTdnnModel(input_size=80, **ECAPA_FIX)
    load_checkpoint(ecapa, FIX / "ecapa.ckpt")
    xvec = XvectorModel(in_channels=80, **XVEC_FIX)
    load_checkpoint(xvec, FIX / "xvector.ckpt")
    return ecapa.eval(), xvec.eval()


def test_fbank_reproduces_speechbrain_features():
    ref = np.load(FIX / "fbank.npz")
    fbank = Fbank()
    for utt in UTTS:
        feats = fbank(torch.from_numpy(read_audio(FIX / f"{utt}.wav"))[None])[0].numpy()
        assert feats.shape == ref[utt].shape
        np.testing.assert_allclose(feats, ref[utt], atol=1e-3)  # dB; the fixture README's tolerance


@pytest.mark.slow
def test_single_utterance_embeddings_match_speechbrain(models):
    ecapa, xvec = models
    fb, emb = np.load(FIX / "fbank.npz"), np.load(FIX / "embeddings.npz")
    with torch.no_grad():
        for utt in UTTS:
            x = sentence_mean_norm(torch.from_numpy(fb[utt])[None])
            np.testing.assert_allclose(ecapa(x)[0, 0].numpy(), emb[f"ecapa_{utt}"], atol=1e-4)
            # SpeechBrain adds <= 9e-5 of random noise to the pooled mean; we do not
            np.testing.assert_allclose(xvec(x)[0, 0].numpy(), emb[f"xvector_{utt}"], atol=2e-4)


def padded_batch():
    fb, emb = np.load(FIX / "fbank.npz"), np.load(FIX / "embeddings.npz")
    lengths = [fb[u].shape[0] for u in UTTS]
    batch = torch.zeros(3, max(lengths), 80)
    for i, u in enumerate(UTTS):
        batch[i, : lengths[i]] = torch.from_numpy(fb[u])
    rel = torch.from_numpy(emb["batch_rel_lengths"])
    frames = torch.round(rel * max(lengths)).long()
    return sentence_mean_norm(batch, frames), frames, rel, emb


@pytest.mark.slow
def test_speechbrain_style_batches_reproduce_its_batched_embeddings(models):
    ecapa, xvec = models
    normed, frames, rel, emb = padded_batch()
    lengths = Lengths(frames, rel, "speechbrain")
    with torch.no_grad():
        np.testing.assert_allclose(ecapa(normed, lengths)[:, 0].numpy(), emb["ecapa_batch"], atol=1e-4)
        np.testing.assert_allclose(xvec(normed, lengths)[:, 0].numpy(), emb["xvector_batch"], atol=2e-4)


def test_exact_batches_equal_single_utterance_embeddings(models):
    ecapa, xvec = models
    normed, frames, rel, emb = padded_batch()
    lengths = Lengths(frames, rel, "exact")
    with torch.no_grad():
        for model, key, atol in ((ecapa, "ecapa", 1e-4), (xvec, "xvector", 2e-4)):
            batched = model(normed, lengths)[:, 0].numpy()
            single = np.stack([emb[f"{key}_{u}"] for u in UTTS])
            np.testing.assert_allclose(batched, single, atol=atol)
            cosine = (batched * single).sum(1) / np.linalg.norm(batched, axis=1) / np.linalg.norm(single, axis=1)
            assert cosine.min() >= 0.9999


@pytest.mark.slow
def test_batched_attacker_on_very_different_lengths(tmp_path):
    paths = [write_voice(tmp_path / f"u{i}.wav", i % 2, i, s) for i, s in enumerate((0.4, 9.0, 1.3, 4.2, 0.7))]
    utts = [Utterance(f"u{i}", f"s{i % 2}", str(p)) for i, p in enumerate(paths)]
    attacker = EcapaTdnn(**ECAPA_FIX, checkpoint=FIX / "ecapa.ckpt", device="cpu", batch_size=8)
    batched = attacker.embed(utts)
    single = np.stack([attacker.embed([u])[0] for u in utts])
    cosine = (batched * single).sum(1) / np.linalg.norm(batched, axis=1) / np.linalg.norm(single, axis=1)
    assert cosine.min() >= 0.9999, cosine
    assert np.max(np.abs(batched - single)) < 1e-4


def test_checkpoint_errors(tmp_path):
    model = EcapaTdnnModel(input_size=80, **ECAPA_FIX)
    state = torch.load(FIX / "ecapa.ckpt", map_location="cpu", weights_only=True)
    broken = dict(state)
    broken.pop("fc.conv.bias")
    broken["extra.weight"] = torch.zeros(1)
    torch.save(broken, tmp_path / "broken.ckpt")
    with pytest.raises(InputError, match=r"missing keys \['fc.conv.bias'\] \(1\), unexpected keys \['extra.weight'\]"):
        load_checkpoint(model, tmp_path / "broken.ckpt")
    torch.save([1, 2, 3], tmp_path / "list.ckpt")
    with pytest.raises(InputError, match="expected a state dict of tensors"):
        load_checkpoint(model, tmp_path / "list.ckpt")

    class Evil:
        def __reduce__(self):
            return (print, ("arbitrary code ran",))

    with open(tmp_path / "evil.ckpt", "wb") as handle:
        pickle.dump({"x": Evil()}, handle)
    with pytest.raises(InputError, match="not a weights-only torch checkpoint"):
        load_checkpoint(model, tmp_path / "evil.ckpt")
    with pytest.raises(InputError, match="no such checkpoint file"):
        load_checkpoint(model, tmp_path / "none.ckpt")
    wrong = EcapaTdnnModel(input_size=80, channels=[64, 64, 64, 64, 192], attention_channels=64)
    with pytest.raises(InputError, match="does not fit|shapes do not fit"):
        load_checkpoint(wrong, FIX / "ecapa.ckpt")


def test_audio_errors_and_conversions(tmp_path):
    (tmp_path / "corrupt.wav").write_bytes(b"RIFF....WAVEfmt garbage")
    with pytest.raises(InputError, match="corrupt.wav: cannot read audio"):
        read_audio(tmp_path / "corrupt.wav")
    soundfile.write(tmp_path / "empty.wav", np.zeros(0, np.float32), 16000)
    with pytest.raises(InputError, match="empty.wav: empty audio"):
        read_audio(tmp_path / "empty.wav")
    soundfile.write(tmp_path / "short.wav", np.zeros(100, np.float32), 16000)
    with pytest.raises(InputError, match=r"short.wav: 0.006 s of audio; at least 0.1 s"):
        read_audio(tmp_path / "short.wav")
    mono = read_audio(write_voice(tmp_path / "mono.wav", 1, 1, 1.0))
    stereo = read_audio(write_voice(tmp_path / "stereo.wav", 1, 1, 1.0, channels=2))
    np.testing.assert_array_equal(stereo, mono)  # identical channels mix down to the same signal
    eight = read_audio(write_voice(tmp_path / "8k.wav", 1, 1, 1.0, rate=8000))
    assert eight.shape == (16000,)  # resampled to 16 kHz


@pytest.mark.slow
def test_cache_hit_returns_identical_arrays_and_skips_the_model(tmp_path):
    paths = [write_voice(tmp_path / f"c{i}.wav", i, i, 1.0 + i) for i in range(3)]
    utts = [Utterance(f"c{i}", f"s{i}", str(p)) for i, p in enumerate(paths)]
    first = XVector(**XVEC_FIX, checkpoint=FIX / "xvector.ckpt", device="cpu", cache_dir=tmp_path / "cache")
    a = first.embed(utts)
    assert first.model_calls >= 1 and len(list((tmp_path / "cache").glob("*.npz"))) == 3
    second = XVector(**XVEC_FIX, checkpoint=FIX / "xvector.ckpt", device="cpu", cache_dir=tmp_path / "cache")
    b = second.embed(utts)
    assert second.model_calls == 0
    np.testing.assert_array_equal(a, b)
    other = XVector(
        **XVEC_FIX, checkpoint=FIX / "xvector.ckpt", device="cpu", cache_dir=tmp_path / "cache", padding="speechbrain"
    )
    other.embed(utts[:1])
    assert other.model_calls == 1  # another configuration is another key


def make_data_dir(folder: Path, utterances):
    folder.mkdir(parents=True)
    (folder / "wav.scp").write_text("".join(f"{u} {p}\n" for u, _, p in utterances))
    (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s, _ in utterances))


@pytest.mark.slow
def test_end_to_end_score_then_evaluate(tmp_path, capsys):
    wavs = tmp_path / "wav"
    wavs.mkdir()

    def split(name, speakers, enrol_per, trials_per, offset):
        enrol = [
            (f"{name}e{s}_{k}", f"{name}spk{s}", str(write_voice(wavs / f"{name}e{s}_{k}.wav", s + offset, k, 1.5)))
            for s in range(speakers)
            for k in range(enrol_per)
        ]
        trials = [
            (
                f"{name}t{s}_{k}",
                f"{name}spk{s}",
                str(write_voice(wavs / f"{name}t{s}_{k}.wav", s + offset, 10 + k, 1.0 + 0.5 * k)),
            )
            for s in range(speakers)
            for k in range(trials_per)
        ]
        make_data_dir(tmp_path / f"{name}_enrolls", enrol)
        make_data_dir(tmp_path / f"{name}_trials", trials)

    split("dev", 4, 2, 3, 0)
    split("test", 4, 2, 3, 10)
    attacker = "ecapa?channels=128,128,128,128,384&attention_channels=64"
    for name in ("dev", "test"):
        code = main(
            [
                "score",
                "--attacker",
                attacker,
                "--checkpoint",
                str(FIX / "ecapa.ckpt"),
                "--enrol",
                str(tmp_path / f"{name}_enrolls"),
                "--trials",
                str(tmp_path / f"{name}_trials"),
                "--out",
                str(tmp_path / f"{name}.npz"),
                "--device",
                "cpu",
            ]
        )
        assert code == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "scored 12 trials against N = 4 enrolled speakers" in out
    scores = ScoreSet.load(tmp_path / "test.npz")
    assert scores.scores.shape == (12, 4) and scores.n_outsider_trials == 0
    code = main(
        [
            "evaluate",
            "--dev",
            str(tmp_path / "dev.npz"),
            "--eval",
            str(tmp_path / "test.npz"),
            "--json",
            str(tmp_path / "s.json"),
        ]
    )
    assert code == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["n_enrolled"] == 4 and summary["lid_max"] <= 2.0 + 1e-9


def test_score_cli_errors(tmp_path, capsys):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "wav.scp").write_text("u1 sox a.flac -t wav - |\n")
    (folder / "utt2spk").write_text("u1 s1\n")
    code = main(
        [
            "score",
            "--attacker",
            "random",
            "--enrol",
            str(folder),
            "--trials",
            str(folder),
            "--out",
            str(tmp_path / "x.npz"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "is a piped command" in err and not (tmp_path / "x.npz").exists()


@pytest.mark.slow
def test_bf16_autocast_and_progress_bar_run_on_cpu(tmp_path, capsys):
    paths = [write_voice(tmp_path / f"b{i}.wav", i, i, 1.0 + i) for i in range(2)]
    utts = [Utterance(f"b{i}", f"s{i}", str(p)) for i, p in enumerate(paths)]
    base = dict(ECAPA_FIX, checkpoint=FIX / "ecapa.ckpt", device="cpu")
    fp32 = EcapaTdnn(**base).embed(utts)
    bf16 = EcapaTdnn(**base, precision="bf16", progress=True).embed(utts)
    cosine = (fp32 * bf16).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(bf16, axis=1)
    assert cosine.min() > 0.99  # bf16 keeps 8 bits of mantissa
    assert "EcapaTdnn embeddings" in capsys.readouterr().err
    with pytest.raises(InputError, match="precision must be 'fp32' or 'bf16'"):
        EcapaTdnn(**base, precision="fp8").embed(utts)


def test_device_feature_path_equals_per_utterance_features():
    """The accelerator path (one zero-padded waveform batch, filterbanks of the batch) gives
    the per-utterance filterbanks on every valid frame; run here with the CPU as the device."""
    rng = np.random.default_rng(3)
    waveforms = [rng.normal(scale=0.1, size=n).astype(np.float32) for n in (16000, 5230, 23999, 8000)]
    attacker = EcapaTdnn.voiceprivacy(channels=(64, 64, 64, 64, 192), device="cpu")
    attacker.model
    per_utt, frames = attacker._features(waveforms, torch.device("cpu"))
    batched, frames_b = attacker._features_on_device(waveforms, torch.device("cpu"))
    assert torch.equal(frames, frames_b) and per_utt.shape == batched.shape
    for i, n in enumerate(frames.tolist()):
        torch.testing.assert_close(batched[i, :n], per_utt[i, :n], rtol=0, atol=2e-4)
