"""F0 contours and ρ_F0, the correlation of an anonymised utterance's pitch with the original's.

ρ_F0 (VoicePrivacy Challenge 2022) is the Pearson correlation between the F0 contours of
an original utterance and of its anonymised version, over the frames voiced in both: it
stays near 1 when the anonymiser keeps the intonation (even shifted by a constant ratio,
which changes the level, not the shape) and falls towards 0 when it destroys it.

The tracker is Praat's autocorrelation method (Boersma 1993) through ``parselmouth``
(``Sound.to_pitch_ac``): the phonetician's reference tracker, a maintained binding that
needs no compiler, and about 10 ms per second of speech on one core here -- where
librosa's pYIN takes seconds and pyworld imports ``pkg_resources`` (gone from setuptools
81).  Frames are 10 ms apart, F0 between :data:`PITCH_FLOOR_HZ` and
:data:`PITCH_CEILING_HZ` (wide enough for a pitch shift of 0.5-2 of ordinary voices);
an unvoiced frame has F0 0.

Contours of different lengths (an anonymiser that changes the duration) are compared
over the frames both have, from the start; fewer than :data:`MIN_COMMON_VOICED` frames
voiced in both, or a contour constant over them, gives no ρ_F0 (NaN, with the reason).
"""

from __future__ import annotations

import math

import numpy as np

from lidframe.errors import InputError

__all__ = [
    "f0_contour",
    "rho_f0",
    "PITCH_FLOOR_HZ",
    "PITCH_CEILING_HZ",
    "FRAME_S",
    "MIN_COMMON_VOICED",
    "PARSELMOUTH_HINT",
]

PITCH_FLOOR_HZ = 50.0
PITCH_CEILING_HZ = 600.0
FRAME_S = 0.01
#: Fewest frames voiced in both contours for a correlation.
MIN_COMMON_VOICED = 3
PARSELMOUTH_HINT = "ρ_F0 needs praat-parselmouth: pip install -e '.[utility]' (or pip install praat-parselmouth)"


def f0_contour(waveform: np.ndarray, sample_rate: int) -> np.ndarray:
    """F0 in Hz every :data:`FRAME_S` seconds (0 where unvoiced) of a mono float waveform.

    Parameters
    ----------
    waveform : ndarray, shape (n,)
        Samples, float (any scale).
    sample_rate : int
        Hz.

    Returns
    -------
    ndarray, shape (frames,), float64
    """
    try:
        import parselmouth
    except ImportError:
        raise InputError(PARSELMOUTH_HINT) from None
    waveform = np.asarray(waveform, dtype=np.float64)
    if waveform.size < 3 * sample_rate / PITCH_FLOOR_HZ:  # Praat needs three periods of the floor
        return np.zeros(0)
    sound = parselmouth.Sound(waveform, sampling_frequency=float(sample_rate))
    pitch = sound.to_pitch_ac(time_step=FRAME_S, pitch_floor=PITCH_FLOOR_HZ, pitch_ceiling=PITCH_CEILING_HZ)
    return np.asarray(pitch.selected_array["frequency"], dtype=np.float64)


def rho_f0(original: np.ndarray, anonymised: np.ndarray) -> tuple[float, str | None]:
    """ρ_F0 of two F0 contours (Hz, 0 = unvoiced): Pearson's r over the frames voiced in both.

    Returns
    -------
    (float, str or None)
        r in [-1, 1] and None; or NaN and why there is none.
    """
    frames = min(original.size, anonymised.size)
    a, b = original[:frames], anonymised[:frames]
    both = (a > 0) & (b > 0)
    if both.sum() < MIN_COMMON_VOICED:
        return math.nan, f"{int(both.sum())} frames voiced in both (fewer than {MIN_COMMON_VOICED})"
    a, b = a[both] - a[both].mean(), b[both] - b[both].mean()
    denominator = math.sqrt(float(a @ a) * float(b @ b))
    if denominator == 0.0:
        return math.nan, "a contour is constant over the frames voiced in both"
    return float(np.clip((a @ b) / denominator, -1.0, 1.0)), None
