"""Signal-processing anonymisers for data directories: McAdams, pitch shift, resampling.

``mcadams(x, alpha)``
    the VoicePrivacy signal-processing baseline: frame the signal (20 ms Hann windows,
    50 % overlap), fit an order-20 LPC model per frame, move every complex pole pair from
    angle phi to angle phi ** alpha (radians, 0 < phi < pi; magnitudes kept), and
    re-synthesise the frame from its LPC residual through the shifted all-pole filter;
    overlap-add.  alpha < 1 raises the formants, alpha > 1 lowers them; alpha = 1
    returns the input (the residual filtered back through the same filter is the frame,
    and periodic Hann windows at 50 % overlap sum to one; what remains is the rounding of
    the polynomial -> roots -> polynomial round trip, below 1e-9 of full scale).  The
    frames are processed in batches; the LPC normal equations are solved by LU, which
    differs from a per-frame Levinson solver by the system's condition number times eps
    (~1e-10 of full scale on noisy speech, up to ~1e-6 on noise-free harmonic signals).
``pitch_shift(x, ratio)``
    multiplies the fundamental frequency (and formants) by *ratio* at the same duration:
    a phase-vocoder time stretch by *ratio* followed by resampling by 1 / *ratio*.
``resample_shift(x, ratio)``
    vocal-tract scaling by resampling: the samples are played *ratio* times faster, so
    pitch and formants scale by *ratio* and the duration by 1 / *ratio*.

Each refuses (:class:`~lidframe.errors.InputError`, one line) what it cannot render: a NaN
or infinite sample (naming the first), a parameter outside its range (alpha within
(0, :data:`MAX_ALPHA`], a ratio within :data:`RATIO_BOUNDS`), and a result that is not
finite (samples so large that the arithmetic overflows float64); the floating-point
warnings of such an overflow are not shown, the refusal says it
(:mod:`lidframe.audio.anonymise_checks`).

:func:`anonymise_data_dir` applies one of them to every utterance of a Kaldi data dir
and writes a new data dir with the same ids (``wav.scp`` pointing at the new files,
``utt2spk``, ``spk2utt``, ``text`` copied).  With an ``alpha_range`` McAdams draws one
alpha per *speaker*, seeded by the speaker id.  :func:`anonymise_data_dirs` runs several
of them over a pool of worker processes.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import attrs
import numpy as np
from scipy.signal import istft, resample_poly, stft

from lidframe.audio.anonymise_checks import (
    MAX_ALPHA,
    MAX_N_FFT,
    MAX_WIN_MS,
    RATIO_BOUNDS,
    check_alpha,
    check_count,
    check_outputs,
    check_ratio,
    first_nonfinite,
    renders_finite,
)
from lidframe.data import fileio, runpaths
from lidframe.data.fileio import StrPath
from lidframe.data.kaldi import WavPaths
from lidframe.data.utterance import Utterance
from lidframe.errors import InputError, quote

__all__ = [
    "mcadams",
    "pitch_shift",
    "resample_shift",
    "anonymise_data_dir",
    "anonymise_data_dirs",
    "METHODS",
    "MAX_ALPHA",
    "RATIO_BOUNDS",
]

METHODS = ("mcadams", "pitch", "resample")

#: Frames processed together by :func:`mcadams` (bounds its memory: ~64 KiB per frame at order 20).
_MCADAMS_BLOCK = 2048


def _mcadams_frames(frames: np.ndarray, alpha: float, order: int) -> np.ndarray:
    """McAdams-shift a block of windowed frames (F, W), none all-zero; returns the re-synthesised (F, W).

    Every step is batched over the frames (the per-frame loop of a textbook version costs
    ~0.5 ms a frame in Python and NumPy call overhead): autocorrelation, the Toeplitz normal
    equations (``np.linalg.solve``; the autocorrelation matrix with the white-noise
    correction is positive definite), the LPC residual (an FIR filter), the poles as the
    eigenvalues of each polynomial's companion matrix (what ``np.roots`` computes), the
    polynomial of the moved poles, and the all-pole synthesis as one recursion over the
    W samples of all frames at once.
    """
    n_frames, win_len = frames.shape
    lags = np.stack([np.einsum("fn,fn->f", frames[:, : win_len - k], frames[:, k:]) for k in range(order + 1)], axis=1)
    lags[:, 0] *= 1.0 + 1e-9  # white-noise correction keeps the Toeplitz system well conditioned
    if not np.isfinite(lags).all():  # the normal equations cannot be solved; the overflow is the reason
        raise InputError("McAdams cannot render these samples: a frame's energy overflows float64")
    # a frame whose energy underflows (samples below ~1e-154) has no usable LPC model: it
    # passes through unchanged (a = [1, 0, ..., 0]), as the per-frame loop's r[0] <= 0 rule did
    usable = lags[:, 0] > np.finfo(np.float64).tiny / np.finfo(np.float64).eps
    if not usable.all():
        out = frames.copy()
        if usable.any():
            out[usable] = _mcadams_frames(frames[usable], alpha, order)
        return out
    idx = np.abs(np.arange(order)[:, None] - np.arange(order)[None, :])
    coef = np.linalg.solve(lags[:, idx], lags[:, 1 : order + 1, None])[:, :, 0]
    a = np.concatenate([np.ones((n_frames, 1)), -coef], axis=1)  # [1, a1, ..., ap] per frame
    residual = frames.copy()
    for k in range(1, order + 1):
        residual[:, k:] += a[:, k : k + 1] * frames[:, : win_len - k]
    companion = np.zeros((n_frames, order, order))
    companion[:, 0, :] = -a[:, 1:]
    companion[:, np.arange(1, order), np.arange(order - 1)] = 1.0
    poles = np.linalg.eigvals(companion)
    angles = np.angle(poles)
    moved = np.where(
        np.abs(poles.imag) > 1e-12, np.abs(poles) * np.exp(1j * np.sign(angles) * np.abs(angles) ** alpha), poles
    )
    poly = np.zeros((n_frames, order + 1), dtype=complex)
    poly[:, 0] = 1.0
    for j in range(order):  # multiply by (z - moved_j), as np.poly does
        poly[:, 1 : j + 2] = poly[:, 1 : j + 2] - moved[:, j : j + 1] * poly[:, : j + 1]
    reversed_tail = np.ascontiguousarray(poly.real[:, :0:-1])  # [a_p, ..., a_1] of the shifted filter
    history = np.zeros((n_frames, order + win_len))  # `order` zeros, then the output samples
    for n in range(win_len):
        history[:, order + n] = residual[:, n] - np.einsum("fk,fk->f", reversed_tail, history[:, n : n + order])
    return history[:, order:]


@renders_finite("McAdams")
def mcadams(
    x: np.ndarray, alpha: float, *, sample_rate: int = 16000, order: int = 20, win_ms: float = 20.0
) -> np.ndarray:
    """McAdams-coefficient anonymisation of a mono signal (module docstring).

    *alpha* within (0, :data:`MAX_ALPHA`]; *order* an integer within [1, 100]; *win_ms*
    within (0, :data:`MAX_WIN_MS`], and long enough that a frame at *sample_rate* (Hz)
    holds more than *order* samples.
    """
    check_alpha(alpha)
    check_count(order, "McAdams LPC order", 1, 100)
    check_count(sample_rate, "sample rate (Hz)", 1, 1 << 31)
    if not (np.isfinite(win_ms) and 0 < win_ms <= MAX_WIN_MS):
        raise InputError(f"McAdams frame length must be within (0, {MAX_WIN_MS:g}] ms, got {win_ms}")
    win_len = round(sample_rate * win_ms / 1000.0)
    win_len += win_len % 2
    if win_len <= order:
        raise InputError(
            f"McAdams needs more than {order} samples (its LPC order) in a {win_ms:g} ms frame; "
            f"at {sample_rate} Hz it has {win_len}"
        )
    hop = win_len // 2
    window = np.hanning(win_len + 1)[:-1]  # periodic Hann: shifted copies at 50 % overlap sum to 1
    padded = np.r_[np.zeros(hop), x, np.zeros(win_len)]
    out = np.zeros_like(padded)
    starts = np.arange(0, padded.size - win_len + 1, hop)
    views = np.lib.stride_tricks.sliding_window_view(padded, win_len)
    for block in range(0, starts.size, _MCADAMS_BLOCK):
        block_starts = starts[block : block + _MCADAMS_BLOCK]
        frames = views[block_starts] * window
        active = np.any(frames, axis=1)  # an all-zero frame contributes nothing
        if not active.any():
            continue
        shifted = _mcadams_frames(frames[active], alpha, order)
        for start, frame in zip(block_starts[active], shifted, strict=True):
            out[start : start + win_len] += frame
    return out[hop : hop + x.size]


@renders_finite("pitch shift")
def pitch_shift(x: np.ndarray, ratio: float, *, n_fft: int = 1024, hop: int = 256) -> np.ndarray:
    """Shift F0 (and formants) by *ratio* at constant duration: phase vocoder, then resampling.

    *ratio* within :data:`RATIO_BOUNDS`; *n_fft* an integer within [2, :data:`MAX_N_FFT`],
    *hop* one within [1, *n_fft*].
    """
    check_ratio(ratio, "pitch ratio")
    check_count(n_fft, "pitch shift n_fft", 2, MAX_N_FFT)
    check_count(hop, "pitch shift hop", 1, n_fft)
    if ratio == 1.0 or x.size == 0:
        return x.copy()
    if x.size < n_fft:  # shorter than one analysis frame (64 ms at 16 kHz): shifted as if silence followed
        return pitch_shift(np.r_[x, np.zeros(n_fft - x.size)], ratio, n_fft=n_fft, hop=hop)[: x.size]
    _, _, spec = stft(x, nperseg=n_fft, noverlap=n_fft - hop, boundary="zeros", padded=True)
    # time-stretch by `ratio`: read the analysis frames at steps of 1 / ratio
    steps = np.arange(0, spec.shape[1] - 1, 1.0 / ratio)
    steps = steps[steps < spec.shape[1] - 1]  # floating-point arange may overshoot its stop
    expected = 2 * np.pi * hop * np.arange(spec.shape[0]) / n_fft
    # the phase vocoder, all output frames at once: output frame k has the magnitude interpolated
    # between analysis frames i = floor(step k) and i + 1, and the phase of frame k - 1 advanced by
    # the expected advance plus the deviation measured between frames i and i + 1
    first = steps.astype(np.intp)
    frac = steps - first
    magnitude = np.abs(spec)
    magnitude = (1 - frac) * magnitude[:, first] + frac * magnitude[:, first + 1]
    angle = np.angle(spec)
    delta = angle[:, first + 1] - angle[:, first] - expected[:, None]
    delta -= 2 * np.pi * np.round(delta / (2 * np.pi))
    # phase_0 = angle of frame 0, phase_k+1 = (phase_k + expected) + delta_k: one running sum over
    # the interleaved terms adds them in that order (the rounding of a per-frame loop, bit for bit)
    terms = np.empty((max(2 * steps.size - 1, 1), spec.shape[0]))
    terms[0] = angle[:, 0]
    terms[1::2] = expected
    terms[2::2] = delta[:, :-1].T
    phase = np.cumsum(terms, axis=0)[::2].T[:, : steps.size]
    stretched = magnitude * np.exp(1j * phase)
    _, y = istft(stretched, nperseg=n_fft, noverlap=n_fft - hop, boundary=True)
    from fractions import Fraction

    frac = Fraction(ratio).limit_denominator(100)
    y = resample_poly(y, frac.denominator, frac.numerator)
    if y.size >= x.size:
        return y[: x.size]
    return np.r_[y, np.zeros(x.size - y.size)]


@renders_finite("resampling")
def resample_shift(x: np.ndarray, ratio: float) -> np.ndarray:
    """Scale pitch and formants by *ratio* (within :data:`RATIO_BOUNDS`; duration by 1 / ratio) by resampling."""
    check_ratio(ratio, "resampling ratio")
    from fractions import Fraction

    frac = Fraction(ratio).limit_denominator(100)
    return resample_poly(x, frac.denominator, frac.numerator)


#: Longest utterance id (bytes of UTF-8) that :func:`anonymise_data_dir` takes: ``<id>.wav`` and the
#: temporary name it is written under (``.<id>.wav.XXXXXXXX.wav.tmp``) stay within the 255 bytes
#: a file name may have.
MAX_ID_BYTES = 200


def _file_name_problem(utt_id: str) -> str | None:
    """Why *utt_id* cannot name a file in one folder (``<id>.wav``), or None."""
    if utt_id in (".", ".."):
        return f"{utt_id!r} names a folder"
    for char in ("/", "\\"):
        if char in utt_id:
            return f"it holds {char!r}, which would put the file in another folder"
    if "\0" in utt_id:
        return "it holds a NUL byte, which no file name may hold"
    if "|" in utt_id:
        return "it holds '|', which the written wav.scp could not hold (a piped command to Kaldi)"
    if len(utt_id.encode("utf-8", "surrogateescape")) > MAX_ID_BYTES:
        return f"it is longer than {MAX_ID_BYTES} bytes"
    return None


def _wav_scp_line(source: Path, utt_id: str) -> str:
    """``wav.scp: line N`` of *utt_id* in the data dir *source* (read again: only for a message)."""
    from lidframe.data.kaldi import numbered_rows

    scp = source / "wav.scp"
    number = next((n for n, fields in numbered_rows(scp, what="wav.scp") if fields[0] == utt_id), None)
    return f"{scp}: line {number}" if number is not None else str(scp)


def _check_inputs(source: Path, utterances: Sequence[Any]) -> None:
    """Refuse, before anything is written, an utterance id that cannot be a file name, audio that is
    not a regular file with a sound-file header (:func:`lidframe.data.fileio.open_input`: a FIFO is
    never waited on, a device never read), or audio with a NaN or infinite sample
    (:func:`~lidframe.audio.anonymise_checks.first_nonfinite`: floating-point files only)."""
    import soundfile

    for utt in utterances:
        problem = _file_name_problem(utt.utt_id)
        if problem is not None:
            raise InputError(
                f"{_wav_scp_line(source, utt.utt_id)}: utterance id {quote(utt.utt_id)} cannot be a file name "
                f"({problem}); the anonymised audio is written to OUT/wav/<id>.wav: rename the utterance"
            )
    for utt in utterances:
        try:
            with (
                fileio.open_input(utt.path, "an audio file (.wav, .flac)") as handle,
                soundfile.SoundFile(handle) as sound,
            ):
                bad = first_nonfinite(sound)
        except (InputError, RuntimeError, OSError) as exc:  # RuntimeError: soundfile.LibsndfileError
            if isinstance(exc, InputError):
                problem = str(exc)
            elif isinstance(exc, OSError):
                problem = f"{utt.path}: cannot read audio ({exc.strerror or exc})"
            else:
                problem = f"{utt.path}: cannot read audio: not audio, or corrupt ({_reason(exc)})"
            where = _wav_scp_line(source, utt.utt_id)
            raise InputError(f"{problem} (utterance {quote(utt.utt_id)}, {where})") from None
        if bad is not None:
            raise InputError(
                f"{utt.path}: sample {bad[0]} is {bad[1]}; the anonymisers need finite samples "
                f"(utterance {quote(utt.utt_id)}, {_wav_scp_line(source, utt.utt_id)})"
            )


def _reason(exc: BaseException) -> str:
    """libsndfile's reason for *exc*, on one line."""
    return " ".join(str(getattr(exc, "error_string", None) or exc).split()).rstrip(".")


def _speaker_alpha(speaker: str, low: float, high: float, seed: int) -> float:
    digest = hashlib.sha256(f"{seed}\0{speaker}".encode()).digest()
    return low + (high - low) * int.from_bytes(digest[:8], "little") / 2**64


def anonymise_data_dir(
    in_dir: StrPath,
    out_dir: StrPath,
    *,
    method: str,
    alpha: float = 0.8,
    alpha_range: Sequence[float] | None = None,
    ratio: float = 1.2,
    ratio_range: Sequence[float] | None = None,
    per_utterance: bool = False,
    seed: int = 0,
    wav_paths: WavPaths = "cwd",
) -> dict[str, Any]:
    """Anonymise every utterance of a Kaldi data dir into a new data dir with the same ids.

    ``alpha_range`` (McAdams) and ``ratio_range`` (pitch, resample) draw the parameter
    per speaker -- or, with ``per_utterance=True``, per utterance, which breaks the
    consistency an attacker relies on between a speaker's recordings.  Draws are seeded
    by the speaker (or utterance) id and *seed*.

    Utterance ids become file names (``OUT/wav/<id>.wav``), so an id must be one: not
    ``.`` or ``..``, without ``/``, ``\\``, ``|`` or a NUL byte, and at most :data:`MAX_ID_BYTES`
    bytes of UTF-8.  Such an id, audio that is not a regular file with a sound-file
    header (missing, a folder, a FIFO, a device, not audio) and audio with a NaN or
    infinite sample are refused naming the ``wav.scp`` line and the id, before anything
    is written.

    Any failure leaves *out_dir* as it was (the files are staged, :func:`_write_data_dir`).
    Nothing outside *out_dir* is written: a symlink where the run would write (``wav/``,
    ``wav/<id>.wav``, the tables) is refused before any work (*out_dir* itself may be one).

    Parameters
    ----------
    in_dir, out_dir : str or os.PathLike
        Kaldi data dir to read (``wav.scp`` and ``utt2spk`` at least) and the new one to write
        (``wav/<utt>.wav``, 16-bit PCM, peak-limited to 0.99 of full scale); they must differ.
    method : {"mcadams", "pitch", "resample"}
        The anonymiser.
    alpha, ratio : float
        McAdams coefficient (within (0, :data:`MAX_ALPHA`]), or pitch / resampling ratio
        (within :data:`RATIO_BOUNDS`), used for every utterance.
    alpha_range, ratio_range : (float, float), optional
        ``(low, high)`` with ``low <= high``, both in those ranges: draw the parameter per speaker instead.
    per_utterance : bool
        Draw per utterance rather than per speaker.
    seed : int
        Seed of the draws, a non-negative integer.
    wav_paths : {"cwd", "data-dir"}
        How *in_dir*'s relative audio paths are resolved, and *out_dir*'s written
        (:func:`lidframe.data.kaldi.wav_location`: absolute, or ``wav/<id>.wav`` for ``"data-dir"``).

    Returns
    -------
    dict
        ``{"utterances": n, "method": ..., "alpha_per_speaker": {...}}``: the parameter
        (alpha or ratio) used per speaker, or per utterance with ``per_utterance``.

    Raises
    ------
    InputError
        A bad method, parameter, range or seed, a bad data dir, id, audio file or output
        path (as above), *out_dir* on its inputs (:func:`lidframe.data.runpaths.refuse_outputs_on_inputs`),
        or audio the anonymiser cannot render (its result overflows).
    """
    anonymiser = _Anonymiser(
        method,
        alpha=alpha,
        alpha_range=alpha_range,
        ratio=ratio,
        ratio_range=ratio_range,
        per_utterance=per_utterance,
        seed=seed,
    )
    source, out = Path(in_dir), Path(out_dir)
    utterances, tables, locations = _checked_source(source, out, wav_paths)
    alphas = _write_data_dir(anonymiser, source, out, zip(utterances, locations), tables)
    return {"utterances": len(utterances), "method": method, "alpha_per_speaker": alphas}


def _checked_source(source: Path, out: Path, wav_paths: WavPaths) -> tuple[list[Utterance], list[str], list[str]]:
    """The utterances of *source*, its tables to copy and each utterance's location in *out*'s ``wav.scp``: all
    checked before anything is written (:func:`anonymise_data_dir`)."""
    from lidframe.data.kaldi import read_data_dir, wav_location

    utterances = read_data_dir(source, wav_paths=wav_paths)
    # the new data dir is not the old one, nor inside it, nor holding it or the audio it lists
    runpaths.refuse_outputs_on_inputs(folders={"output data dir": out}, inputs=[source])
    _check_inputs(source, utterances)
    tables = [name for name in ("utt2spk", "spk2utt", "text", "spk2gender") if (source / name).is_file()]
    check_outputs(out, [*(f"wav/{utt.utt_id}.wav" for utt in utterances), "wav.scp", *tables])
    locations = [wav_location(out / "wav" / f"{utt.utt_id}.wav", out, wav_paths) for utt in utterances]
    return utterances, tables, locations


def _write_data_dir(
    anonymiser: _Anonymiser, source: Path, out: Path, utterances: Iterable[tuple[Utterance, str]], tables: Sequence[str]
) -> dict[str, float]:
    """Write the anonymised data dir *out* of *source*, all or nothing; the parameter used per key.

    Every file is staged (:func:`lidframe.data.fileio.staged_outputs`): on any failure none
    is renamed into place, and the folders made for them are removed again.
    """
    made = [folder for folder in (*reversed((out / "wav").parents), out / "wav") if not folder.exists()]
    (out / "wav").mkdir(parents=True, exist_ok=True)
    try:
        with fileio.staged_outputs():
            return _write_files(anonymiser, source, out, utterances, tables)
    except BaseException:
        for folder in reversed(made):  # innermost first; empty again, the staged files removed
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def _write_files(
    anonymiser: _Anonymiser, source: Path, out: Path, utterances: Iterable[tuple[Utterance, str]], tables: Sequence[str]
) -> dict[str, float]:
    """Write ``wav/<id>.wav`` of each ``(utterance, its wav.scp location)``, ``wav.scp`` and the *tables* copied from
    *source* into *out*."""
    alphas: dict[str, float] = {}
    lines = []
    for utt, location in utterances:
        key, value = anonymiser.draw(utt)
        alphas[key] = value
        _write_wav(out / "wav" / f"{utt.utt_id}.wav", *anonymiser.apply(utt, value))
        lines.append(f"{utt.utt_id} {location}\n")
    with fileio.atomic_write(out / "wav.scp", encoding="utf-8") as handle:
        handle.write("".join(lines))
    for name in tables:  # the data dir's other tables, read through the opener (a FIFO is refused)
        with (
            fileio.open_input(source / name, "a Kaldi table") as src,
            fileio.atomic_path(out / name) as tmp,
            open(tmp, "wb") as dst,
        ):
            shutil.copyfileobj(src, dst)
    return alphas


@attrs.frozen
class _Anonymiser:
    """One anonymiser with its parameter, fixed or drawn per speaker (or utterance); the options of
    :func:`anonymise_data_dir`, checked when made."""

    method: str = attrs.field()
    alpha: float = attrs.field(kw_only=True)
    alpha_range: Sequence[float] | None = attrs.field(kw_only=True)
    ratio: float = attrs.field(kw_only=True)
    ratio_range: Sequence[float] | None = attrs.field(kw_only=True)
    per_utterance: bool = attrs.field(kw_only=True)
    seed: int = attrs.field(kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self.method not in METHODS:
            raise InputError(f"anonymisation method must be one of {METHODS}, got {self.method!r}")
        for label, bounds in (("alpha", self.alpha_range), ("ratio", self.ratio_range)):
            if bounds is not None and not (len(bounds) == 2 and 0 < bounds[0] <= bounds[1]):
                raise InputError(f"{label} range must be two increasing positive numbers, got {bounds}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise InputError(f"anonymisation seed must be a non-negative integer, got {self.seed!r}")
        fixed, bounds = (self.alpha, self.alpha_range) if self.method == "mcadams" else (self.ratio, self.ratio_range)
        for value in (fixed,) if bounds is None else bounds:  # before any audio is read
            if self.method == "mcadams":
                check_alpha(value)
            else:
                check_ratio(value, "pitch ratio" if self.method == "pitch" else "resampling ratio")

    def draw(self, utt: Utterance) -> tuple[str, float]:
        """``(key, parameter)`` of *utt*: its speaker (or, per utterance, its id) and the alpha or ratio for it."""
        key = utt.utt_id if self.per_utterance else utt.speaker
        fixed, bounds = (self.alpha, self.alpha_range) if self.method == "mcadams" else (self.ratio, self.ratio_range)
        return key, fixed if bounds is None else _speaker_alpha(key, bounds[0], bounds[1], self.seed)

    def apply(self, utt: Utterance, value: float) -> tuple[np.ndarray, int]:
        """*utt*'s audio (mixed to mono) anonymised with parameter *value*: the samples (float64) and the rate (Hz)."""
        import soundfile

        try:
            # read_data_dir gives each utterance its wav.scp path
            with fileio.open_input(cast(str, utt.path), "an audio file (.wav, .flac)") as handle:
                audio, rate = soundfile.read(handle, dtype="float64", always_2d=True)
        except RuntimeError as exc:  # damaged past the header
            raise InputError(
                f"{utt.path}: cannot read audio: not audio, or corrupt ({_reason(exc)}) (utterance {quote(utt.utt_id)})"
            ) from None
        with np.errstate(over="ignore", invalid="ignore"):  # channels that overflow their mean: refused below
            audio = audio.mean(axis=1)
        try:
            if self.method == "mcadams":
                return mcadams(audio, value, sample_rate=rate), rate
            return (pitch_shift(audio, value) if self.method == "pitch" else resample_shift(audio, value)), rate
        except InputError as exc:
            raise InputError(f"{utt.path} (utterance {quote(utt.utt_id)}): {exc}") from None


def _write_wav(target: Path, samples: np.ndarray, rate: int) -> None:
    """*samples* as 16-bit PCM WAV at *target* (atomically), scaled down to a peak of 0.99 of full scale if above."""
    import soundfile

    peak = float(np.max(np.abs(samples), initial=0.0)) or 1.0  # an empty file stays empty
    if peak > 0.99:
        samples = samples * (0.99 / peak)
    with fileio.atomic_path(target, suffix=".wav") as tmp:
        soundfile.write(str(tmp), samples.astype(np.float32), rate, subtype="PCM_16", format="WAV")


def _anonymise_task(task: tuple[StrPath, StrPath, dict[str, Any]]) -> dict[str, Any]:
    in_dir, out_dir, params = task
    return anonymise_data_dir(in_dir, out_dir, **params)


def anonymise_data_dirs(
    tasks: Sequence[tuple[StrPath, StrPath, dict[str, Any]]], *, jobs: int = 1, progress: bool = False
) -> list[dict[str, Any]]:
    """Run :func:`anonymise_data_dir` on each ``(in_dir, out_dir, keyword arguments)`` of *tasks*.

    Every output is what the same call made alone would write (each data dir's draws are
    seeded by its ids and ``seed``, not by the order the tasks run in).

    Parameters
    ----------
    tasks : sequence of (path, path, dict)
        The data dir to read, the one to write, and the keyword arguments of
        :func:`anonymise_data_dir` (``method`` at least).
    jobs : int
        Worker processes (:func:`lidframe.runtime.workers.process_pool`); 1 runs the tasks in
        this process, one after the other.
    progress : bool
        A tqdm bar over the tasks.

    Returns
    -------
    list of dict
        The reports of :func:`anonymise_data_dir`, in the order of *tasks*.

    Raises
    ------
    InputError
        From the first task that fails (the tasks not started by then are cancelled); *jobs* is
        not a positive integer.
    """
    from lidframe.runtime.workers import check_jobs, process_pool

    check_jobs(jobs)
    tasks = list(tasks)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(tasks), desc="anonymising", unit="data dir")
    try:
        if jobs == 1 or len(tasks) <= 1:
            reports = []
            for task in tasks:
                reports.append(_anonymise_task(task))
                if bar is not None:
                    bar.update()
            return reports
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        pool = process_pool(min(jobs, len(tasks)))
        try:
            futures = [pool.submit(_anonymise_task, task) for task in tasks]
            for future in as_completed(futures):
                future.result()  # the first failure ends the run (finally: what has not started is cancelled)
                if bar is not None:
                    bar.update()
            return [future.result() for future in futures]
        except BrokenProcessPool:
            raise InputError(
                "an anonymiser worker process died (out of memory? killed?); rerun with jobs=1 to see why"
            ) from None
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    finally:
        if bar is not None:
            bar.close()
