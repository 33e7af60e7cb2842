"""Relative audio paths in ``wav.scp``: read against the current folder, as Kaldi reads them, or against the data dir.

Issue 41: lidframe read a relative path against the data dir, where Kaldi reads it against
the current folder of the process.  ``wav_paths="cwd"`` (``--wav-paths cwd``) is now the
default and ``"data-dir"`` the stated other convention; a writer
(:func:`lidframe.data.kaldi.wav_location`) writes what a reader with the same convention
finds.  The expected paths here are built by joining by hand (``os.path.join``), not by
the reader.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe.data.kaldi import WAV_PATHS, read_data_dir, wav_location
from lidframe.errors import InputError
from tests.bad_input.conftest import assert_refused

#: Path segments a data dir may name: letters, digits, '-', '_', '.', and '..' (never '|' or a blank).
SEGMENT = st.one_of(st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,7}", fullmatch=True), st.just(".."))


def write_dir(folder: Path, locations: list[str], prefix: str = "u") -> Path:
    """A data dir at *folder* listing *locations* (utterances ``<prefix>0``, ..., one speaker each)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "wav.scp").write_text("".join(f"{prefix}{i} {loc}\n" for i, loc in enumerate(locations)))
    (folder / "utt2spk").write_text("".join(f"{prefix}{i} s{i}\n" for i in range(len(locations))))
    return folder


@settings(max_examples=60, deadline=None)
@given(relative=st.lists(st.lists(SEGMENT, min_size=1, max_size=4).map("/".join), min_size=1, max_size=4))
def test_a_relative_path_is_read_against_the_current_folder_or_the_data_dir(tmp_path_factory, relative):
    root = tmp_path_factory.mktemp("rel")
    folder = write_dir(root / "data" / "enrol", [*relative, "/abs/x.wav"])
    (root / "elsewhere").mkdir()
    with contextlib.chdir(root / "elsewhere"):
        by_default = [u.path for u in read_data_dir(folder)]
        against_cwd = [u.path for u in read_data_dir(folder, wav_paths="cwd")]
        against_dir = [u.path for u in read_data_dir(folder, wav_paths="data-dir")]
    here = str(root / "elsewhere")
    assert by_default == against_cwd == [os.path.join(here, r) for r in relative] + ["/abs/x.wav"]
    assert against_dir == [os.path.join(str(folder), r) for r in relative] + ["/abs/x.wav"]


@settings(max_examples=40, deadline=None)
@given(
    audio_parts=st.lists(SEGMENT.filter(lambda s: s != ".."), min_size=1, max_size=3),
    dir_parts=st.lists(SEGMENT.filter(lambda s: s != ".."), min_size=1, max_size=3),
    convention=st.sampled_from(WAV_PATHS),
)
def test_what_a_writer_lists_a_reader_of_the_same_convention_finds(
    tmp_path_factory, audio_parts, dir_parts, convention
):
    """From any current folder; a data-dir-relative listing also after the whole folder moves."""
    root = tmp_path_factory.mktemp("w")
    audio = root / "corpus" / "audio" / Path(*audio_parts) / "a.wav"
    folder = root / "corpus" / "dirs" / Path(*dir_parts)
    audio.parent.mkdir(parents=True, exist_ok=True)
    audio.write_bytes(b"RIFF")
    write_dir(folder, [wav_location(audio, folder, convention)])
    (root / "cwd").mkdir()
    with contextlib.chdir(root / "cwd"):
        (utt,) = read_data_dir(folder, wav_paths=convention)
    assert os.path.samefile(utt.path, audio)
    if convention == "data-dir":  # the corpus moves as a whole: its listings still hold
        shutil.move(root / "corpus", root / "moved")
        (utt,) = read_data_dir(root / "moved" / folder.relative_to(root / "corpus"), wav_paths=convention)
        assert os.path.samefile(utt.path, root / "moved" / audio.relative_to(root / "corpus"))
    else:
        assert os.path.isabs(wav_location(audio, folder, convention))


@pytest.mark.parametrize("name", ["a|b/a.wav", "line\nbreak/a.wav", "a.wav ", "a.wav:12"])
def test_a_path_wav_scp_cannot_hold_is_refused_by_the_writer(tmp_path, name):
    """A '|' (a piped command), a line break, a trailing blank, a ':DIGITS' end (an archive offset)."""
    folder = tmp_path / "d"
    audio = tmp_path / name
    with pytest.raises(InputError, match=r"wav\.scp: cannot list the audio file") as caught:
        wav_location(audio, folder, "cwd")
    assert "\n" not in str(caught.value)


def test_an_unknown_convention_is_refused(tmp_path):
    folder = write_dir(tmp_path / "d", ["a.wav"])
    with pytest.raises(InputError, match="wav_paths: 'kaldi'; expected one of cwd, data-dir"):
        read_data_dir(folder, wav_paths="kaldi")  # type: ignore[arg-type]


def test_paths_found_only_against_the_data_dir_warn_and_name_the_option(tmp_path):
    folder = write_dir(tmp_path / "d", ["wav/a.wav", "wav/b.wav", "/abs/c.wav"])
    (folder / "wav").mkdir()
    (folder / "wav" / "a.wav").write_bytes(b"RIFF")
    (tmp_path / "cwd").mkdir()
    with contextlib.chdir(tmp_path / "cwd"), pytest.warns(UserWarning) as caught:
        read_data_dir(folder)
    (warning,) = caught
    message = str(warning.message)
    assert "1 of 3 relative audio paths" in message and "line 1" in message and "--wav-paths data-dir" in message
    with contextlib.chdir(tmp_path / "cwd"), warnings.catch_warnings():
        warnings.simplefilter("error")
        read_data_dir(folder, wav_paths="data-dir")  # read as asked: no warning
    with contextlib.chdir(folder), warnings.catch_warnings():
        warnings.simplefilter("error")
        read_data_dir(folder)  # found against the current folder: no warning


def test_an_output_on_audio_listed_relative_to_the_current_folder_is_refused(tmp_path, capsys, monkeypatch):
    """The outputs-on-inputs rule counts a relative listing in both places it may name."""
    (tmp_path / "audio").mkdir()
    for name in ("e0", "e1", "t0", "t1"):
        (tmp_path / "audio" / f"{name}.npz").write_bytes(b"the audio")
    enrol = write_dir(tmp_path / "data" / "enrol", ["audio/e0.npz", "audio/e1.npz"])
    trials = write_dir(tmp_path / "data" / "trials", ["audio/t0.npz", "audio/t1.npz"], prefix="t")
    monkeypatch.chdir(tmp_path)
    assert_refused(
        ["score", "--attacker", "random", "--enrol", enrol, "--trials", trials, "--out", "audio/e0.npz"],
        capsys,
        expect=["--out audio/e0.npz", "is an input of this run", "listed in"],
        watch=[tmp_path],
    )
    assert (tmp_path / "audio" / "e0.npz").read_bytes() == b"the audio"


@pytest.fixture(scope="module")
def voices(tmp_path_factory):
    """Two speakers' enrolment and trial audio under one folder, their absolute-path data dirs and their scores."""
    pytest.importorskip("torch")
    from tests.bad_input.audio_dirs import ATTACKER, scoring_dirs

    root = tmp_path_factory.mktemp("voices")
    enrol, trials = scoring_dirs(root)  # absolute paths in wav.scp
    expected = _score(["score", "--attacker", ATTACKER, "--enrol", enrol, "--trials", trials], root / "absolute.npz")
    return root, enrol, trials, expected


def _score(argv, out: Path) -> np.ndarray:
    from lidframe.cli import main
    from lidframe.data.scoreset import ScoreSet

    assert main([str(a) for a in [*argv, "--out", out]]) == 0
    return ScoreSet.load(out).scores


@pytest.mark.parametrize("convention", WAV_PATHS)
def test_score_reads_relative_audio_by_either_convention_as_the_absolute_paths(voices, tmp_path, convention, capsys):
    from tests.bad_input.audio_dirs import ATTACKER

    root, enrol, trials, expected = voices
    base = ["score", "--attacker", ATTACKER]
    for name in ("enrol", "trials"):
        listed = [line.split() for line in (root / name / "wav.scp").read_text().splitlines()]
        start = tmp_path if convention == "cwd" else tmp_path / name
        (tmp_path / name).mkdir()
        (tmp_path / name / "wav.scp").write_text("".join(f"{u} {os.path.relpath(p, start)}\n" for u, p in listed))
        (tmp_path / name / "utt2spk").write_text((root / name / "utt2spk").read_text())
    with contextlib.chdir(tmp_path):
        got = _score(
            [*base, "--enrol", "enrol", "--trials", "trials", "--wav-paths", convention], tmp_path / "relative.npz"
        )
    capsys.readouterr()
    np.testing.assert_array_equal(got, expected)
