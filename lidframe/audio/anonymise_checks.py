"""What the anonymisers of :mod:`lidframe.audio.anonymise` refuse, checked before and around a run.

Parameters: a McAdams coefficient within (0, :data:`MAX_ALPHA`], a pitch or resampling
ratio within :data:`RATIO_BOUNDS`, frame options (LPC order, frame length, FFT size, hop)
within bounds that keep a frame's memory small (:func:`check_alpha`, :func:`check_ratio`,
:func:`check_count`).

Samples: :func:`renders_finite` wraps each anonymiser so that a NaN or infinite input
sample, and a result that is not finite (input so large that the arithmetic overflows
float64), is one :class:`~lidframe.errors.InputError` instead of a file of NaNs or of
full-scale noise; :func:`first_nonfinite` finds such a sample in an audio file before
anything is written, reading only files whose encoding can hold one (floating point).

Output: :func:`check_outputs` refuses, before anything is written, a path of the output
data dir that the run would write through a symlink (a file outside the output folder
would be replaced through it) or onto something that is not a regular file (a folder for
``wav/``).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec

import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.fileio import file_kind
from lidframe.errors import InputError

if TYPE_CHECKING:
    import soundfile

__all__ = [
    "MAX_ALPHA",
    "MAX_N_FFT",
    "MAX_WIN_MS",
    "RATIO_BOUNDS",
    "check_alpha",
    "check_count",
    "check_outputs",
    "check_ratio",
    "first_nonfinite",
    "renders_finite",
]

#: The largest McAdams coefficient :func:`~lidframe.audio.anonymise.mcadams` takes.  Beyond it a
#: pole at angle phi moves to phi ** alpha, many turns round the unit circle (2 rad to 16 rad at
#: alpha = 4), and from alpha ~ 620 the power overflows float64 (pi ** 620 > 1.8e308).
MAX_ALPHA = 4.0
#: The pitch and resampling ratios the anonymisers take (two octaves each way).
RATIO_BOUNDS = (0.25, 4.0)
#: The longest McAdams analysis frame (ms) and pitch-shift FFT (samples): bounds on the memory a frame takes.
MAX_WIN_MS, MAX_N_FFT = 1000.0, 1 << 16

_P = ParamSpec("_P")


def check_alpha(alpha: float) -> None:
    """Refuse a McAdams coefficient outside (0, :data:`MAX_ALPHA`] (NaN and infinities included)."""
    if not (np.isfinite(alpha) and alpha > 0):
        raise InputError(f"McAdams alpha must be positive, got {alpha}")
    if alpha > MAX_ALPHA:
        raise InputError(
            f"McAdams alpha must be at most {MAX_ALPHA:g} (phi ** alpha would move the poles round the unit circle "
            f"many times, and overflows from ~620), got {alpha}"
        )


def check_ratio(ratio: float, what: str) -> None:
    """Refuse a pitch or resampling ratio (*what* names it) outside :data:`RATIO_BOUNDS`."""
    low, high = RATIO_BOUNDS
    if not (np.isfinite(ratio) and low <= ratio <= high):
        raise InputError(f"{what} must be within [{low:g}, {high:g}], got {ratio}")


def check_count(value: object, name: str, low: int, high: int) -> None:
    """Refuse a frame option (*name*) that is not an integer within [*low*, *high*]."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not low <= value <= high:
        raise InputError(f"{name} must be an integer within [{low}, {high}], got {value!r}")


def renders_finite(
    what: str,
) -> Callable[[Callable[Concatenate[np.ndarray, _P], np.ndarray]], Callable[Concatenate[ArrayLike, _P], np.ndarray]]:
    """Decorate the anonymiser *what* (``f(x, parameter, ...)``) to refuse a NaN or infinite sample and an overflow.

    The decorated function gets *x* (samples, shape (n,)) as a float64 array and runs
    with NumPy's overflow and invalid-value warnings off; its result is checked instead:
    one that is not finite is an :class:`InputError` that says so, with the largest input
    sample.
    """

    def decorate(
        render: Callable[Concatenate[np.ndarray, _P], np.ndarray],
    ) -> Callable[Concatenate[ArrayLike, _P], np.ndarray]:
        @functools.wraps(render)
        def checked(x: ArrayLike, *args: _P.args, **kwargs: _P.kwargs) -> np.ndarray:
            samples = np.asarray(x, dtype=np.float64)
            bad = np.flatnonzero(~np.isfinite(samples))
            if bad.size:
                raise InputError(f"{what} needs finite samples; sample {int(bad[0])} is not ({samples.flat[bad[0]]})")
            with np.errstate(over="ignore", invalid="ignore"):
                result = render(samples, *args, **kwargs)
            if not np.isfinite(result).all():
                raise InputError(
                    f"{what} cannot render these samples: the result overflows float64 (largest input sample "
                    f"{float(np.max(np.abs(samples))):.3g}; audio is expected within [-1, 1])"
                )
            return result

        return checked

    return decorate


def first_nonfinite(sound: soundfile.SoundFile, block_frames: int = 1 << 16) -> tuple[int, float] | None:
    """The first frame of *sound* that holds a NaN or infinite sample, and that sample; None if there is none.

    Parameters
    ----------
    sound : soundfile.SoundFile
        An audio file open for reading, at its start.
    block_frames : int
        Frames read at a time (bounds the memory: *block_frames* x channels float64).

    Returns
    -------
    (int, float) or None
        The frame's index (from 0) and the sample.  An integer encoding (``PCM_*``, u-law,
        A-law; FLAC's too) cannot hold one: such a file is not read.
    """
    if sound.subtype.startswith("PCM_") or sound.subtype in ("ULAW", "ALAW"):
        return None
    start = 0
    for block in sound.blocks(blocksize=block_frames, dtype="float64", always_2d=True):
        frames, channels = np.nonzero(~np.isfinite(block))
        if frames.size:
            return start + int(frames[0]), float(block[frames[0], channels[0]])
        start += block.shape[0]
    return None


def check_outputs(out: Path, names: Sequence[str]) -> None:
    """Refuse, before anything is written, an output of the data dir *out* that is a symlink or of the wrong kind.

    Parameters
    ----------
    out : pathlib.Path
        The output data dir (itself it may be a symlink: it is the folder named).
    names : sequence of str
        The files the run writes, relative to *out* (``wav/<id>.wav``, ``wav.scp``, ...).

    Raises
    ------
    InputError
        *out* is not a folder; ``out/wav`` or one of *names* is a symlink (a link to a
        file outside *out* would have that file replaced; a link is never followed nor
        replaced); ``out/wav`` is not a folder, or a file of *names* exists and is not a
        regular file.
    """
    try:
        kind = file_kind(os.stat(out).st_mode)
    except FileNotFoundError:  # a new folder, or a link to nothing
        kind = f"a dangling symlink (to {os.readlink(out)})" if os.path.islink(out) else "a folder"
    except OSError as exc:  # a symlink loop (ELOOP), a file in the path (ENOTDIR)
        kind = f"not a folder ({exc.strerror})"
    if kind != "a folder":
        raise InputError(f"{out}: is {kind}; lidframe anonymise writes a data dir there")
    for path in (out / "wav", *(out / name for name in names)):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise InputError(
                f"{path}: is a symlink (to {os.readlink(path)}); lidframe anonymise writes only inside the output "
                "folder and never through a link (it could replace a file elsewhere): remove the link"
            )
        folder = path == out / "wav"
        if not (stat.S_ISDIR(info.st_mode) if folder else stat.S_ISREG(info.st_mode)):
            expected = "a folder for the anonymised wav files" if folder else "a regular file"
            raise InputError(f"{path}: is {file_kind(info.st_mode)}; lidframe anonymise writes {expected} there")
