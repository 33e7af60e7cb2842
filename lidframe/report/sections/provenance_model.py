"""Where a report's numbers come from, as records: the inputs, each row's settings, the attackers, the run.

:class:`Provenance` holds the report's :class:`InputFile` digests, each row's
:class:`SystemSettings`, the :class:`AttackerSettings` behind the scores, the provenance
each score file holds (:class:`~lidframe.data.provenance.ScoreFile`: how ``lidframe score``
made it, down to the digests of the audio), the command
line (:func:`command_line`) and the software (:func:`lidframe.report.sections.environment.environment`);
:func:`make_provenance` builds it for every builder.  The page's section "Settings and
provenance" (:mod:`lidframe.report.sections.provenance`) shows it.
"""

from __future__ import annotations

import datetime as _dt
import os
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from lidframe._version import __version__
from lidframe.core.summary import Summary
from lidframe.data.fileio import StrPath, file_sha256, json_clean
from lidframe.data.provenance import ScoreFile
from lidframe.errors import InputError, quote
from lidframe.report.headline import int_or_none
from lidframe.report.sections.environment import USED_PACKAGES, Environment, environment, packages_used, text_pairs

__all__ = [
    "InputFile",
    "SystemSettings",
    "AttackerSettings",
    "Provenance",
    "command_line",
    "make_provenance",
    "input_files",
    "lidframe_versions",
]


@attrs.frozen
class InputFile:
    """A file the reported numbers were computed from, with its SHA-256 digest.

    Attributes
    ----------
    role : str
        What it is (``"anon-weak dev"``, ``"grid store"``).
    path : str
    sha256 : str
        64 hex digits (:func:`lidframe.data.fileio.file_sha256`).
    size_bytes : int
    """

    role: str
    path: str
    sha256: str
    size_bytes: int

    @classmethod
    def of(cls, role: str, path: StrPath) -> InputFile:
        """Digest the file at *path* now.

        Raises
        ------
        InputError
            The file does not exist or is not a file.
        """
        target = Path(path)
        if not target.is_file():
            raise InputError(f"{path} ({role}): no such file; the report records the digest of every input file")
        return cls(role=role, path=str(path), sha256=file_sha256(target), size_bytes=target.stat().st_size)


@attrs.frozen
class SystemSettings:
    """How one cell was computed: the settings and sizes behind its numbers.

    Attributes
    ----------
    label : str
        The :attr:`ReportSystem.label` it belongs to.
    calibrator : str
        Calibrator spec with non-default parameters.
    calibrator_fit : dict or None
        The fitted calibrator's record (class, parameters, fitted values; JSON-able).
    prior : str
    znorm_ddof : int or None
        Row z-norm degrees of freedom (None: the calibrator reads raw scores).
    n_dev_enrolled_trials, n_dev_enrolled, n_dev_outsider_trials : int or None
        Dev trials whose speaker is enrolled, enrolled speakers, outsider trials.
    n_eval_enrolled_trials, n_eval_enrolled, n_eval_outsider_trials : int or None
        The same of the eval set.
    binary_metrics : str or None
        ``"computed"`` or ``"skipped: <why>"``.
    bootstrap : dict or None
        The bootstrap settings of the intervals (``Bootstrap.to_dict()``).
    """

    label: str
    calibrator: str
    calibrator_fit: dict | None
    prior: str
    znorm_ddof: int | None
    n_dev_enrolled_trials: int | None
    n_dev_enrolled: int | None
    n_dev_outsider_trials: int | None
    n_eval_enrolled_trials: int | None
    n_eval_enrolled: int | None
    n_eval_outsider_trials: int | None
    binary_metrics: str | None
    bootstrap: dict | None

    @classmethod
    def from_summary(
        cls, label: str, summary: Summary | Mapping[str, Any], calibrator_fit: dict | None = None
    ) -> SystemSettings:
        """The settings recorded in an evaluate summary (``Result.summary``, read by its attributes, or its JSON form)."""
        fit = json_clean(calibrator_fit) if calibrator_fit else None
        if not isinstance(summary, Summary):
            summary = Summary.from_dict(summary, earlier=True)
        return cls(
            label=label,
            calibrator=_known(summary.calibrator),
            calibrator_fit=fit,
            prior=_known(summary.prior),
            znorm_ddof=int_or_none(summary.znorm_ddof),
            n_dev_enrolled_trials=int_or_none(summary.n_dev_enrolled_trials),
            n_dev_enrolled=int_or_none(summary.n_dev_enrolled),
            n_dev_outsider_trials=int_or_none(summary.n_dev_outsider_trials),
            n_eval_enrolled_trials=int_or_none(summary.n_enrolled_trials),
            n_eval_enrolled=int_or_none(summary.n_enrolled),
            n_eval_outsider_trials=int_or_none(summary.n_outsider_trials),
            binary_metrics=summary.binary_metrics,
            bootstrap=None if summary.bootstrap is None else json_clean(summary.bootstrap.to_dict()),
        )


def _known(setting: str | None) -> str:
    """A summary's setting as the page prints it: ``?`` where the summary has none (a store row no lidframe wrote)."""
    return "?" if setting is None else str(setting)


def _settings_tuple(items: Iterable[SystemSettings]) -> tuple[SystemSettings, ...]:
    return tuple(items)


def _inputs_tuple(items: Iterable[InputFile]) -> tuple[InputFile, ...]:
    return tuple(items)


def _spec_value(value: str) -> str:
    return value if value else '""'


@attrs.frozen
class AttackerSettings:
    """An attacker behind a report's scores: its name, its settings, and the files they name (its checkpoint).

    Attributes
    ----------
    name : str
        The attacker, as the run names it (``"ecapa"``, ``"ge2e"``, a name of one's own).
    settings : tuple of (str, str)
        (setting, value as text), in order: a small table on the page.
    files : tuple of InputFile
        The files its settings name (a checkpoint, an embedding file), each with its
        SHA-256 digest; the role of each is its setting.

    Examples
    --------
    >>> AttackerSettings.from_spec("my-ecapa?device=cpu&batch_size=16").settings
    (('device', 'cpu'), ('batch_size', '16'))
    """

    name: str
    settings: tuple[tuple[str, str], ...] = attrs.field(converter=text_pairs, factory=tuple)
    files: tuple[InputFile, ...] = attrs.field(converter=_inputs_tuple, factory=tuple)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InputError(f"an attacker needs a non-empty name, got {self.name!r:.80}")

    @classmethod
    def of(
        cls, name: str, settings: Mapping[str, Any] | None = None, files: Mapping[str, StrPath] | None = None
    ) -> AttackerSettings:
        """An attacker with its *settings* (name -> value, shown as text) and *files* (setting -> path, digested now).

        Raises
        ------
        InputError
            An empty name, or a file that does not exist.
        """
        shown = [(str(k), _setting_text(v)) for k, v in (settings or {}).items()]
        digested = [InputFile.of(str(role), path) for role, path in (files or {}).items()]
        return cls(name=name, settings=shown, files=digested)

    @classmethod
    def from_spec(cls, spec: str) -> AttackerSettings:
        """The attacker of a spec ``NAME?key=value&...`` (``lidframe score --attacker``'s words), without building it.

        Its parameters are its settings, in order; each value that names an existing file
        (``checkpoint=model.ckpt``) is also digested.  The name need not be a registered
        attacker: the scores may come from elsewhere.

        Raises
        ------
        InputError
            A malformed spec (``NAME?key=value&key=value``).
        """
        from lidframe.registry.coercion import split_query

        name, pairs = split_query(spec)
        if not name.strip():
            raise InputError(f"attacker {quote(spec)}: give its name before any ?key=value")
        files = {key: value for key, value in pairs if value and Path(value).is_file()}
        return cls.of(name.strip(), {key: _spec_value(value) for key, value in pairs}, files)


def _setting_text(value: Any) -> str:
    """A setting as the page shows it: numbers as they are, lists comma-separated, yes/no, none."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_setting_text(v) for v in value)
    return str(value)


def _score_files_tuple(items: Iterable[ScoreFile]) -> tuple[ScoreFile, ...]:
    return tuple(items)


def _attackers_tuple(items: Iterable[AttackerSettings]) -> tuple[AttackerSettings, ...]:
    items = tuple(items)
    for item in items:
        if not isinstance(item, AttackerSettings):
            raise InputError(f"attackers must be AttackerSettings records, got a {type(item).__name__}")
    return items


@attrs.frozen
class Provenance:
    """Where the numbers of a report come from.

    Attributes
    ----------
    lidframe_version : str
        Version that computed the numbers (the summaries' ``lidframe_version``).
    report_version : str
        Version that wrote the report.
    created : str
        ISO 8601 date and time (UTC) the report was built.
    systems : tuple of SystemSettings
        Calibrator and prior with parameters, z-norm ddof, dev and eval sizes, per cell.
    inputs : tuple of InputFile
        Input files with their SHA-256 digests.
    settings : tuple of (str, str)
        Further settings of the run (mechanism, ...), as name and text.
    command : str or None
        The full command line that made the report, shell-quoted (``lidframe evaluate
        --dev dev.npz ...``); None when not known.
    working_folder : str or None
        The folder it ran in (what the command line's relative paths are relative to).
    environment : Environment or None
        lidframe's version, source digest and git commit, Python's and the packages' versions.
    attackers : tuple of AttackerSettings
        The attackers behind the scores, with their settings and checkpoint digests.
    engines : tuple of (str, str)
        (speech engine, its version) of the synthesis behind the audio (the real-voice demo).
    score_files : tuple of ScoreFile
        The score files behind the numbers with the provenance each holds (None where it
        holds none: the page says :data:`~lidframe.data.provenance.NO_PROVENANCE`).
    """

    lidframe_version: str
    report_version: str
    created: str
    systems: tuple[SystemSettings, ...] = attrs.field(converter=_settings_tuple)
    inputs: tuple[InputFile, ...] = attrs.field(converter=_inputs_tuple, factory=tuple)
    settings: tuple[tuple[str, str], ...] = attrs.field(converter=text_pairs, factory=tuple)
    command: str | None = None
    working_folder: str | None = None
    environment: Environment | None = None
    attackers: tuple[AttackerSettings, ...] = attrs.field(converter=_attackers_tuple, factory=tuple)
    engines: tuple[tuple[str, str], ...] = attrs.field(converter=text_pairs, factory=tuple)
    score_files: tuple[ScoreFile, ...] = attrs.field(converter=_score_files_tuple, factory=tuple)


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command line that made a report, shell-quoted (``sh`` reads it back to the same arguments).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments of a ``lidframe`` command, after ``lidframe`` (what
        ``lidframe.cli.main`` parsed): the line is ``lidframe`` and these.  Without them,
        this process's own: ``lidframe ...`` when it is the ``lidframe`` command, else
        the interpreter's full command line (``python make_report.py ...``,
        :data:`sys.orig_argv`).

    Returns
    -------
    str
    """
    if argv is not None:
        return shlex.join(["lidframe", *(os.fspath(a) for a in argv)])
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and (script.name == "lidframe" or script.parts[-3:] == ("lidframe", "cli", "__main__.py")):
        return shlex.join(["lidframe", *sys.argv[1:]])
    return shlex.join(sys.orig_argv)


def _now(created: _dt.datetime | None) -> str:
    moment = created or _dt.datetime.now(_dt.UTC)
    if moment.tzinfo is None:
        raise InputError("created must be a timezone-aware datetime (e.g. datetime.now(timezone.utc))")
    return moment.astimezone(_dt.UTC).isoformat(timespec="seconds")


def input_files(inputs: Mapping[str, StrPath] | None) -> list[InputFile]:
    """Digest every file of *inputs* (role -> path)."""
    return [InputFile.of(str(role), path) for role, path in (inputs or {}).items()]


def _settings(settings: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in (settings or {}).items())


def make_provenance(
    *,
    lidframe_version: str,
    created: _dt.datetime | None,
    systems: Sequence[SystemSettings],
    inputs: Sequence[InputFile],
    settings: Mapping[str, Any] | None,
    command: str | None,
    attackers: Sequence[AttackerSettings],
    engines: Mapping[str, str] | None = None,
    score_files: Sequence[ScoreFile] = (),
    used: Iterable[str] = (),
) -> Provenance:
    """The provenance of a report: what the builders share (the time, the command line, the environment).

    The software names the packages of :data:`~lidframe.report.sections.environment.USED_PACKAGES`
    that *used* names or the attackers use (those of *attackers* and of the score files'
    provenance, :func:`~lidframe.report.sections.environment.packages_used`).
    """
    if command is not None and not isinstance(command, str):
        raise InputError(f"command must be the command line as one string, got {type(command).__name__}")
    for item in score_files:
        if not isinstance(item, ScoreFile):
            raise InputError(f"score_files must be ScoreFile records, got a {type(item).__name__}")
    names = [a.name for a in attackers] + [f.provenance.attacker.name for f in score_files if f.provenance]
    found = {*packages_used(attackers=names), *used}
    return Provenance(
        lidframe_version=lidframe_version,
        report_version=__version__,
        created=_now(created),
        systems=systems,
        inputs=inputs,
        settings=_settings(settings),
        command=command_line() if command is None else command,
        working_folder=_working_folder(),
        environment=environment([name for name in USED_PACKAGES if name in found]),
        attackers=attackers,
        engines=[(str(k), str(v)) for k, v in (engines or {}).items()],
        score_files=score_files,
    )


def _working_folder() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the folder was removed under the process
        return None


def lidframe_versions(summaries: Sequence[Summary | Mapping[str, Any]]) -> str:
    """The lidframe version(s) that computed the summaries ("0.1.0", or "0.1.0, 0.2.0" when mixed).

    A :class:`~lidframe.core.summary.Summary` is read by its attribute, a mapping (its JSON form) by its key.
    """
    versions = (s.lidframe_version if isinstance(s, Summary) else s.get("lidframe_version") for s in summaries)
    found = sorted({str(version) for version in versions if version})
    return ", ".join(found) if found else "unknown"
