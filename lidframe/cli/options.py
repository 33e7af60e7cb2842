"""Argument groups and helpers shared by the ``lidframe`` commands.

Every command that takes the same idea takes it with the same flag, default and help:
score sets (``--dev``/``--eval``), calibrator and prior specs (the registry's
``NAME?key=value`` syntax), the z-norm ddof, the bootstrap (``--bootstrap``, ``--n-boot``,
``--bootstrap-level``, ``--bootstrap-unit``, ``--bootstrap-method``, ``--seed``; their old
names ``--ci``, ``--ci-level``, ... for one release, :class:`RenamedFlag`), the streaming engine
(``--device``, ``--precision``, ``--kernel``), the LID engine's CPU threads (``--threads``)
and the output files (``--json``, ``--plot``), which are checked before any work starts.

Messages name the flag.  The options records and analyses of the library check their
values and name them as Python knows them (``n_boot must be ...``, ``clip_norm must be
...``); :data:`PARAMETER_FLAGS` says which flag each of those names is, and
:func:`name_the_flag` puts the flag in its place (``--n-boot must be ...``), for every
command, where ``lidframe.cli.main`` prints the error.  Checks the library does not make
(a seed, a count of permutations, a learning rate) are made here when the flag is parsed,
with the flag in the message: :class:`CheckedFlag`.
"""

from __future__ import annotations

import argparse
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lidframe.data import fileio, runpaths
from lidframe.errors import InputError

if TYPE_CHECKING:
    from lidframe.stats.bootstrap import Bootstrap

__all__ = [
    "PARAMETER_FLAGS",
    "RenamedFlag",
    "add_bootstrap_arguments",
    "add_engine_arguments",
    "add_output_arguments",
    "add_renamed_flag",
    "add_scoreset_arguments",
    "add_threads_argument",
    "add_wav_paths_argument",
    "refuse_prior",
    "bootstrap_from_args",
    "check_output_dir",
    "check_output_path",
    "check_output_paths",
    "CheckedFlag",
    "comma_list",
    "spec_files",
    "float_list",
    "name_the_flag",
    "non_negative_int",
    "positive_int",
    "positive_number",
    "write_outputs",
]


def add_scoreset_arguments(
    parser: argparse.ArgumentParser,
    *,
    calibrator: bool = True,
    prior: bool = True,
    znorm: bool = True,
    sets: bool = True,
) -> None:
    """``--dev``, ``--eval`` and, where asked, ``--calibrator``, ``--prior`` and ``--znorm-ddof``.

    Without *sets*, no ``--dev`` and ``--eval``: for a command that finds its sets itself
    (``lidframe voiceprivacy``).
    """
    if sets:
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
    resample: bool = False,
) -> None:
    """The bootstrap flags, defaulting to *defaults* (the analysis's own record; ``Bootstrap()``).

    With *switch*, ``--bootstrap`` turns the intervals on; *unit* and *method* add
    ``--bootstrap-unit`` and ``--bootstrap-method`` for the commands whose analysis lets
    them be chosen; *resample* adds ``--bootstrap-resample`` (``dev+eval``: the calibrator
    refitted on resampled dev speakers; ``eval``: held fixed) for those that fit a calibrator on a dev set.  A flag left out means what the Python API means with the argument
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
    if resample:
        parser.add_argument(
            "--bootstrap-resample",
            choices=("dev+eval", "eval"),
            default=d.resample,
            help="what the bootstrap resamples: dev+eval refits the calibrator on resampled dev speakers, so the "
            f"intervals cover its uncertainty; eval holds it fixed (default {d.resample})",
        )
    parser.add_argument(
        "--seed",
        type=int,
        action=CheckedFlag,
        check=non_negative_int,
        default=d.seed,
        help=f"random seed (default {d.seed})",
    )


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
        resample=getattr(args, "bootstrap_resample", d.resample),
    )


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    """``--threads N``: the CPU threads the LID engine's tiles run in (:attr:`lidframe.Engine.threads`).

    Left out, ``args.threads`` is None: ``Engine(threads=None)``, whose count is
    :func:`lidframe.runtime.workers.default_threads` (the cores this process may use, at
    most ``OMP_NUM_THREADS``).  A value below 1 is refused as the flag is parsed
    (:class:`CheckedFlag`).
    """
    from lidframe.runtime.workers import default_threads

    text = (
        "CPU threads the LID engine's tiles run in (default: the cores this process may use, at most "
        f"OMP_NUM_THREADS; {default_threads()} here); the numbers do not depend on it"
    )
    parser.add_argument(
        "--threads", type=int, action=CheckedFlag, check=positive_int, default=None, metavar="N", help=text
    )


def add_wav_paths_argument(parser: argparse.ArgumentParser, *, writes: str = "") -> None:
    """``--wav-paths {cwd,data-dir}``: how a relative path in a data dir's ``wav.scp`` is resolved.

    ``cwd`` (the default) against the current folder, as Kaldi does; ``data-dir`` against the
    data dir holding the ``wav.scp`` (:data:`lidframe.data.kaldi.WAV_PATHS`).  *writes* names
    the ``wav.scp`` a command writes (``"OUT_DIR's wav.scp"``), which then follows the same
    convention (:func:`lidframe.data.kaldi.wav_location`).
    """
    from lidframe.data.kaldi import WAV_PATHS

    written = (
        f"; {writes} is written to be read the same way (absolute paths for cwd, relative to its data dir for data-dir)"
        if writes
        else ""
    )
    parser.add_argument(
        "--wav-paths",
        choices=WAV_PATHS,
        default=WAV_PATHS[0],
        help="resolve a relative audio path in wav.scp against the current folder (cwd, as Kaldi does; default) "
        f"or against the data dir holding the wav.scp (data-dir){written}",
    )


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """``--device``, ``--precision`` and ``--kernel`` of the streaming engine (embedding sets), and ``--threads``."""
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
    add_threads_argument(parser)


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
    outputs: Mapping[str, str | Path | None], *, inputs: Iterable[str | Path | None] = ()
) -> list[Path | None]:
    """:func:`check_output_path` of each ``{flag: path}``, no two outputs one file, and none on an input.

    The check is :func:`lidframe.data.runpaths.check_outputs`: files are compared with
    every symlink followed, and no output may be an input file, lie inside an input folder
    (a data dir: its ``wav.scp``'s audio counts too) or, for a folder, hold an input.

    Returns
    -------
    list of Path or None
        The checked paths, in the order of *outputs* (None where a flag was not given).
    """
    checked = runpaths.check_outputs(outputs, inputs=inputs)
    return [checked[flag] for flag in outputs]


def spec_files(kind: str, *specs: str | None) -> list[Path]:
    """The files the component specs *specs* of *kind* name (``watchlist?file=ids.txt``): inputs of the run.

    A spec that does not read is left out here, for its own check to refuse with its
    message (:func:`lidframe.registry.specs.spec_inputs`).
    """
    from lidframe.registry.specs import spec_inputs

    files: list[Path] = []
    for spec in specs:
        if spec is None:
            continue
        try:
            files.extend(spec_inputs(kind, spec).files)
        except InputError:
            continue
    return files


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


# ------------------------------------------------------------- flags in messages
#: The words a library check starts its message with, for a value the CLI takes from a flag:
#: the options records and analyses name their Python parameters, the CLI its flags.  Each
#: entry lists the flags those words can be, in the order tried; :func:`name_the_flag` uses
#: the first one that the command has and that the command line gave (a value that came
#: from elsewhere, ``ecapa?batch_size=0`` say, keeps the library's words).
PARAMETER_FLAGS: Mapping[str, tuple[str, ...]] = {
    "n_boot (--n-boot)": ("--n-boot",),
    "n_boot": ("--n-boot",),
    "confidence level": ("--bootstrap-level",),
    "bootstrap seed": ("--seed",),
    "level": ("--level",),
    "repeats": ("--repeats",),
    "database sizes": ("--sizes",),
    "k": ("--k",),
    "mu": ("--mu", "--dp-mu"),
    "clip_norm": ("--clip",),
    "jobs": ("--jobs",),
    "batch_size": ("--batch-size",),
    "device": ("--device",),
    "McAdams alpha": ("--alpha",),
    "pitch ratio": ("--ratio",),
    "resampling ratio": ("--ratio",),
    "alpha range": ("--alpha-range",),
    "ratio range": ("--ratio-range",),
}


def _given_flags(parser: argparse.ArgumentParser, args: argparse.Namespace | None) -> set[str]:
    """The flags of *parser* whose value in *args* is not their default (those the command line gave)."""
    given: set[str] = set()
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        if args is None or getattr(args, action.dest, action.default) != action.default:
            given.update(action.option_strings)
    return given


def name_the_flag(message: str, parser: argparse.ArgumentParser, args: argparse.Namespace | None = None) -> str:
    """*message* with the library's words for a value replaced by the flag that gave it.

    ``n_boot (--n-boot) must be an integer >= 100, got 5`` becomes ``--n-boot must be an
    integer >= 100, got 5``, ``clip_norm must be positive ...`` becomes ``--clip must be
    positive ...`` (:data:`PARAMETER_FLAGS`).  The words are replaced only at the start of
    the message, and only by a flag of *parser* (the command's parser) that *args* gave a
    value other than its default; any other message is returned as it is.

    Parameters
    ----------
    message : str
        The error's one line.
    parser : argparse.ArgumentParser
        The parser of the command that ran.
    args : argparse.Namespace, optional
        Its parsed command line; None: every flag of *parser* counts as given.

    Returns
    -------
    str
    """
    given = _given_flags(parser, args)
    for words in sorted(PARAMETER_FLAGS, key=len, reverse=True):  # "n_boot (--n-boot)" before "n_boot"
        if message.startswith(words + " ") or message.startswith(words + ":"):
            flag = next((f for f in PARAMETER_FLAGS[words] if f in given), None)
            return message if flag is None else flag + message[len(words) :]
    return message


def non_negative_int(value: int, flag: str) -> int:
    """*value* if it is an integer >= 0 (a seed), else an :class:`InputError` naming *flag*."""
    if value < 0:
        raise InputError(f"{flag} must be a non-negative integer, got {value}")
    return value


def positive_int(value: int, flag: str) -> int:
    """*value* if it is an integer >= 1 (a count), else an :class:`InputError` naming *flag*."""
    if value < 1:
        raise InputError(f"{flag} must be a positive integer, got {value}")
    return value


def positive_number(value: float, flag: str) -> float:
    """*value* if it is a finite number > 0, else an :class:`InputError` naming *flag*."""
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{flag} must be a positive, finite number, got {value}")
    return value


class CheckedFlag(argparse.Action):
    """A number flag checked as it is parsed: ``check(value, flag)`` returns it or raises :class:`InputError`.

    The error (one line, exit status 2) names the flag, before any input is read.  A flag
    left out keeps its default unchecked.  Used with ``type=int`` or ``type=float`` and one
    of :func:`non_negative_int`, :func:`positive_int`, :func:`positive_number`.
    """

    def __init__(
        self, option_strings: Sequence[str], dest: str, *, check: Callable[[Any, str], Any], **kwargs: Any
    ) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.check = check

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, self.check(values, self.option_strings[0]))


def system_name(args: argparse.Namespace) -> str:
    """``--name``, or a name made of the ``--dev`` and ``--eval`` files' names (:func:`lidframe.cli.naming.default_system_name`):
    the system's name in the table and the report."""
    if args.name is None:
        from lidframe.cli.naming import default_system_name

        return default_system_name(args.dev, args.eval)
    if not args.name.strip():
        raise InputError("--name: give the system a non-empty name")
    return args.name.strip()


def attacker_spec(args: argparse.Namespace) -> str | None:
    """``--attacker``, checked before any work: a spec must read ``NAME?key=value&...``."""
    if args.attacker is None:
        return None
    from lidframe.registry.coercion import split_query

    try:
        name, _ = split_query(args.attacker)
    except InputError as exc:
        raise InputError(f"--attacker: {exc}") from None
    if not name.strip():
        raise InputError(f"--attacker {args.attacker!r}: give the attacker's name before any ?key=value")
    return args.attacker
