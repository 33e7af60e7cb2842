"""``Ge2e``: the pretrained GE2E speaker encoder (Resemblyzer's weights) as an attacker.

A speaker encoder trained on thousands of real speakers (Resemblyzer's GE2E LSTM; 256-d
embeddings), the attacker an auditor asks about first: what does a real, pretrained
speaker model learn from the anonymised speech?  The network and its front end are
lidframe's own (:mod:`lidframe.attackers.ge2e_model`); the weights are the file that
the ``resemblyzer`` package ships in its wheel, found on disk and read with
``torch.load(weights_only=True)`` -- no code of that package runs, at embedding time or
ever.  Install it with ``pip install -e '.[pretrained]'`` (which also pins
``setuptools<81``: Resemblyzer's ``webrtcvad`` dependency imports ``pkg_resources``),
or pass any compatible ``checkpoint`` (``lidframe train-attacker --init ge2e`` writes
one: the encoder adapted on anonymised speech, the semi-informed attacker).

Preprocessing.  Before the front end, every utterance is read as 16 kHz mono float32
(:func:`~lidframe.attackers.frontend.read_audio`: other rates resampled with
``scipy.signal.resample_poly``) and raised to -30 dBFS RMS when quieter (as Resemblyzer
does; the network reads mel power, so the level matters).  Resemblyzer's own
``preprocess_wav`` differs in two ways: it resamples with librosa (soxr), and it trims
silences longer than about 0.2 s with the WebRTC voice activity detector.  lidframe does
not trim: it would make an embedding depend on a VAD's decisions and on ``webrtcvad``.
On the same preprocessed waveform the two embeddings agree to cosine >= 0.999
(``tests/attackers/test_ge2e.py``); on a file, with and without Resemblyzer's silence
trimming, the least cosine depends on how much silence the VAD cuts: 0.96 to 0.98 on
synthesized speech (docs/attackers.md, ``bench/ge2e_preprocessing.py``; the resampling
changes no cosine in the fourth decimal).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from lidframe.data.fileio import StrPath
from lidframe.errors import InputError
from lidframe.registry.capabilities import range_checked
from lidframe.registry.ranges import Range

from ._torch import torch
from .base import WIDTH
from .ge2e_model import (
    HOP,
    PARTIAL_FRAMES,
    Ge2eMel,
    Ge2eModel,
    load_ge2e_state,
    normalise_volume,
    partial_starts,
    unit_output,
)
from .neural import NeuralAttacker, load_checkpoint

__all__ = ["Ge2e", "PRETRAINED_INSTALL_HINT", "resemblyzer_weights"]

#: What to install for the pretrained GE2E weights; quoted by every message about them.
PRETRAINED_INSTALL_HINT = "pip install -e '.[pretrained]' (resemblyzer, which ships the GE2E weights in its wheel)"


def resemblyzer_weights() -> Path:
    """The GE2E weights file of the installed ``resemblyzer`` package, found without importing it.

    Raises
    ------
    InputError
        resemblyzer is not installed, or its folder holds no ``pretrained.pt``.
    """
    spec = importlib.util.find_spec("resemblyzer")  # finds the package; runs none of its code
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            f"the ge2e attacker's pretrained weights come with resemblyzer, which is not installed: "
            f"{PRETRAINED_INSTALL_HINT}; or give checkpoint=PATH"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "pretrained.pt"
    if not path.is_file():
        raise InputError(
            f"{path}: no such file; the installed resemblyzer lacks its weights ({PRETRAINED_INSTALL_HINT})"
        )
    return path


class Ge2e(NeuralAttacker):
    """GE2E speaker encoder as an attacker (module docstring).

    Parameters
    ----------
    checkpoint : path, optional
        GE2E weights: a plain state dict (``lidframe train-attacker`` output) or a file in
        Resemblyzer's layout.  Default: the weights of the installed ``resemblyzer``.
    pretrained : bool
        With no ``checkpoint``: True (default) loads Resemblyzer's weights; False keeps a
        seeded random initialisation (tests and benchmarks only).
    rate : float
        Partial utterances (1.6 s windows) per second (1.3), in [0.625, 100]: from
        windows that just touch to a window every frame.
    min_coverage : float
        Share of the last window that must hold audio for it to count (0.75), in (0, 1].
    volume_dbfs : float or None
        RMS level quieter utterances are raised to (-30 dBFS), at most 0 (full scale);
        None: left as read.
    n_mels, hidden_size, num_layers, embedding_size : int
        The network's mel bands (40), LSTM units (256) and layers (3, in [1, 64]) and
        embedding dimension (256); widths in [1, 8192].  Resemblyzer's weights fit the
        defaults only.
    batch_size : int, optional
        Windows (not utterances) per forward pass; default 256 on CUDA and 64 on the CPU.
    **options
        The other options of :class:`~lidframe.attackers.neural.NeuralAttacker` (device,
        precision, cache folder, progress, seed, enrolment, compile); ``padding`` does not
        apply (every window has 160 frames).

    Examples
    --------
    >>> attacker = Ge2e(device="cpu")  # doctest: +SKIP
    >>> scores = attacker.score(trials, enrolment)  # doctest: +SKIP
    """

    name = "ge2e"
    training_chunk_seconds = ((PARTIAL_FRAMES - 1) * HOP / 16000, (PARTIAL_FRAMES - 1) * HOP / 16000)
    option_ranges: ClassVar[Mapping[str, Range]] = {
        **NeuralAttacker.option_ranges,
        "rate": Range(0.625, 100),  # a window step of 160 to 1 frames (:func:`partial_starts`)
        "min_coverage": Range(0, 1, low_open=True),
        "volume_dbfs": Range(high=0, none=True),
        "n_mels": WIDTH,
        "hidden_size": WIDTH,
        "num_layers": Range(1, 64, integer=True),
        "embedding_size": WIDTH,
    }

    @classmethod
    def input_files(cls, params: dict) -> list[Path]:
        """The checkpoint, or the pretrained weights file it stands for, and the cohort's files: must exist (grid validation, cache keys)."""
        if params.get("checkpoint") or not params.get("pretrained", True):
            return super().input_files(params)
        return [resemblyzer_weights(), *super().input_files(params)]

    @range_checked("attacker")
    def __init__(
        self,
        *,
        pretrained: bool = True,
        rate: float = 1.3,
        min_coverage: float = 0.75,
        volume_dbfs: float | None = -30.0,
        n_mels: int = 40,
        hidden_size: int = 256,
        num_layers: int = 3,
        embedding_size: int = 256,
        **options: Any,
    ):
        super().__init__(**options)
        self.pretrained = pretrained
        self.rate = rate
        self.min_coverage = min_coverage
        self.volume_dbfs = volume_dbfs
        self.n_mels = n_mels
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.embedding_size = embedding_size

    def model_config(self) -> dict[str, Any]:
        """The :class:`Ge2eModel` keyword arguments."""
        return {
            "n_mels": self.n_mels,
            "hidden_size": self.hidden_size,
            "num_layers": self.num_layers,
            "embedding_size": self.embedding_size,
        }

    def build_model(self) -> Ge2eModel:
        """A fresh, untrained :class:`Ge2eModel` of this configuration."""
        return Ge2eModel(**self.model_config())

    def build_frontend(self) -> Ge2eMel:
        """GE2E's mel power spectrogram (:class:`Ge2eMel`)."""
        return Ge2eMel(n_mels=self.n_mels)

    def frontend_config(self) -> str:
        """The front end and the windowing, for the embedding cache's keys."""
        return (
            f"ge2e-mel{self.n_mels}-power-slaney;window {PARTIAL_FRAMES} frames, rate {self.rate!r}, "
            f"min_coverage {self.min_coverage!r};volume {self.volume_dbfs!r} dBFS"
        )

    def default_weights(self) -> Path | None:
        """Resemblyzer's weights file when ``pretrained`` (:func:`resemblyzer_weights`); else None."""
        return resemblyzer_weights() if self.pretrained else None

    def load_weights(self, model: torch.nn.Module, path: StrPath) -> str:
        """Load a GE2E weights file (either layout, :func:`load_ge2e_state`) into *model*; its SHA-256."""
        return load_checkpoint(model, path, label="Ge2e", state=load_ge2e_state(path))

    def embedding_dim(self) -> int:
        """``embedding_size`` (256)."""
        return int(self.embedding_size)

    def prepare_audio(self, waveform: np.ndarray) -> np.ndarray:
        """Raise a quieter waveform to ``volume_dbfs`` (:func:`normalise_volume`)."""
        if self.volume_dbfs is None:
            return waveform
        return normalise_volume(waveform, target_dbfs=float(self.volume_dbfs))

    def chunk_features(self, frontend: torch.nn.Module, chunks: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
        """Training features: each chunk cut or zero-padded to one window, its mel power (B, 160, n_mels); frames (B,)."""
        length = (PARTIAL_FRAMES - 1) * HOP  # 1 + length // HOP = 160 frames
        batch = torch.zeros(len(chunks), length)
        for j, chunk in enumerate(chunks):
            n = min(length, chunk.shape[0])
            batch[j, :n] = torch.from_numpy(np.ascontiguousarray(chunk[:n], dtype=np.float32))
        feats = frontend(batch)
        return feats, torch.full((len(chunks),), feats.shape[1], dtype=torch.long)

    def encode(self, model: torch.nn.Module, feats: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
        """Training forward pass: the unit embeddings (B, 256) of whole windows (every frame is valid)."""
        return model(feats)

    def output_layer(self, model: Ge2eModel) -> torch.nn.Module:
        """The part of *model* that :func:`~lidframe.attackers.training.train_output_layer` adapts.

        The linear layer and what follows it (ReLU, L2 normalisation), as a module of
        the LSTM's final states (B, hidden_size) -> unit embeddings (B, embedding_size),
        sharing its parameters with *model*.
        """
        return _OutputLayer(model)

    def output_layer_inputs(self, model: Ge2eModel, windows: torch.Tensor) -> torch.Tensor:
        """The last LSTM layer's final states (B, hidden_size) of windows (B, 160, n_mels) (:meth:`window_features`)."""
        _, (hidden, _) = model.lstm(windows)
        return hidden[-1]

    def _check_options(self):
        super()._check_options()
        partial_starts(16000, rate=self.rate, min_coverage=self.min_coverage)  # refuses a bad rate or coverage

    def window_features(self, frontend: torch.nn.Module, waveform: np.ndarray) -> torch.Tensor:
        """The partial-utterance windows (n, 160, n_mels) of one prepared 16 kHz waveform, on *frontend*'s device."""
        device = next(frontend.buffers()).device
        starts = partial_starts(waveform.shape[0], rate=self.rate, min_coverage=self.min_coverage)
        end = int(starts[-1] + PARTIAL_FRAMES) * HOP
        if end >= waveform.shape[0]:
            waveform = np.pad(waveform, (0, end - waveform.shape[0]))
        mel = frontend(torch.from_numpy(np.ascontiguousarray(waveform, dtype=np.float32))[None].to(device))[0]
        index = torch.from_numpy(starts[:, None] + np.arange(PARTIAL_FRAMES)[None, :]).to(device)
        return mel[index]

    def windows(self, waveform: np.ndarray) -> torch.Tensor:
        """:meth:`window_features` of the attacker's own front end (on the model's device)."""
        self.model  # noqa: B018 - builds the model and its front end
        return self.window_features(self._fbank, waveform)

    def embed_audio(self, waveforms: list[np.ndarray]) -> np.ndarray:
        """Embeddings (n, 256) float32 of prepared 16 kHz waveforms: the unit mean of each one's window embeddings.

        Every window has 160 frames, so windows of many utterances run through the
        network together, ``batch_size`` at a time, without padding.
        """
        model = self.model
        device = next(model.parameters()).device
        batch_size = self.batch_size or (256 if device.type == "cuda" else 64)
        autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=self.precision == "bf16")
        owners: list[int] = []
        pending: list[torch.Tensor] = []
        sums = torch.zeros(len(waveforms), self.embedding_size, dtype=torch.float64)
        iterator: Any = range(len(waveforms))
        if self.progress:
            from tqdm import tqdm

            iterator = tqdm(iterator, desc="Ge2e embeddings", unit="utt")

        def flush(count: int) -> None:
            batch = torch.cat(pending)
            with autocast:
                emb = self._forward(batch[:count]).float().cpu().to(torch.float64)
            self.model_calls += 1
            sums.index_add_(0, torch.tensor(owners[:count]), emb)
            rest = batch[count:]
            pending.clear()
            if rest.shape[0]:
                pending.append(rest)
            del owners[:count]

        with torch.inference_mode():
            for i in iterator:
                windows = self.windows(waveforms[i])
                pending.append(windows)
                owners.extend([i] * windows.shape[0])
                while len(owners) >= batch_size:
                    flush(batch_size)
            if owners:
                flush(len(owners))
        norms = torch.linalg.vector_norm(sums, dim=1, keepdim=True).clamp_min(1e-300)
        return (sums / norms).numpy().astype(np.float32)


class _OutputLayer(torch.nn.Module):
    """GE2E's output layer as a module of its own (its linear layer shared with the model it was taken from)."""

    def __init__(self, model: Ge2eModel):
        super().__init__()
        self.linear = model.linear

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return unit_output(self.linear, states)
