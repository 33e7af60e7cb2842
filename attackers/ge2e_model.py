"""The GE2E speaker encoder (Wan et al., 2018) as trained by Resemblyzer: its front end and network.

Written here from the published definitions, key-compatible with the weights file that
the ``resemblyzer`` package ships (``resemblyzer/pretrained.pt``, Apache-2.0), so that
lidframe loads those weights without running any code of that package:

* **front end** (:class:`Ge2eMel`): 16 kHz audio, 25 ms periodic Hann window (400
  samples), 10 ms hop (160), centred frames with zero padding (T = 1 + floor(samples /
  160) frames), power spectrum ``|X|^2``, 40 mel filters of Slaney's auditory toolbox (the
  mel scale linear below 1 kHz and logarithmic above, triangles from 0 Hz to 8 kHz each
  scaled to unit area, ``2 / (f_{k+2} - f_k)``).  No logarithm: the network reads mel
  *power*, so the input level matters, which is why utterances are brought to -30 dBFS
  first (:func:`normalise_volume`);
* **partial utterances** (:func:`partial_starts`): an utterance is cut into windows of
  160 frames (1.6 s), one starting every ``round(16000 / rate / 160)`` frames (77 at
  the default rate of 1.3 windows per second), as many as reach the end; the last one
  is dropped when less than ``min_coverage`` (0.75) of it holds audio, unless it is the
  only one; the waveform is zero-padded to the end of the last window;
* **network** (:class:`Ge2eModel`): a 3-layer LSTM (40 inputs, 256 units) over the 160
  frames of a window, then a 256 x 256 linear layer on the last layer's final hidden
  state, a ReLU and L2 normalisation;
* **utterance embedding**: the mean of its windows' embeddings, L2-normalised.

The state dict keys are those of the weights file (``lstm.weight_ih_l0``, ...,
``linear.weight``, ``linear.bias``); :func:`load_ge2e_state` also reads the file's
training layout (``{"model_state": ..., "optimizer_state": ..., "step": ...}``) and
leaves out GE2E's loss parameters (``similarity_weight``, ``similarity_bias``), which
are not part of the encoder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lidframe.data.fileio import StrPath
from lidframe.errors import InputError

from ._torch import nn, torch
from .frontend import power_spectrum

__all__ = [
    "Ge2eMel",
    "Ge2eModel",
    "GE2E_LOSS_KEYS",
    "PARTIAL_FRAMES",
    "load_ge2e_state",
    "normalise_volume",
    "partial_starts",
    "slaney_mel_filters",
    "unit_output",
]

#: Frames of one partial utterance (1.6 s at a 10 ms hop).
PARTIAL_FRAMES = 160
#: Hop of the front end in samples (10 ms at 16 kHz).
HOP = 160
#: Parameters of GE2E's loss stored beside the encoder in a training file; not the encoder's.
GE2E_LOSS_KEYS = ("similarity_weight", "similarity_bias")


def _hz_to_slaney_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: 3 mels per 200 Hz up to 1 kHz, then logarithmic (27 mels per factor 6.4)."""
    hz = np.asarray(hz, dtype=np.float64)
    linear = hz / (200.0 / 3.0)
    log = 15.0 + np.log(np.maximum(hz, 1e-12) / 1000.0) / (np.log(6.4) / 27.0)
    return np.where(hz >= 1000.0, log, linear)


def _slaney_mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    linear = mel * (200.0 / 3.0)
    log = 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0))
    return np.where(mel >= 15.0, log, linear)


def slaney_mel_filters(*, sample_rate: int = 16000, n_fft: int = 400, n_mels: int = 40) -> np.ndarray:
    """Triangular mel filters of Slaney's auditory toolbox, shape (n_mels, n_fft // 2 + 1), float64.

    ``n_mels + 2`` points equally spaced on Slaney's mel scale from 0 Hz to
    ``sample_rate / 2``; filter k rises from point k to 1 at point k + 1 and falls to 0
    at point k + 2 (on the linear frequency axis of the FFT bins), and is scaled by
    ``2 / (f_{k+2} - f_k)`` so that every filter has the same area.
    """
    bins = np.linspace(0.0, sample_rate / 2.0, n_fft // 2 + 1)
    points = _slaney_mel_to_hz(np.linspace(0.0, _hz_to_slaney_mel(np.array(sample_rate / 2.0)), n_mels + 2))
    widths = np.diff(points)
    distance = points[:, None] - bins[None, :]  # (n_mels + 2, n_bins)
    rising = -distance[:-2] / widths[:-1, None]
    falling = distance[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(rising, falling))
    return weights * (2.0 / (points[2:] - points[:-2]))[:, None]


class Ge2eMel(nn.Module):
    """Mel power spectrogram of GE2E's front end, (B, samples) float32 -> (B, T, 40) (module docstring)."""

    filters: torch.Tensor
    window: torch.Tensor

    def __init__(self, *, sample_rate: int = 16000, n_fft: int = 400, n_mels: int = 40):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer(
            "filters",
            torch.tensor(
                slaney_mel_filters(sample_rate=sample_rate, n_fft=n_fft, n_mels=n_mels).T, dtype=torch.float32
            ),
            persistent=False,
        )
        self.register_buffer("window", torch.hann_window(n_fft, periodic=True), persistent=False)

    def num_frames(self, n_samples: int) -> int:
        """Frames produced for *n_samples* samples."""
        return 1 + n_samples // HOP

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        """(B, samples) float32 waveforms -> (B, T, n_mels) mel power (not logarithmic)."""
        power = power_spectrum(wav, self.window, n_fft=self.n_fft, hop_length=HOP)  # (B, n_bins, T)
        return torch.matmul(power.transpose(1, 2), self.filters)


def normalise_volume(wav: np.ndarray, *, target_dbfs: float = -30.0) -> np.ndarray:
    """Raise *wav* (float, full scale 1) to *target_dbfs* RMS; a louder one is left as it is.

    Silence (RMS 0) is returned unchanged.  RMS in dBFS is ``20 log10(rms)`` of the
    samples in [-1, 1].
    """
    rms = float(np.sqrt(np.mean(np.square(wav, dtype=np.float64))))
    if rms == 0.0:
        return wav
    gain_db = target_dbfs - 20.0 * np.log10(rms)
    if gain_db <= 0.0:
        return wav
    return (wav * 10.0 ** (gain_db / 20.0)).astype(np.float32)


def partial_starts(n_samples: int, *, rate: float = 1.3, min_coverage: float = 0.75) -> np.ndarray:
    """First frame of each 160-frame partial utterance of an *n_samples*-sample waveform (module docstring).

    Parameters
    ----------
    n_samples : int
        Length of the waveform (16 kHz samples).
    rate : float
        Partial utterances per second; between 0.625 (windows that just touch) and 100.
    min_coverage : float
        In (0, 1]: the share of the last window that must hold audio for it to be kept.

    Returns
    -------
    ndarray of int, shape (n_partials,)
        Window k covers frames ``[start_k, start_k + 160)`` and samples
        ``[160 start_k, 160 (start_k + 160))``; pad the waveform to the last window's end.
    """
    if not 0.0 < min_coverage <= 1.0:
        raise InputError(f"min_coverage must be in (0, 1], got {min_coverage!r}")
    step = round(16000 / rate / HOP)
    if not 1 <= step <= PARTIAL_FRAMES:
        raise InputError(f"rate must give a window step of 1 to {PARTIAL_FRAMES} frames, got rate={rate!r}")
    n_frames = -(-(n_samples + 1) // HOP)  # ceil((n + 1) / hop)
    starts = np.arange(0, max(1, n_frames - PARTIAL_FRAMES + step + 1), step)
    if len(starts) > 1:
        covered = (n_samples - starts[-1] * HOP) / (PARTIAL_FRAMES * HOP)
        if covered < min_coverage:
            starts = starts[:-1]
    return starts


class Ge2eModel(nn.Module):
    """GE2E's network: (B, 160, 40) mel power windows -> (B, 256) unit embeddings (module docstring)."""

    def __init__(self, *, n_mels: int = 40, hidden_size: int = 256, num_layers: int = 3, embedding_size: int = 256):
        super().__init__()
        self.lstm = nn.LSTM(n_mels, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, embedding_size)

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        """Unit-length embeddings (B, embedding_size) of windows (B, frames, n_mels)."""
        _, (hidden, _) = self.lstm(mels)
        return self.output(hidden[-1])

    def output(self, states: torch.Tensor) -> torch.Tensor:
        """The output layer: unit embeddings (B, embedding_size) of the last LSTM layer's final states (B, hidden_size)."""
        return unit_output(self.linear, states)


def unit_output(linear: nn.Module, states: torch.Tensor) -> torch.Tensor:
    """GE2E's output layer: ``relu(linear(states))``, L2-normalised per row (B, embedding_size)."""
    raw = torch.relu(linear(states))
    return raw / torch.linalg.vector_norm(raw, dim=1, keepdim=True).clamp_min(1e-12)


def load_ge2e_state(path: StrPath) -> dict[str, torch.Tensor]:
    """The encoder's state dict from a GE2E weights file (weights only; module docstring).

    Takes a plain state dict (what ``lidframe train-attacker`` writes) or Resemblyzer's
    training layout (the encoder under ``"model_state"``); GE2E's loss parameters
    (:data:`GE2E_LOSS_KEYS`) are left out.

    Raises
    ------
    InputError
        Whatever :func:`~lidframe.attackers.neural.load_weights_file` refuses, or a file
        that holds no state dict of tensors.
    """
    from .neural import load_weights_file

    path = Path(path)
    state = load_weights_file(path, what="checkpoint")
    if isinstance(state, dict) and isinstance(state.get("model_state"), dict):
        state = state["model_state"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise InputError(f"{path}: expected a state dict of tensors (torch.save(model.state_dict()))")
    return {k: v for k, v in state.items() if k not in GE2E_LOSS_KEYS}
