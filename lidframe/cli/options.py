"""Argument groups and helpers shared by the ``lidframe`` commands.

Every command that takes the same idea takes it with the same flag, default and help:
score sets (``--dev``/``--eval``), calibrator and prior specs (the registry's
``NAME?key=value`` syntax), the z-norm ddof, the bootstrap (``--bootstrap``, ``--n-boot``,
``--bootstrap-level``, ``--bootstrap-unit``, ``--bootstrap-method``, ``--seed``; their old
names ``--ci``, ``--ci-level``, ... for one release, :class:`RenamedFlag`), the streaming engine
(``--device``, ``--precision``, ``--kernel``) and the output files (``--json``,
``--plot``), which are checked before any work starts.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lidframe.data import fileio
from lidframe.errors import InputError

if TYPE_CHECKING:
    from lidframe.stats.bootstrap import Bootstrap

__all__ = [
    "RenamedFlag",
    "add_bootstrap_arguments",
    "add_engine_arguments",
    "add_output_arguments",
    "add_renamed_flag",
    "add_scoreset_arguments",
    "refuse_prior",
    "bootstrap_from_args",
    "check_output_dir",
    "check_output_path",
    "check_output_paths",
    "comma_list",
    "float_list",
    "write_outputs",
]


def add_scoreset_arguments(
    parser: argparse.ArgumentParser, *, calibrator: bool = True, prior: bool = True, znorm: bool = True
) -> None:
    """``--dev``, ``--eval`` and, where asked, ``--calibrator``, ``--prior`` and ``--znorm-ddof``."""
    parser.add_argument("--dev", required=True, help="dev score set or embedding set (.npz or long .csv)")
    parser.add_argument("--eval", required=True, help="eval score set or embedding set (.npz or long .csv)")
    if calibrator:
        parser.add_argument(
            "--calibrator",
            default="logistic",
            help="calibrator spec: NAME or package.module:Class, with optional ?key=value&... (default logistic)",
        )
    if prior:
        parser.add_argument(
            "--prior",
            default="uniform",
            help="prior spec: uniform (default), watchlist?file=IDS.txt&weight=10, watchlist?ids=a,b, "
            "explicit?file=PRIOR.csv, or any NAME?key=value&...; add outside=P (e.g. uniform?outside=0.2) for "
            "the open set, P the attacker's prior mass of 'nobody enrolled' in [0, 1), or outside=auto (the dev "
            "set's share of outsider trials): every trial then gets a LID",
        )
    if znorm:
        parser.add_argument("--znorm-ddof", type=int, choices=(0, 1), default=1, help="row z-norm ddof (default 1)")


class _ClosedSetPrior(argparse.Action):
    """``--prior`` of a closed-set analysis (hidden): refused with one line saying why (:func:`refuse_prior`)."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, why: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.why = why

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        raise InputError(
            f"{parser.prog} takes no --prior ({values!r}): {self.why}; for another prior, the open set "
            "included (--prior 'uniform?outside=0.2'), use lidframe evaluate"
        )


def refuse_prior(parser: argparse.ArgumentParser, why: str) -> None:
    """A hidden ``--prior`` that a closed-set analysis refuses with one line: *why* it has no prior to give.

    The N-sweep and the longitudinal attacker compute LID under a uniform prior given
    enrolment (closed set, no ``outside``); ``--prior`` there is an :class:`InputError`
    (exit status 2) naming the command and *why*, not argparse's "unrecognized arguments".
    """
    parser.add_argument("--prior", action=_ClosedSetPrior, why=why, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


class RenamedFlag(argparse.Action):
    """The old name of a flag: parsed as the new flag is, with a :class:`FutureWarning` naming the new flag.

    The warning (printed by the ``lidframe`` command as one line on stderr,
    ``lidframe: warning: --ci is now --bootstrap; ...``) is given once per parse, however
    often the old flag is repeated.  Added by :func:`add_renamed_flag`.

    Parameters
    ----------
    option_strings, dest, **kwargs
        As for :class:`argparse.Action`; ``nargs=0`` for a switch (it stores True).
    new : str
        The flag's name now (``"--bootstrap"``).
    """

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new = new
        self._warned: argparse.Namespace | None = None

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, True if self.nargs == 0 else values)
        if self._warned is not namespace:
            self._warned = namespace
            warnings.warn(
                f"{option_string} is now {self.new}; the old name will be removed in the next release",
                FutureWarning,
                stacklevel=2,
            )


def add_renamed_flag(parser: argparse.ArgumentParser, old: str, new: str, **kwargs: Any) -> None:
    """Keep *old*, hidden from ``--help``, as a :class:`RenamedFlag` of *new* (added before, same ``dest``).

    Parameters
    ----------
    parser : ArgumentParser
    old, new : str
        The old and the new flag (``"--ci-level"``, ``"--bootstrap-level"``).
    **kwargs
        ``type``, ``choices`` or ``nargs=0`` (a switch), as the new flag has them.
    """
    dest = new.lstrip("-").replace("-", "_")
    parser.add_argument(
        old, action=RenamedFlag, new=new, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs
    )


def add_bootstrap_arguments(
    parser: argparse.ArgumentParser,
    defaults: Bootstrap | None = None,
    *,
    switch: bool = True,
    unit: bool = True,
    method: bool = True,
) -> None:
    """The bootstrap flags, defaulting to *defaults* (the analysis's own record; ``Bootstrap()``).

    With *switch*, ``--bootstrap`` turns the intervals on; *unit* and *method* add
    ``--bootstrap-unit`` and ``--bootstrap-method`` for the commands whose analysis lets
    them be chosen.  A flag left out means what the Python API means with the argument
    left out.  The old names ``--ci``, ``--ci-level``, ``--ci-unit`` and ``--ci-method``
    work for one release, hidden from ``--help``, with a warning (:func:`add_renamed_flag`).
    """
    from lidframe.stats.bootstrap import Bootstrap

    d = defaults or Bootstrap()
    if switch:
        parser.add_argument("--bootstrap", action="store_true", help="add bootstrap confidence intervals")
        add_renamed_flag(parser, "--ci", "--bootstrap", nargs=0)
    parser.add_argument(
        "--n-boot", type=int, default=d.n_boot, metavar="B", help=f"bootstrap resamples (default {d.n_boot})"
    )
    parser.add_argument(
        "--bootstrap-level", type=float, default=d.level, metavar="LEVEL", help=f"interval level (default {d.level})"
    )
    add_renamed_flag(parser, "--ci-level", "--bootstrap-level", type=float)
    if unit:
        units = ("speaker", "trial")
        parser.add_argument(
            "--bootstrap-unit",
            choices=units,
            default=d.unit,
            help=f"resampling unit: speaker (cluster bootstrap) or trial (default {d.unit})",
        )
        add_renamed_flag(parser, "--ci-unit", "--bootstrap-unit", choices=units)
    if method:
        methods = ("bca", "percentile")
        parser.add_argument(
            "--bootstrap-method", choices=methods, default=d.method, help=f"interval type (default {d.method})"
        )
        add_renamed_flag(parser, "--ci-method", "--bootstrap-method", choices=methods)
    parser.add_argument("--seed", type=int, default=d.seed, help=f"random seed (default {d.seed})")


def bootstrap_from_args(args: argparse.Namespace, defaults: Bootstrap | None = None) -> Bootstrap:
    """The ``Bootstrap`` record of the flags of :func:`add_bootstrap_arguments` (absent ones from *defaults*)."""
    from lidframe.stats.bootstrap import Bootstrap

    d = defaults or Bootstrap()
    return Bootstrap(
        n_boot=args.n_boot,
        level=args.bootstrap_level,
        unit=getattr(args, "bootstrap_unit", d.unit),
        method=getattr(args, "bootstrap_method", d.method),
        seed=args.seed,
    )


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """``--device``, ``--precision`` and ``--kernel`` of the streaming engine (embedding sets)."""
    from lidframe.core.engine import KERNELS, PRECISIONS

    parser.add_argument(
        "--device", default="auto", help="embedding-set eval: auto (CUDA when available, default), cpu, cuda, cuda:1"
    )
    parser.add_argument(
        "--precision",
        default="auto",
        choices=("auto", *PRECISIONS, "fp64", "fp32", "bf16"),
        help="embedding-set eval: product precision (auto: float64 on CPU, bfloat16 on CUDA)",
    )
    parser.add_argument(
        "--kernel", default="auto", choices=KERNELS, help="embedding-set eval: streaming path (default auto)"
    )


def add_output_arguments(parser: argparse.ArgumentParser, *, json: str = "", plot: str = "") -> None:
    """``--json OUT`` and ``--plot OUT.png`` where *json* / *plot* give their help text."""
    if json:
        parser.add_argument("--json", metavar="OUT", help=json)
    if plot:
        parser.add_argument("--plot", metavar="OUT.png", help=plot)


def check_output_path(path: str | Path | None, flag: str) -> Path | None:
    """*path* as a Path after checking a file can be written there (None stays None).

    The check (:func:`lidframe.data.fileio.check_output_path`) runs before any work: the
    folder exists and is writable, and *path* is a new name or a regular file (or a
    symlink to one, written through): not a folder, a device, a FIFO, a socket, a symlink
    loop or a dangling symlink.
    """
    if path is None:
        return None
    return fileio.check_output_path(path, flag)


def check_output_paths(
    outputs: Mapping[str, str | Path | None], *, inputs: Iterable[str | Path] = ()
) -> list[Path | None]:
    """:func:`check_output_path` of each ``{flag: path}``, and no two outputs, nor an output and an input, the same file.

    Files are compared by :func:`lidframe.data.fileio.real_path` (every symlink followed;
    a symlink loop among the inputs is left for its reader to name).

    Returns
    -------
    list of Path or None
        The checked paths, in the order of *outputs* (None where a flag was not given).
    """
    checked = [check_output_path(path, flag) for flag, path in outputs.items()]
    seen: dict[Path, str] = {}
    for flag, path in zip(outputs, checked):
        if path is None:
            continue
        key = fileio.real_path(path)
        if key in seen:
            raise InputError(f"{flag} {path}: the same file as {seen[key]}; give each output its own file")
        seen[key] = flag
    for source in inputs:
        key = fileio.real_path(source)
        if key in seen:
            flag = seen[key]
            raise InputError(
                f"{flag} {outputs[flag]}: is an input of this run ({source}); writing it would overwrite the input"
            )
    return checked


def check_output_dir(path: str | Path, flag: str) -> Path:
    """*path* as a Path after checking a folder can be made or filled there (:func:`lidframe.data.fileio.check_output_dir`)."""
    return fileio.check_output_dir(path, flag)


def comma_list(text: str, flag: str) -> list[str]:
    """The non-empty comma-separated items of *text*; an error naming *flag* when there are none."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise InputError(f"{flag} {text!r}: expected comma-separated values")
    return items


def float_list(text: str, flag: str, *, count: int | None = None) -> list[float]:
    """Comma-separated numbers (exactly *count* of them where given)."""
    try:
        values = [float(item) for item in comma_list(text, flag)]
    except ValueError:
        values = []
    if not values or (count is not None and len(values) != count):
        expected = "LOW,HIGH" if count == 2 else "comma-separated numbers"
        raise InputError(f"{flag} {text!r}: expected {expected}")
    return values


def write_outputs(result: Any, json_out: Path | None, plot_out: Path | None, plot: Callable, what: str) -> None:
    """Write the result's JSON record and its plot, where asked for: all of them or, on an error, none."""
    with fileio.staged_outputs():
        if json_out is not None:
            fileio.write_json(json_out, result.to_dict())
        if plot_out is not None:
            plot(result, plot_out)
    if plot_out is not None:
        print(f"\nwrote {what} to {plot_out}")
