"""The other readers that opened a user's file by its name now open it through the one opener (issue 39).

``tests/test_readers.py`` finds every such call in the package; these tests hold the
behaviour of the ones it found:

* the grid spec (``lidframe grid SPEC``): a FIFO or ``/dev/zero`` was "no such grid spec",
  TOML nested 100,000 deep a ``RecursionError`` traceback, and a spec was read whole
  whatever its size;
* ``OUT/grid.json`` (``lidframe report``): a FIFO hung, JSON nested too deep was a
  ``RecursionError`` traceback, and the utility file it records was hashed with
  ``open(path, "rb")`` -- a FIFO there hung the report;
* ``file_sha256`` (every input digest), ``.npz`` / ``.npy`` archives, neural checkpoints,
  parquet embeddings and the grid's digest cache: a FIFO put in a checked file's place
  (or one that was never checked) blocked the open.

A reader that would block is released by the ``fifo`` fixture's watchdog
(tests/bad_input/conftest.py), so a regression fails on its message instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lidframe.data import fileio
from lidframe.errors import InputError
from tests.bad_input.conftest import assert_refused

FIFO_LINE = r"is a FIFO \(named pipe\), not a regular file"


# ---------------------------------------------------------------- the grid spec
def _spec_cases(folder: Path, make_fifo: Callable[[Path], Path]) -> dict[str, tuple[str, list[str]]]:
    deep = folder / "deep.toml"
    deep.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    big = folder / "big.toml"
    with open(big, "wb") as handle:
        handle.truncate(17_000_000)  # sparse: over the 16 MB a spec may be
    digits = folder / "digits.toml"
    digits.write_text("a = 1" + "0" * 5000 + "\n")
    return {
        "fifo": (str(make_fifo(folder / "spec.toml")), ["spec.toml", "is a FIFO", "expected a grid spec file"]),
        "dev_zero": ("/dev/zero", ["/dev/zero", "is a character device", "expected a grid spec file"]),
        "nested_100000_deep": (str(deep), ["deep.toml", "nested deeper than the parser can follow"]),
        "over_the_cap": (str(big), ["big.toml", "is 17.0 MB, more than the 16.0 MB", "grid spec"]),
        "an_integer_of_5000_digits": (str(digits), ["digits.toml", "not valid", "4300 digits"]),
    }


@pytest.mark.parametrize(
    "case", ["fifo", "dev_zero", "nested_100000_deep", "over_the_cap", "an_integer_of_5000_digits"]
)
def test_a_grid_spec_that_cannot_be_read_is_one_line(tmp_path, fifo, capsys, case):
    if case == "dev_zero" and not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    spec, expect = _spec_cases(tmp_path, fifo)[case]
    out = tmp_path / "out"
    assert_refused(["grid", spec, "--out", out], capsys, expect=expect, watch=[tmp_path])
    assert not out.exists()


# ---------------------------------------------------------------- OUT/grid.json
def test_a_grid_json_nested_too_deep_or_a_fifo_is_no_record(tmp_path, fifo):
    """``lidframe report`` reads grid.json through the opener: what is not a record means "not checked", no traceback."""
    from lidframe.grid.freshness import check_freshness
    from lidframe.grid.utility import grid_utility

    deep, piped = tmp_path / "deep", tmp_path / "piped"
    deep.mkdir()
    piped.mkdir()
    (deep / "grid.json").write_text("[" * 200_000 + "]" * 200_000)
    fifo(piped / "grid.json")
    for out in (deep, piped):
        assert grid_utility(out) == {}
        freshness = check_freshness(out)
        assert freshness.unchecked is not None and "grid.json" in freshness.unchecked, freshness


def test_a_recorded_utility_file_that_is_a_fifo_is_named_not_hashed(tmp_path, fifo):
    """Before: file_sha256 opened the FIFO grid.json recorded (``open(path, "rb")``) and the report hung."""
    from lidframe.grid.utility import grid_utility

    pipe = fifo(tmp_path / "u.json")
    (tmp_path / "grid.json").write_text(
        json.dumps({"spec": str(tmp_path / "gone.toml"), "utility": {"anon": str(pipe)}})
    )
    with pytest.raises(InputError, match=rf"the utility file of system 'anon' \({pipe}\): .*{FIFO_LINE}"):
        grid_utility(tmp_path)


# ---------------------------------------------------------------- readers of checked files
def test_file_sha256_refuses_a_fifo(tmp_path, fifo):
    """Every input digest (grid cache keys, the report's inputs, checkpoints) opens through the opener."""
    pipe = fifo(tmp_path / "scores.npz")
    with pytest.raises(InputError, match=rf"scores\.npz: {FIFO_LINE}"):
        fileio.file_sha256(pipe)


def test_the_digest_cache_refuses_a_fifo_in_its_place(tmp_path, fifo):
    """SQLite opens by name and blocks on a FIFO: the cache file is checked first."""
    from lidframe.data.digests import DigestCache

    pipe = fifo(tmp_path / "digests.sqlite")
    with pytest.raises(InputError, match=rf"digests\.sqlite: {FIFO_LINE}; expected a digest cache"):
        DigestCache(pipe)


@pytest.fixture()
def check_passes(monkeypatch):
    """The input check passes whatever the file (as when a FIFO replaces it right after the check)."""

    def passed(path, what="a file"):
        return Path(path)

    def patch(*modules) -> None:
        for module in (fileio, *modules):
            monkeypatch.setattr(module, "check_input_file", passed, raising=False)

    return patch


def test_npz_and_npy_archives_are_opened_by_the_opener(tmp_path, fifo, check_passes):
    from lidframe.data import npzfile

    check_passes(npzfile)
    for name, read in (("s.npz", npzfile.read_npz), ("s.npy", npzfile.read_npy), ("k.npz", npzfile.npz_keys)):
        pipe = fifo(tmp_path / name)
        with pytest.raises(InputError, match=rf"{name}: {FIFO_LINE}"):
            read(pipe)


def test_a_checkpoint_that_is_a_fifo_is_named_as_one(tmp_path, fifo):
    """Before: "no such checkpoint file" (Path.is_file is False for a FIFO); a FIFO swapped in after that blocked torch.load."""
    pytest.importorskip("torch", reason="the neural attackers need torch")
    from lidframe.attackers.neural import load_weights_file

    pipe = fifo(tmp_path / "model.ckpt")
    with pytest.raises(InputError, match=rf"model\.ckpt: {FIFO_LINE}; expected a checkpoint file"):
        load_weights_file(pipe)


def test_parquet_embeddings_are_opened_by_the_opener(tmp_path, fifo, check_passes):
    pytest.importorskip("pyarrow", reason="parquet needs pyarrow")
    from lidframe.attackers import precomputed

    check_passes(precomputed)
    pipe = fifo(tmp_path / "e.parquet")
    with pytest.raises(InputError, match=rf"e\.parquet: {FIFO_LINE}"):
        precomputed.read_embeddings(pipe)
