"""Grids as real processes: one grid per output folder at a time; pool workers die with their parent."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.grid.test_grid import make_spec

ROOT = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")


def start_grid(spec: Path, out: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "lidframe.cli", "grid", str(spec), "--out", str(out), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    """Running (a zombie, which nobody may reap in a container, is not alive)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def cpu_ticks(pid: int) -> int:
    """The CPU time process *pid* has used so far (clock ticks, user + system); -1 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return -1
    return int(fields[11]) + int(fields[12])  # utime and stime, fields 14 and 15 of proc(5)


def slow_spec(tmp_path: Path) -> Path:
    return make_spec(tmp_path / "spec", ci="[grid.bootstrap]\nn_boot = 4000\n")  # tens of seconds of cells


def stored(out: Path) -> int:
    try:
        connection = sqlite3.connect(out / "results.sqlite")
        try:
            return connection.execute("SELECT count(*) FROM cells").fetchone()[0]
        finally:
            connection.close()
    except sqlite3.Error:
        return 0


@linux_only
@pytest.mark.slow
def test_a_second_grid_on_the_same_folder_stops_naming_the_first(tmp_path):
    spec = slow_spec(tmp_path)
    out = tmp_path / "out"
    first = start_grid(spec, out)
    try:
        wait_for(
            lambda: (out / ".lock").is_file() and (out / ".lock").read_text().strip() == str(first.pid), 60, "lock"
        )
        second = start_grid(spec, out)
        _, err = second.communicate(timeout=120)
        assert second.returncode == 2, err
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and f"another lidframe grid (pid {first.pid}) is running" in lines[0], err
        assert first.poll() is None  # the first goes on
    finally:
        first.kill()
        first.wait()
    done_before = stored(out)
    assert done_before < 12
    # the killed holder's lock file is still there, but the kernel released its lock
    third = start_grid(make_spec(tmp_path / "fast"), out)
    _, err = third.communicate(timeout=300)
    assert third.returncode == 0, err


@linux_only
@pytest.mark.slow
def test_pool_workers_exit_when_the_grid_process_is_killed(tmp_path):
    spec = slow_spec(tmp_path)
    out = tmp_path / "out"
    parent = start_grid(spec, out, "--jobs", "2")
    try:
        wait_for(lambda: len(children(parent.pid)) >= 2 or parent.poll() is not None, 90, "two pool workers")
        workers = children(parent.pid)
        assert len(workers) >= 2 and parent.poll() is None
        started = {w: cpu_ticks(w) for w in workers}
        # the workers are busy with cells: each has used the CPU since it was found (polled, no fixed wait)
        wait_for(lambda: all(cpu_ticks(w) > started[w] >= 0 for w in workers), 90, "the workers to work on cells")
        assert all(alive(w) for w in workers) and parent.poll() is None
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
    try:
        wait_for(lambda: not any(alive(w) for w in workers), 5, "the workers to exit")
    finally:
        for w in workers:  # never leave them behind, even when the test fails
            if alive(w):
                os.kill(w, signal.SIGKILL)
