"""Adapting GE2E on anonymised speech: the whole encoder (train_attacker) or its output layer only (train_output_layer)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("soundfile")

from lidframe.attackers.ge2e import Ge2e, resemblyzer_weights  # noqa: E402
from lidframe.attackers.ge2e_model import Ge2eModel  # noqa: E402
from lidframe.attackers.training import train_attacker, train_output_layer  # noqa: E402
from lidframe.data.kaldi import read_data_dir  # noqa: E402
from lidframe.errors import InputError  # noqa: E402
from tests.bad_input.audio_dirs import write_data_dir  # noqa: E402
from tests.cli.test_cli import run  # noqa: E402
from tests.voices import write_voice  # noqa: E402

SMALL = {"hidden_size": 32, "embedding_size": 24}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """4 generated speakers x 5 utterances (2.4 s) as a Kaldi data dir."""
    root = tmp_path_factory.mktemp("ge2e-train")
    (root / "wav").mkdir()
    entries = [
        (f"s{s}_{k}", f"spk{s}", write_voice(root / "wav" / f"s{s}_{k}.wav", s, k, 2.4))
        for s in range(4)
        for k in range(5)
    ]
    write_data_dir(root / "train", entries)
    return root


def _random_init(path, seed=0):
    torch.manual_seed(seed)
    state = Ge2eModel(**SMALL).state_dict()
    torch.save(state, path)
    return state


def _separation(attacker, data_dir) -> float:
    """Mean cosine between a speaker's own utterances minus the mean between different speakers'."""
    utts = read_data_dir(data_dir)
    emb = attacker.embed(utts)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    cos = emb @ emb.T
    same = np.equal.outer([u.speaker for u in utts], [u.speaker for u in utts])
    off = ~np.eye(len(utts), dtype=bool)
    return float(cos[same & off].mean() - cos[~same].mean())


@pytest.mark.slow
def test_output_layer_adaptation_keeps_the_lstm_and_separates_the_training_speakers(corpus, tmp_path):
    init = tmp_path / "init.pt"
    before = _random_init(init)
    out = tmp_path / "adapted.ckpt"
    lines = []
    history = train_output_layer(
        Ge2e(**SMALL, device="cpu"), corpus / "train", out, epochs=150, init=init, log=lines.append
    )
    after = torch.load(out, weights_only=True)
    assert set(after) == set(before)
    for key in before:
        if key.startswith("lstm."):
            assert torch.equal(after[key], before[key]), key  # frozen: bit for bit
    assert not torch.equal(after["linear.weight"], before["linear.weight"])
    assert history[0]["epoch"] == 150 and len(lines) == 1 and "20 utterances of 4 speakers" in lines[0]
    base = _separation(Ge2e(**SMALL, device="cpu", checkpoint=init), corpus / "train")
    adapted = _separation(Ge2e(**SMALL, device="cpu", checkpoint=out), corpus / "train")
    assert adapted > base + 0.05, (base, adapted)


@pytest.mark.slow
def test_whole_encoder_fine_tuning_writes_a_checkpoint_the_attacker_loads(corpus, tmp_path):
    init = tmp_path / "init.pt"
    before = _random_init(init, seed=1)
    out = tmp_path / "tuned.ckpt"
    history = train_attacker(
        Ge2e(**SMALL, device="cpu"), corpus / "train", out, epochs=2, batch_size=8, init=init, log=lambda m: None
    )
    assert [h["epoch"] for h in history] == [1, 2]
    after = torch.load(out, weights_only=True)
    assert not torch.equal(after["lstm.weight_hh_l2"], before["lstm.weight_hh_l2"])  # every layer trains
    embedded = Ge2e(**SMALL, device="cpu", checkpoint=out).embed(read_data_dir(corpus / "train")[:2])
    assert embedded.shape == (2, 24)
    # training chunks are one GE2E window: 160 frames
    assert Ge2e.training_chunk_seconds == (159 * 160 / 16000,) * 2


def test_output_layer_of_an_encoder_without_one_is_refused(corpus, tmp_path):
    from lidframe.attackers import EcapaTdnn

    with pytest.raises(InputError, match="EcapaTdnn has no separate output layer to adapt"):
        train_output_layer(EcapaTdnn(device="cpu"), corpus / "train", tmp_path / "x.ckpt")
    with pytest.raises(InputError, match="epochs must be a positive integer"):
        train_output_layer(Ge2e(**SMALL, device="cpu"), corpus / "train", tmp_path / "x.ckpt", epochs=0)


@pytest.mark.slow
def test_cli_init_names_the_pretrained_weights(corpus, tmp_path, capsys):
    try:
        resemblyzer_weights()
    except InputError as exc:
        pytest.skip(str(exc))
    out = tmp_path / "semi.ckpt"
    code, stdout, stderr = run(
        [
            "train-attacker",
            "--init",
            "ge2e",
            "--layers",
            "output",
            "--data",
            str(corpus / "train"),
            "--out",
            str(out),
            "--epochs",
            "30",
        ],
        capsys,
    )
    assert code == 0, stderr
    assert "trained the output layer of ge2e from ge2e for 30 steps" in stdout
    state = torch.load(out, weights_only=True)
    pretrained = Ge2e(device="cpu").build_model()
    Ge2e(device="cpu").load_weights(pretrained, resemblyzer_weights())
    assert torch.equal(state["lstm.weight_ih_l0"], pretrained.state_dict()["lstm.weight_ih_l0"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--init", "ecapa"], "the ecapa attacker has no pretrained weights here; give a checkpoint file"),
        (["--init", "missing.ckpt"], "--arch is required"),
        (["--arch", "ecapa", "--init", "ge2e"], "the pretrained weights of 'ge2e' do not fit --arch 'ecapa'"),
        (["--arch", "random"], "has no trainable encoder"),
        (["--arch", "ge2e", "--epochs", "0"], "--epochs must be a positive integer"),
    ],
)
def test_cli_refuses_in_one_line(corpus, tmp_path, argv, message, capsys):
    code, stdout, stderr = run(
        ["train-attacker", *argv, "--data", str(corpus / "train"), "--out", str(tmp_path / "o.ckpt")], capsys
    )
    assert code == 2
    assert message in stderr and stderr.strip().count("\n") == 0 and "Traceback" not in stderr
    assert not (tmp_path / "o.ckpt").exists()


@pytest.mark.slow
def test_output_layer_adaptation_starts_from_the_attackers_checkpoint(corpus, tmp_path):
    """Without init, the attacker's own checkpoint is what gets adapted; with neither weights, a refusal."""
    own = tmp_path / "own.pt"
    before = _random_init(own, seed=7)
    out = tmp_path / "adapted.ckpt"
    train_output_layer(
        Ge2e(**SMALL, device="cpu", checkpoint=own), corpus / "train", out, epochs=5, batch_size=3, log=lambda m: None
    )
    after = torch.load(out, weights_only=True)
    assert all(torch.equal(after[k], before[k]) for k in before if k.startswith("lstm."))
    with pytest.raises(InputError, match="needs trained weights below it"):
        train_output_layer(Ge2e(**SMALL, device="cpu", pretrained=False), corpus / "train", tmp_path / "x.ckpt")


def test_cli_output_layer_refuses_the_flags_of_whole_training(corpus, tmp_path, capsys):
    code, _, stderr = run(
        [
            "train-attacker",
            "--arch",
            "ge2e?pretrained=false",
            "--layers",
            "output",
            "--precision",
            "bf16",
            "--data",
            str(corpus / "train"),
            "--out",
            str(tmp_path / "o.ckpt"),
        ],
        capsys,
    )
    assert code == 2 and "--precision and --progress apply to --layers all" in stderr
