"""The ``lidframe`` command: the parser, made of one module per command, and ``main``.

Each command module (``lidframe.cli.<command>``) has ``register(subparsers)``, which adds
its sub-parser and sets ``run``, and ``run(args) -> exit status``.  Bad input prints one
line, ``lidframe: error: ...``, on stderr and exits with status 2; output files are
written only after everything has been computed, each atomically, so a failed run leaves
none behind.  Warnings print as one line, ``lidframe: warning: ...``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Sequence

from lidframe.errors import InputError

__all__ = ["COMMANDS", "EXIT_INPUT", "build_parser", "main"]

EXIT_INPUT = 2

#: The command modules of :mod:`lidframe.cli`, in the order ``lidframe --help`` lists them.
COMMANDS = (
    "evaluate",
    "compare",
    "nsweep",
    "score",
    "dp_audit",
    "grid",
    "report",
    "corpus",
    "anonymise",
    "train_attacker",
    "longitudinal",
    "plugins",
    "sensitivity",
    "demo",
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``lidframe`` command."""
    from lidframe import __version__

    parser = argparse.ArgumentParser(
        prog="lidframe", description="Local Information Disclosure audits of voice anonymisation (1-to-N linkage)."
    )
    parser.add_argument("--version", action="version", version=f"lidframe {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"lidframe.cli.{name}").register(subparsers)
    return parser


def _one_line(text) -> str:
    return " ".join(str(text).split())


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"lidframe: warning: {_one_line(message)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lidframe`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return args.run(args)
        except InputError as exc:
            print(f"lidframe: error: {_one_line(exc)}", file=sys.stderr)
            return EXIT_INPUT
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"lidframe: error: {where}{_one_line(exc.strerror or exc)}", file=sys.stderr)
            return EXIT_INPUT
