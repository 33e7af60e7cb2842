import os
import tempfile
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# One BLAS thread per test process: xdist already runs one process per core, and OpenBLAS's own
# threads on the tiny products of these tests wait for each other by spinning, which on 2
# cores, and more so on a busy machine, made tests 4 to 10 times slower (a Logistic fit on 256
# pairs: 12 ms on one thread, 130 ms on two under load).  Read when numpy first loads (after
# this; subprocesses inherit it); an explicit setting in the environment wins.  torch reads
# MKL_NUM_THREADS too: one intra-op thread.  The engines' own threads (OMP_NUM_THREADS,
# lidframe.runtime.workers.default_threads) are left as they are.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

settings.register_profile("default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@cache
def permissions_enforced() -> bool:
    """Whether this process is refused a write into a read-only folder.

    Not so for root (or any process with CAP_DAC_OVERRIDE), nor on file systems without
    POSIX modes: there, tests of unreadable files and read-only folders cannot refuse.
    """
    with tempfile.TemporaryDirectory() as folder:
        locked = Path(folder) / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        try:
            (locked / "probe").write_text("")
        except PermissionError:
            return True
        finally:
            locked.chmod(0o700)
        return False


def pytest_collection_modifyitems(config, items):
    """Skip ``@pytest.mark.permissions`` tests where file permissions are not enforced."""
    marked = [item for item in items if item.get_closest_marker("permissions")]
    if marked and not permissions_enforced():
        skip = pytest.mark.skip(reason="file permissions are not enforced here (root or CAP_DAC_OVERRIDE)")
        for item in marked:
            item.add_marker(skip)
