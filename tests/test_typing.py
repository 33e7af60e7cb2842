"""Typing hygiene: every module imports, the public API is annotated, and ``py.typed`` ships (PEP 561).

The public API is what a module lists in ``__all__`` (functions and classes), plus the public methods of
those classes (``__init__`` and ``__call__`` included; properties through their getter).  Each object is
checked once, in the module that defines it, however many modules re-export it.  Modules that need an
optional dependency (torch, triton, matplotlib, ...) are skipped where it is missing; the imports happen
inside the tests, so collecting this file loads nothing heavy.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("lidframe", "lidframe.attackers", "lidframe.calibrators")
OPTIONAL_DEPENDENCIES = frozenset(
    {"torch", "triton", "matplotlib", "soundfile", "kaldiio", "pyarrow", "tqdm", "distributed", "dask", "betacal"}
)
PUBLIC_DUNDERS = ("__init__", "__call__")


def _walk(package: str) -> Iterator[str]:
    """Dotted names of *package* and every module below it (``__main__`` left out: importing it runs it)."""
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations is not None, f"{package} is not a package"
    yield package
    for info in pkgutil.iter_modules(spec.submodule_search_locations, prefix=f"{package}."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        if info.ispkg:
            yield from _walk(info.name)
        else:
            yield info.name


MODULES = sorted({name for package in PACKAGES for name in _walk(package)})


def _import(name: str) -> ModuleType | None:
    """Import *name*; None when an optional dependency it needs is missing."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in OPTIONAL_DEPENDENCIES:
            return None
        raise


def _missing(func: Callable[..., Any], *, skip_first: bool, need_return: bool) -> list[str]:
    """Names of the unannotated parameters of *func* (``return`` for its return); [] if not inspectable."""
    try:
        signature = inspect.signature(func, follow_wrapped=True)
    except (TypeError, ValueError):
        return []
    parameters = list(signature.parameters.values())
    if skip_first and parameters and parameters[0].name in ("self", "cls"):
        parameters = parameters[1:]
    missing = [p.name for p in parameters if p.annotation is inspect.Parameter.empty]
    if need_return and signature.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def _class_members(cls: type) -> Iterator[tuple[str, list[str]]]:
    """(method name, unannotated parts) for each public method defined in *cls* itself."""
    for name, member in vars(cls).items():
        if name.startswith("_") and name not in PUBLIC_DUNDERS:
            continue
        if name == "__init__" and getattr(cls, "_is_protocol", False):
            continue  # typing.Protocol's own placeholder, not the class's code
        if isinstance(member, property):
            if member.fget is not None:
                yield name, _missing(member.fget, skip_first=True, need_return=True)
            if member.fset is not None:
                yield f"{name}.setter", _missing(member.fset, skip_first=True, need_return=False)
        elif isinstance(member, staticmethod):
            yield name, _missing(member.__func__, skip_first=False, need_return=True)
        elif isinstance(member, classmethod):
            yield name, _missing(member.__func__, skip_first=True, need_return=True)
        elif inspect.isfunction(member):
            yield name, _missing(member, skip_first=True, need_return=name != "__init__")


def _unannotated(modules: list[ModuleType]) -> dict[str, list[str]]:
    """``{"module.qualname": [missing parts]}`` over the public API of *modules*, each object once."""
    seen: set[str] = set()
    report: dict[str, list[str]] = {}
    for module in modules:
        for name in getattr(module, "__all__", ()):
            try:
                obj = getattr(module, name)
            except (ImportError, AttributeError):  # a lazy export whose optional dependency is missing
                continue
            owner = getattr(obj, "__module__", None) or ""
            if not owner.startswith("lidframe") or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            key = f"{owner}.{obj.__qualname__}"
            if key in seen:
                continue
            seen.add(key)
            if inspect.isfunction(obj):
                parts = _missing(obj, skip_first=False, need_return=True)
                if parts:
                    report[key] = parts
                continue
            for method, parts in _class_members(obj):
                if parts:
                    report[f"{key}.{method}"] = parts
    return report


@pytest.mark.parametrize("name", MODULES)
def test_every_module_imports(name: str) -> None:
    if _import(name) is None:
        pytest.skip(f"{name} needs an optional dependency that is not installed")


def test_public_api_is_fully_annotated() -> None:
    modules = [module for module in map(_import, MODULES) if module is not None]
    report = _unannotated(modules)
    lines = [f"{where}: {', '.join(parts)}" for where, parts in sorted(report.items())]
    assert not lines, f"{len(lines)} public callables lack annotations:\n" + "\n".join(lines)


def test_checker_sees_missing_annotations() -> None:
    """The inspection itself: an unannotated parameter, return, *args and method are all reported."""

    def bare(x, *args: int, y: int = 0, **kwargs):
        return x

    def full(x: int, *args: int, **kwargs: str) -> int:
        return x

    class Thing:
        def __init__(self, n: int):
            self.n = n

        def run(self, k) -> int:
            return k

        @property
        def size(self):
            return self.n

        @classmethod
        def make(cls, n: int) -> Thing:
            return cls(n)

        def _private(self, z):
            return z

    assert _missing(bare, skip_first=False, need_return=True) == ["x", "kwargs", "return"]
    assert _missing(full, skip_first=False, need_return=True) == []
    assert dict(_class_members(Thing)) == {"__init__": [], "run": ["k"], "size": ["return"], "make": []}


def test_py_typed_marker_ships_with_the_package() -> None:
    assert (ROOT / "lidframe" / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["lidframe"]
