"""Atomic output: the mode a plain open() gives, errors named after the target, all-or-nothing staging;
the kinds of file an input or an output may be; UTF-8 text reading."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lidframe.data.fileio import (
    atomic_path,
    atomic_write,
    check_input_file,
    check_output_path,
    read_text,
    real_path,
    staged_outputs,
    write_json,
)
from lidframe.errors import InputError


@pytest.fixture()
def umask():
    """Set the process umask for one test (restored after it)."""
    saved = os.umask(0o022)
    os.umask(saved)
    yield lambda mask: os.umask(mask)
    os.umask(saved)


def plain_open_mode(path, mask) -> int:
    """The mode open(path, "w") gives a new file under *mask* (the reference)."""
    os.umask(mask)
    with open(path, "w"):
        pass
    mode = stat.S_IMODE(path.stat().st_mode)
    path.unlink()
    return mode


@given(st.sampled_from([0o022, 0o077, 0o002, 0o027, 0o000, 0o033]))
def test_new_files_get_the_umask_mode_not_0600(tmp_path_factory, mask):
    folder = tmp_path_factory.mktemp("mode")
    saved = os.umask(mask)
    try:
        want = plain_open_mode(folder / "reference", mask)
        write_json(folder / "s.json", {"a": 1})
        with atomic_path(folder / "s.npz", suffix=".npz") as tmp:
            tmp.write_bytes(b"x")
    finally:
        os.umask(saved)
    for name in ("s.json", "s.npz"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == want == 0o666 & ~mask, name


def test_umask_022_gives_0644(tmp_path, umask):
    umask(0o022)
    with atomic_write(tmp_path / "t.txt") as handle:
        handle.write("hello\n")
    assert stat.S_IMODE((tmp_path / "t.txt").stat().st_mode) == 0o644


def test_a_replaced_file_keeps_its_mode(tmp_path, umask):
    umask(0o022)
    target = tmp_path / "kept.json"
    target.write_text("{}")
    target.chmod(0o640)
    write_json(target, {"b": 2})
    assert stat.S_IMODE(target.stat().st_mode) == 0o640 and '"b": 2' in target.read_text()


def test_enospc_names_the_target_and_leaves_nothing(tmp_path):
    target = tmp_path / "out.json"
    with pytest.raises(OSError) as info, atomic_write(target) as handle:
        handle.write("{")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert "No space left on device" in info.value.strerror
    assert list(tmp_path.iterdir()) == []


def test_an_error_about_another_file_is_left_as_it_is(tmp_path):
    with pytest.raises(FileNotFoundError) as info, atomic_path(tmp_path / "out.csv"):
        (tmp_path / "input-that-is-missing.csv").read_text()
    assert info.value.filename == str(tmp_path / "input-that-is-missing.csv")
    assert list(tmp_path.iterdir()) == []


def test_staged_outputs_write_all_or_none(tmp_path):
    with staged_outputs():
        write_json(tmp_path / "a.json", [1])
        assert not (tmp_path / "a.json").exists()  # held back until the block ends
        write_json(tmp_path / "b.json", [2])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]
    with pytest.raises(RuntimeError), staged_outputs():
        write_json(tmp_path / "c.json", [3])
        raise RuntimeError("the second output failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]


def test_staged_rename_failure_names_the_target_and_cleans_up(tmp_path):
    blocker = tmp_path / "b.json"
    with pytest.raises(OSError) as info, staged_outputs():
        write_json(tmp_path / "a.json", [1])
        write_json(blocker, [2])
        blocker.mkdir()  # the rename onto it will fail
    assert info.value.filename == str(blocker)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]  # a.json renamed, b.json is the folder
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: d, "is a folder"),
        (lambda d: f"{d}/new/", "is a folder"),
        (lambda d: d / "missing" / "x.json", "folder .* does not exist"),
        (lambda d: (d / "f").write_text("") or d / "f" / "x.json", "is not a folder"),
    ],
)
def test_check_output_path(tmp_path, make, message):
    with pytest.raises(InputError, match=message):
        check_output_path(make(tmp_path), "--json")
    assert check_output_path(tmp_path / "ok.json", "--json") == tmp_path / "ok.json"


# ----------------------------------------------------------------------- kinds of file
def _loop(folder):
    (folder / "a").symlink_to("b")
    (folder / "b").symlink_to("a")
    return folder / "a"


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: d / "none.txt", r"^no such file: \S*/none.txt$"),
        (
            lambda d: (d / "f").write_text("") or d / "f" / "x.txt",
            r"^no such file: \S*/f/x.txt \(a parent is not a folder\)$",
        ),
        (lambda d: d, r": is a folder; expected a list$"),
        (lambda d: os.mkfifo(d / "p") or d / "p", r"p: is a FIFO \(named pipe\), not a regular file; expected a list$"),
        (lambda d: _loop(d), r"a: is a symlink loop; expected a list$"),
        (lambda d: _loop(d) / "x.txt", r"x.txt: runs through a symlink loop"),
        (
            lambda d: (d / "l").symlink_to(d / "gone") or d / "l",
            r"^no such file: \S*/l \(a dangling symlink to .*gone\)$",
        ),
        (lambda d: Path("/dev/zero"), r"^/dev/zero: is a character device, not a regular file"),
    ],
    ids=["missing", "parent-is-a-file", "folder", "fifo", "loop", "through-a-loop", "dangling", "dev-zero"],
)
def test_check_input_file_says_what_the_path_is(tmp_path, make, message):
    with pytest.raises(InputError, match=message):
        check_input_file(make(tmp_path), "a list")


def test_check_input_file_passes_regular_files_and_links_to_them(tmp_path):
    (tmp_path / "f.txt").write_text("x")
    (tmp_path / "l.txt").symlink_to("f.txt")
    assert check_input_file(tmp_path / "f.txt") == tmp_path / "f.txt"
    assert check_input_file(str(tmp_path / "l.txt")) == tmp_path / "l.txt"


def test_real_path_follows_links_and_leaves_a_loop_in_place(tmp_path):
    (tmp_path / "f.txt").write_text("x")
    (tmp_path / "l.txt").symlink_to("f.txt")
    assert real_path(tmp_path / "l.txt") == (tmp_path / "f.txt").resolve()
    looping = _loop(tmp_path)
    assert real_path(looping).name in ("a", "b")  # no RuntimeError, no OSError


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: _loop(d), "is a symlink loop"),
        (lambda d: _loop(d) / "x.json", "runs through a symlink loop"),
        (lambda d: os.mkfifo(d / "p") or d / "p", r"is a FIFO \(named pipe\), not a regular file"),
        (lambda d: (d / "n").symlink_to("/dev/null") or d / "n", "is a character device, not a regular file"),
        (lambda d: (d / "l").symlink_to(d / "gone.json") or d / "l", r"is a dangling symlink \(to .*gone.json\)"),
    ],
    ids=["loop", "folder-loop", "fifo", "link-to-dev-null", "dangling"],
)
def test_check_output_path_refuses_what_is_not_a_regular_file(tmp_path, make, message):
    target = make(tmp_path)
    with pytest.raises(InputError, match=message):
        check_output_path(target, "--json")
    with pytest.raises(InputError, match=message):
        write_json(target, {"a": 1})
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert not (tmp_path / "gone.json").exists()


def test_atomic_write_through_a_relative_link_in_another_folder(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "links").mkdir()
    (tmp_path / "real" / "t.txt").write_text("old")
    (tmp_path / "links" / "t.txt").symlink_to(Path("..") / "real" / "t.txt")
    assert check_output_path(tmp_path / "links" / "t.txt", "--out") == tmp_path / "links" / "t.txt"
    with atomic_write(tmp_path / "links" / "t.txt") as handle:
        handle.write("new")
    assert (tmp_path / "links" / "t.txt").is_symlink() and (tmp_path / "real" / "t.txt").read_text() == "new"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["t.txt"]


# ---------------------------------------------------------------------------- text reading
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufeff"), max_size=200)


@given(text=_TEXT, bom=st.booleans(), crlf=st.booleans())
@example(text="\r\n", bom=False, crlf=True)  # written "\r\r\n": two line ends, read "\n\n"
def test_read_text_gives_the_text_without_bom_and_with_lf(tmp_path_factory, text, bom, crlf):
    path = tmp_path_factory.mktemp("text") / "t.txt"
    raw = text.replace("\n", "\r\n") if crlf else text
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + raw.encode("utf-8"))
    # universal newlines, of the bytes written: "\r\n" and a lone "\r" each end a line
    assert read_text(path) == raw.replace("\r\n", "\n").replace("\r", "\n")


@given(text=st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=200))
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_ascii_text_in_utf16_is_refused_by_name(tmp_path_factory, encoding, text):
    path = tmp_path_factory.mktemp("text") / "t.txt"
    path.write_bytes(text.encode(encoding))
    with pytest.raises(InputError, match=r"t.txt: is UTF-16.*; expected UTF-8 text"):
        read_text(path)


def test_a_byte_that_is_not_utf8_is_named_with_its_line(tmp_path):
    (tmp_path / "t.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nth\xe9ree\r\n")
    with pytest.raises(InputError, match=r"t.txt: line 3 is not UTF-8 text \(byte 0xe9\)"):
        read_text(tmp_path / "t.txt")


def test_open_input_refuses_a_fifo_put_in_place_after_the_check(tmp_path, monkeypatch):
    """The one open of an input (text, archives, audio): without blocking, checked again on the descriptor,
    so a FIFO that replaces a regular file between the check and the open is refused, never waited on."""
    import os

    from lidframe.data import fileio

    pipe = tmp_path / "swapped.wav"
    os.mkfifo(pipe)
    monkeypatch.setattr(fileio, "check_input_file", lambda path, what="a file": Path(path))  # the check passed
    with pytest.raises(InputError, match="swapped.wav: is a FIFO"):
        fileio.open_input(pipe, "an audio file")
