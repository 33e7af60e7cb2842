"""Bad input, family "stores": a grid output folder that cannot be used is refused, naming the file, with nothing changed.

Each case starts from the output folder of a real, finished grid run (made once, copied per
case), breaks one thing in it, and runs ``lidframe grid`` or ``lidframe report`` on it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lidframe.cli import main
from lidframe.data.simulate import simulate_system
from lidframe.grid import store
from tests.bad_input.conftest import assert_refused

SPEC = """[grid]
calibrators = ["logistic"]
priors = ["uniform"]

[systems.alpha]
dev = "alpha_dev.npz"
eval = "alpha_eval.npz"
"""


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A spec folder and the output folder of its finished grid run (``spec/``, ``out/``)."""
    root = tmp_path_factory.mktemp("finished")
    (root / "spec").mkdir()
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=8, trials_per_speaker=4)
    dev.save(root / "spec" / "alpha_dev.npz")
    ev.save(root / "spec" / "alpha_eval.npz")
    (root / "spec" / "grid.toml").write_text(SPEC)
    assert main(["grid", str(root / "spec" / "grid.toml"), "--out", str(root / "out")]) == 0
    return root


def store_file(out: Path) -> Path:
    return out / "results.sqlite"


def garbage(out: Path) -> None:
    store_file(out).write_bytes(b"this is not an SQLite database, just text " * 200)


def truncated(out: Path) -> None:
    data = store_file(out).read_bytes()
    store_file(out).write_bytes(data[:4096] + b"\0" * 100 + data[4096 + 100 :][:100])


def header_damaged(out: Path) -> None:
    data = bytearray(store_file(out).read_bytes())
    data[16:24] = b"\xff" * 8  # page size and format bytes of the header
    store_file(out).write_bytes(bytes(data))


def store_folder(out: Path) -> None:
    store_file(out).unlink()
    store_file(out).mkdir()


def foreign_database(out: Path) -> None:
    store_file(out).unlink()
    connection = sqlite3.connect(store_file(out))
    connection.execute("CREATE TABLE inventory (item TEXT, count INTEGER)")
    connection.commit()
    connection.close()


def wrong_columns(out: Path) -> None:
    store_file(out).unlink()
    connection = sqlite3.connect(store_file(out))
    connection.execute("CREATE TABLE cells (cell_id TEXT, alid REAL)")
    connection.commit()
    connection.close()


def newer_layout(out: Path) -> None:
    connection = sqlite3.connect(store_file(out))
    connection.execute("PRAGMA user_version = 99")
    connection.commit()
    connection.close()


def read_only(out: Path) -> None:
    store_file(out).chmod(0o444)


def empty_store(out: Path) -> None:
    store_file(out).write_bytes(b"")


def no_store(out: Path) -> None:
    store_file(out).unlink()


def only_failed_cells(out: Path) -> None:
    connection = sqlite3.connect(store_file(out))
    connection.execute("UPDATE cells SET status = 'error', error = 'boom', summary = NULL")
    connection.commit()
    connection.close()


def unreadable_summary(out: Path) -> None:
    connection = sqlite3.connect(store_file(out))
    connection.execute("UPDATE cells SET summary = '{not json'")
    connection.commit()
    connection.close()


def per_trial(out: Path) -> Path:
    connection = sqlite3.connect(store_file(out))
    (name,) = connection.execute("SELECT per_trial FROM cells").fetchone()
    connection.close()
    return out / name


def per_trial_missing(out: Path) -> None:
    per_trial(out).unlink()


def per_trial_damaged(out: Path) -> None:
    per_trial(out).write_bytes(b"PK\x03\x04 not really a zip")


def report_is_a_file(out: Path) -> None:
    (out / "report").write_text("my notes, not a folder")


def out_is_a_file(out: Path) -> None:
    shutil.rmtree(out)
    out.write_text("a file where the output folder should be")


DAMAGED = "not a readable lidframe grid store"
#: case -> (break the folder, the command after ``lidframe``, fragments of the error line)
CASES: dict[str, tuple[Callable[[Path], None], str, list[str]]] = {
    "grid: store is not SQLite": (garbage, "grid", ["results.sqlite", DAMAGED, "move it away"]),
    "report: store is not SQLite": (garbage, "report", ["results.sqlite", DAMAGED, "move it away"]),
    "grid: store truncated": (truncated, "grid", ["results.sqlite", "move it away"]),
    "report: store truncated": (truncated, "report", ["results.sqlite", "move it away"]),
    "grid: store header damaged": (header_damaged, "grid", ["results.sqlite", "move it away"]),
    "report: store header damaged": (header_damaged, "report", ["results.sqlite", "move it away"]),
    "grid: store is a folder": (store_folder, "grid", ["results.sqlite", "is not a file"]),
    "report: store is a folder": (store_folder, "report", ["results.sqlite", "is not a file"]),
    "grid: another program's database": (
        foreign_database,
        "grid",
        ["results.sqlite", "not a lidframe grid store", "inventory"],
    ),
    "report: another program's database": (foreign_database, "report", ["results.sqlite", "not a lidframe grid store"]),
    "grid: cells table of another layout": (
        wrong_columns,
        "grid",
        ["results.sqlite", "not a lidframe grid store", "alid"],
    ),
    "report: cells table of another layout": (wrong_columns, "report", ["results.sqlite", "not a lidframe grid store"]),
    "grid: store of a newer lidframe": (newer_layout, "grid", ["results.sqlite", "newer lidframe", "layout 99"]),
    "report: store of a newer lidframe": (newer_layout, "report", ["results.sqlite", "newer lidframe"]),
    "grid: store read-only": (read_only, "grid", ["results.sqlite", "read-only", "0444"]),
    "report: empty store file": (empty_store, "report", ["results.sqlite", "holds no cells"]),
    "report: no store": (no_store, "report", ["no results.sqlite", "run lidframe grid"]),
    "report: only failed cells": (only_failed_cells, "report", ["results.sqlite", "no finished cells"]),
    "report: unreadable summary": (unreadable_summary, "report", ["results.sqlite", "unreadable summary", "alpha"]),
    "report: per-trial file missing": (
        per_trial_missing,
        "report",
        ["per-trial file", ".npz", "alpha", "rerun lidframe grid"],
    ),
    "report: per-trial file damaged": (
        per_trial_damaged,
        "report",
        ["per-trial file", ".npz", "does not match the digest"],
    ),
    "report: report folder is a file": (report_is_a_file, "report", ["report", "is a file, not a folder"]),
    "grid: output folder is a file": (out_is_a_file, "grid", ["out", "is a file, not a grid output folder"]),
    "report: output folder is a file": (out_is_a_file, "report", ["out", "is a file, not a grid output folder"]),
}


def command(kind: str, root: Path, out: Path, *extra: str) -> list[object]:
    if kind == "grid":
        return ["grid", root / "spec" / "grid.toml", "--out", out, *extra]
    return ["report", out, *extra]


@pytest.fixture()
def case_root(finished, tmp_path) -> Iterator[Path]:
    root = tmp_path / "case"
    shutil.copytree(finished, root)
    yield root
    for path in root.rglob("*"):  # undo a chmod so that pytest can clean up
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.mark.parametrize("case", list(CASES))
def test_broken_store_is_refused(case, case_root, capsys):
    breaker, kind, expect = CASES[case]
    out = case_root / "out"
    breaker(out)
    assert_refused(command(kind, case_root, out), capsys, expect=expect, watch=[case_root])


def test_a_read_only_store_can_still_be_reported(case_root, capsys):
    out = case_root / "out"
    read_only(out)
    assert main(["report", str(out), "--no-figures"]) == 0
    assert "| alpha |" in capsys.readouterr().out


@pytest.fixture()
def short_busy_timeout(monkeypatch):
    monkeypatch.setattr(store, "BUSY_TIMEOUT_S", 0.2)


@pytest.mark.parametrize("kind", ["grid", "report"])
def test_a_store_locked_by_another_program_is_refused(kind, case_root, capsys, short_busy_timeout):
    out = case_root / "out"
    holder = sqlite3.connect(store_file(out), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # e.g. an SQLite browser in the middle of a write
    try:
        assert_refused(
            command(kind, case_root, out),
            capsys,
            expect=["results.sqlite", "locked by another process", "try again"],
            watch=[case_root],
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_folder_held_by_another_grid_is_refused_naming_its_pid(case_root, capsys):
    out = case_root / "out"
    descriptor = os.open(out / ".lock", os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running grid holds it
        os.ftruncate(descriptor, 0)
        os.write(descriptor, b"31337\n")
        assert_refused(
            command("grid", case_root, out),
            capsys,
            expect=["another lidframe grid (pid 31337) is running", str(out), "--out"],
            watch=[case_root],
        )
    finally:
        os.close(descriptor)


@pytest.mark.parametrize(
    "extra, expect",
    [
        (["--jobs", "0"], ["jobs must be a positive number", "0"]),
        (["--jobs", "-3"], ["jobs must be a positive number", "-3"]),
        (["--backend", "dask"], ["--backend dask needs --scheduler"]),
    ],
    ids=["jobs 0", "jobs negative", "dask without a scheduler"],
)
def test_bad_run_options_are_refused_before_anything_is_written(extra, expect, finished, tmp_path, capsys):
    if "dask" in extra:
        pytest.importorskip("distributed")
    root = tmp_path / "case"
    shutil.copytree(finished / "spec", root / "spec")
    assert_refused(command("grid", root, tmp_path / "new-out", *extra), capsys, expect=expect, watch=[tmp_path])
    assert not (tmp_path / "new-out").exists()


def test_the_broken_cases_were_real_stores_before(finished):
    """The fixture every case breaks is a good store: grid resumes it and report reads it."""
    connection = sqlite3.connect(store_file(finished / "out"))
    try:
        (count,) = connection.execute("SELECT count(*) FROM cells WHERE status = 'ok'").fetchone()
        (summary,) = connection.execute("SELECT summary FROM cells").fetchone()
    finally:
        connection.close()
    assert count == 1 and "alid" in json.loads(summary)
    assert store.check_store(finished / "out", write=True) == store.SCHEMA_VERSION
