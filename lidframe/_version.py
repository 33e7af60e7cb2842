"""The installed lidframe version, read once from the package metadata.

Imports only the standard library, so every wing can import it without a cycle
(``lidframe.__version__`` re-exports it).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["__version__", "code_version", "tree_digest"]

#: The files whose content is lidframe's code: what a grid cell's key must follow.
_CODE_SUFFIXES = (".py", ".j2", ".css", ".js")


def _installed_version() -> str:
    try:
        return version("lidframe")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


#: Version string of the installed distribution (``"0+unknown"`` in an uninstalled source tree).
__version__: str = _installed_version()


def tree_digest(roots: Iterable[Path]) -> str:
    """sha256 over the code files below *roots*: their relative paths and their bytes, in sorted order.

    Parameters
    ----------
    roots : iterable of Path
        Folders (a package's source folders).

    Returns
    -------
    str
        Hex digest; it changes when any ``.py``, ``.j2``, ``.css`` or ``.js`` file below a
        root is added, removed, renamed or edited.
    """
    digest = hashlib.sha256()
    for n, root in enumerate(roots):
        root = Path(root)
        files = sorted(p for p in root.rglob("*") if p.suffix in _CODE_SUFFIXES and p.is_file())
        for path in files:
            digest.update(f"{n}:{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def code_version() -> str:
    """``"VERSION+src.DIGEST"``: the installed version and a digest of the source actually loaded.

    The version string alone does not follow the code in an editable install (``pip
    install -e``: it changes only when reinstalled) or in a source tree that is not
    installed (``0+unknown``), so a result keyed by it could outlive the code that made
    it. The digest covers the ``lidframe`` package and the ``lidframe.attackers`` /
    ``lidframe.calibrators`` folders (found without importing them, so torch is not
    loaded); it is computed once per process.
    """
    return f"{__version__}+src.{_source_digest()[:16]}"


@functools.cache
def _source_digest() -> str:
    roots = [Path(__file__).resolve().parent]
    for name in ("lidframe.attackers", "lidframe.calibrators"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            roots.extend(Path(p).resolve() for p in spec.submodule_search_locations)
    return tree_digest(roots)
