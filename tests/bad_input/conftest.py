"""The bad-input suite's one check: exit 2, one line on stderr naming the problem, no traceback, nothing left behind.

Every family module (``test_<family>.py``) builds its broken inputs in ``tmp_path`` and
calls :func:`assert_refused` with the command line and the words the message must hold.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from lidframe.cli import main
from lidframe.data.simulate import simulate_system


@pytest.fixture(scope="module")
def good_sets():
    """A good (dev, eval) pair of small score sets: 6 enrolled speakers, 4 trials each."""
    return simulate_system(leakage=0.5, seed=13, n_enrolled=6, trials_per_speaker=4)


@pytest.fixture()
def folders(tmp_path, good_sets):
    """``(data, out)``: *data* holds ``dev.npz`` and ``eval.npz`` of :func:`good_sets`, *out* is empty."""
    dev, ev = good_sets
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    dev.save(data / "dev.npz")
    ev.save(data / "eval.npz")
    return data, out


@pytest.fixture()
def fifo(tmp_path):
    """Make FIFOs; a watchdog opens each for writing after 20 s, then every 5 s until the test ends, so a
    reader blocked on it (once or again) gets EOF, not a hang.

    A test whose code opened the FIFO then fails on its message (an empty file) instead
    of hanging the suite.
    """
    done = threading.Event()
    made: list[Path] = []

    def rescue():
        wait = 20
        while not done.wait(wait):
            for path in made:
                with contextlib.suppress(OSError):
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            wait = 5

    watchdog = threading.Thread(target=rescue, daemon=True)
    watchdog.start()

    def make(path: Path) -> Path:
        os.mkfifo(path)
        made.append(path)
        return path

    yield make
    done.set()
    watchdog.join()


def _snapshot(folders: Iterable[Path]) -> dict[str, tuple[int, int]]:
    """Every file below *folders* with (size, mtime_ns): what a refused run must not change."""
    state = {}
    for folder in folders:
        for root, _, files in os.walk(folder):
            for name in files:
                path = Path(root) / name
                try:
                    info = path.stat()
                except OSError:  # gone meanwhile, or a symlink loop: not a file a run could have changed
                    continue
                state[str(path)] = (info.st_size, info.st_mtime_ns)
    return state


def assert_refused(
    argv: Sequence[object],
    capsys: pytest.CaptureFixture[str],
    *,
    expect: Sequence[str],
    watch: Sequence[Path],
) -> str:
    """Run ``lidframe *argv*`` in-process and check that it refuses cleanly.

    Parameters
    ----------
    argv : sequence
        The command line after ``lidframe`` (paths are turned into strings).
    capsys : pytest fixture
        Captures stdout/stderr.
    expect : sequence of str
        Case-insensitive fragments the error line must contain (a file name, a row, an id,
        what was expected).
    watch : sequence of Path
        Folders in which no file may be created, changed or removed by the refused run.

    Returns
    -------
    str
        The error line (for further checks by the caller).
    """
    before = _snapshot(watch)
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2, f"exit {code}, expected 2; stderr: {err!r}"
    assert "Traceback" not in err and "Traceback" not in out, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}: {err!r}"
    line = lines[0]
    assert line.startswith("lidframe: error: "), line
    assert line.count("lidframe:") == 1, f"doubled prefix: {line!r}"
    # the words are looked for outside the test's own folders: pytest names tmp_path after
    # the test, so a fragment such as "crc" would otherwise match the path of the case
    # "npz_bad_crc" whatever the message said (a fragment that is itself a path is
    # looked for in the line as printed)
    masked = line
    for folder in sorted((str(Path(f).resolve()) for f in watch), key=len, reverse=True):
        masked = masked.replace(folder, "<dir>")
    for folder in sorted((str(f) for f in watch), key=len, reverse=True):
        masked = masked.replace(folder, "<dir>")
    for fragment in expect:
        haystack = line if os.sep in fragment else masked
        assert fragment.lower() in haystack.lower(), f"{fragment!r} not in {haystack!r}"
    assert _snapshot(watch) == before, "a refused run changed or left files behind"
    return line
