"""Every benchmark script under bench/ imports: its module-level imports resolve against this tree.

A benchmark is run by hand, so a moved helper (``tests.audio.write_voice`` became
``tests.voices.write_voice``) would otherwise break it silently. Importing a script runs
its imports and definitions, not its ``main()``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(
    p for p in BENCH.glob("*.py") if p.name not in ("__init__.py", "provenance.py")
)  # provenance: a helper
#: What a script needs beyond the test dependencies (skipped, with the reason, without it).
NEEDS = {"embed_cpu.py": "torch", "gpu_all.py": "torch"}


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_bench_script_imports(script, monkeypatch):
    if script.name in NEEDS:
        pytest.importorskip(NEEDS[script.name], reason=f"{script.name} needs {NEEDS[script.name]}")
    monkeypatch.syspath_prepend(str(BENCH.parent))
    spec = importlib.util.spec_from_file_location(f"bench_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    assert callable(getattr(module, "main", None)), f"{script.name} has no main()"
