"""Limits that CI keeps (issue 38): module and function sizes, no cycle in core, test imports.

No module in lidframe/, attackers/ or calibrators/ is over 600 lines, and no function
(sync or async, a method or a nested function included) is over 80 lines, counted from
its first decorator to its last line, docstring included.  ``make lint`` runs this file.
A module or function over a limit is split by concern (docs/architecture.md), not
exempted here.  Test modules import an optional extra (torch, soundfile, ...) through
``pytest.importorskip`` with a reason, so that the suite collects where it is missing.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED_FOLDERS = ("lidframe", "attackers", "calibrators")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


@attrs.frozen
class Sized:
    """A module or function and its size in lines."""

    path: str
    line: int
    name: str
    lines: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.name} ({self.lines} lines)"


def function_sizes(source: str, path: str = "<string>") -> list[Sized]:
    """Every function in ``source``, nested ones and methods included, with its size.

    A function's size runs from its first decorator (or its ``def`` where it has none) to
    its last line, docstring included.  ``line`` is the line of the ``def``; ``name`` is
    qualified by the classes and functions that hold it (``Class.method``,
    ``outer.inner``).
    """
    found: list[Sized] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    assert child.end_lineno is not None
                    found.append(Sized(path, child.lineno, name, child.end_lineno - first + 1))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source, filename=path), "")
    return found


def module_lines(source: str) -> int:
    """The number of lines in a module's source."""
    return len(source.splitlines())


def checked_modules() -> Iterator[tuple[str, str]]:
    """(path relative to the repository, source) of every module the limits hold for."""
    for folder in CHECKED_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def over_limit(found: list[Sized], limit: int, what: str) -> str:
    """A failure message listing what in ``found`` is over ``limit`` lines, largest first."""
    over = sorted((s for s in found if s.lines > limit), key=lambda s: -s.lines)
    if not over:
        return ""
    return f"{len(over)} {what} over {limit} lines:\n" + "\n".join(f"  {s}" for s in over)


def test_no_module_over_the_limit():
    modules = [Sized(path, 1, "module", module_lines(source)) for path, source in checked_modules()]
    assert modules, "no modules found: is ROOT the repository?"
    if message := over_limit(modules, MAX_MODULE_LINES, "modules"):
        pytest.fail(message, pytrace=False)


def test_no_function_over_the_limit():
    functions = [sized for path, source in checked_modules() for sized in function_sizes(source, path)]
    assert functions, "no functions found: is ROOT the repository?"
    if message := over_limit(functions, MAX_FUNCTION_LINES, "functions"):
        pytest.fail(message, pytrace=False)


# The counter itself, on sources written here.


def function_of(lines: int, *, decorators: int = 0, indent: str = "") -> str:
    """The source of a function ``f`` that spans ``lines`` lines, its decorators included."""
    body = lines - decorators - 2  # the def line and the docstring line
    assert body >= 1
    return "\n".join(
        [f"{indent}@decorator{i}" for i in range(decorators)]
        + [f"{indent}def f():", f'{indent}    """Docstring."""']
        + [f"{indent}    x = {i}" for i in range(body)]
    )


@pytest.mark.parametrize(("lines", "over"), [(80, False), (81, True)])
def test_the_counter_on_a_plain_function(lines, over):
    (sized,) = function_sizes(function_of(lines))
    assert (sized.name, sized.line, sized.lines) == ("f", 1, lines)
    assert bool(over_limit([sized], MAX_FUNCTION_LINES, "functions")) is over


def test_the_counter_counts_decorators():
    (sized,) = function_sizes(function_of(81, decorators=3))
    assert (sized.line, sized.lines) == (4, 81)  # reported at its def, counted from its first decorator
    assert "<string>:4 f (81 lines)" in over_limit([sized], MAX_FUNCTION_LINES, "functions")


def test_the_counter_counts_a_multi_line_decorator_from_its_first_line():
    source = "@decorator(\n    argument,\n)\ndef f():\n    return 1\n"
    assert [s.lines for s in function_sizes(source)] == [5]


def test_the_counter_finds_nested_functions_methods_and_async_ones():
    nested = function_of(81, indent="    ").replace("def f", "def inner")
    source = "\n".join(
        [
            "def outer():",
            nested,
            "    return inner",
            "class Holder:",
            "    @staticmethod",
            "    async def method():",
            "        pass",
        ]
    )
    sizes = {s.name: (s.line, s.lines) for s in function_sizes(source, "m.py")}
    assert sizes == {"outer": (1, 83), "outer.inner": (2, 81), "Holder.method": (86, 3)}
    message = over_limit(function_sizes(source, "m.py"), MAX_FUNCTION_LINES, "functions")
    assert message.splitlines() == [
        "2 functions over 80 lines:",
        "  m.py:1 outer (83 lines)",
        "  m.py:2 outer.inner (81 lines)",
    ]


def test_module_lines_counts_every_line():
    assert module_lines("a = 1\n\n# note\nb = 2\n") == 4
    assert module_lines("a = 1\nb = 2") == 2


# core/dispatch.py runs an engine and core/summary.py summarises its result: one may import
# the other, not both (what both need lives in a module below them).


def imported_modules(path: Path, package: str) -> set[str]:
    """Every module that the module at ``path`` imports, as an absolute dotted name.

    All imports count: at the top, inside functions and under ``TYPE_CHECKING``.
    ``from a import b`` yields both ``a`` and ``a.b`` (``b`` may be a module).
    ``package`` is the package that holds the module, for relative imports.
    """
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def test_imported_modules_resolves_relative_and_nested_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import summary\n"
        "from ..metrics.binned import BinnedPairs\n"
        "if TYPE_CHECKING:\n"
        "    import lidframe.core.engine\n"
        "def f():\n"
        "    from lidframe.core.lid import tile_lid\n"
    )
    names = imported_modules(module, "lidframe.core")
    assert {
        "lidframe.core.summary",
        "lidframe.metrics.binned",
        "lidframe.core.engine",
        "lidframe.core.lid",
    } <= names


def test_core_dispatch_and_summary_do_not_import_each_other():
    """The 1-cycle between core/dispatch.py and core/summary.py (issue 38) stays gone."""
    core = ROOT / "lidframe" / "core"
    dispatch_imports_summary = "lidframe.core.summary" in imported_modules(core / "dispatch.py", "lidframe.core")
    summary_imports_dispatch = "lidframe.core.dispatch" in imported_modules(core / "summary.py", "lidframe.core")
    assert not (dispatch_imports_summary and summary_imports_dispatch), (
        "lidframe/core/dispatch.py and lidframe/core/summary.py import each other: "
        "move what both need into a module below them"
    )


# A test module that needs an extra skips where it is missing, by
# ``name = pytest.importorskip("name", reason=...)``, instead of failing the collection.

#: What runs the suite itself: the rest of pyproject.toml's extras is optional to a test.
SUITE_RUNNERS = {"pytest", "pytest-xdist", "hypothesis"}
#: Distribution names whose module is named otherwise.
MODULE_NAMES = {"praat-parselmouth": "parselmouth", "import-linter": "importlinter"}


def optional_modules() -> set[str]:
    """The top-level modules of pyproject.toml's optional dependencies, the suite's runners left out."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    names = {
        re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower()
        for group in extras.values()
        for requirement in group
    }
    return {MODULE_NAMES.get(name, name.replace("-", "_")) for name in names - SUITE_RUNNERS}


def top_level_imports(source: str) -> list[tuple[int, str]]:
    """(line, top-level package) of every import statement in a module's own body (not in a function or block)."""
    imports = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            imports.extend((node.lineno, alias.name.split(".")[0]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imports.append((node.lineno, node.module.split(".")[0]))
    return imports


def test_top_level_imports_reads_only_the_module_body():
    source = "import torch.nn\nfrom soundfile import read\nfrom . import x\ntry:\n    import jiwer\nexcept ImportError:\n    pass\n"
    assert top_level_imports(source) == [(1, "torch"), (2, "soundfile")]


def test_optional_modules_are_named_as_imported():
    modules = optional_modules()
    assert {"torch", "soundfile", "parselmouth", "pyarrow", "kaldiio", "selenium"} <= modules
    assert not modules & {"pytest", "pytest_xdist", "hypothesis"}


def test_test_modules_import_extras_only_through_importorskip():
    optional = optional_modules()
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{line} imports {module}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for line, module in top_level_imports(path.read_text(encoding="utf-8"))
        if module in optional
    ]
    if found:
        pytest.fail(
            "test modules import optional extras at the top; use "
            '`name = pytest.importorskip("name", reason=...)` instead:\n' + "\n".join(f"  {f}" for f in found),
            pytrace=False,
        )
