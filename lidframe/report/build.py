"""Builders of a :class:`~lidframe.report.model.Report` from what lidframe computes.

:func:`report_from_results`
    ``lidframe.evaluate`` Results (one per system, ``lidframe evaluate --report``, the
    demos), optionally with each system's calibrator sensitivity and per-speaker table.
:func:`report_from_grid`
    the finished cells of a grid (the records :func:`lidframe.grid.report.load_results`
    returns) and their per-trial files (``lidframe report GRID_DIR``).
:func:`report_from_dp_audit`
    a :func:`lidframe.privacy.audit.dp_audit` record (``lidframe dp-audit --report``).
:func:`ladder_from_results`
    the threat-model ladder of Results (:class:`~lidframe.report.model.LadderEntry` per
    label): ``report_from_results(..., ladder=entries)`` adds it to the page.

Each digests the input files it is told about (and, for a grid, the store and the
per-trial files it reads) into the report's :class:`~lidframe.report.model.Provenance`,
with the command line (:func:`command_line`), the software behind the numbers
(:func:`environment`: lidframe's version, source digest and git commit, the versions of
numpy, scipy, scikit-learn and torch) and the attackers with their settings.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from lidframe._version import __version__, _source_digest
from lidframe.analyses.sensitivity import SensitivityResult
from lidframe.core.lid import LN2
from lidframe.core.result import Result
from lidframe.data.fileio import StrPath
from lidframe.data.npzfile import read_npz
from lidframe.errors import InputError, preview, quote
from lidframe.privacy.audit import AUDIT_BOOTSTRAP, DPAuditResult
from lidframe.report.model import (
    ENVIRONMENT_PACKAGES,
    NOT_INSTALLED,
    AttackerSettings,
    Environment,
    Headline,
    InputFile,
    Ladder,
    LadderCell,
    LadderEntry,
    OpenSetHeadline,
    OpenSetPerTrial,
    Provenance,
    Report,
    ReportSystem,
    SystemSettings,
    SystemUtility,
)

if TYPE_CHECKING:
    from lidframe.utility import Utility

__all__ = [
    "report_from_results",
    "report_from_grid",
    "report_from_dp_audit",
    "ladder_from_results",
    "lid_ceiling_bits",
    "command_line",
    "environment",
]


def _now(created: _dt.datetime | None) -> str:
    moment = created or _dt.datetime.now(_dt.UTC)
    if moment.tzinfo is None:
        raise InputError("created must be a timezone-aware datetime (e.g. datetime.now(timezone.utc))")
    return moment.astimezone(_dt.UTC).isoformat(timespec="seconds")


def _inputs(inputs: Mapping[str, StrPath] | None) -> list[InputFile]:
    """Digest every file of *inputs* (role -> path)."""
    return [InputFile.of(str(role), path) for role, path in (inputs or {}).items()]


def _settings(settings: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in (settings or {}).items())


# ------------------------------------------------------------------ provenance: command line and software
#: The folder lidframe's source lies in (a git checkout's root when it runs from one).
_SOURCE_ROOT = Path(__file__).resolve().parents[2]
#: How long a git query may take before the commit is left out (seconds).
_GIT_TIMEOUT = 10.0


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


def _git(*args: str) -> str | None:
    """The output of ``git -C <source root> ARGS``, stripped; None where git is missing, fails or hangs."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        done = subprocess.run(
            [git, "-C", str(_SOURCE_ROOT), *args], capture_output=True, text=True, timeout=_GIT_TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _git_checkout() -> tuple[str | None, bool | None]:
    """(commit, modified) of the git checkout lidframe runs from; (None, None) when it runs from none.

    Only a checkout whose root holds lidframe's package counts: an installed lidframe inside
    some other repository (a virtual environment in a project) has no commit of its own.
    """
    if not (_SOURCE_ROOT / ".git").exists() or not (_SOURCE_ROOT / "lidframe" / "_version.py").is_file():
        return None, None
    commit = _git("rev-parse", "--verify", "HEAD")
    if commit is None or len(commit) != 40:
        return None, None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return commit, None if status is None else bool(status)


def _package_version(name: str) -> str:
    try:
        return _distribution_version(name)
    except PackageNotFoundError:
        return NOT_INSTALLED


def environment() -> Environment:
    """The software computing now: lidframe's version, source digest and git commit, Python and the packages.

    Reads the packages' versions from their metadata (:mod:`importlib.metadata`): torch is
    never imported.  The source digest is computed once per process.

    Returns
    -------
    Environment
    """
    commit, modified = _git_checkout()
    return Environment(
        lidframe_version=__version__,
        source_digest=_source_digest(),
        git_commit=commit,
        git_modified=modified,
        python=platform.python_version(),
        packages=[(name, _package_version(name)) for name in ENVIRONMENT_PACKAGES],
    )


def _provenance(
    *,
    lidframe_version: str,
    created: _dt.datetime | None,
    systems: Sequence[SystemSettings],
    inputs: Sequence[InputFile],
    settings: Mapping[str, Any] | None,
    command: str | None,
    attackers: Sequence[AttackerSettings],
    engines: Mapping[str, str] | None = None,
) -> Provenance:
    """The provenance of a report: what the builders share (the time, the command line, the environment)."""
    if command is not None and not isinstance(command, str):
        raise InputError(f"command must be the command line as one string, got {type(command).__name__}")
    return Provenance(
        lidframe_version=lidframe_version,
        report_version=__version__,
        created=_now(created),
        systems=systems,
        inputs=inputs,
        settings=_settings(settings),
        command=command_line() if command is None else command,
        working_folder=_working_folder(),
        environment=environment(),
        attackers=attackers,
        engines=[(str(k), str(v)) for k, v in (engines or {}).items()],
    )


def _working_folder() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the folder was removed under the process
        return None


def _versions(summaries: Sequence[Mapping[str, Any]]) -> str:
    """The lidframe version(s) that computed the summaries ("0.1.0", or "0.1.0, 0.2.0" when mixed)."""
    found = sorted({str(s["lidframe_version"]) for s in summaries if s.get("lidframe_version")})
    return ", ".join(found) if found else "unknown"


def lid_ceiling_bits(result: Result) -> float:
    """The largest LID any trial of *result* with a LID could reach: max_i -log2 prior(true speaker of i).

    LID_i = log2(p_i / pi_i) <= -log2 pi_i, since p_i <= 1; under a uniform prior this is
    log2 N for every trial of the closed set.  In the open set (``result.outside`` = π_∅
    > 0) an enrolled speaker's prior is (1 - π_∅) times its prior given enrolment, and an
    outsider trial's true hypothesis ("nobody enrolled") has prior π_∅.

    Parameters
    ----------
    result : Result

    Returns
    -------
    float
        Bits.
    """
    column = {str(s): j for j, s in enumerate(result.enrolled)}
    outsider = np.asarray(result.is_outsider, dtype=bool)
    true = np.array([column[str(s)] for s in result.trial_speakers[~outsider]], dtype=np.intp)
    outside = float(result.outside)
    neg_log_prior = -result.log_prior[true] - (math.log1p(-outside) if outside > 0 else 0.0)
    ceiling = float(np.max(neg_log_prior, initial=-np.inf))
    if outside > 0 and outsider.any():
        ceiling = max(ceiling, -math.log(outside))
    return ceiling / LN2


def _keyed(name: str, records: Mapping[str, Any] | None, keys: Sequence[str]) -> dict[str, Any]:
    records = dict(records or {})
    unknown = [k for k in records if k not in keys]
    if unknown:
        raise InputError(f"{name} given for {unknown[0]!r}, which is not one of the results: {list(keys)}")
    return records


def _utility_of(
    utility: Mapping[str, Utility] | None, utility_note: str | None, rows: Sequence[tuple[str, str]], *, where: str
) -> tuple[tuple[SystemUtility, ...], str | None]:
    """Each system's utility with the labels of its rows, checked; and the note, checked.

    Parameters
    ----------
    utility : mapping of str to Utility, or None
        system -> :func:`lidframe.utility.utility` of its speech.
    utility_note : str or None
    rows : sequence of (str, str)
        (label, system) of every row of the report, in page order.
    where : str
        What the systems are (``"the systems"``, ``"the grid's systems"``), for the message.

    Returns
    -------
    tuple of SystemUtility, str or None
        In the order of the systems' first rows.

    Raises
    ------
    InputError
        *utility* not a mapping, a value that is not a Utility record, a system that is
        none of the report's (naming them), or a note that is not a non-empty string.
    """
    if utility_note is not None and (not isinstance(utility_note, str) or not utility_note.strip()):
        raise InputError(f"utility_note must be a non-empty sentence, got {utility_note!r:.80}")
    note = None if utility_note is None else utility_note.strip()
    if utility is None:
        return (), note
    if not isinstance(utility, Mapping):
        raise InputError(f"utility must map each system to its Utility record, got {type(utility).__name__}")
    from lidframe.utility.evaluate import Utility

    systems = list(dict.fromkeys(system for _, system in rows))
    for system, record in utility.items():
        if not isinstance(record, Utility):
            raise InputError(
                f"utility of {quote(str(system))} is a {type(record).__name__}, not a lidframe.utility.Utility record "
                "(lidframe.utility.utility(), or read_utility() of lidframe utility --json)"
            )
        if system not in systems:
            raise InputError(f"utility given for {quote(str(system))}, which is not one of {where}: {preview(systems)}")
    out = tuple(
        SystemUtility(system, utility[system], [label for label, owner in rows if owner == system])
        for system in systems
        if system in utility
    )
    return out, note


def _checked_results(
    results: Mapping[str, Result],
    sensitivity: Mapping[str, SensitivityResult] | None,
    per_speaker: Mapping[str, Any] | None,
    systems: Mapping[str, str] | None,
) -> tuple[dict[str, Result], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The arguments of :func:`report_from_results` as dicts, checked: Results, and records of their labels only.

    Returns
    -------
    results, sensitivity, per_speaker, systems : dict
        Each keyed by the results' labels.

    Raises
    ------
    InputError
        No results, a value that is not a Result or a SensitivityResult, or a record for
        an unknown label.
    """
    results = dict(results)
    if not results:
        raise InputError("a report needs at least one Result")
    for label, result in results.items():
        if not isinstance(result, Result):
            raise InputError(f"result {label!r} is a {type(result).__name__}, not a lidframe Result")
    labels = list(results)
    sensitivity_of = _keyed("sensitivity", sensitivity, labels)
    for label, record in sensitivity_of.items():
        if not isinstance(record, SensitivityResult):
            raise InputError(f"sensitivity of {label!r} is a {type(record).__name__}, not a SensitivityResult")
    return results, sensitivity_of, _keyed("per_speaker", per_speaker, labels), _keyed("systems", systems, labels)


def _result_system(
    label: str,
    result: Result,
    *,
    name: str,
    sensitivity: SensitivityResult | None,
    per_speaker: Any,
    no_intervals: str | None = None,
) -> ReportSystem:
    """The report's row of one ``evaluate`` Result: its headline and the LID of its trials that have one.

    Those are the enrolled trials in the closed set, every trial in the open set (with the
    open-set numbers and per-trial arrays).
    """
    summary = result.summary
    open_set = result.outside > 0
    return ReportSystem(
        label=str(label),
        name=name,
        calibrator=str(summary.get("calibrator", "?")),
        prior=str(summary.get("prior", "?")),
        headline=Headline.from_summary(summary, where=f"result {label!r}"),
        lid_bits=result.lid if open_set else result.lid[~result.is_outsider],
        lid_ceiling_bits=lid_ceiling_bits(result),
        sensitivity=sensitivity,
        per_speaker=per_speaker,
        open_set=OpenSetHeadline.from_summary(summary),
        open_trials=OpenSetPerTrial(result.is_outsider, result.top_posterior) if open_set else None,
        no_intervals=None if summary.get("intervals") else no_intervals,
    )


def ladder_from_results(entries: Sequence[LadderEntry], results: Mapping[str, Result]) -> Ladder:
    """The threat-model ladder of *results*: each entry with the numbers of the Result of its label.

    Parameters
    ----------
    entries : sequence of LadderEntry
        One per evaluated row of the ladder (the real-voice demo makes them from its rows:
        ``LadderEntry(**row.to_dict())``): at least one with a scenario; those without
        one (plain speech) are the reference.
    results : mapping of str to Result
        label -> Result; every entry's label must be one of them (other labels are left out
        of the ladder).

    Returns
    -------
    Ladder
        Per entry its ALID and LIDmax with their bootstrap intervals, its EER and log2 N,
        read from ``results[label].summary``.

    Raises
    ------
    InputError
        An entry that is not a LadderEntry, a label without a Result (named), no entry
        with a scenario, a label given twice, or two entries of one system, attacker and rung.
    """
    if isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Iterable):
        raise InputError(f"ladder must be a sequence of LadderEntry records, got {type(entries).__name__}")
    entries = list(entries)
    for k, entry in enumerate(entries):
        if not isinstance(entry, LadderEntry):
            raise InputError(f"ladder entry {k} is a {type(entry).__name__}, not a LadderEntry")
    for entry in entries:
        if entry.label not in results:
            raise InputError(
                f"ladder entry {quote(entry.label)}: no Result with that label (the results: {preview(results)})"
            )
    return Ladder(LadderCell.from_summary(entry, results[entry.label].summary) for entry in entries)


def report_from_results(
    results: Mapping[str, Result],
    *,
    title: str | None = None,
    systems: Mapping[str, str] | None = None,
    sensitivity: Mapping[str, SensitivityResult] | None = None,
    per_speaker: Mapping[str, Any] | None = None,
    inputs: Mapping[str, StrPath] | None = None,
    settings: Mapping[str, Any] | None = None,
    notes: Sequence[str] = (),
    created: _dt.datetime | None = None,
    ladder: Sequence[LadderEntry] | None = None,
    command: str | None = None,
    attackers: Sequence[AttackerSettings] = (),
    engines: Mapping[str, str] | None = None,
    no_intervals: Mapping[str, str] | None = None,
    kind: Literal["evaluate", "sensitivity"] = "evaluate",
    utility: Mapping[str, Utility] | None = None,
    utility_note: str | None = None,
) -> Report:
    """A report of ``lidframe.evaluate`` Results, one row and one section per label.

    Parameters
    ----------
    results : mapping of str to Result
        label -> Result (at least one), in the order the page shows them.
    title : str, optional
        Page title (default ``"lidframe audit report"``).
    systems : mapping of str to str, optional
        label -> system name, for results that are variants of one system (the real-voice
        demo's ``"ecapa/logistic"`` and ``"ecapa/isotonic"`` -> ``"ecapa"``): a system's
        results share a colour and a section, their calibrators differ by line style.
        By default each label is its own system.
    sensitivity : mapping of str to SensitivityResult, optional
        label -> :func:`lidframe.analyses.sensitivity.sensitivity` of that system's dev/eval pair.
    per_speaker : mapping of str to record, optional
        label -> :func:`lidframe.analyses.per_speaker.per_speaker` of its Result.
    inputs : mapping of str to path, optional
        role -> input file (``{"dev": "dev.npz", "eval": "eval.npz"}``); each is digested now.
    settings : mapping, optional
        Further settings of the run to show (name -> value).
    notes : sequence of str
        Sentences shown under the title.
    created : datetime, optional
        Time stamp of the report (timezone-aware; default now, UTC).
    ladder : sequence of LadderEntry, optional
        The threat-model ladder: one entry per label evaluated on a rung (and the plain
        speech's labels as its reference); the page then has a section "Threat-model
        ladder" (:func:`ladder_from_results`).  None: no such section.
    command : str, optional
        The command line that made the report, as one shell-quoted string
        (:func:`command_line` of a command's arguments); default this process's.
    attackers : sequence of AttackerSettings
        The attackers that scored, with their settings and checkpoint files
        (:meth:`AttackerSettings.of`, :meth:`AttackerSettings.from_spec`): a small table
        each on the page, the files with their digests.
    engines : mapping of str to str, optional
        Speech engine -> its version, of the synthesis behind the audio (the real-voice
        demo's corpus).
    no_intervals : mapping of str to str, optional
        label -> why its headline has no intervals (``"the eval set has 7 speakers, too
        few for a speaker bootstrap"``), said on its card; ignored for a Result with intervals.
    kind : {"evaluate", "sensitivity"}
        What made the Results (the page's header says it): ``lidframe evaluate`` (and the
        demos), or ``lidframe sensitivity`` (its first calibrator and prior's Result,
        with the analysis as its ``sensitivity`` record).
    utility : mapping of str to Utility, optional
        system -> :func:`lidframe.utility.utility` of that system's speech (a system as
        *systems* names it; a label not in *systems* is its own system).  The page's
        section "Privacy and utility" then shows each system's WER and ρ_F0, and the
        privacy-utility chart: every row of the system a point at its WER.  None: the
        section says how to measure it.
    utility_note : str, optional
        A sentence on the speech the utility was measured on (which voices, ρ_F0 against
        what), shown with the table and the chart.

    Returns
    -------
    Report

    Raises
    ------
    InputError
        No results, a value that is not a Result, a sensitivity / per-speaker record for
        an unknown label, an input file that does not exist, a ladder entry whose label
        has no Result (or the other faults :func:`ladder_from_results` names), or a
        utility for a system that is not one of the results' (or not a Utility record).
    """
    results, sensitivity_of, per_speaker_of, name_of = _checked_results(results, sensitivity, per_speaker, systems)
    why_none = _keyed("no_intervals", no_intervals, list(results))
    ladder_record = None if ladder is None else ladder_from_results(ladder, results)
    utility_rows, note = _utility_of(
        utility, utility_note, [(str(label), str(name_of.get(label, label))) for label in results], where="the systems"
    )
    report_systems, settings_rows = [], []
    for label, result in results.items():
        report_systems.append(
            _result_system(
                label,
                result,
                name=str(name_of.get(label, label)),
                sensitivity=sensitivity_of.get(label),
                per_speaker=per_speaker_of.get(label),
                no_intervals=None if why_none.get(label) is None else str(why_none[label]),
            )
        )
        settings_rows.append(
            SystemSettings.from_summary(str(label), result.summary, result.to_dict().get("calibrator_fit"))
        )
    provenance = _provenance(
        lidframe_version=_versions([r.summary for r in results.values()]),
        created=created,
        systems=settings_rows,
        inputs=_inputs(inputs),
        settings=settings,
        command=command,
        attackers=attackers,
        engines=engines,
    )
    if kind not in ("evaluate", "sensitivity"):
        raise InputError(f"kind must be 'evaluate' or 'sensitivity' for a report of Results, got {kind!r}")
    return Report(
        title=title or "lidframe audit report",
        kind=kind,
        systems=report_systems,
        provenance=provenance,
        notes=notes,
        ladder=ladder_record,
        utility=utility_rows,
        utility_note=note,
    )


_GRID_KEYS = ("system", "attacker", "mechanism", "calibrator", "prior", "seed")


def _scenario(cell: Mapping[str, Any]) -> str | None:
    """A grid cell's scenario (the ``scenarios`` axis); None for none (stored ``-``, or no key)."""
    scenario = cell.get("scenario")
    return None if scenario in (None, "-") else str(scenario)


def _cell_name(cell: Mapping[str, Any]) -> str:
    parts = [str(cell[k]) for k in _GRID_KEYS]
    scenario = _scenario(cell)
    return "/".join(parts if scenario is None else [*parts[:3], scenario, *parts[3:]])


def _grid_ceiling(lid: np.ndarray, posterior: np.ndarray | None, log2_n: float) -> float:
    """max_i -log2 prior(true speaker) from a cell's per-trial file: LID_i - log2 p_i (= log2 N when uniform)."""
    if posterior is None:
        return log2_n
    with np.errstate(divide="ignore", invalid="ignore"):
        neg_log_prior = lid - np.log2(posterior)
    finite = neg_log_prior[np.isfinite(neg_log_prior)]
    if finite.size == 0:
        return log2_n
    ceiling = float(finite.max())
    return log2_n if math.isclose(ceiling, log2_n, rel_tol=0.0, abs_tol=1e-9) else ceiling


#: The arrays of a grid cell's per-trial file (``lidframe.grid.runner`` writes them);
#: ``posterior_true`` is missing from the files of early lidframe versions, and only an
#: open-set cell's file has ``outsider``, ``membership_bits`` and ``top_posterior``.
_PER_TRIAL_KEYS = ("trial_ids", "trial_speakers", "lid")
_PER_TRIAL_OPTIONAL = ("posterior_true", "outsider", "membership_bits", "top_posterior")


def _per_trial_lid(
    path: Path, cell: Mapping[str, Any], out: Path
) -> tuple[np.ndarray, np.ndarray | None, OpenSetPerTrial | None]:
    """LID (bits) and posterior of the true speaker per trial, from a cell's per-trial file.

    Read through :func:`lidframe.data.npzfile.read_npz`, so a damaged, truncated or forged
    file is one line naming it (and the cell, and what to do), before anything is allocated.

    Returns
    -------
    lid : ndarray, shape (T,)
        NaN for outsider trials in the closed set.
    posterior : ndarray, shape (T,), or None
        None in a file written before lidframe stored it.
    open_trials : OpenSetPerTrial or None
        An open-set cell's outsider flags and top enrolled posteriors; None otherwise.
    """
    try:
        arrays = read_npz(
            path,
            _PER_TRIAL_KEYS,
            _PER_TRIAL_OPTIONAL,
            kinds=dict.fromkeys(("lid", *_PER_TRIAL_OPTIONAL), "numbers"),
            what="per-trial LID file",
        )
    except InputError as exc:
        problem = str(exc).removeprefix(f"{path}: ")
        raise InputError(
            f"{path}: the per-trial file of grid cell {_cell_name(cell)} is unreadable ({problem}); delete it and "
            f"rerun lidframe grid on {out}, which recomputes the cell"
        ) from None
    lid = np.asarray(arrays["lid"], dtype=np.float64).ravel()
    optional: dict[str, np.ndarray] = {}
    for key in _PER_TRIAL_OPTIONAL:
        if arrays.get(key) is None:
            continue
        optional[key] = np.asarray(arrays[key], dtype=np.float64).ravel()
        if optional[key].shape != lid.shape:
            raise InputError(
                f"{path}: {key} has {optional[key].size} values but lid {lid.size} (grid cell "
                f"{_cell_name(cell)}); delete the file and rerun lidframe grid on {out}"
            )
    if lid.size == 0 or np.isnan(lid).all():
        raise InputError(
            f"{path}: no closed-set trial with a LID (grid cell {_cell_name(cell)}); delete the file and rerun "
            f"lidframe grid on {out}"
        )
    open_trials = None
    if "outsider" in optional:
        open_trials = OpenSetPerTrial(optional["outsider"] != 0, optional.get("top_posterior"))
    return lid, optional.get("posterior_true"), open_trials


def _grid_cells(cells: Sequence[Any], out: Path) -> list[Mapping[str, Any]]:
    """Each finished cell as the store holds it (a record's ``to_dict()``, a mapping as it is), checked and sorted."""
    rows = [cell.to_dict() if hasattr(cell, "to_dict") else cell for cell in cells]
    if not rows:
        raise InputError(f"{out}: the grid has no finished cells to report")
    for row in rows:
        missing = [k for k in (*_GRID_KEYS, "summary", "per_trial") if k not in row]
        if missing:
            raise InputError(f"grid cell {row!r:.80}: not a finished cell record (no {', '.join(missing)})")
    return sorted(
        rows,
        key=lambda c: (
            *(str(c[k]) if k != "seed" else f"{int(c[k]):012d}" for k in _GRID_KEYS),
            _scenario(c) or "",
        ),
    )


def _grid_system(
    cell: Mapping[str, Any], out: Path, *, several_attackers: bool, several_seeds: bool
) -> tuple[ReportSystem, SystemSettings, InputFile]:
    """One finished grid cell's row of the report, its settings, and its per-trial file (digested)."""
    summary = cell["summary"]
    name = str(cell["system"])
    if cell["mechanism"] not in (None, "-"):
        name += f" [{cell['mechanism']}]"
    if _scenario(cell) is not None:  # one system per scenario (the grid's scenarios axis)
        name += f" ({_scenario(cell)})"
    audited = name  # the system under audit: what "N systems" counts, whichever attacker scored it
    if several_attackers:
        name += f" / {cell['attacker']}"
    label = f"{name} · {cell['calibrator']} · {cell['prior']}"
    if several_seeds:
        label += f" · seed {cell['seed']}"
    path = out / str(cell["per_trial"])
    if not path.is_file():
        raise InputError(
            f"{path}: the per-trial file of grid cell {_cell_name(cell)} is missing; rerun lidframe grid on {out}"
        )
    lid, posterior, open_trials = _per_trial_lid(path, cell, out)
    with_lid = ~np.isnan(lid)  # the enrolled trials in the closed set, every trial in the open set
    open_set = OpenSetHeadline.from_summary(summary)
    stored_trials = summary.get("n_enrolled_trials")
    if stored_trials is not None and open_set is not None:
        stored_trials = int(stored_trials) + int(summary.get("n_outsider_trials") or 0)
    if stored_trials is not None and int(stored_trials) != int(with_lid.sum()):
        # the file and the stored summary come from different runs: no page mixes the two
        raise InputError(
            f"{path}: holds {int(with_lid.sum())} {'trials with a LID' if open_set else 'closed-set trials'} but grid "
            f"cell {_cell_name(cell)} was summarised over {int(stored_trials)}; the file is stale: delete it and "
            f"rerun lidframe grid on {out}"
        )
    headline = Headline.from_summary(summary, where=f"grid cell {_cell_name(cell)}")
    if open_trials is not None and not with_lid.all():
        open_trials = None  # a closed-set file: its outsider trials have no LID to draw
    system = ReportSystem(
        label=label,
        name=name,
        calibrator=str(cell["calibrator"]),
        prior=str(cell["prior"]),
        headline=headline,
        lid_bits=lid[with_lid],
        lid_ceiling_bits=_grid_ceiling(
            lid[with_lid], None if posterior is None else posterior[with_lid], headline.log2_n
        ),
        attacker=str(cell["attacker"]),
        seed=int(cell["seed"]),
        open_set=open_set,
        open_trials=open_trials,
        system=audited,
    )
    settings = SystemSettings.from_summary(label, summary, summary.get("calibrator_fit"))
    return system, settings, InputFile.of(f"per-trial LID of {label}", path)


def report_from_grid(
    cells: Sequence[Any],
    *,
    out_dir: StrPath,
    title: str | None = None,
    inputs: Mapping[str, StrPath] | None = None,
    settings: Mapping[str, Any] | None = None,
    notes: Sequence[str] = (),
    created: _dt.datetime | None = None,
    command: str | None = None,
    utility: Mapping[str, Utility] | None = None,
    utility_note: str | None = None,
) -> Report:
    """A report of a grid's finished cells, one row per cell and one section per system.

    Parameters
    ----------
    cells : sequence of FinishedCell or mapping
        The finished cells as :func:`lidframe.grid.report.load_results` returns them
        (:class:`lidframe.grid.records.FinishedCell` records), or mappings as their
        ``to_dict()`` gives them: ``system, attacker, mechanism, calibrator, prior, seed,
        summary`` and ``per_trial`` (its per-trial file, relative to *out_dir*).
    out_dir : str or os.PathLike
        The grid's output folder; its ``results.sqlite`` and every per-trial file read are
        digested into the provenance.
    title : str, optional
        Default ``"lidframe grid report: <folder>"``.
    inputs, settings, notes, created, command
        As for :func:`report_from_results` (e.g. the grid spec file as an input).
    utility : mapping of str to Utility, optional
        A system of the grid (a cell's ``system``, as the spec names it) ->
        :func:`lidframe.utility.utility` of its speech: every cell of that system (each
        attacker, mechanism, scenario, calibrator, prior and seed) is a point of the
        privacy-utility chart at its WER.  As for :func:`report_from_results`.
    utility_note : str, optional
        As for :func:`report_from_results`.

    Returns
    -------
    Report
        Its provenance names each attacker of the cells (a component spec,
        :meth:`AttackerSettings.from_spec`: its settings, and the digest of each file they
        name, such as a checkpoint, relative to the working folder).  Cells sorted by system, attacker, mechanism, calibrator, prior and seed.  A cell's
        system name is its system, with ``[mechanism]`` when it has one and ``/ attacker``
        when the grid has several attackers; its label adds calibrator, prior and, with
        several seeds, the seed.

    Raises
    ------
    InputError
        No cells, a cell without its fields or whose per-trial file is missing, a utility
        for a system that is not the grid's.
    """
    out = Path(out_dir)
    rows = _grid_cells(cells, out)
    several = {
        "several_attackers": len({c["attacker"] for c in rows}) > 1,
        "several_seeds": len({c["seed"] for c in rows}) > 1,
    }
    files = [InputFile.of("grid store", out / "results.sqlite")] if (out / "results.sqlite").is_file() else []
    report_systems, settings_rows = [], []
    for row in rows:
        system, system_settings, per_trial = _grid_system(row, out, **several)
        report_systems.append(system)
        settings_rows.append(system_settings)
        files.append(per_trial)
    utility_rows, note = _utility_of(
        utility,
        utility_note,
        [(system.label, str(row["system"])) for system, row in zip(report_systems, rows)],
        where="the grid's systems",
    )
    specs = dict.fromkeys(str(c["attacker"]) for c in rows if c["attacker"] not in (None, "-"))
    provenance = _provenance(
        lidframe_version=_versions([c["summary"] for c in rows]),
        created=created,
        systems=settings_rows,
        inputs=files + _inputs(inputs),
        settings=settings,
        command=command,
        attackers=[AttackerSettings.from_spec(spec) for spec in specs],
    )
    return Report(
        title=title or f"lidframe grid report: {out}",
        kind="grid",
        systems=report_systems,
        provenance=provenance,
        notes=notes,
        utility=utility_rows,
        utility_note=note,
    )


#: The two attackers of a DP audit and how they are calibrated.
_DP_ATTACKERS = ("bayes", "cosine")


def _dp_audit_summary(row: Mapping[str, Any], attacker: str, *, calibrator: str, ci_level: float) -> dict[str, Any]:
    """One attacker's numbers in one row (one mu) of a DP audit, as the summary of a report cell.

    Parameters
    ----------
    row : mapping
        A row of a :class:`~lidframe.privacy.audit.DPAuditResult`.
    attacker : {"bayes", "cosine"}
    calibrator : str
        The attacker's calibrator spec.
    ci_level : float
        Confidence level of the row's intervals.

    Returns
    -------
    dict
        The keys :meth:`Headline.from_summary` and :meth:`SystemSettings.from_summary` read.
    """
    return {
        "n_enrolled": row["n_enrolled"],
        "log2_n": row["log2_n"],
        "alid": row[f"{attacker}_alid"],
        "lid_q99": row[f"{attacker}_lid_q99"],
        "lid_max": row[f"{attacker}_lid_max"],
        "eer": row[f"{attacker}_eer"],
        "intervals": {"alid": row[f"{attacker}_alid_ci"], "eer": row[f"{attacker}_eer_ci"]},
        "bootstrap": {"level": ci_level},
        "calibrator": calibrator,
        "prior": "uniform",
    }


def report_from_dp_audit(
    record: DPAuditResult,
    *,
    calibrator: str = "logistic",
    ci_level: float = AUDIT_BOOTSTRAP.level,
    title: str | None = None,
    inputs: Mapping[str, StrPath] | None = None,
    settings: Mapping[str, Any] | None = None,
    notes: Sequence[str] = (),
    created: _dt.datetime | None = None,
    command: str | None = None,
) -> Report:
    """A report of a DP audit: one cell per (attacker, mu), and the measured-versus-bound section.

    The audit keeps aggregates only, so its cells have no per-trial LIDs (no LID figures,
    and the reading states the 99th percentile); PDR and the trial count are not
    computed by the audit and show as not computed.

    Parameters
    ----------
    record : DPAuditResult
        What :func:`lidframe.privacy.audit.dp_audit` returned.
    calibrator : str
        The cosine attacker's calibrator, as given to ``dp_audit`` (the Bayes attacker's
        is ``identity``).
    ci_level : float
        Confidence level of the audit's intervals (that of its ``bootstrap`` settings).
    title, inputs, settings, notes, created, command
        As for :func:`report_from_results`.

    Returns
    -------
    Report
        The audited systems are the mechanism at each mu; the attackers, Bayes and cosine,
        are named in its provenance with their calibrators.
    """
    if not isinstance(record, DPAuditResult):
        raise InputError(f"a DP-audit report needs a DPAuditResult, got {type(record).__name__}")
    if not record.rows:
        raise InputError("the DP audit has no rows (no mu) to report")
    report_systems, settings_rows = [], []
    for attacker in _DP_ATTACKERS:
        spec = "identity" if attacker == "bayes" else calibrator
        for row in record.rows:
            label = f"{attacker} · mu {row['mu']:g}"
            summary = _dp_audit_summary(row, attacker, calibrator=spec, ci_level=ci_level)
            report_systems.append(
                ReportSystem(
                    label=label,
                    name=f"{attacker} attacker",
                    calibrator=spec,
                    prior="uniform",
                    headline=Headline.from_summary(summary, where=f"DP audit row mu = {row['mu']:g}"),
                    lid_bits=None,
                    lid_ceiling_bits=float(row["log2_n"]),
                    attacker=attacker,
                    system=f"mechanism at mu {row['mu']:g}",
                )
            )
            settings_rows.append(SystemSettings.from_summary(label, summary))
    provenance = _provenance(
        lidframe_version=__version__,
        created=created,
        systems=settings_rows,
        inputs=_inputs(inputs),
        settings=settings,
        command=command,
        attackers=[
            AttackerSettings.of(
                "bayes",
                {"scores": "Gaussian log-likelihoods against the clean enrolment centroids", "calibrator": "identity"},
            ),
            AttackerSettings.of(
                "cosine",
                {"scores": "cosine against the enrolment profiles", "calibrator": f"{calibrator}, fitted on dev"},
            ),
        ],
    )
    return Report(
        title=title or "lidframe DP audit report",
        kind="dp-audit",
        systems=report_systems,
        provenance=provenance,
        dp_audit=record,
        notes=notes,
    )
