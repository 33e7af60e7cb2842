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
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import attrs
import numpy as np

from lidframe.data.fileio import StrPath, atomic_path
from lidframe.data.kaldi import WavPaths
from lidframe.data.utterance import Utterance
from lidframe.errors import InputError
from lidframe.registry.capabilities import capabilities_of

from ._torch import nn, torch
from .neural import NeuralAttacker, load_weights_file, resolve_device

__all__ = ["AAMSoftmax", "train_attacker", "train_output_layer"]

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


def _cut_chunks(
    audio: list[np.ndarray],
    indices: np.ndarray,
    rng: np.random.Generator,
    min_s: float,
    max_s: float,
    rate: int = 16000,
) -> list[np.ndarray]:
    """A random min_s..max_s second chunk of each utterance of *indices* (the whole utterance when shorter)."""
    chunks = []
    for i in indices:
        wave = audio[i]
        length = int(rng.uniform(min_s, max_s) * rate)
        if wave.shape[0] > length:
            start = int(rng.integers(0, wave.shape[0] - length + 1))
            wave = wave[start : start + length]
        chunks.append(wave)
    return chunks


def _training_speakers(data_dir: StrPath, wav_paths: WavPaths) -> tuple[list[Utterance], list[str]]:
    """The utterances of the training data dir and its sorted speaker ids; fewer than two speakers are refused."""
    from lidframe.data.kaldi import read_data_dir

    utterances = read_data_dir(data_dir, wav_paths=wav_paths)
    speakers = sorted({u.speaker for u in utterances})
    if len(speakers) < 2:
        raise InputError(f"{data_dir}: training needs at least two speakers, got {len(speakers)}")
    return utterances, speakers


def train_attacker(
    attacker: NeuralAttacker,
    data_dir: StrPath,
    out: StrPath,
    *,
    epochs: int = 10,
    batch_size: int = 16,
    lr: float = 1e-3,
    chunk_seconds: tuple[float, float] | None = None,
    init: StrPath | None = None,
    device: str = "auto",
    precision: str = "fp32",
    seed: int = 0,
    progress: bool = False,
    log: Callable[[str], object] = print,
    wav_paths: WavPaths = "cwd",
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
    chunk_seconds : (float, float), optional
        Range of the random chunk length in seconds; default the encoder's
        ``training_chunk_seconds`` (2-3 s; GE2E: its 1.6 s window).
    init : str or os.PathLike, optional
        Checkpoint to fine-tune from, read as the attacker reads its own
        (``load_weights``: a GE2E file in Resemblyzer's layout too).
    device, precision : str
        ``"auto"``/``"cpu"``/``"cuda[:i]"``, and ``"fp32"`` or ``"bf16"`` (autocast).
    seed : int
        Seed of the weights, the chunk draws and the batch order.
    progress : bool
        A tqdm progress bar per epoch.
    log : callable
        Receives one line per epoch (``print`` by default).
    wav_paths : {"cwd", "data-dir"}
        How relative audio paths in *data_dir*'s ``wav.scp`` are resolved (:func:`lidframe.data.kaldi.read_data_dir`).

    Returns
    -------
    list of dict
        Per finished epoch (this run and earlier ones): ``epoch, loss, accuracy, seconds``.
    """
    dev = resolve_device(device)  # a CUDA device this machine lacks is refused before the data is read
    utterances, speakers = _training_speakers(data_dir, wav_paths)
    if precision not in ("fp32", "bf16"):
        raise InputError(f"precision must be 'fp32' or 'bf16', got {precision!r}")
    out = Path(out)
    state_path = out.with_name(out.name + ".state")
    run = _TrainingRun.start(attacker, speakers, init=init, lr=lr, seed=seed, device=dev)
    if state_path.exists():
        run.resume(state_path, label=type(attacker).__name__)
        log(f"resuming {out} after epoch {run.epoch}")
    if chunk_seconds is None:
        chunk_seconds = attacker.training_chunk_seconds
    data = _TrainingData.read(attacker, utterances, speakers, batch_size=batch_size, chunk_seconds=chunk_seconds)
    out.parent.mkdir(parents=True, exist_ok=True)
    autocast = torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=precision == "bf16")
    for epoch in range(run.epoch, epochs):
        record = run.train_epoch(data, autocast, desc=f"epoch {epoch + 1}/{epochs}" if progress else None)
        run.save(out, state_path)
        log(
            f"epoch {epoch + 1}/{epochs}: loss {record['loss']:.4f}, accuracy {record['accuracy']:.3f}, "
            f"{record['seconds']:.1f} s; saved {out}"
        )
    return run.history


@attrs.frozen(eq=False)
class _TrainingData:
    """The training utterances' audio and speaker labels, and how batches of chunks are cut from them.

    Attributes
    ----------
    attacker : NeuralAttacker
        Whose front end turns chunks into features (``chunk_features``).
    audio : list of ndarray
        One mono 16 kHz waveform per utterance as the encoder reads it (``read_waveform``), shape (samples,).
    labels : ndarray of int, shape (utterances,)
        Each utterance's speaker, an index into the sorted speaker ids.
    batch_size : int
        Utterances (one chunk each) per step.
    chunk_seconds : (float, float)
        Range of the random chunk length in seconds.
    """

    attacker: NeuralAttacker
    audio: list[np.ndarray]
    labels: np.ndarray
    batch_size: int
    chunk_seconds: tuple[float, float]
    frontend: nn.Module

    @classmethod
    def read(
        cls,
        attacker: NeuralAttacker,
        utterances: Sequence[Utterance],
        speakers: list[str],
        *,
        batch_size: int,
        chunk_seconds: tuple[float, float],
    ) -> _TrainingData:
        """Read the audio of *utterances* (each with its wav.scp path); label each by its speaker's index in *speakers*."""
        return cls(
            attacker=attacker,
            audio=[attacker.read_waveform(cast(str, u.path)) for u in utterances],
            labels=np.array([speakers.index(u.speaker) for u in utterances]),
            batch_size=batch_size,
            chunk_seconds=chunk_seconds,
            frontend=attacker.build_frontend(),
        )

    def batches(self, rng: np.random.Generator) -> list[np.ndarray]:
        """One epoch's batches of utterance indices, in a shuffled order drawn from *rng*."""
        order = rng.permutation(len(self.audio))
        return [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]

    def features(self, batch: np.ndarray, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """The features (B, frames, channels) of a random chunk of each utterance, and their valid frames (B,)."""
        chunks = _cut_chunks(self.audio, batch, rng, *self.chunk_seconds)
        return self.attacker.chunk_features(self.frontend, chunks)


@attrs.define(eq=False)
class _TrainingRun:
    """What training changes -- encoder, AAM head, optimiser, random stream, history -- and its steps.

    ``epoch`` counts the finished epochs (this run's and, after :meth:`resume`, earlier ones).
    """

    attacker: NeuralAttacker
    model: nn.Module
    head: AAMSoftmax
    optimiser: torch.optim.Optimizer
    rng: np.random.Generator
    device: torch.device
    speakers: list[str]
    history: list[dict[str, Any]] = attrs.field(factory=list)
    epoch: int = 0

    @classmethod
    def start(
        cls,
        attacker: NeuralAttacker,
        speakers: list[str],
        *,
        init: StrPath | None,
        lr: float,
        seed: int,
        device: torch.device,
    ) -> _TrainingRun:
        """Seeded fresh weights (or *init*'s) for *attacker*'s encoder, an AAM head over *speakers*, and Adam."""
        torch.manual_seed(seed)
        model = attacker.build_model()
        if init is not None:  # checked before the audio is read and before anything is written
            attacker.load_weights(model, init)
        head = AAMSoftmax(attacker.embedding_dim(), len(speakers))
        model.to(device)
        head.to(device)
        optimiser = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=lr, weight_decay=2e-5)
        return cls(attacker, model, head, optimiser, np.random.default_rng(seed), device, speakers)

    def resume(self, state_path: Path, *, label: str) -> None:
        """Continue from the training state at *state_path*; one that is not one, or does not fit, is refused."""
        state = load_weights_file(state_path, what="training state", map_location=self.device)
        lacking = sorted(_STATE_KEYS - set(state)) if isinstance(state, dict) else sorted(_STATE_KEYS)
        if lacking:
            raise InputError(f"{state_path}: not a lidframe training state (lacks {lacking}); delete it to start over")
        if state["speakers"] != self.speakers:
            raise InputError(f"{state_path}: saved for other speakers; delete it to start over")
        try:
            self.model.load_state_dict(state["model"])
            self.head.load_state_dict(state["head"])
            self.optimiser.load_state_dict(state["optimiser"])
            torch.set_rng_state(state["torch_rng"])
            self.rng.bit_generator.state = json.loads(state["numpy_rng"])
            self.history = json.loads(state["history"])
            self.epoch = int(state["epoch"])
        except (RuntimeError, ValueError, TypeError, KeyError) as exc:
            first = " ".join(str(exc).split())[:200]
            raise InputError(
                f"{state_path}: training state does not fit this {label} ({first}); delete it to start over"
            ) from None

    def train_epoch(self, data: _TrainingData, autocast: torch.autocast, *, desc: str | None) -> dict[str, Any]:
        """One pass over *data*; appends and returns its record (``epoch, loss, accuracy, seconds``).

        *desc*: the label of a tqdm bar over the batches (None: no bar).
        """
        began = time.perf_counter()
        self.model.train()
        self.head.train()
        batches = data.batches(self.rng)
        bar = None
        if desc is not None:
            from tqdm import tqdm

            bar = tqdm(batches, desc=desc, unit="batch")
        iterator: Iterable[np.ndarray] = batches if bar is None else bar
        total_loss, correct, seen = 0.0, 0, 0
        for batch in iterator:
            feats, frames = data.features(batch, self.rng)
            target = torch.from_numpy(data.labels[batch]).to(self.device)
            with autocast:
                emb = self.attacker.encode(self.model, feats.to(self.device), frames.to(self.device))
                logits = self.head(emb.float(), target)
                loss = nn.functional.cross_entropy(logits, target)
            self.optimiser.zero_grad()
            loss.backward()
            self.optimiser.step()
            total_loss += float(loss.detach()) * len(batch)
            correct += int((logits.argmax(1) == target).sum())
            seen += len(batch)
            if bar is not None:
                bar.set_postfix(loss=f"{total_loss / seen:.3f}", acc=f"{correct / seen:.2f}")
        self.epoch += 1
        record = {
            "epoch": self.epoch,
            "loss": total_loss / seen,
            "accuracy": correct / seen,
            "seconds": time.perf_counter() - began,
        }
        self.history.append(record)
        return record

    def save(self, out: Path, state_path: Path) -> None:
        """The encoder as a plain state dict at *out*, and the whole training state at *state_path* (atomically)."""
        self.model.eval()
        with atomic_path(out, suffix=".ckpt") as tmp:
            torch.save({k: v.detach().cpu() for k, v in self.model.state_dict().items()}, tmp)
        with atomic_path(state_path, suffix=".state") as tmp:
            torch.save(
                {
                    "model": self.model.state_dict(),
                    "head": self.head.state_dict(),
                    "optimiser": self.optimiser.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                    "numpy_rng": json.dumps(self.rng.bit_generator.state),
                    "epoch": self.epoch,
                    "speakers": self.speakers,
                    "history": json.dumps(self.history),
                },
                tmp,
            )


def train_output_layer(
    attacker: NeuralAttacker,
    data_dir: StrPath,
    out: StrPath,
    *,
    epochs: int = 200,
    lr: float = 1e-3,
    init: StrPath | None = None,
    batch_size: int = 64,
    device: str = "auto",
    seed: int = 0,
    log: Callable[[str], object] = print,
    wav_paths: WavPaths = "cwd",
) -> list[dict[str, Any]]:
    """Adapt only *attacker*'s output layer on the speakers of *data_dir*; save the whole encoder to *out*.

    The cheap way to a semi-informed attacker from a pretrained encoder: everything below
    the output layer stays as *init* has it, so its states for every window of every
    training utterance are computed once (``attacker.window_features`` and
    ``attacker.output_layer_inputs``, 64 windows at a time); then the
    output layer and an AAM-softmax head over the training speakers (margin 0.2, scale
    30) are trained on all of them at once, *epochs* full-batch Adam steps (weight decay
    2e-5); accuracy and loss are those of the adapted layer (the AAM head's margin
    included).  Only the states are kept (``hidden`` floats per window), not the
    spectrograms.  On the CPU this takes seconds where fine-tuning a whole LSTM
    (:func:`train_attacker`) takes minutes per epoch.

    Parameters
    ----------
    attacker : NeuralAttacker
        An encoder with an output layer of its own (``output_layer``; :class:`~lidframe.attackers.Ge2e`).
    data_dir : str or os.PathLike
        Kaldi data dir of the training speakers (``wav.scp``, ``utt2spk``).
    out : str or os.PathLike
        The adapted encoder, a plain state dict (written atomically).
    epochs : int
        Full-batch steps.
    lr : float
        Adam learning rate.
    init : str or os.PathLike, optional
        The weights to start from (default: the attacker's ``checkpoint``, else its
        ``default_weights``; an attacker with neither is refused).
    batch_size : int
        Windows per forward pass of the frozen layers.
    device : str
        ``"auto"``, ``"cpu"``, ``"cuda[:i]"``.
    seed : int
        Seed of the AAM head's initialisation.
    log : callable
        Receives one line at the end.
    wav_paths : {"cwd", "data-dir"}
        How relative audio paths in *data_dir* are resolved (:func:`lidframe.data.kaldi.read_data_dir`).

    Returns
    -------
    list of dict
        One record: ``epoch, loss, accuracy, seconds``.
    """
    output_layer, inputs_of, windows_of = _output_layer_hooks(attacker, epochs=epochs, batch_size=batch_size)
    began = time.perf_counter()
    utterances, speakers = _training_speakers(data_dir, wav_paths)
    weights = _adaptation_weights(attacker, init)
    torch.manual_seed(seed)
    model = attacker.build_model()
    attacker.load_weights(model, weights)
    dev = resolve_device(device)
    model.to(dev).eval()
    x, target = _frozen_states(
        attacker, model, utterances, speakers, dev, hooks=(windows_of, inputs_of), batch_size=batch_size
    )
    layer = output_layer(model)
    head = AAMSoftmax(attacker.embedding_dim(), len(speakers)).to(dev)
    loss, accuracy = _fit_output_layer(layer, head, x, target, epochs=epochs, lr=lr)
    record = {"epoch": epochs, "loss": loss, "accuracy": accuracy, "seconds": time.perf_counter() - began}
    _save_encoder(model, Path(out))
    log(
        f"adapted the output layer on {x.shape[0]} windows of {len(utterances)} utterances of {len(speakers)} speakers: "
        f"loss {record['loss']:.4f}, accuracy {record['accuracy']:.3f}, {record['seconds']:.1f} s; saved {out}"
    )
    return [record]


def _output_layer_hooks(
    attacker: NeuralAttacker, *, epochs: int, batch_size: int
) -> tuple[Callable, Callable, Callable]:
    """*attacker*'s ``output_layer``, ``output_layer_inputs`` and ``window_features``, and the settings checked.

    Raises
    ------
    InputError
        The attacker has no separate output layer, or *epochs* or *batch_size* is not a positive integer.
    """
    declared = capabilities_of("attacker", attacker)
    output_layer, inputs_of, windows_of = declared.output_layer, declared.output_layer_inputs, declared.window_features
    if output_layer is None or inputs_of is None or windows_of is None:
        raise InputError(f"{type(attacker).__name__} has no separate output layer to adapt; train it whole")
    if not (isinstance(epochs, int) and epochs >= 1):
        raise InputError(f"epochs must be a positive integer, got {epochs!r}")
    if not (isinstance(batch_size, int) and batch_size >= 1):
        raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
    return output_layer, inputs_of, windows_of


def _adaptation_weights(attacker: NeuralAttacker, init: StrPath | None) -> StrPath:
    """The weights to adapt from: *init*, else the attacker's checkpoint, else its default weights (else refused)."""
    weights = init if init is not None else attacker.checkpoint
    if weights is None:
        weights = attacker.default_weights()
    if weights is None:
        raise InputError(
            f"{type(attacker).__name__}: adapting only the output layer needs trained weights below it: give init "
            "(--init) or the attacker's checkpoint"
        )
    return weights


def _frozen_states(
    attacker: NeuralAttacker,
    model: nn.Module,
    utterances: Sequence[Utterance],
    speakers: list[str],
    dev: torch.device,
    *,
    hooks: tuple[Callable, Callable],
    batch_size: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The output layer's inputs for every window of every utterance, (windows, hidden), and each window's speaker.

    The frozen layers run on about *batch_size* windows at a time; only their states are
    kept (a few kB per window), not the spectrograms.
    """
    windows_of, inputs_of = hooks
    frontend = attacker.build_frontend().to(dev)
    states: list[torch.Tensor] = []  # the output layer's inputs, (windows, hidden): a few kB per window
    pending: list[torch.Tensor] = []
    labels: list[int] = []
    with torch.no_grad():
        for u in utterances:
            found = windows_of(frontend, attacker.read_waveform(cast(str, u.path)))
            pending.append(found)
            labels += [speakers.index(u.speaker)] * found.shape[0]
            if sum(p.shape[0] for p in pending) >= batch_size:
                states.append(inputs_of(model, torch.cat(pending)))
                pending.clear()
        if pending:
            states.append(inputs_of(model, torch.cat(pending)))
    return torch.cat(states), torch.tensor(labels, device=dev)


def _fit_output_layer(
    layer: nn.Module, head: AAMSoftmax, x: torch.Tensor, target: torch.Tensor, *, epochs: int, lr: float
) -> tuple[float, float]:
    """Train *layer* and the AAM *head* on all of *x*, *epochs* full-batch Adam steps; the final loss and accuracy.

    The loss and accuracy are the adapted layer's after the last step (the AAM head's margin included).
    """
    optimiser = torch.optim.Adam(list(layer.parameters()) + list(head.parameters()), lr=lr, weight_decay=2e-5)
    for _ in range(epochs):
        loss = nn.functional.cross_entropy(head(layer(x), target), target)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():  # the loss and accuracy of the adapted layer (after the last step)
        logits = head(layer(x), target)
        loss = nn.functional.cross_entropy(logits, target)
    return float(loss.detach()), float((logits.argmax(1) == target).float().mean())


def _save_encoder(model: nn.Module, out: Path) -> None:
    """*model* as a plain state dict (on the CPU) at *out*, written atomically (its folder made when missing)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out, suffix=".ckpt") as tmp:
        torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, tmp)
