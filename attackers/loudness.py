"""Loudness normalisation before an attacker reads a waveform, as the VoicePrivacy toolkit does (−30 LUFS).

The integrated loudness L of a waveform is ITU-R BS.1770-4's, measured by pyloudnorm's
meter: K-weighting, mean square over 400 ms blocks overlapping by 75 %, blocks below the
absolute gate (−70 LUFS) left out, then blocks more than 10 LU below the mean of the
others left out (the relative gate), L = −0.691 + 10 log10(mean square of the blocks
kept).  Normalising to a target T multiplies the whole waveform by the one gain

    g = 10 ** ((T − L) / 20),

one pass, as ``pyloudnorm.normalize.loudness`` does (and so the VoicePrivacy toolkit).  The
relative gate does not move with g, the absolute gate does: a block between −70 LUFS and
−70 − (T − L) crosses it, so for audio with such quiet blocks the result measures within a
fraction of a LU of T rather than at T.  The samples are not clipped: the attackers read
floating point, and a gain above full scale changes nothing an embedding sees.

Two waveforms have no loudness to normalise, and are refused in one line naming the file
(:func:`check_loudness_length` before any file is decoded, :func:`normalise_loudness` when
it is): one shorter than one 400 ms block, and a silent one (every block below the
absolute gate: L is −inf).
"""

from __future__ import annotations

import math

import numpy as np

from lidframe.errors import InputError

__all__ = ["BLOCK_SECONDS", "PYLOUDNORM_HINT", "check_loudness_length", "normalise_loudness"]

#: BS.1770's gating block (s): the shortest waveform that has an integrated loudness.
BLOCK_SECONDS = 0.4
#: The absolute gate (LUFS): blocks below it are silence.
_ABSOLUTE_GATE = -70.0
#: What to install for loudness normalisation.
PYLOUDNORM_HINT = "loudness normalisation needs pyloudnorm: pip install pyloudnorm (or pip install -e '.[audio]')"


def check_loudness_length(source: object, frames: int, rate: int) -> None:
    """Refuse audio of *frames* samples at *rate* Hz shorter than one :data:`BLOCK_SECONDS` block, naming *source*."""
    if frames < math.ceil(BLOCK_SECONDS * rate):
        raise InputError(
            f"{source}: {frames / rate:.3f} s of audio; loudness normalisation needs at least {BLOCK_SECONDS} s "
            "(one BS.1770 gating block); leave loudness unset to read it as it is"
        )


def normalise_loudness(waveform: np.ndarray, *, sample_rate: int, target_lufs: float, source: object) -> np.ndarray:
    """*waveform* scaled to an integrated loudness of *target_lufs* (module docstring).

    Parameters
    ----------
    waveform : numpy.ndarray
        Mono samples, shape (samples,), full scale 1.
    sample_rate : int
        Hz.
    target_lufs : float
        The loudness to reach (LUFS), −30 in the VoicePrivacy toolkit.
    source : object
        What names the audio in messages (its file).

    Returns
    -------
    numpy.ndarray
        The waveform times one gain, shape (samples,), the dtype of *waveform*.

    Raises
    ------
    InputError
        Audio shorter than one gating block, silent audio (its loudness is −inf), or
        pyloudnorm missing (naming what to install).
    """
    check_loudness_length(source, int(waveform.shape[0]), sample_rate)
    try:
        import pyloudnorm
    except ImportError:
        raise InputError(PYLOUDNORM_HINT) from None
    measured = float(pyloudnorm.Meter(sample_rate).integrated_loudness(waveform.astype(np.float64)))
    if not math.isfinite(measured):
        raise InputError(
            f"{source}: silent (every 400 ms block below the {_ABSOLUTE_GATE:g} LUFS gate): its loudness is "
            f"undefined and cannot be raised to {target_lufs:g} LUFS; leave it out, or leave loudness unset"
        )
    gain = 10.0 ** ((target_lufs - measured) / 20.0)
    return (waveform * gain).astype(waveform.dtype, copy=False)
