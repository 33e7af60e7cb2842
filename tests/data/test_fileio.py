"""Atomic output: the mode a plain open() gives, errors named after the target, all-or-nothing staging."""

from __future__ import annotations

import errno
import os
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe.data.fileio import atomic_path, atomic_write, check_output_path, staged_outputs, write_json
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
