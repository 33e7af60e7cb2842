"""Every reader of a user's file goes through the one opener (issue 39).

:func:`lidframe.data.fileio.open_input` is where an input file is opened: checked first
(a FIFO is never opened, a device never read), opened without blocking and checked again
on the descriptor, with a size cap where the reader holds the whole file.  A reader that
opens a file by its name instead -- ``open(path)``, ``Path.read_text``, ``json.load``,
``np.load``, ``torch.load(path)``, ``pd.read_csv(path)``, ``soundfile.read(path)``,
``sqlite3.connect`` ... -- hangs on a FIFO and reads ``/dev/zero`` until memory runs out.

This test walks the installed package (``lidframe/``, ``attackers/`` and ``calibrators/``,
which install as ``lidframe.attackers`` and ``lidframe.calibrators``) with :mod:`ast` and
fails on every such call whose file argument is not a handle the opener gave in the same
function (``with open_input(...) as handle:`` or ``open_text``).  The readers of files the
package ships or writes itself are listed in :data:`ALLOWED`, each with its reason; an
entry that no longer matches a call fails too, so the list cannot go stale.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
CHECKED_FOLDERS = ("lidframe", "attackers", "calibrators")

#: Calls that open or read the file their first argument names (module functions, by their full name).
READERS = frozenset(
    {
        "open", "io.open", "os.open", "codecs.open", "gzip.open", "bz2.open", "lzma.open", "tarfile.open",
        "zipfile.ZipFile", "json.load", "pickle.load", "tomllib.load", "mmap.mmap", "sqlite3.connect",
        "shutil.copyfile", "shutil.copy", "numpy.load", "numpy.fromfile", "numpy.loadtxt", "numpy.genfromtxt",
        "numpy.memmap", "pandas.read_csv", "pandas.read_table", "pandas.read_json", "pandas.read_parquet",
        "soundfile.read", "soundfile.info", "soundfile.SoundFile", "soundfile.blocks", "torch.load",
        "torchaudio.load", "librosa.load", "scipy.io.wavfile.read", "kaldiio.load_mat", "kaldiio.load_ark",
        "kaldiio.load_scp", "kaldiio.ReadHelper",
    }
)  # fmt: skip
#: Methods that read the file of the object they are called on (:class:`pathlib.Path`'s).
READER_METHODS = frozenset({"read_text", "read_bytes", "open"})
#: Modules whose aliases are resolved to their full names (``np`` -> ``numpy``).
KNOWN_MODULES = frozenset(name.split(".")[0] for name in READERS if "." in name)
#: The opener, and the functions that hand out its handles.
OPENERS = frozenset({"open_input", "open_text"})

_DEMO = "the voice demo's own files in its output folder (stamps and tables it wrote itself)"
_STORE = (
    "OUT/results.sqlite: SQLite opens by name only (no descriptor); check_store refuses one that is not a "
    "regular file before any connection"
)

#: ``(module, function, call) -> why it may open a file by its name``: files the package ships or writes.
ALLOWED: dict[tuple[str, str, str], str] = {
    ("lidframe/data/fileio.py", "open_input", "os.open"): "the opener itself (O_NONBLOCK, checked again by fstat)",
    ("lidframe/data/fileio.py", "atomic_write", "open"): "writes the temporary file atomic_path made (mode w or wb)",
    ("lidframe/data/fileio.py", "_umask", "open"): "/proc/self/status: the kernel's file, not a user's",
    ("lidframe/_version.py", "tree_digest", ".read_bytes"): "lidframe's own source files (the code digest)",
    ("attackers/neural.py", "NeuralAttacker._code_digest", ".read_bytes"): "the attackers' own source files",
    ("lidframe/report/render.py", "_asset", ".read_text"): "a template the package ships (importlib.resources)",
    ("lidframe/cli/report.py", "run", ".read_text"): "report/summary.md, which write_report wrote just before",
    ("lidframe/audio/corpus.py", "_write_wav", "soundfile.read"): "the speech engine's output in a temporary folder",
    ("lidframe/grid/lock.py", "folder_lock", "os.open"): "the grid's lock file, created and locked, never read",
    ("lidframe/data/digests.py", "DigestCache._read", "sqlite3.connect"): (
        "the grid's digest cache: SQLite opens by name only; DigestCache() checks the file (check_input_file) first"
    ),
    ("lidframe/data/digests.py", "DigestCache._write", "sqlite3.connect"): "writes the digest cache",
    ("lidframe/grid/store.py", "_read_layout", "sqlite3.connect"): _STORE,
    ("lidframe/grid/store.py", "open_store", "sqlite3.connect"): _STORE,
    ("lidframe/grid/store.py", "read_stored_cells", "sqlite3.connect"): _STORE,
    ("lidframe/grid/store.py", "read_finished", "sqlite3.connect"): _STORE,
    ("lidframe/demo/voice/corpus.py", "_anonymise_systems", ".read_text"): _DEMO,
    ("lidframe/demo/voice/plan.py", "_source_digest", ".read_bytes"): _DEMO,
    ("lidframe/demo/voice/plan.py", "_read_stamp", ".read_text"): _DEMO,
    ("lidframe/demo/voice/utility.py", "_utility_subsets", ".read_text"): _DEMO,
    ("lidframe/demo/voice/utility.py", "_table_digest", ".read_bytes"): _DEMO,
    ("lidframe/demo/voice/utility.py", "_reusable_record", ".read_text"): _DEMO,
}


@attrs.frozen
class Reader:
    """A call that opens a file by its name."""

    path: str
    line: int
    function: str
    call: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.path, self.function, self.call)

    def __str__(self) -> str:
        return f"{self.path}:{self.line} in {self.function}: {self.call}(...)"


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Each name a module binds by import, to what it names (``np`` -> ``numpy``, ``fileio`` -> ``lidframe.data.fileio``)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for alias in node.names:
                full = alias.name if alias.name in KNOWN_MODULES else f"{base}.{alias.name}"
                names[alias.asname or alias.name] = full
    return names


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """``np.load`` -> ``"numpy.load"``: the full name of a chain of attributes on an imported name (None otherwise)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    head = aliases.get(node.id, node.id if not parts else None)
    return None if head is None else ".".join([head, *reversed(parts)])


def _writes(call: ast.Call, mode_at: int) -> bool:
    """A call whose constant mode (positional argument *mode_at*, or ``mode=``) writes: ``"w"``, ``"wb"``, ``"a"``, ``"x"``."""
    modes = [kw.value for kw in call.keywords if kw.arg == "mode"] + call.args[mode_at : mode_at + 1]
    return any(isinstance(m, ast.Constant) and isinstance(m.value, str) and set(m.value) & set("wax") for m in modes)


def _opener_handles(function: ast.AST, aliases: dict[str, str]) -> set[str]:
    """The names *function* binds to a handle of the opener (``with open_input(...) as handle``, ``= enter_context(...)``)."""

    def is_opener(value: ast.expr | None) -> bool:
        if not isinstance(value, ast.Call):
            return False
        name = (_dotted(value.func, aliases) or "").rsplit(".", 1)[-1]
        if isinstance(value.func, ast.Attribute):
            name = value.func.attr
        if name in OPENERS:
            return True
        return name == "enter_context" and bool(value.args) and is_opener(value.args[0])

    handles = set()
    for node in ast.walk(function):
        if isinstance(node, ast.With):
            handles |= {
                item.optional_vars.id
                for item in node.items
                if isinstance(item.optional_vars, ast.Name) and is_opener(item.context_expr)
            }
        elif isinstance(node, ast.Assign) and is_opener(node.value):
            handles |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return handles


def _reader_call(call: ast.Call, aliases: dict[str, str]) -> str | None:
    """What *call* is where it opens a file: ``"open"``, ``"numpy.load"``, ``".read_text"`` (a path's method); else None."""
    name = _dotted(call.func, aliases)
    if name in READERS:
        return None if name == "open" and _writes(call, 1) else name
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in READER_METHODS:
        return None
    receiver = call.func.value
    while isinstance(receiver, ast.Attribute):
        receiver = receiver.value
    if isinstance(receiver, ast.Name) and receiver.id in aliases:
        return None  # a function of an imported module (os.open, fileio.read_text: the opener's own), not a path's
    if call.func.attr == "open":
        mode = call.args[0] if call.args else None
        if mode is not None and not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)):
            return None  # zipfile's archive.open(member), not Path.open(mode)
        if _writes(call, 0):
            return None
    return f".{call.func.attr}"


def readers_of(source: str, path: str) -> list[Reader]:
    """Every call in *source* that opens a file by its name, not through a handle of the opener."""
    tree = ast.parse(source, filename=path)
    aliases = _aliases(tree)
    found: list[Reader] = []

    def visit(node: ast.AST, qualname: str, handles: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = child.name if qualname == "<module>" else f"{qualname}.{child.name}"
                inner = handles if isinstance(child, ast.ClassDef) else handles | _opener_handles(child, aliases)
                visit(child, name, inner)
                continue
            if isinstance(child, ast.Call):
                call = _reader_call(child, aliases)
                first = child.args[0] if child.args else None
                from_opener = isinstance(first, ast.Name) and first.id in handles
                if call is not None and not (from_opener and not call.startswith(".")):
                    found.append(Reader(path, child.lineno, qualname, call))
            visit(child, qualname, handles)

    visit(tree, "<module>", set())
    return found


def package_readers() -> Iterator[Reader]:
    """:func:`readers_of` every module of the package."""
    for folder in CHECKED_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield from readers_of(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())


def test_every_reader_of_a_users_file_goes_through_the_opener():
    found = list(package_readers())
    outside = [str(reader) for reader in found if reader.key not in ALLOWED]
    assert not outside, (
        "these calls open a file by its name, not through lidframe.data.fileio.open_input (or open_text); "
        "open it there (a size cap where the whole file is read), or, for a file the package ships or writes "
        "itself, add it to ALLOWED with the reason:\n  " + "\n  ".join(outside)
    )
    stale = sorted(set(ALLOWED) - {reader.key for reader in found})
    assert not stale, f"ALLOWED names readers that are no longer there (remove them): {stale}"


SAMPLE = """
import json, sqlite3
import numpy as np
import pandas as pd
from pathlib import Path
from lidframe.data import fileio
from lidframe.data.fileio import open_input, open_text, read_text


def by_name(path):
    a = open(path)
    b = open(path, "rb")
    c = Path(path).read_text()
    d = json.load(open(path))
    e = np.load(path)
    f = pd.read_csv(path)
    g = sqlite3.connect(path)
    h = path.open()
    return a, b, c, d, e, f, g, h


def through_the_opener(path, archive, member, stack):
    with open_input(path, "x") as handle:
        np.load(handle)
    with open_text(path) as text:
        pd.read_csv(text)
    raw = stack.enter_context(open_input(path))
    np.load(raw)
    open(path, "w").write("written, not read")
    path.open("wb")
    archive.open(member)
    fileio.read_text(path)
    return read_text(path)


def elsewhere(path, handle):
    return np.load(handle)  # a handle the opener did not give here: not known to be checked
"""


def test_the_walk_finds_readers_by_name_and_passes_handles_of_the_opener():
    """The walk itself, on a module written for it: every read by name is found, no read through the opener is."""
    found = [(reader.function, reader.call, reader.line) for reader in readers_of(SAMPLE, "sample.py")]
    lines = SAMPLE.splitlines()
    by_line = {line: lines[line - 1].strip() for _, _, line in found}
    assert [(f, c) for f, c, _ in found] == [
        ("by_name", "open"),
        ("by_name", "open"),
        ("by_name", ".read_text"),
        ("by_name", "json.load"),
        ("by_name", "open"),
        ("by_name", "numpy.load"),
        ("by_name", "pandas.read_csv"),
        ("by_name", "sqlite3.connect"),
        ("by_name", ".open"),
        ("elsewhere", "numpy.load"),
    ], by_line
