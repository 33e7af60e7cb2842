"""Audio front end: reading, resampling, 80-band log-mel filterbanks, sentence mean normalisation.

The filterbank reproduces SpeechBrain's ``Fbank(n_mels=80)`` defaults, written from its
documented definition:

* 16 kHz audio, 25 ms Hamming window (periodic, 400 samples), 10 ms hop (160), n_fft
  400, centred frames with zero padding: T = 1 + floor(samples / 160) frames;
* power spectrum ``|X|^2`` of the one-sided STFT;
* triangular mel filters: n_mels + 2 points equally spaced on the mel scale
  (mel = 2595 log10(1 + f / 700)) between 0 Hz and 8 kHz; filter k peaks (value 1) at
  point k + 1 and falls to 0 one point-spacing (in Hz, measured to the previous
  point) on either side; no area normalisation;
* 10 log10(max(x, 1e-10)), floored at the utterance's maximum minus 80 dB.

Sentence normalisation subtracts each channel's mean over the utterance's valid frames
(SpeechBrain's ``InputNormalization(norm_type="sentence", std_norm=False)``).

Audio is read by :mod:`lidframe.attackers.audio` (no torch needed there), whose
:func:`read_audio`, :func:`probe_audio`, ``SAMPLE_RATE`` and ``MIN_SAMPLE_RATE`` this
module re-exports.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._torch import nn, torch
from .audio import MIN_SAMPLE_RATE, SAMPLE_RATE, probe_audio, read_audio

__all__ = [
    "Fbank",
    "power_spectrum",
    "sentence_mean_norm",
    "probe_audio",
    "read_audio",
    "SAMPLE_RATE",
    "MIN_SAMPLE_RATE",
]


def _hz_to_mel(hz: ArrayLike) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + np.asarray(hz, dtype=np.float64) / 700.0)


def _mel_to_hz(mel: ArrayLike) -> np.ndarray:
    return 700.0 * (10.0 ** (np.asarray(mel, dtype=np.float64) / 2595.0) - 1.0)


class Fbank(nn.Module):
    """Log-mel filterbank features, (B, samples) float32 -> (B, T, n_mels).

    Parameters
    ----------
    n_mels : int
        Mel bands (80).
    sample_rate : int
        Expected input rate (16000).
    win_length_ms, hop_length_ms : float
        Window and hop (25 ms, 10 ms).
    f_min, f_max : float
        Filterbank range in Hz (0, sample_rate / 2).
    top_db : float
        Dynamic range kept below each utterance's maximum (80 dB).
    """

    # buffers (register_buffer): declared so the type checker sees tensors, not Module attributes
    mel_weights: torch.Tensor
    window: torch.Tensor

    def __init__(
        self,
        n_mels: int = 80,
        sample_rate: int = SAMPLE_RATE,
        win_length_ms: float = 25.0,
        hop_length_ms: float = 10.0,
        f_min: float = 0.0,
        f_max: float | None = None,
        top_db: float = 80.0,
    ):
        super().__init__()
        self.win_length = round(sample_rate * win_length_ms / 1000.0)
        self.hop_length = round(sample_rate * hop_length_ms / 1000.0)
        self.n_fft = self.win_length
        self.top_db = top_db
        f_max = sample_rate / 2 if f_max is None else f_max
        mel_points = np.linspace(_hz_to_mel(f_min), _hz_to_mel(f_max), n_mels + 2)
        hz_points = _mel_to_hz(mel_points)
        centre = torch.tensor(hz_points[1:-1], dtype=torch.float32)
        band = torch.tensor(np.diff(hz_points)[:-1], dtype=torch.float32)
        freqs = torch.linspace(0, sample_rate // 2, self.n_fft // 2 + 1)
        slope = (freqs[:, None] - centre[None, :]) / band[None, :]
        weights = torch.clamp(torch.minimum(slope + 1.0, 1.0 - slope), min=0.0)  # (n_freqs, n_mels)
        self.register_buffer("mel_weights", weights, persistent=False)
        self.register_buffer("window", torch.hamming_window(self.win_length), persistent=False)

    def num_frames(self, n_samples: int) -> int:
        """Frames produced for *n_samples* samples."""
        return 1 + n_samples // self.hop_length

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        """(B, samples) float32 waveforms -> (B, T, n_mels) log-mel features in dB."""
        power = power_spectrum(wav, self.window, n_fft=self.n_fft, hop_length=self.hop_length)
        mel = torch.matmul(power.transpose(1, 2), self.mel_weights)  # (B, T, n_mels)
        db = 10.0 * torch.log10(torch.clamp(mel, min=1e-10))
        floor = db.amax(dim=(-2, -1), keepdim=True) - self.top_db
        return torch.maximum(db, floor)


def power_spectrum(wav: torch.Tensor, window: torch.Tensor, *, n_fft: int, hop_length: int) -> torch.Tensor:
    """``|X|^2`` of the one-sided STFT of (B, samples) waveforms: (B, n_fft // 2 + 1, T).

    Centred frames with zero (constant) padding, so T = 1 + samples // hop_length; the
    window's length is the frame length.
    """
    stft = torch.stft(
        wav,
        n_fft,
        hop_length=hop_length,
        win_length=window.shape[0],
        window=window,
        center=True,
        pad_mode="constant",
        normalized=False,
        onesided=True,
        return_complex=True,
    )
    return stft.real.pow(2) + stft.imag.pow(2)


def sentence_mean_norm(feats: torch.Tensor, frames: torch.Tensor | None = None) -> torch.Tensor:
    """Subtract each utterance's per-channel mean over its valid frames (padded frames too).

    Parameters
    ----------
    feats : torch.Tensor (B, T, C)
    frames : torch.Tensor (B,) int, optional
        Valid frames per row (all T when omitted).
    """
    if frames is None:
        return feats - feats.mean(dim=1, keepdim=True)
    steps = torch.arange(feats.shape[1], device=feats.device)
    mask = (steps[None, :] < frames[:, None]).to(feats.dtype).unsqueeze(2)
    mean = (feats * mask).sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True)
    return feats - mean
