"""``lidframe anonymise`` refuses what it cannot render, and leaves the output folder as it was (issue 39).

Every fault -- a NaN or infinite sample, an option out of range, a negative seed, a
failure in the middle of the run, a symlink planted in the output folder -- is exit 2
and one line naming the file (or flag), with every file and folder under the test's
root, the output folder included, byte for byte as before (a snapshot of the tree that
holds each file's bytes and each link's target, taken before the run).  The snapshot is
this file's own walk of the folders, not lidframe's code.
"""

from __future__ import annotations

import contextlib
import errno
import io
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

soundfile = pytest.importorskip("soundfile", reason="audio is read with soundfile (pip install -e '.[audio]')")

from lidframe.audio.anonymise import METHODS, anonymise_data_dir  # noqa: E402
from lidframe.cli import main  # noqa: E402
from lidframe.errors import InputError  # noqa: E402

#: Utterances of the source data dir, and the samples of each (0.1 s at 16 kHz).
UTTERANCES, SAMPLES = 3, 1600
#: How the output folder is found before the run: absent, empty, or holding an earlier data dir.
OUT_STATES = ("missing", "empty", "earlier")


def snapshot(root: Path) -> dict[str, object]:
    """Every entry below *root*: a folder, a link (with its target, never followed) or a file (with its bytes)."""
    state: dict[str, object] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            key = str(path.relative_to(root))
            if path.is_symlink():
                state[key] = ("link", os.readlink(path))
            elif path.is_dir():
                state[key] = ("folder",)
            else:
                state[key] = ("file", path.read_bytes())
    return state


def signal(index: int, channels: int = 1) -> np.ndarray:
    """A 0.1 s harmonic tone at 16 kHz (different per *index*), shape (SAMPLES, channels)."""
    t = np.arange(SAMPLES) / 16000
    tone = 0.2 * sum(np.sin(2 * np.pi * (110 + 20 * index) * k * t) / k for k in range(1, 6))
    return np.repeat(tone[:, None], channels, axis=1)


def make_source(root: Path, subtype: str = "FLOAT", channels: int = 1) -> tuple[Path, list[Path]]:
    """A data dir ``root/src`` of UTTERANCES float WAVs (``root/audio/u<i>.wav``); its folder and the wav paths."""
    audio, source = root / "audio", root / "src"
    audio.mkdir()
    source.mkdir()
    wavs = [audio / f"u{i}.wav" for i in range(UTTERANCES)]
    for i, wav in enumerate(wavs):
        soundfile.write(str(wav), signal(i, channels), 16000, subtype=subtype)
    (source / "wav.scp").write_text("".join(f"u{i} {wav}\n" for i, wav in enumerate(wavs)))
    (source / "utt2spk").write_text("".join(f"u{i} s{i % 2}\n" for i in range(UTTERANCES)))
    (source / "text").write_text("".join(f"u{i} words {i}\n" for i in range(UTTERANCES)))
    return source, wavs


def make_out(root: Path, state: str) -> Path:
    """The output folder ``root/out`` in *state* (OUT_STATES); "earlier" holds another run's data dir and a note."""
    out = root / "out"
    if state != "missing":
        out.mkdir()
    if state == "earlier":
        (out / "wav").mkdir()
        (out / "wav" / "u0.wav").write_bytes(b"RIFF an earlier run's audio")
        (out / "wav" / "old.wav").write_bytes(b"RIFF an utterance this run does not have")
        (out / "wav.scp").write_text("u0 wav/u0.wav\nold wav/old.wav\n")
        (out / "utt2spk").write_text("u0 s0\nold s9\n")
        (out / "notes.txt").write_text("the auditor's notes\n")
    return out


@contextlib.contextmanager
def workspace() -> Iterator[Path]:
    """A fresh folder per Hypothesis example (pytest's tmp_path is one per test)."""
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


def run_cli(*argv: object) -> tuple[int, list[str]]:
    """``lidframe *argv*`` in-process: the exit status and the non-blank lines of stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main([str(a) for a in argv])
    return code, [line for line in err.getvalue().splitlines() if line.strip()]


def assert_one_line(code: int, lines: list[str], *fragments: str) -> str:
    """Exit 2 and one ``lidframe: error:`` line holding every fragment."""
    assert code == 2, (code, lines)
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith("lidframe: error: ") and "Traceback" not in line, line
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


def method_argv(method: str) -> list[str]:
    """The method's flags with an ordinary parameter."""
    return ["--method", method, *(["--alpha", "0.8"] if method == "mcadams" else ["--ratio", "1.1"])]


# ---------------------------------------------------------------- a NaN or infinite sample
@settings(max_examples=24, deadline=None)
@given(
    method=st.sampled_from(METHODS),
    value=st.sampled_from([math.nan, math.inf, -math.inf]),
    which=st.integers(0, UTTERANCES - 1),
    frame=st.integers(0, SAMPLES - 1),
    channels=st.integers(1, 2),
    subtype=st.sampled_from(["FLOAT", "DOUBLE"]),
    state=st.sampled_from(OUT_STATES),
)
def test_a_nonfinite_sample_is_one_line_naming_the_file_for_every_method(
    method, value, which, frame, channels, subtype, state
):
    """pitch and resample wrote full-scale noise for a NaN, McAdams refused it only after writing the
    utterances before it; now every method names the file and the frame before anything is written."""
    with workspace() as root:
        source, wavs = make_source(root, subtype, channels)
        samples = signal(which, channels)
        samples[frame, channels - 1] = value
        soundfile.write(str(wavs[which]), samples, 16000, subtype=subtype)
        out = make_out(root, state)
        before = snapshot(root)
        code, lines = run_cli("anonymise", *method_argv(method), source, out)
        line = assert_one_line(code, lines, str(wavs[which]), f"sample {frame} is ", "finite", f"line {which + 1}")
        assert str(value) in line  # nan, inf or -inf: the sample as read
        assert snapshot(root) == before


@settings(max_examples=20, deadline=None)
@given(
    method=st.sampled_from(METHODS),
    value=st.sampled_from([math.nan, math.inf, -math.inf]),
    position=st.integers(0, 999),
)
def test_every_anonymiser_function_refuses_a_nonfinite_sample(method, value, position):
    from lidframe.audio.anonymise import mcadams, pitch_shift, resample_shift

    render = {"mcadams": lambda x: mcadams(x, 0.8), "pitch": lambda x: pitch_shift(x, 1.2)}.get(
        method, lambda x: resample_shift(x, 1.2)
    )
    x = signal(0)[:1000, 0].copy()
    x[position] = value
    with pytest.raises(InputError, match=f"needs finite samples; sample {position} is not"):
        render(x)


# ---------------------------------------------------------------- options out of range
def out_of_range(flag: str) -> st.SearchStrategy[float]:
    """Values of *flag* outside what the method takes: alpha outside (0, 4], a ratio outside [0.25, 4]."""
    low, high = (0.0, 4.0) if "alpha" in flag else (0.25, 4.0)
    below = st.floats(max_value=low, exclude_max="ratio" in flag)
    above = st.floats(min_value=high, exclude_min=True)
    return st.one_of(below, above, st.sampled_from([math.nan, 1e308, -1e308]))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), method=st.sampled_from(METHODS), ranged=st.booleans(), state=st.sampled_from(OUT_STATES))
def test_an_option_out_of_range_is_refused_before_anything_is_read_or_written(data, method, ranged, state):
    """``--alpha 1e308`` wrote files of NaNs (overflow in phi ** alpha); every numeric option of every
    method is now checked against its range before any audio is read, naming the flag."""
    name = "alpha" if method == "mcadams" else "ratio"
    flag = f"--{name}-range" if ranged else f"--{name}"
    bad = data.draw(out_of_range(flag), label="bad value")
    good = 0.8 if name == "alpha" else 1.1
    if ranged:
        bounds = data.draw(st.sampled_from([(bad, max(bad, good)), (min(bad, good), bad)]), label="bounds")
        value = ",".join(repr(b) for b in bounds)
    else:
        value = repr(bad)
    with workspace() as root:
        source, _ = make_source(root)
        out = make_out(root, state)
        before = snapshot(root)
        code, lines = run_cli("anonymise", "--method", method, f"{flag}={value}", source, out)
        assert_one_line(code, lines, flag)
        assert snapshot(root) == before


@pytest.mark.parametrize(
    "method, options",
    [
        ("mcadams", {"alpha": 1e308}),
        ("mcadams", {"alpha_range": (0.5, 1e308)}),
        ("pitch", {"ratio": 1e308}),
        ("pitch", {"ratio_range": (0.5, math.inf)}),
        ("resample", {"ratio": -1e308}),
        ("resample", {"ratio_range": (1e-308, 1.0)}),
    ],
)
def test_the_library_refuses_an_option_out_of_range_before_the_output_folder_is_made(method, options, tmp_path):
    """anonymise_data_dir checked its parameter only as each utterance was rendered, after writing the ones
    before it."""
    source, _ = make_source(tmp_path)
    with pytest.raises(InputError, match="must be"):
        anonymise_data_dir(source, tmp_path / "out", method=method, **options)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("method", METHODS)
def test_a_negative_seed_is_refused_as_the_other_commands_refuse_it(method, tmp_path):
    source, _ = make_source(tmp_path)
    before = snapshot(tmp_path)
    code, lines = run_cli("anonymise", *method_argv(method), "--seed", "-1", source, tmp_path / "out")
    assert_one_line(code, lines, "--seed must be a non-negative integer, got -1")  # evaluate's, nsweep's words
    assert snapshot(tmp_path) == before
    with pytest.raises(InputError, match="seed must be a non-negative integer, got -1"):
        anonymise_data_dir(source, tmp_path / "out", method=method, seed=-1)
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- a failure in the middle of the run
class Interrupted(BaseException):
    """Stands for Ctrl-C (a BaseException, as KeyboardInterrupt is) without pytest taking it for one."""


@settings(max_examples=30, deadline=None)
@given(
    method=st.sampled_from(METHODS),
    fail_at=st.integers(0, UTTERANCES - 1),
    failure=st.sampled_from(["disk full", "interrupted"]),
    state=st.sampled_from(OUT_STATES),
)
def test_a_failure_in_the_middle_of_the_run_leaves_the_output_folder_as_it_was(method, fail_at, failure, state):
    """The wav files used to be written one by one into OUT/wav: a full disk (or Ctrl-C) at the third left
    two new files behind, the earlier run's files replaced.  Now nothing is renamed into place until all
    are written, and the folders the run made are removed."""
    real_write = soundfile.write
    calls = []

    def failing_write(file, *args, **kwargs):
        calls.append(file)
        if len(calls) == fail_at + 1:
            if failure == "disk full":
                raise OSError(errno.ENOSPC, "No space left on device", str(file))
            raise Interrupted
        return real_write(file, *args, **kwargs)

    with workspace() as root:
        source, _ = make_source(root)
        out = make_out(root, state)
        before = snapshot(root)
        with mock.patch.object(soundfile, "write", failing_write), pytest.raises((OSError, Interrupted)):
            anonymise_data_dir(source, out, method=method)
        assert len(calls) == fail_at + 1
        assert snapshot(root) == before


def test_a_disk_full_in_the_middle_of_the_run_is_one_line_from_the_command(tmp_path, monkeypatch):
    source, _ = make_source(tmp_path)
    out = make_out(tmp_path, "earlier")
    real_write = soundfile.write
    calls = []

    def failing_write(file, *args, **kwargs):
        calls.append(file)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(file))
        return real_write(file, *args, **kwargs)

    monkeypatch.setattr(soundfile, "write", failing_write)
    before = snapshot(tmp_path)
    code, lines = run_cli("anonymise", *method_argv("resample"), source, out)
    assert_one_line(code, lines, str(out / "wav" / "u1.wav"), "No space left on device")
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- symlinks planted in OUT
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("planted", ["wav/u1.wav", "wav.scp", "utt2spk", "text", "wav"])
def test_a_symlink_planted_in_the_output_folder_is_refused_and_nothing_outside_it_is_written(planted, method, tmp_path):
    """A link at OUT/wav/u1.wav to a file outside OUT had that file replaced by the anonymised audio
    (written through the link); a link at OUT/wav to another folder had the audio written there.
    Now the link is refused before any work: the file (or folder) it points to is byte for byte
    as it was, and so is OUT."""
    source, _ = make_source(tmp_path)
    out = make_out(tmp_path, "empty")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    precious = elsewhere / "precious.txt"
    precious.write_bytes(b"a file outside OUT that no anonymisation may touch\n")
    if planted == "wav/u1.wav":
        (out / "wav").mkdir()
    link = out / planted
    link.symlink_to(elsewhere if planted == "wav" else precious)
    before = snapshot(tmp_path)
    code, lines = run_cli("anonymise", *method_argv(method), source, out)
    assert_one_line(code, lines, str(link), "is a symlink", "remove the link")
    assert snapshot(tmp_path) == before
    assert precious.read_bytes() == b"a file outside OUT that no anonymisation may touch\n"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["precious.txt"]


def test_the_output_folder_itself_may_be_a_symlink(tmp_path):
    """OUT is the folder named: a link to it is followed (the files land in the folder it points to)."""
    source, _ = make_source(tmp_path)
    real = tmp_path / "real-out"
    real.mkdir()
    (tmp_path / "out").symlink_to(real)
    code, _ = run_cli("anonymise", *method_argv("resample"), source, tmp_path / "out")
    assert code == 0
    assert sorted(p.name for p in (real / "wav").iterdir()) == [f"u{i}.wav" for i in range(UTTERANCES)]


@pytest.mark.parametrize(
    "kind, expect",
    [("dangling", "is a dangling symlink"), ("loop", "symbolic links"), ("file", "is a regular file")],
)
def test_an_output_folder_that_cannot_be_one_is_named(kind, expect, tmp_path):
    """A link to nothing as OUT was a FileExistsError, a link loop an OSError about OUT/wav."""
    source, _ = make_source(tmp_path)
    out = tmp_path / "out"
    if kind == "dangling":
        out.symlink_to(tmp_path / "nowhere")
    elif kind == "loop":
        out.symlink_to(out)
    else:
        out.write_text("not a folder\n")
    before = snapshot(tmp_path)
    with pytest.raises(InputError, match=expect) as refused:
        anonymise_data_dir(source, out, method="resample")
    assert str(refused.value).startswith(f"{out}: is ")
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- audio the methods cannot render
@pytest.mark.parametrize("method", METHODS)
def test_an_empty_utterance_gives_an_empty_anonymised_file(method, tmp_path):
    """An empty wav was a ValueError traceback (the peak of no samples) for every method."""
    source, wavs = make_source(tmp_path)
    soundfile.write(str(wavs[1]), np.zeros((0, 1)), 16000, subtype="FLOAT")
    code, lines = run_cli("anonymise", *method_argv(method), source, tmp_path / "out")
    assert code == 0, lines
    assert soundfile.info(str(tmp_path / "out" / "wav" / "u1.wav")).frames == 0
    assert soundfile.info(str(tmp_path / "out" / "wav" / "u0.wav")).frames > 0


@pytest.mark.parametrize(
    "method, rate, peak, expect",
    [
        ("mcadams", 1000, 0.5, "more than 20 samples"),  # a 20 ms frame of 20 samples: no order-20 LPC
        ("mcadams", 1, 0.5, "more than 20 samples"),  # a ZeroDivisionError traceback before
        ("mcadams", 16000, 1e300, "overflows float64"),  # a LinAlgError traceback before
        ("pitch", 16000, 1.7e308, "overflows float64"),  # a file of NaNs before
        ("resample", 16000, 1.7e308, "overflows float64"),  # a file of NaNs before
    ],
)
def test_audio_an_anonymiser_cannot_render_is_one_line_and_leaves_out_as_it_was(method, rate, peak, expect, tmp_path):
    source, wavs = make_source(tmp_path)
    loud = signal(2) / np.max(np.abs(signal(2))) * peak  # the largest sample is *peak*
    soundfile.write(str(wavs[2]), loud, rate, subtype="DOUBLE")
    out = make_out(tmp_path, "earlier")
    before = snapshot(tmp_path)
    code, lines = run_cli("anonymise", *method_argv(method), source, out)
    assert_one_line(code, lines, str(wavs[2]), "utterance 'u2'", expect)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "call",
    [
        lambda f: f.mcadams(np.ones(400), 0.8, order=0),
        lambda f: f.mcadams(np.ones(400), 0.8, win_ms=1e308),
        lambda f: f.mcadams(np.ones(400), 0.8, win_ms=math.nan),
        lambda f: f.pitch_shift(np.ones(400), 1.2, n_fft=0),
        lambda f: f.pitch_shift(np.ones(400), 1.2, hop=0),
        lambda f: f.pitch_shift(np.ones(400), 1.2, n_fft=2**40),
    ],
    ids=["order-0", "win_ms-1e308", "win_ms-nan", "n_fft-0", "hop-0", "n_fft-2**40"],
)
def test_the_frame_options_of_the_functions_are_checked(call):
    """Each was a traceback of its own (OverflowError, ZeroDivisionError, MemoryError, ...)."""
    import lidframe.audio.anonymise as functions

    with pytest.raises(InputError, match="must be"):
        call(functions)
