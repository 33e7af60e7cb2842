"""Bad input, family "grid state": a grid's output folder and what the grid reaches, broken underneath it.

Each case starts from a real, finished grid run (made once, copied per case) or a fresh
output folder, and breaks one thing: two cells' per-trial files swapped, a full disk (a
real one: a small tmpfs mounted for the test), the digest cache locked, read-only or
damaged, a dask scheduler that cannot be reached or never answers, a ``--spec`` that is
not there.  Every refusal is one line (exit 2) and leaves the folder as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lidframe import evaluate
from lidframe.cli import main
from lidframe.data import digests
from lidframe.data.scoreset import ScoreSet
from lidframe.data.simulate import simulate_system
from lidframe.grid import store
from tests.bad_input.conftest import assert_refused
from tests.servers import closed_port, listening_server

SPEC = """[grid]
calibrators = ["logistic", "isotonic"]
priors = ["uniform"]

[systems.alpha]
dev = "alpha_dev.npz"
eval = "alpha_eval.npz"
"""


@pytest.fixture(scope="module")
def spec_folder(tmp_path_factory) -> Path:
    """A spec of two cells (one system, two calibrators: per-trial files of the same trials)."""
    folder = tmp_path_factory.mktemp("spec")
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=8, trials_per_speaker=4)
    dev.save(folder / "alpha_dev.npz")
    ev.save(folder / "alpha_eval.npz")
    (folder / "grid.toml").write_text(SPEC)
    return folder


@pytest.fixture(scope="module")
def finished(spec_folder, tmp_path_factory) -> Path:
    """The output folder of the spec's finished grid run (copy it before breaking it)."""
    out = tmp_path_factory.mktemp("finished") / "out"
    assert main(["grid", str(spec_folder / "grid.toml"), "--out", str(out)]) == 0
    return out


@pytest.fixture()
def case(spec_folder, finished, tmp_path) -> tuple[Path, Path]:
    """``(spec, out)``: a copy of the spec folder and of its finished output folder."""
    shutil.copytree(spec_folder, tmp_path / "spec")
    shutil.copytree(finished, tmp_path / "out")
    return tmp_path / "spec" / "grid.toml", tmp_path / "out"


def per_trial_files(out: Path) -> dict[str, Path]:
    """calibrator -> the per-trial file its cell's row names."""
    connection = sqlite3.connect(out / "results.sqlite")
    try:
        return {c: out / p for c, p in connection.execute("SELECT calibrator, per_trial FROM cells")}
    finally:
        connection.close()


def stored_files(out: Path) -> list[tuple[str, str]]:
    """(per-trial path, calibrator) of every row of the store (none without a store)."""
    if not (out / "results.sqlite").exists():
        return []
    connection = sqlite3.connect(out / "results.sqlite")
    try:
        return connection.execute("SELECT per_trial, calibrator FROM cells WHERE per_trial IS NOT NULL").fetchall()
    except sqlite3.OperationalError:  # an empty store: no table yet
        return []
    finally:
        connection.close()


def alids(out: Path) -> dict[str, float]:
    """calibrator -> ALID stored for its cell."""
    import json

    connection = sqlite3.connect(out / "results.sqlite")
    try:
        return {c: json.loads(s)["alid"] for c, s in connection.execute("SELECT calibrator, summary FROM cells")}
    finally:
        connection.close()


def state(folder: Path, *, but: tuple[str, ...] = (".lock",)) -> dict[str, bytes]:
    """Every file below *folder* (but the lock file, whose holder's pid each run writes) with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name not in but
    }


# ------------------------------------------------------------------ per-trial files
def swap(first: Path, second: Path) -> None:
    parked = first.with_name("parked")
    os.replace(first, parked)
    os.replace(second, first)
    os.replace(parked, second)


@pytest.mark.parametrize("figures", [False, True], ids=["tables only", "with the page"])
def test_two_swapped_per_trial_files_are_refused_by_report(figures, case, capsys):
    spec, out = case
    files = per_trial_files(out)
    assert files["logistic"].read_bytes() != files["isotonic"].read_bytes()  # two cells, two different files
    swap(files["logistic"], files["isotonic"])  # both well-formed, same trials: only their digests tell
    argv = ["report", out] + (["--no-figures"] if not figures else [])
    line = assert_refused(argv, capsys, expect=["per-trial file", "grid cell alpha", "does not match"], watch=[out])
    assert files["logistic"].name in line or files["isotonic"].name in line
    assert not (out / "report").exists()


@pytest.mark.parametrize(
    "content",
    [b"PK\x03\x04 not the file the grid wrote " * 50, None],
    ids=["damaged", "another grid's file"],
)
def test_report_checks_each_per_trial_file_against_its_digest_before_reading_it(content, case, tmp_path, capsys):
    """A per-trial file that is not the one stored with its cell is refused by its digest, before any
    reader opens it: not read (and then called unreadable, or stale) first."""
    spec, out = case
    files = per_trial_files(out)
    if content is None:  # a well-formed per-trial file of other trials: what a reader would take for stale
        other = tmp_path / "other-out"
        dev, ev = simulate_system(leakage=0.3, seed=9, n_enrolled=5, trials_per_speaker=3)
        dev.save(tmp_path / "spec" / "alpha_dev.npz")
        ev.save(tmp_path / "spec" / "alpha_eval.npz")
        assert main(["grid", str(spec), "--out", str(other)]) == 0
        capsys.readouterr()
        content = per_trial_files(other)["logistic"].read_bytes()
    files["logistic"].write_bytes(content)
    line = assert_refused(
        ["report", out], capsys, expect=["per-trial file", "grid cell alpha", "does not match the digest"], watch=[out]
    )
    assert files["logistic"].name in line and "unreadable" not in line and "stale" not in line
    assert not (out / "report").exists()


def test_two_swapped_per_trial_files_are_refused_when_the_grid_would_reuse_them(case, capsys):
    spec, out = case
    files = per_trial_files(out)
    swap(files["logistic"], files["isotonic"])
    before = state(out)
    line = assert_refused(
        ["grid", spec, "--out", out],
        capsys,
        expect=["per-trial file", "grid cell alpha", "does not match", "delete it"],
        watch=[spec.parent, out / "cells"],
    )
    assert files["logistic"].name in line or files["isotonic"].name in line
    assert state(out) == before  # nor the store, grid.json or the digest cache


def test_a_per_trial_file_deleted_as_told_is_recomputed(case, capsys):
    spec, out = case
    files = per_trial_files(out)
    want = alids(out)
    swap(files["logistic"], files["isotonic"])
    files["logistic"].unlink()
    files["isotonic"].unlink()
    assert main(["grid", str(spec), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert said.count("recomputing 1 cell: its per-trial file") == 2 and "2 cells, 0 already stored, 2 computed" in said
    assert main(["report", str(out), "--no-figures"]) == 0
    assert alids(out) == pytest.approx(want, abs=1e-12)


# ------------------------------------------------------------------ two runs on one new folder
@contextlib.contextmanager
def held_lock(out: Path, pid: str = "4242") -> Iterator[int]:
    """Hold OUT's lock as another grid run would (an flock on ``OUT/.lock``, its pid written); yield the fd."""
    import fcntl

    descriptor = os.open(out / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.pwrite(descriptor, f"{pid}\n".encode(), 0)
        yield descriptor
    finally:
        os.close(descriptor)


def test_a_run_that_loses_the_lock_of_a_new_folder_leaves_the_winners_folder_alone(
    spec_folder, tmp_path, capsys, monkeypatch
):
    """Two grids started at once on a new OUT: both find no folder; the other one takes the lock
    first.  The loser is refused, and removes nothing: not the folder, not the winner's lock."""
    out = tmp_path / "new-out"
    real_lock = store.folder_lock
    winner: list[int] = []

    @contextlib.contextmanager
    def lock_taken_first(out_dir, **kwargs):
        winner.append(stack.enter_context(held_lock(Path(out_dir))))  # the other run got there first
        with real_lock(out_dir, **kwargs):
            yield

    with contextlib.ExitStack() as stack:
        monkeypatch.setattr(store, "folder_lock", lock_taken_first)
        assert_refused(
            ["grid", spec_folder / "grid.toml", "--out", out],
            capsys,
            expect=["another lidframe grid", "pid 4242", "is running on this folder"],
            watch=[spec_folder],
        )
        assert out.is_dir() and (out / ".lock").is_file()
        assert os.stat(out / ".lock").st_ino == os.fstat(winner[0]).st_ino  # the winner's lock file, still there
        assert (out / ".lock").read_text() == "4242\n"


def test_a_run_that_stops_before_its_store_exists_removes_the_new_folder_it_made(
    spec_folder, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "deeper" / "new-out"

    def no_store(out_dir):
        raise store.InputError(f"{out_dir}/results.sqlite: the store cannot be written (as if the disk were full)")

    monkeypatch.setattr(store, "open_store", no_store)
    assert_refused(
        ["grid", spec_folder / "grid.toml", "--out", out], capsys, expect=["results.sqlite"], watch=[spec_folder]
    )
    assert not out.exists()


def test_a_lock_taken_on_a_lock_file_removed_meanwhile_is_refused(case, capsys, monkeypatch):
    """A run that stopped on a folder it made removes its lock file, holding the lock: a run that opened
    the old file just before, and locks it just after, holds a lock nobody else sees, and must stop."""
    import fcntl

    spec, out = case
    real_flock = fcntl.flock

    def flock_after_removal(descriptor, operation):
        if operation & fcntl.LOCK_EX:
            (out / ".lock").unlink()  # what the other run did meanwhile
        return real_flock(descriptor, operation)

    monkeypatch.setattr(fcntl, "flock", flock_after_removal)
    before = state(out, but=(".lock",))
    assert_refused(
        ["grid", spec, "--out", out],
        capsys,
        expect=[str(out), "lock file", "removed", "run it again"],
        watch=[spec.parent],
    )
    assert state(out, but=(".lock",)) == before


# ------------------------------------------------------------------ a real full disk
def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False)


@contextlib.contextmanager
def mounted_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of *size* mounted on *folder* for the block (skips the test where mounting is not permitted)."""
    folder.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None or shutil.which("umount") is None:
        pytest.skip("no mount/umount command here: a real full disk needs a small tmpfs")
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs (a real full disk) needs root with CAP_SYS_ADMIN")
    result = _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder))
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (no CAP_SYS_ADMIN?): {result.stderr.strip()}")
    try:
        yield folder
    finally:
        if _run("umount", str(folder)).returncode != 0:
            _run("umount", "-l", str(folder))


def fill(disk: Path, *, leave: int = 0) -> Path:
    """Fill *disk* to the last byte, then free *leave* bytes; return the filler file."""
    filler = disk / "filler"
    block = b"\0" * (1 << 16)
    with open(filler, "wb", buffering=0) as handle, contextlib.suppress(OSError):
        while True:
            handle.write(block)
    if leave:
        os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def leftovers(out: Path) -> list[str]:
    """Half-written files: temporary names and SQLite journals."""
    return [
        str(p.relative_to(out))
        for p in out.rglob("*")
        if p.name.endswith((".tmp", "-journal", "-wal")) or (p.name.startswith(".") and p.name != ".lock")
    ]


def test_a_full_disk_under_the_digest_cache_is_one_line_and_changes_nothing(case, tmp_path, capsys):
    spec, finished_out = case
    with mounted_tmpfs(tmp_path / "disk", "1m") as disk:
        out = disk / "out"
        shutil.copytree(finished_out, out)
        (out / "cache" / "digests.sqlite").unlink()  # to be written again by the next run
        filler = fill(disk)
        before = state(out)
        assert_refused(
            ["grid", spec, "--out", out],
            capsys,
            expect=["digests.sqlite", "disk is full", "free space"],
            watch=[spec.parent, out / "cells"],
        )
        assert state(out) == before and leftovers(out) == []
        assert not (out / "cache" / "digests.sqlite").exists()
        filler.unlink()
        assert main(["grid", str(spec), "--out", str(out)]) == 0
        assert "2 cells, 2 already stored, 0 computed" in capsys.readouterr().out
        assert (out / "cache" / "digests.sqlite").is_file()


@pytest.mark.parametrize("room_kib", [0, 8, 24, 48, 64])
def test_a_grid_on_a_nearly_full_disk_stops_in_one_line_and_resumes_once_there_is_room(
    room_kib, spec_folder, tmp_path, capsys
):
    """Wherever the disk runs out (lock, store, digest cache, per-trial file, grid.json), nothing is half-written."""
    spec = spec_folder / "grid.toml"
    with mounted_tmpfs(tmp_path / "disk", "512k") as disk:
        out = disk / "out"
        filler = fill(disk, leave=room_kib * 1024)
        code = main(["grid", str(spec), "--out", str(out)])
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err
        if code != 0:
            lines = [line for line in captured.err.splitlines() if line.strip()]
            assert code == 2 and len(lines) == 1 and lines[0].startswith("lidframe: error: "), captured.err
            assert "space" in lines[0] or "full" in lines[0], lines[0]
        if out.exists():
            assert leftovers(out) == []
            if (out / "results.sqlite").exists():
                store.check_store(out, write=True)  # a whole store, or none
            named = {str(out / p) for p, _ in stored_files(out)}
            assert {str(p) for p in out.glob("cells/*")} <= named  # no per-trial file without its row
        filler.unlink()
        assert main(["grid", str(spec), "--out", str(out)]) == 0
        capsys.readouterr()
        dev, ev = ScoreSet.load(spec_folder / "alpha_dev.npz"), ScoreSet.load(spec_folder / "alpha_eval.npz")
        want = {c: evaluate(dev, ev, calibrator=c).summary["alid"] for c in ("logistic", "isotonic")}
        assert alids(out) == pytest.approx(want, abs=1e-12)
        assert main(["report", str(out), "--no-figures"]) == 0


# ------------------------------------------------------------------ a full disk, on any machine
#: What SQLite says when a write finds no room (SQLITE_FULL).
DISK_FULL = "database or disk is full"
#: SQL statements that write: on a full disk each fails as SQLite's do.
_WRITES = ("CREATE", "INSERT", "REPLACE", "UPDATE", "DELETE", "ALTER", "DROP")


def full_disk_under(monkeypatch, file_name: str, *, statement: str = "") -> None:
    """Make every write to SQLite files named *file_name* (only those statements starting with *statement*,
    if given) fail with SQLite's full-disk error: the tests below run without root (no tmpfs to fill)."""
    real_connect = sqlite3.connect

    def fails(sql: str) -> bool:
        text = " ".join(sql.split()).upper()
        return text.startswith(statement.upper()) if statement else text.startswith(_WRITES) or "USER_VERSION =" in text

    class FullDisk(sqlite3.Connection):
        def execute(self, sql, *args):
            if fails(sql):
                raise sqlite3.OperationalError(DISK_FULL)
            return super().execute(sql, *args)

        def executemany(self, sql, *args):
            if fails(sql):
                raise sqlite3.OperationalError(DISK_FULL)
            return super().executemany(sql, *args)

    def connect(database, *args, **kwargs):
        if Path(str(database).removeprefix("file:").split("?")[0]).name == file_name and "mode=ro" not in str(database):
            kwargs["factory"] = FullDisk
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)


def test_a_full_disk_under_the_digest_cache_is_one_line_on_any_machine(case, capsys, monkeypatch):
    spec, out = case
    (out / "cache" / "digests.sqlite").unlink()  # to be written again by the next run
    before = state(out)
    with monkeypatch.context() as patch:
        full_disk_under(patch, "digests.sqlite")
        assert_refused(
            ["grid", spec, "--out", out],
            capsys,
            expect=["digests.sqlite", "disk is full", "free space"],
            watch=[spec.parent, out / "cells"],
        )
    assert state(out) == before and leftovers(out) == []
    assert not (out / "cache" / "digests.sqlite").exists()  # not even an empty file
    assert main(["grid", str(spec), "--out", str(out)]) == 0  # room again: the run goes on from there
    assert "2 cells, 2 already stored, 0 computed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "statement, expect",
    [
        ("", ["results.sqlite", "disk is full", "free space"]),  # the store cannot even be created
        ("INSERT OR REPLACE INTO cells", ["results.sqlite", "cannot store cell alpha", "disk is full", "free space"]),
    ],
    ids=["creating the store", "storing a cell"],
)
def test_a_full_disk_under_the_store_is_one_line_and_leaves_nothing_half_written(
    statement, expect, spec_folder, tmp_path, capsys, monkeypatch
):
    """On a new output folder: where the store runs out of room, the run stops in one line, with no
    folder left if no store was made, no per-trial file without its row, and resumes once there is room."""
    spec, out = spec_folder / "grid.toml", tmp_path / "out"
    with monkeypatch.context() as patch:
        full_disk_under(patch, "results.sqlite", statement=statement)
        assert_refused(["grid", spec, "--out", out], capsys, expect=expect, watch=[spec_folder])
    if statement:  # the store was made, empty: a whole store, no cell in it, no per-trial file
        assert leftovers(out) == [] and stored_files(out) == []
        assert store.check_store(out, write=True) == store.SCHEMA_VERSION
        assert not (out / "cells").exists() or list((out / "cells").iterdir()) == []
    else:
        assert not out.exists()
    assert main(["grid", str(spec), "--out", str(out)]) == 0
    assert "2 cells, 0 already stored, 2 computed" in capsys.readouterr().out


# ------------------------------------------------------------------ the digest cache
def test_a_digest_cache_locked_by_another_program_is_one_line(case, capsys, monkeypatch):
    spec, out = case
    monkeypatch.setattr(digests, "BUSY_TIMEOUT_S", 0.2)
    holder = sqlite3.connect(out / "cache" / "digests.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # e.g. an SQLite browser in the middle of a write
    try:
        before = state(out)
        assert_refused(
            ["grid", spec, "--out", out],
            capsys,
            expect=["digests.sqlite", "locked by another process", "try again"],
            watch=[spec.parent, out / "cells"],
        )
        assert state(out) == before
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_read_only_digest_cache_is_one_line(case, tmp_path, capsys):
    spec, out = case
    cache = out / "cache"
    saved = tmp_path / "saved-cache"
    shutil.copytree(cache, saved)
    (saved / "digests.sqlite").unlink()  # the next run must write it
    with mounted_tmpfs(cache, "256k"):
        shutil.copytree(saved, cache, dirs_exist_ok=True)
        if _run("mount", "-o", "remount,ro", str(cache)).returncode != 0:
            pytest.skip("cannot remount the tmpfs read-only here")
        before = state(out)
        assert_refused(
            ["grid", spec, "--out", out],
            capsys,
            expect=["digests.sqlite", "read-only"],
            watch=[spec.parent, out / "cells"],
        )
        assert state(out) == before


def test_a_damaged_digest_cache_is_rebuilt_with_one_warning(case, capsys):
    spec, out = case
    (out / "cache" / "digests.sqlite").write_bytes(b"not an SQLite database " * 100)
    assert main(["grid", str(spec), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "digests.sqlite: unreadable digest cache" in err and "rebuilding it" in err
    assert digests.DigestCache(out / "cache" / "digests.sqlite")._entries  # a readable cache again


# ------------------------------------------------------------------ dask schedulers
def refused_within(seconds: float, *args, **kwargs) -> str:
    """:func:`assert_refused` in a thread that must end within *seconds* (a hang fails, not stalls, the test)."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(assert_refused(*args, **kwargs))
        except BaseException as exc:
            outcome.append(exc)

    began = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting for the scheduler after {seconds} s"
    (result,) = outcome
    if isinstance(result, BaseException):
        raise result
    assert time.monotonic() - began < seconds
    return result


@pytest.fixture()
def short_connect_timeout(monkeypatch):
    pytest.importorskip("distributed")
    from lidframe.core import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 2)


@pytest.mark.parametrize("fresh", [True, False], ids=["new folder", "finished folder"])
@pytest.mark.parametrize("kind", ["unreachable", "silent"])
def test_a_scheduler_that_does_not_answer_is_refused_quickly_leaving_the_folder_as_it_was(
    kind, fresh, case, tmp_path, capsys, short_connect_timeout
):
    spec, out = case
    if fresh:
        out = tmp_path / "new-out"
    with contextlib.ExitStack() as stack:
        port = stack.enter_context(listening_server(None)) if kind == "silent" else closed_port()
        address = f"tcp://127.0.0.1:{port}"
        before = state(out, but=()) if out.exists() else None
        refused_within(
            15,
            ["grid", spec, "--out", out, "--backend", "dask", "--scheduler", address],
            capsys,
            expect=["scheduler", address],
            watch=[tmp_path],
        )
    if fresh:
        assert not out.exists()
    else:
        assert state(out, but=()) == before


# ------------------------------------------------------------------ report --spec
@pytest.mark.parametrize(
    "spec_name, content, expect",
    [
        ("nope.toml", None, ["nope.toml", "no such grid spec"]),
        ("broken.toml", "[grid\n", ["broken.toml", "not valid TOML"]),
        ("folder.toml", "folder", ["folder.toml", "is a folder"]),
    ],
    ids=["missing", "not TOML", "a folder"],
)
def test_report_with_a_spec_that_is_not_one_is_refused(spec_name, content, expect, case, tmp_path, capsys):
    _, out = case
    given = tmp_path / spec_name
    if content == "folder":
        given.mkdir()
    elif content is not None:
        given.write_text(content)
    assert_refused(["report", out, "--spec", given, "--no-figures"], capsys, expect=expect, watch=[tmp_path])
    assert not (out / "report").exists()
