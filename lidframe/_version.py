"""The installed lidframe version, read once from the package metadata.

Imports only the standard library, so every wing can import it without a cycle
(``lidframe.__version__`` re-exports it).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]


def _installed_version() -> str:
    try:
        return version("lidframe")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


#: Version string of the installed distribution (``"0+unknown"`` in an uninstalled source tree).
__version__: str = _installed_version()
