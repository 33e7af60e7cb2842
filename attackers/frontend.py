"""Audio front end: reading, resampling, 80-band log-mel filterbanks, sentence mean normalisation.

The filterbank reproduces SpeechBrain's ``Fbank(n_mels=80)`` defaults, written from its
documented definition:

* 16 kHz audio, 25 ms Hamming window (periodic, 400 samples), 10 ms hop (160), n_fft
  400, centred frames with zero padding: T = 1 + floor(samples / 160) frames;
* power spectrum |X|^2 of the one-sided STFT;
* triangular mel filters: n_mels + 2 points equally spaced on the mel scale
  (mel = 2595 log10(1 + f / 700)) between 0 Hz and 8 kHz; filter k peaks (value 1) at
  point k + 1 and falls to 0 one point-spacing (in Hz, measured to the previous
  point) on either side; no area normalisation;
* 10 log10(max(x, 1e-10)), floored at the utterance's maximum minus 80 dB.

Sentence normalisation subtracts each channel's mean over the utterance's valid frames
(SpeechBrain's ``InputNormalization(norm_type="sentence", std_norm=False)``).

Audio is read with soundfile as float32 in [-1, 1); multi-channel files are mixed down
to mono by averaging the channels (a two-channel recording of one talker loses nothing a
speaker encoder uses; a file with different talkers per channel should be split first);
other sample rates from 8 kHz up are resampled to 16 kHz with
``scipy.signal.resample_poly``.  :func:`read_audio` refuses, naming the file, whatever
it cannot read faithfully: missing, empty or unreadable files, what is not a regular
file (a folder, a FIFO -- never opened --, a device), non-audio bytes, WAVs shorter than
their header declares, rates below 8 kHz, NaN/inf samples.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.fileio import StrPath, open_input
from lidframe.errors import InputError

from ._torch import nn, torch

__all__ = [
    "Fbank",
    "power_spectrum",
    "sentence_mean_norm",
    "probe_audio",
    "read_audio",
    "SAMPLE_RATE",
    "MIN_SAMPLE_RATE",
]

SAMPLE_RATE = 16000


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
    """|X|^2 of the one-sided STFT of (B, samples) waveforms: (B, n_fft // 2 + 1, T).

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


def _wav_declared_frames(path: Path) -> int | None:
    """Frames the RIFF/WAVE header of *path* declares (``data`` chunk size / block size); None if unknown.

    None for files that are not RIFF/WAVE, headers without ``fmt `` before ``data``, and
    the size placeholders of streaming writers (0, and 0x7FFFF000 bytes or more: written
    to a pipe, the header never fixed), which no reader can check against.
    """
    with open(path, "rb") as handle:
        head = handle.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return None
        block = None
        while True:
            chunk = handle.read(8)
            if len(chunk) < 8:
                return None
            size = int.from_bytes(chunk[4:8], "little")
            if chunk[:4] == b"fmt ":
                fmt = handle.read(size)
                if len(fmt) < 14:
                    return None
                block = int.from_bytes(fmt[12:14], "little")  # nBlockAlign: bytes per frame
                if size % 2:
                    handle.read(1)
            elif chunk[:4] == b"data":
                if block is None or block < 1 or size == 0 or size >= 0x7FFFF000:
                    return None
                return size // block
            else:
                handle.seek(size + size % 2, 1)  # chunks are padded to an even size


#: Lowest sample rate read: telephone speech; anything lower holds no speech band to resample.
MIN_SAMPLE_RATE = 8000


def _soundfile_reason(exc: BaseException) -> str:
    """libsndfile's reason for *exc*, without the file object's repr."""
    return " ".join(str(getattr(exc, "error_string", None) or exc).split()).rstrip(".")


#: What an audio input is, in messages.
AUDIO_FILE = "an audio file (.wav, .flac)"


def probe_audio(path: StrPath, *, sample_rate: int = SAMPLE_RATE, min_seconds: float = 0.1) -> tuple[int, int]:
    """Check from its header that :func:`read_audio` can read *path*; return ``(frames, rate)``.

    Reads no samples (milliseconds per file), so a command can check every file it will
    read before any work: everything :func:`read_audio` refuses except NaN/inf samples.

    Raises
    ------
    InputError
        Naming the file: not a regular file (missing, a folder, a FIFO, a device, a symlink
        loop: :func:`lidframe.data.fileio.open_input`, which never waits on a FIFO),
        empty (0 bytes), unreadable (permissions), not audio or corrupt, a WAV shorter
        than its header declares (truncated), no samples, a sample rate below 8000 Hz,
        shorter than *min_seconds* at *sample_rate*.
    """
    import soundfile

    path = Path(path)
    try:
        # a FIFO is never waited on, a device never read: named as what they are (open_input)
        with open_input(path, AUDIO_FILE) as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                raise InputError(f"{path}: empty file (0 bytes); expected audio")
            info = soundfile.info(handle)
        declared = _wav_declared_frames(path)
    except RuntimeError as exc:  # soundfile.LibsndfileError
        raise InputError(f"{path}: cannot read audio: not audio, or corrupt ({_soundfile_reason(exc)})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read audio ({exc.strerror or exc})") from None
    frames, rate = int(info.frames), int(info.samplerate)
    if declared is not None and declared > frames:
        raise InputError(f"{path}: truncated WAV: the header declares {declared} samples, the file holds {frames}")
    if frames == 0:
        raise InputError(f"{path}: empty audio (0 samples)")
    if rate < MIN_SAMPLE_RATE:
        raise InputError(
            f"{path}: sample rate {rate} Hz; expected at least {MIN_SAMPLE_RATE} Hz (audio is resampled to {sample_rate} Hz)"
        )
    resampled = -(-frames * sample_rate // rate)  # resample_poly's output length, ceil(frames * up / down)
    if resampled < math.ceil(min_seconds * sample_rate):
        raise InputError(
            f"{path}: {resampled / sample_rate:.3f} s of audio; at least {min_seconds} s needed for an embedding"
        )
    return frames, rate


def read_audio(path: StrPath, *, sample_rate: int = SAMPLE_RATE, min_seconds: float = 0.1) -> np.ndarray:
    """Read a sound file as mono float32 at *sample_rate*.

    Multi-channel files are mixed down (the mean of the channels); other rates, from
    8 kHz up, are resampled (``scipy.signal.resample_poly``).

    Raises
    ------
    InputError
        Naming the file: whatever :func:`probe_audio` refuses (missing, a folder, empty,
        unreadable, not audio or corrupt, truncated, no samples, a rate below 8000 Hz,
        too short), and NaN or inf samples.
    """
    import soundfile

    path = Path(path)
    probe_audio(path, sample_rate=sample_rate, min_seconds=min_seconds)
    try:
        with open_input(path, AUDIO_FILE) as handle:
            audio, rate = soundfile.read(handle, dtype="float32", always_2d=True)
    except RuntimeError as exc:  # damaged past the header
        raise InputError(f"{path}: cannot read audio: not audio, or corrupt ({_soundfile_reason(exc)})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read audio ({exc.strerror or exc})") from None
    if not np.isfinite(audio).all():
        raise InputError(f"{path}: audio contains NaN or inf samples")
    audio = audio.mean(axis=1) if audio.shape[1] > 1 else audio[:, 0]
    if rate != sample_rate:
        from scipy.signal import resample_poly

        ratio = Fraction(sample_rate, int(rate))
        audio = resample_poly(audio, ratio.numerator, ratio.denominator).astype(np.float32)
    if audio.shape[0] < math.ceil(min_seconds * sample_rate):  # checked by probe_audio; the samples decide
        raise InputError(
            f"{path}: {audio.shape[0] / sample_rate:.3f} s of audio; at least {min_seconds} s needed for an embedding"
        )
    return audio
