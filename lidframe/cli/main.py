"""The ``lidframe`` command: the parser, made of one module per command, and ``main``.

Each command module (``lidframe.cli.<command>``) has ``register(subparsers)``, which adds
its sub-parser and sets ``run``, and ``run(args) -> exit status``.  Bad input -- a bad
file, spec or value, an output that cannot be written, or a command line that argparse
refuses -- prints one line, ``lidframe: error: ...``, on stderr and exits with status 2;
a bad value is named by its flag (``--n-boot must be ...``, even where the check is the
library's, :func:`lidframe.cli.options.name_the_flag`), and a command line argparse refuses
ends with the help to read, the command's own (``see lidframe evaluate --help``; an
unknown flag also gets the nearest one, ``did you mean --n-boot?``);
output targets are checked before any work, and files are written only after everything
has been computed, each atomically, so a failed run leaves none behind.  Warnings print
as one line, ``lidframe: warning: ...``; a message's own leading ``lidframe:`` (library
warnings carry it, for Python users) is dropped, so the prefix is never doubled.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn

from lidframe.errors import InputError

__all__ = ["COMMANDS", "EXIT_INPUT", "build_parser", "main"]

EXIT_INPUT = 2
_PREFIX = "lidframe: "

#: The command modules of :mod:`lidframe.cli`, in the order ``lidframe --help`` lists them.
COMMANDS = (
    "evaluate",
    "compare",
    "nsweep",
    "score",
    "import_scores",
    "fuse",
    "dp_audit",
    "grid",
    "report",
    "corpus",
    "anonymise",
    "train_attacker",
    "longitudinal",
    "plugins",
    "sensitivity",
    "utility",
    "voiceprivacy",
    "demo",
)


class _UsageError(InputError):
    """A command line argparse refuses (unknown flag, bad choice, missing argument)."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, like every other lidframe error.

    argparse's own ``error`` prints the usage block and the message (several lines, the
    prefix ``lidframe evaluate: error:``); here the message becomes a :class:`_UsageError`
    that :func:`main` prints as ``lidframe: error: ...`` with exit status 2.  Sub-parsers
    are made of the same class, so this holds for every command.
    """

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``lidframe`` command."""
    from lidframe import __version__

    parser = _Parser(
        prog="lidframe", description="Local Information Disclosure audits of voice anonymisation (1-to-N linkage)."
    )
    parser.add_argument("--version", action="version", version=f"lidframe {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"lidframe.cli.{name}").register(subparsers)
    return parser


def _command_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The sub-parser of *command* (as typed: ``dp-audit``)."""
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[command]


def _nearest(word: str, names: list[str]) -> list[str]:
    """The name most like *word*: one that holds it or that it holds (``level``, ``bootstrap-level``), else by spelling."""
    holding = [n for n in names if min(len(n), len(word)) >= 3 and (word in n or n in word)]
    return (
        difflib.get_close_matches(word, holding, n=1, cutoff=0)
        if holding
        else difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    )


def _unrecognized(extras: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """argparse's "unrecognized arguments" message, with the nearest flag of *parser* to an unknown one."""
    names = {
        f[2:]: f for a in parser._actions if a.help != argparse.SUPPRESS for f in a.option_strings if f[:2] == "--"
    }
    unknown = [word[2:].partition("=")[0].replace("_", "-") for word in extras if word.startswith("--")]
    near = [names[m] for word in unknown for m in _nearest(word, list(names))]
    hint = f"; did you mean {' or '.join(dict.fromkeys(near))}?" if near else ""
    return f"unrecognized arguments: {' '.join(extras)}{hint}"


def _one_line(text: object) -> str:
    """*text* on one line, without a leading ``lidframe:`` (the CLI adds its own prefix once)."""
    line = " ".join(str(text).split())
    while line.startswith(_PREFIX):
        line = line[len(_PREFIX) :].lstrip()
    return line


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"{_PREFIX}warning: {_one_line(message)}", file=sys.stderr)


def _error(text: object) -> int:
    print(f"{_PREFIX}error: {_one_line(text)}", file=sys.stderr)
    return EXIT_INPUT


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lidframe`` console script; returns the exit status."""
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        parser = build_parser()
        command: argparse.ArgumentParser | None = None
        args = None
        try:
            # the command's own parser reports arguments it does not know, so that the
            # message points to that command's --help (argparse's parse_args would say
            # "see lidframe --help", which lists no flag)
            args, extras = parser.parse_known_args(argv)
            command = _command_parser(parser, args.command)
            if extras:
                command.error(_unrecognized(extras, command))
            args.argv = list(sys.argv[1:] if argv is None else map(str, argv))  # the command line, for provenance
            return args.run(args)
        except _UsageError as exc:
            return _error(exc)
        except InputError as exc:
            from lidframe.cli.options import name_the_flag

            return _error(exc if command is None else name_the_flag(_one_line(exc), command, args))
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            return _error(f"{where}{exc.strerror or exc}")
