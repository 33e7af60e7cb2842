"""Attacker training: the loss falls, held-out EER beats a random model, resume equals an uninterrupted run."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("soundfile")

from lidframe.attackers import EcapaTdnn, Utterance, group_by_speaker  # noqa: E402
from lidframe.attackers.training import AAMSoftmax, train_attacker  # noqa: E402
from lidframe.cli import main  # noqa: E402
from lidframe.metrics.detection import eer_rocch  # noqa: E402
from tests.voices import write_close_voice  # noqa: E402

SMALL = {
    "channels": (32, 32, 32, 32, 96),
    "attention_channels": 16,
    "se_channels": 16,
    "lin_neurons": 32,
    "device": "cpu",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    (root / "wav").mkdir()
    (root / "train").mkdir()
    lines, spk = [], []
    for s in range(6):
        for k in range(8):
            write_close_voice(root / "wav" / f"s{s}_{k}.wav", s, k, 2.5)
            lines.append(
                f"s{s}_{k} {root / 'wav' / f's{s}_{k}.wav'}\n"
            )  # absolute: Kaldi reads relative paths from the cwd
            spk.append(f"s{s}_{k} spk{s}\n")
    (root / "train" / "wav.scp").write_text("".join(lines))
    (root / "train" / "utt2spk").write_text("".join(spk))
    held = [
        Utterance(f"h{s}_{k}", f"spk{s}", str(write_close_voice(root / "wav" / f"h{s}_{k}.wav", s, 50 + k, 2.0)))
        for s in range(6)
        for k in range(4)
    ]
    return root, held


def heldout_eer(attacker, held):
    enrol = group_by_speaker([u for u in held if u.utt_id.endswith("_0")])
    trials = [u for u in held if not u.utt_id.endswith("_0")]
    scores = attacker.score(trials, enrol)
    mated = scores.mated_mask()
    return eer_rocch(scores.scores[mated], scores.scores[~mated])


@pytest.mark.slow
def test_training_lowers_the_loss_and_beats_random_weights(corpus):
    root, held = corpus
    history = train_attacker(
        EcapaTdnn(**SMALL), root / "train", root / "a.ckpt", epochs=10, batch_size=8, log=lambda m: None
    )
    losses = [h["loss"] for h in history]
    assert losses[-1] < 0.5 * losses[0]
    trained = heldout_eer(EcapaTdnn(**SMALL, checkpoint=root / "a.ckpt"), held)  # plain state dict, strict load
    random = np.mean([heldout_eer(EcapaTdnn(**SMALL, seed=k), held) for k in range(4)])
    assert trained < random, (trained, random)


@pytest.mark.slow
def test_resume_continues_from_the_last_epoch_and_matches_an_uninterrupted_run(corpus, tmp_path):
    root, _ = corpus
    train_attacker(
        EcapaTdnn(**SMALL), root / "train", tmp_path / "straight.ckpt", epochs=3, batch_size=8, log=lambda m: None
    )
    train_attacker(
        EcapaTdnn(**SMALL), root / "train", tmp_path / "split.ckpt", epochs=2, batch_size=8, log=lambda m: None
    )  # "killed" after epoch 2
    messages = []
    history = train_attacker(
        EcapaTdnn(**SMALL), root / "train", tmp_path / "split.ckpt", epochs=3, batch_size=8, log=messages.append
    )
    assert messages[0].startswith("resuming") and [h["epoch"] for h in history] == [1, 2, 3]
    a = torch.load(tmp_path / "straight.ckpt", weights_only=True)
    b = torch.load(tmp_path / "split.ckpt", weights_only=True)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)  # deterministic on the CPU


def test_aam_softmax_margin():
    head = AAMSoftmax(4, 3, margin=0.2, scale=30.0)
    with torch.no_grad():
        head.weight.copy_(torch.eye(3, 4))
    emb = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    logits = head(emb, torch.tensor([0]))
    # the true class at angle 0 gets s cos(0 + m); the others s cos(pi / 2) = 0.  (Cosines
    # are clamped to 1 - 1e-7 to keep the gradient of sqrt(1 - cos^2) finite: 1e-4 relative.)
    assert logits[0, 0].item() == pytest.approx(30 * np.cos(0.2), rel=1e-3)
    assert logits[0, 1].item() == pytest.approx(0.0, abs=1e-4)


@pytest.mark.slow
def test_cli_train_attacker(corpus, tmp_path, capsys):
    root, _ = corpus
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(
            [
                "train-attacker",
                "--arch",
                "ecapa?channels=32,32,32,32,96&attention_channels=16&se_channels=16&lin_neurons=32",
                "--data",
                str(root / "train"),
                "--out",
                str(tmp_path / "c.ckpt"),
                "--epochs",
                "1",
                "--batch-size",
                "16",
                "--device",
                "cpu",
            ]
        )
    assert code == 0 and "trained ecapa" in capsys.readouterr().out
    assert (
        main(["train-attacker", "--arch", "random", "--data", str(root / "train"), "--out", str(tmp_path / "x")]) == 2
    )
