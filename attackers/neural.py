"""Neural speaker encoders as attackers: audio -> filterbanks -> embeddings, batched and cached.

:class:`NeuralAttacker` is the shared machinery of :class:`~lidframe.attackers.EcapaTdnn`
and :class:`~lidframe.attackers.XVector`:

* **checkpoints** load with ``torch.load(path, map_location=..., weights_only=True)``
  (no pickled code is ever run) into ``load_state_dict(strict=True)``; a mismatch names
  the missing and unexpected keys;
* **batching**: utterances are sorted by length and cut into batches of at most
  ``batch_size`` utterances and ``max_batch_frames`` padded frames; with
  ``padding="exact"`` every convolution reflects each utterance at its own end and
  every pooling masks its padding, so an utterance's embedding does not depend on what
  it is batched with (cosine to the single-utterance embedding >= 0.9999999 on the
  SpeechBrain fixture);
* **device**: ``"auto"`` takes CUDA when available; ``precision="bf16"`` runs the model
  under CUDA/CPU autocast; everything under ``torch.inference_mode``; a tqdm progress
  bar with ``progress=True``;
* **cache**: with ``cache_dir``, each embedding is stored as ``<key>.npz`` where the key
  hashes the audio samples, the model weights and the front-end/model configuration;
  a hit skips the model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from lidframe.data.fileio import StrPath, atomic_path, file_sha256
from lidframe.data.utterance import Utterance, check_utterances
from lidframe.errors import InputError

from .base import EmbeddingAttacker
from .frontend import SAMPLE_RATE, Fbank, read_audio, sentence_mean_norm
from .layers import PADDING_MODES, Lengths

__all__ = ["NeuralAttacker", "load_checkpoint", "resolve_device"]


def resolve_device(device: str) -> torch.device:
    """``"auto"`` -> CUDA if available else CPU; anything else as ``torch.device``."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(device)
    except RuntimeError as exc:
        raise InputError(f"unknown device {device!r}: {exc}") from None


def load_checkpoint(model: torch.nn.Module, path: StrPath, *, label: str = "model") -> str:
    """Load a SpeechBrain-style state dict into *model* (strict); return its SHA-256.

    Raises
    ------
    InputError
        The file is missing, is not a weights-only state dict, or its keys or shapes do
        not match the model (the message lists missing and unexpected keys).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such checkpoint file")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling refused, corrupt zip, ...: one clear line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{path}: not a weights-only torch state dict ({first})") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise InputError(f"{path}: expected a state dict of tensors (torch.save(model.state_dict()))")
    expected = set(model.state_dict())
    missing = sorted(expected - set(state))
    unexpected = sorted(set(state) - expected)
    if missing or unexpected:
        raise InputError(
            f"{path}: checkpoint does not fit the {label} configuration: "
            f"missing keys {missing[:5]}{' ...' if len(missing) > 5 else ''} ({len(missing)}), "
            f"unexpected keys {unexpected[:5]}{' ...' if len(unexpected) > 5 else ''} ({len(unexpected)})"
        )
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise InputError(
            f"{path}: checkpoint shapes do not fit the {label} configuration ({str(exc).splitlines()[-1].strip()})"
        ) from None
    return file_sha256(path)


class NeuralAttacker(EmbeddingAttacker):
    """Base of the torch speaker-encoder attackers (see the module docstring).

    Subclasses implement :meth:`build_model` and :meth:`model_config`.

    Parameters
    ----------
    checkpoint : path, optional
        SpeechBrain ``embedding_model.ckpt``-style state dict.  Without one the model
        keeps a seeded random initialisation (tests and benchmarks only).
    device : str
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...
    precision : {"fp32", "bf16"}
    batch_size : int, optional
        Utterances per batch at most; default 32 on CUDA and 1 on CPU, where batching
        does not pay (``bench/embed_cpu.py``: batches of 16 ran at 0.6x the speed of
        single utterances on 2 cores, padding and the per-utterance reflection cost more
        than the larger matrix products gain).
    max_batch_frames : int
        Padded frames (batch x longest) per batch at most.
    padding : {"exact", "speechbrain"}
        See :mod:`lidframe.attackers.layers`.
    cache_dir : path, optional
        Embedding cache folder.
    progress : bool
        Show a tqdm progress bar.
    seed : int
        Seed of the random initialisation when there is no checkpoint.
    enrolment : {"mean_of_normalised", "mean"}
    compile : bool
        Run the model through ``torch.compile`` (dynamic shapes) on CUDA; the first
        batches pay the compilation (tens of seconds), large runs gain.  Ignored on CPU.
    """

    def __init__(
        self,
        *,
        checkpoint: StrPath | None = None,
        device: str = "auto",
        precision: str = "fp32",
        batch_size: int | None = None,
        max_batch_frames: int = 64_000,
        padding: str = "exact",
        cache_dir: StrPath | None = None,
        progress: bool = False,
        seed: int = 0,
        enrolment: str = "mean_of_normalised",
        compile: bool = False,
    ):
        super().__init__(enrolment=enrolment)
        self.checkpoint = checkpoint
        self.device = device
        self.precision = precision
        self.batch_size = batch_size
        self.max_batch_frames = max_batch_frames
        self.padding = padding
        self.cache_dir = cache_dir
        self.progress = progress
        self.seed = seed
        self.compile = compile
        self._model: torch.nn.Module | None = None
        self._forward: Any = None  # the model, or its torch.compile wrapper
        self._fbank: Any = None
        self._weights_hash: Any = None  # str once the model is built
        self.model_calls = 0  # number of batches run through the model (for cache tests)

    # -- to implement -------------------------------------------------------------
    def build_model(self) -> torch.nn.Module:  # pragma: no cover - interface
        raise NotImplementedError

    def model_config(self) -> dict:  # pragma: no cover - interface
        raise NotImplementedError

    # -- model --------------------------------------------------------------------
    def _check_options(self):
        if self.precision not in ("fp32", "bf16"):
            raise InputError(f"precision must be 'fp32' or 'bf16', got {self.precision!r}")
        if self.padding not in PADDING_MODES:
            raise InputError(f"padding must be one of {PADDING_MODES}, got {self.padding!r}")
        if self.batch_size is not None and not (isinstance(self.batch_size, int) and self.batch_size >= 1):
            raise InputError(f"batch_size must be a positive integer, got {self.batch_size!r}")

    @property
    def model(self) -> torch.nn.Module:
        """The encoder (built, loaded and moved to the device on first use)."""
        if self._model is None:
            self._check_options()
            torch.manual_seed(self.seed)
            model = self.build_model()
            if self.checkpoint is not None:
                self._weights_hash = load_checkpoint(model, self.checkpoint, label=type(self).__name__)
            else:
                digest = hashlib.sha256()
                for name, tensor in model.state_dict().items():
                    digest.update(name.encode())
                    digest.update(tensor.detach().cpu().numpy().tobytes())
                self._weights_hash = digest.hexdigest()
            device = resolve_device(self.device)
            self._model = model.to(device).eval()
            self._fbank = Fbank().to(device)
            self._forward = self._model
            if self.compile and device.type == "cuda":
                self._forward = torch.compile(self._model, dynamic=True)
        return self._model

    def _cache_key(self, audio: np.ndarray) -> str:
        config = json.dumps(
            {
                "model": self.model_config(),
                "class": type(self).__name__,
                "frontend": "fbank80-sentence-mean-fp32",
                "padding": self.padding,
                "precision": self.precision,
            },
            sort_keys=True,
        )
        digest = hashlib.sha256(audio.tobytes())
        digest.update(self._weights_hash.encode())
        digest.update(config.encode())
        return digest.hexdigest()

    # -- embedding ----------------------------------------------------------------
    def embed_audio(self, waveforms: list[np.ndarray]) -> np.ndarray:
        """Embeddings (n, d) float32 of 16 kHz mono float32 waveforms, batched by length."""
        model = self.model
        device = next(model.parameters()).device
        batch_size = self.batch_size or (32 if device.type == "cuda" else 1)
        n_frames = [self._fbank.num_frames(w.shape[0]) for w in waveforms]
        order = np.argsort(n_frames, kind="stable")[::-1]
        out: list = [None] * len(waveforms)
        batches: list[list[int]] = []
        current: list[int] = []
        for index in order:
            longest = n_frames[current[0]] if current else n_frames[index]
            if current and (len(current) >= batch_size or longest * (len(current) + 1) > self.max_batch_frames):
                batches.append(current)
                current = []
            current.append(index)
        if current:
            batches.append(current)
        iterator = batches
        if self.progress:
            from tqdm import tqdm

            iterator = tqdm(batches, desc=f"{type(self).__name__} embeddings", unit="batch")
        autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=self.precision == "bf16")
        with torch.inference_mode():
            for batch in iterator:
                # filterbanks in float32 (autocast would run the mel matmul in bf16)
                feats, frames = self._features([waveforms[i] for i in batch], device)
                lengths = Lengths(frames, frames.to(torch.float32) / feats.shape[1], self.padding)
                with autocast:
                    emb = self._forward(feats, lengths)[:, 0].float().cpu().numpy()
                self.model_calls += 1
                for row, index in enumerate(batch):
                    out[index] = emb[row]
        return np.stack(out)

    def _features(self, waveforms, device):
        """Padded, sentence-normalised filterbanks (B, T, 80) and valid frames (B,)."""
        if device.type == "cuda":
            return self._features_on_device(waveforms, device)
        feats = [self._fbank(torch.from_numpy(w)[None])[0] for w in waveforms]
        frames = torch.tensor([f.shape[0] for f in feats], dtype=torch.long)
        padded = torch.zeros(len(feats), int(frames.max()), feats[0].shape[1])
        for i, f in enumerate(feats):
            padded[i, : f.shape[0]] = f
        return sentence_mean_norm(padded, frames).to(device), frames.to(device)

    def _features_on_device(self, waveforms, device):
        """:meth:`_features` for accelerators: one pinned, zero-padded waveform batch copied
        asynchronously, filterbanks of the whole batch on the device.

        Zero padding changes no valid frame: frames are centred with zero (constant)
        padding, so the frames of a short waveform see zeros past its end either way.
        """
        lengths = [w.shape[0] for w in waveforms]
        batch = torch.zeros(len(waveforms), max(lengths), dtype=torch.float32, pin_memory=device.type == "cuda")
        for i, w in enumerate(waveforms):
            batch[i, : lengths[i]] = torch.from_numpy(w)
        frames = torch.tensor([self._fbank.num_frames(n) for n in lengths], dtype=torch.long)
        feats = self._fbank(batch.to(device, non_blocking=True))[:, : int(frames.max())]
        frames = frames.to(device, non_blocking=True)
        return sentence_mean_norm(feats, frames), frames

    def embed(self, utterances: Sequence[Utterance]) -> np.ndarray:
        """Embeddings (n, d) of utterances with audio ``path``s (cached when ``cache_dir`` is set)."""
        utterances = check_utterances(utterances, "utterances")
        missing = [u.utt_id for u in utterances if u.path is None]
        if missing:
            raise InputError(f"{type(self).__name__} needs audio: utterance {missing[0]!r} has no path")
        self.model  # noqa: B018 - builds the model (and its weights hash for cache keys)
        audio = [read_audio(cast(str, u.path), sample_rate=SAMPLE_RATE) for u in utterances]  # no None: checked above
        result: list = [None] * len(audio)
        todo = list(range(len(audio)))
        keys = None
        if self.cache_dir is not None:
            cache = Path(self.cache_dir)
            cache.mkdir(parents=True, exist_ok=True)
            keys = [self._cache_key(a) for a in audio]
            todo = []
            for i, key in enumerate(keys):
                hit = cache / f"{key}.npz"
                if hit.is_file():
                    with np.load(hit, allow_pickle=False) as data:
                        result[i] = data["embedding"]
                else:
                    todo.append(i)
        if todo:
            fresh = self.embed_audio([audio[i] for i in todo])
            for row, i in enumerate(todo):
                result[i] = fresh[row]
                if keys is not None:
                    with (
                        atomic_path(cache / f"{keys[i]}.npz", suffix=".npz") as tmp,
                        open(tmp, "wb") as fh,
                    ):
                        np.savez(fh, embedding=fresh[row])
        return np.stack(result).astype(np.float64)
