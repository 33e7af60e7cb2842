"""The ``Examples`` of the docstrings of the numeric wings run, so that an example cannot rot.

Each module of lidframe.core, .metrics, .stats, .registry, .data and .analyses is imported and its
docstrings' examples run with :mod:`doctest` (the wings with torch or matplotlib examples are left out:
their examples need the extras).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import lidframe

WINGS = ("core", "metrics", "stats", "registry", "data", "analyses")
#: Modules that import torch (and triton) when imported: left out, so that the test imports neither into a worker.
NEEDS_TORCH = ("lidframe.core.triton_lid",)


def _modules() -> list[str]:
    names = []
    for wing in WINGS:
        package = importlib.import_module(f"lidframe.{wing}")
        names.append(package.__name__)
        names += [m.name for m in pkgutil.iter_modules(package.__path__, prefix=f"{package.__name__}.")]
    return sorted(name for name in names if name not in NEEDS_TORCH)


def test_the_wings_have_examples():
    assert len(_modules()) > 40 and lidframe.__name__ == "lidframe"


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    failed, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert failed == 0, f"{name}: {failed} docstring example(s) failed (run python -m doctest -v on it)"
