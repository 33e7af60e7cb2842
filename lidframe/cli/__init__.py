"""The ``lidframe`` command line: the parser and ``main`` (:mod:`~lidframe.cli.main`), one module per
command, shared argument groups and helpers, text tables and the demos."""

from lidframe.cli.main import build_parser, main

__all__ = ["main", "build_parser"]
