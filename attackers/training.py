"""Training an attacker: speaker classification with additive angular margin (AAM) softmax.

The *semi-informed* attacker of the LID paper and the VoicePrivacy Challenge is a
speaker encoder trained (or fine-tuned) on anonymised speech of training speakers, so
it learns what speaker information survives the anonymiser.  :func:`train_attacker`
trains an :class:`~lidframe.attackers.EcapaTdnn` or :class:`~lidframe.attackers.XVector`
encoder on a Kaldi data dir:

* each step takes a batch of random 2-3 s chunks (one per utterance per epoch, in a
  seeded shuffled order), computes 80 filterbanks with sentence mean normalisation,
  embeds them and classifies the speakers with AAM softmax (margin 0.2, scale 30, as
  the VoicePrivacy attacker) and cross-entropy; Adam;
* after every epoch the encoder is saved as a plain state dict with SpeechBrain's key
  names at ``out`` (so ``EcapaTdnn(checkpoint=out)`` loads it) and the full training
  state at ``out + ".state"`` (model, head, optimiser, epoch, random states); a rerun
  resumes from the last finished epoch;
* on the CPU, the same seed gives the same weights; ``precision="bf16"`` uses CUDA
  autocast; ``init`` fine-tunes from an existing checkpoint.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, cast

import numpy as np

from lidframe.data.fileio import StrPath, atomic_path
from lidframe.errors import InputError

from ._torch import nn, torch
from .frontend import Fbank, read_audio, sentence_mean_norm
from .layers import Lengths
from .neural import NeuralAttacker, load_checkpoint, load_weights_file, resolve_device

__all__ = ["AAMSoftmax", "train_attacker"]

#: What a training state (``out + ".state"``) holds.
_STATE_KEYS = frozenset({"model", "head", "optimiser", "torch_rng", "numpy_rng", "epoch", "speakers", "history"})


class AAMSoftmax(nn.Module):
    """Additive angular margin softmax head: logits s cos(theta + m) for the true class, s cos(theta) else."""

    def __init__(self, embedding_dim: int, n_classes: int, margin: float = 0.2, scale: float = 30.0):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_classes, embedding_dim))
        nn.init.xavier_uniform_(self.weight)
        self.margin = margin
        self.scale = scale

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        cosine = nn.functional.linear(nn.functional.normalize(embeddings), nn.functional.normalize(self.weight))
        cosine = cosine.clamp(-1 + 1e-7, 1 - 1e-7)
        sine = torch.sqrt(1.0 - cosine * cosine)
        shifted = cosine * math.cos(self.margin) - sine * math.sin(self.margin)
        # beyond theta = pi - m the shifted cosine would rise again: fall back to a linear penalty
        shifted = torch.where(
            cosine > math.cos(math.pi - self.margin), shifted, cosine - math.sin(math.pi - self.margin) * self.margin
        )
        target = nn.functional.one_hot(labels, cosine.shape[1]).to(cosine.dtype)
        return self.scale * (target * shifted + (1 - target) * cosine)


def _chunks(
    audio: list[np.ndarray],
    indices: np.ndarray,
    rng: np.random.Generator,
    fbank: Fbank,
    min_s: float,
    max_s: float,
    rate: int = 16000,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random min_s..max_s second chunks (whole utterance when shorter) -> padded features + lengths."""
    feats = []
    for i in indices:
        wave = audio[i]
        length = int(rng.uniform(min_s, max_s) * rate)
        if wave.shape[0] > length:
            start = int(rng.integers(0, wave.shape[0] - length + 1))
            wave = wave[start : start + length]
        feats.append(fbank(torch.from_numpy(np.ascontiguousarray(wave))[None])[0])
    frames = torch.tensor([f.shape[0] for f in feats])
    padded = torch.zeros(len(feats), int(frames.max()), feats[0].shape[1])
    for j, f in enumerate(feats):
        padded[j, : f.shape[0]] = f
    return sentence_mean_norm(padded, frames), frames


def train_attacker(
    attacker: NeuralAttacker,
    data_dir: StrPath,
    out: StrPath,
    *,
    epochs: int = 10,
    batch_size: int = 16,
    lr: float = 1e-3,
    chunk_seconds: tuple[float, float] = (2.0, 3.0),
    init: StrPath | None = None,
    device: str = "auto",
    precision: str = "fp32",
    seed: int = 0,
    progress: bool = False,
    log: Callable[[str], object] = print,
) -> list[dict[str, Any]]:
    """Train *attacker*'s encoder on the speakers of *data_dir*; save it to *out* every epoch.

    Parameters
    ----------
    attacker : EcapaTdnn or XVector
        Supplies the architecture (``build_model``); its ``checkpoint`` is ignored (use
        *init* to fine-tune).
    data_dir : str or os.PathLike
        Kaldi data dir of the training speakers (``wav.scp``, ``utt2spk``).
    out : str or os.PathLike
        Encoder checkpoint (plain state dict); the training state goes to ``out.state``.
    epochs : int
        Total epochs; a rerun with a larger number continues.
    batch_size : int
        Utterances (one chunk each) per step.
    lr : float
        Adam learning rate.
    chunk_seconds : (float, float)
        Range of the random chunk length in seconds.
    init : str or os.PathLike, optional
        Checkpoint to fine-tune from.
    device, precision : str
        ``"auto"``/``"cpu"``/``"cuda[:i]"``, and ``"fp32"`` or ``"bf16"`` (autocast).
    seed : int
        Seed of the weights, the chunk draws and the batch order.
    progress : bool
        A tqdm progress bar per epoch.
    log : callable
        Receives one line per epoch (``print`` by default).

    Returns
    -------
    list of dict
        Per finished epoch (this run and earlier ones): ``epoch, loss, accuracy, seconds``.
    """
    from lidframe.data.kaldi import read_data_dir

    dev = resolve_device(device)  # a CUDA device this machine lacks is refused before the data is read
    utterances = read_data_dir(data_dir)
    speakers = sorted({u.speaker for u in utterances})
    if len(speakers) < 2:
        raise InputError(f"{data_dir}: training needs at least two speakers, got {len(speakers)}")
    if precision not in ("fp32", "bf16"):
        raise InputError(f"precision must be 'fp32' or 'bf16', got {precision!r}")
    labels = np.array([speakers.index(u.speaker) for u in utterances])
    out = Path(out)
    state_path = out.with_name(out.name + ".state")
    torch.manual_seed(seed)
    model = attacker.build_model()
    if init is not None:  # checked before the audio is read and before anything is written
        load_checkpoint(model, init, label=type(attacker).__name__)
    embedding_dim = int(attacker.model_config()["lin_neurons"])
    head = AAMSoftmax(embedding_dim, len(speakers))
    model.to(dev)
    head.to(dev)
    optimiser = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=lr, weight_decay=2e-5)
    rng = np.random.default_rng(seed)
    history: list[dict[str, Any]] = []
    start_epoch = 0
    if state_path.exists():
        state = load_weights_file(state_path, what="training state", map_location=dev)
        lacking = sorted(_STATE_KEYS - set(state)) if isinstance(state, dict) else sorted(_STATE_KEYS)
        if lacking:
            raise InputError(f"{state_path}: not a lidframe training state (lacks {lacking}); delete it to start over")
        if state["speakers"] != speakers:
            raise InputError(f"{state_path}: saved for other speakers; delete it to start over")
        try:
            model.load_state_dict(state["model"])
            head.load_state_dict(state["head"])
            optimiser.load_state_dict(state["optimiser"])
            torch.set_rng_state(state["torch_rng"])
            rng.bit_generator.state = json.loads(state["numpy_rng"])
            history = json.loads(state["history"])
            start_epoch = int(state["epoch"])
        except (RuntimeError, ValueError, TypeError, KeyError) as exc:
            first = " ".join(str(exc).split())[:200]
            raise InputError(
                f"{state_path}: training state does not fit this {type(attacker).__name__} ({first}); "
                "delete it to start over"
            ) from None
        log(f"resuming {out} after epoch {start_epoch}")
    audio = [read_audio(cast(str, u.path)) for u in utterances]  # read_data_dir gives each its wav.scp path
    out.parent.mkdir(parents=True, exist_ok=True)
    fbank = Fbank()
    autocast = torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=precision == "bf16")
    for epoch in range(start_epoch, epochs):
        began = time.perf_counter()
        model.train()
        head.train()
        order = rng.permutation(len(utterances))
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(batches, desc=f"epoch {epoch + 1}/{epochs}", unit="batch")
        iterator: Iterable[np.ndarray] = batches if bar is None else bar
        total_loss, correct, seen = 0.0, 0, 0
        for batch in iterator:
            feats, frames = _chunks(audio, batch, rng, fbank, *chunk_seconds)
            target = torch.from_numpy(labels[batch]).to(dev)
            with autocast:
                emb = model(feats.to(dev), Lengths(frames.to(dev), frames.to(torch.float32) / feats.shape[1]))[:, 0]
                logits = head(emb.float(), target)
                loss = nn.functional.cross_entropy(logits, target)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total_loss += float(loss.detach()) * len(batch)
            correct += int((logits.argmax(1) == target).sum())
            seen += len(batch)
            if bar is not None:
                bar.set_postfix(loss=f"{total_loss / seen:.3f}", acc=f"{correct / seen:.2f}")
        record = {
            "epoch": epoch + 1,
            "loss": total_loss / seen,
            "accuracy": correct / seen,
            "seconds": time.perf_counter() - began,
        }
        history.append(record)
        model.eval()
        with atomic_path(out, suffix=".ckpt") as tmp:
            torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, tmp)
        with atomic_path(state_path, suffix=".state") as tmp:
            torch.save(
                {
                    "model": model.state_dict(),
                    "head": head.state_dict(),
                    "optimiser": optimiser.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                    "numpy_rng": json.dumps(rng.bit_generator.state),
                    "epoch": epoch + 1,
                    "speakers": speakers,
                    "history": json.dumps(history),
                },
                tmp,
            )
        log(
            f"epoch {epoch + 1}/{epochs}: loss {record['loss']:.4f}, accuracy {record['accuracy']:.3f}, "
            f"{record['seconds']:.1f} s; saved {out}"
        )
    return history
