"""Reading audio: the one reader of every command that takes audio (attackers, utility, corpus checks).

Audio is read with soundfile as float32 in [-1, 1); multi-channel files are mixed down
to mono by averaging the channels (a two-channel recording of one talker loses nothing a
speaker encoder or a recogniser uses; a file with different talkers per channel should be
split first); other sample rates from 8 kHz up are resampled to the rate asked for (16 kHz
by default) with ``scipy.signal.resample_poly``.  :func:`read_audio` refuses, naming the
file, whatever it cannot read faithfully: missing, empty or unreadable files, what is not
a regular file (a folder, a FIFO -- never opened --, a device), non-audio bytes, WAVs
shorter than their header declares, rates below 8 kHz, NaN/inf samples.

It needs no torch (the word error rate of :mod:`lidframe.utility` reads audio where torch
is not installed); :mod:`lidframe.attackers.frontend` re-exports it beside the filterbank.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from pathlib import Path
from typing import IO

import numpy as np

from lidframe.data.fileio import StrPath, open_input
from lidframe.errors import InputError

__all__ = ["AUDIO_FILE", "MIN_SAMPLE_RATE", "SAMPLE_RATE", "probe_audio", "read_audio"]

#: The rate the attackers' front end works at (Hz); what :func:`read_audio` resamples to by default.
SAMPLE_RATE = 16000


def _wav_declared_frames(handle: IO[bytes]) -> int | None:
    """Frames the RIFF/WAVE header of the file open at *handle* declares (``data`` chunk size / block size); or None.

    None for files that are not RIFF/WAVE, headers without ``fmt `` before ``data``, and
    the size placeholders of streaming writers (0, and 0x7FFFF000 bytes or more: written
    to a pipe, the header never fixed), which no reader can check against.
    """
    handle.seek(0)
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
            declared = _wav_declared_frames(handle)
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
