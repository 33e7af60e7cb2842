"""What both demos write into their output folder: ``summary.json``, ``table.txt``, ``per_trial.csv``, ``report.html``.

:func:`write_demo_outputs` writes the four files of a demo's results, staged (all or
none), with the report built from the results and each one's per-speaker table;
:func:`report_unavailable` says why the page cannot be rendered here.  The simulated demo
(:mod:`lidframe.demo.simulated`) and the real-voice demo (:mod:`lidframe.demo.voice`)
both write this layout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lidframe.core.result import Result
from lidframe.data.fileio import StrPath, atomic_path, atomic_write, staged_outputs, write_json

if TYPE_CHECKING:
    import pandas as pd

    from lidframe.analyses.legal_criteria import LegalCriteria
    from lidframe.analyses.sensitivity import SensitivityResult
    from lidframe.data.provenance import ScoreFile
    from lidframe.report import AttackerSettings, LadderEntry, Report
    from lidframe.utility import Utility

__all__ = ["PER_TRIAL_FILE", "report_unavailable", "write_demo_outputs"]

#: The per-trial table of both demos: one row per eval trial and system, the system's label first.
PER_TRIAL_FILE = "per_trial.csv"


def report_unavailable() -> str | None:
    """Why ``report.html`` cannot be rendered here (jinja2 or matplotlib missing), in one line; None where it can."""
    from lidframe.errors import InputError
    from lidframe.report import require_renderer

    try:
        require_renderer()
    except InputError as exc:
        return str(exc)
    return None


def write_demo_outputs(
    out_dir: StrPath,
    results: Mapping[str, Result],
    *,
    table: str,
    record: Mapping[str, Any],
    inputs: Mapping[str, StrPath],
    title: str,
    notes: list[str],
    settings: Mapping[str, Any],
    systems: Mapping[str, str] | None = None,
    ladder: Sequence[LadderEntry] | None = None,
    log: Callable[[str], object] = print,
    command: str | None = None,
    attackers: Sequence[AttackerSettings] = (),
    engines: Mapping[str, str] | None = None,
    utility: Mapping[str, Utility] | None = None,
    utility_note: str | None = None,
    score_files: Sequence[ScoreFile] = (),
    open_set: Mapping[str, Result] | None = None,
    sensitivity: Mapping[str, SensitivityResult] | None = None,
    legal: Mapping[str, LegalCriteria] | None = None,
) -> Path | None:
    """Write a demo's ``summary.json`` (:func:`_summary_json`), ``table.txt``, ``per_trial.csv`` and ``report.html``.

    Staged (:func:`lidframe.data.fileio.staged_outputs`): all are written or none.  Both demos write this layout.

    Parameters
    ----------
    out_dir, results : path, mapping of str to Result
        An existing folder; label -> Result, in table order.
    table : str
        The comparison table as printed (``table.txt`` holds it and a newline).
    record : mapping
        The rest of ``summary.json`` (``seed`` and what the demo ran); its ``systems`` key
        is label -> ``Result.to_dict()``.
    inputs, title, notes, settings, systems, ladder, command, attackers, engines, open_set, sensitivity, legal :
        Of the report, as :func:`lidframe.report.report_from_results` takes them (*inputs*: role ->
        score file, digested; *systems*: label -> system, for variants of one system; *ladder*: the threat-model ladder;
        *attackers*: those that scored; *engines*: the speech engines behind the audio;
        *open_set*: label -> its pair's open-set Result beside the closed-set one, the
        section "Open set"; *sensitivity*: label -> its calibrator sensitivity, also in
        ``summary.json``'s ``sensitivity`` as label -> ``to_dict()``; *legal*: label -> its
        :class:`~lidframe.analyses.legal_criteria.LegalCriteria`, also each row's ``legal`` block in ``summary.json``).
    log : callable
        Told when the report cannot be rendered here (jinja2 or matplotlib missing).
    utility, utility_note : mapping of str to Utility, str, optional
        system -> :func:`lidframe.utility.utility` of its speech: ``summary.json`` gains
        ``"utility": {system: Utility.to_dict()}`` (and ``"utility_note"``: which speech the
        utility was measured on), and the report its section "Privacy and utility".
    score_files : sequence of ScoreFile
        With their provenance: on the page, and in ``summary.json``'s ``provenance`` (role -> ``to_dict()``).

    Returns
    -------
    pathlib.Path or None
        The path of ``report.html``; None where it could not be rendered (``per_trial.csv``:
        :func:`_per_trial_frame`, floats with 12 significant digits, outsider trials' LID ``nan``).
    """
    # built (and so its inputs checked: the ladder, the utility) even where the page cannot be rendered
    report = _demo_report(
        results,
        title=title,
        systems=systems,
        inputs=inputs,
        settings=settings,
        notes=notes,
        ladder=ladder,
        command=command,
        attackers=attackers,
        engines=engines,
        utility=utility,
        utility_note=utility_note,
        score_files=score_files,
        open_set=open_set,
        sensitivity=sensitivity,
        legal=legal,
    )
    summary = _summary_json(record, results, utility, utility_note, score_files, report, sensitivity, legal)
    return _write_files(Path(out_dir), summary, table=table, results=results, report=report, log=log)


def _summary_json(
    record: Mapping[str, Any],
    results: Mapping[str, Result],
    utility: Mapping[str, Utility] | None,
    utility_note: str | None,
    score_files: Sequence[ScoreFile] = (),
    report: Report | None = None,
    sensitivity: Mapping[str, SensitivityResult] | None = None,
    legal: Mapping[str, LegalCriteria] | None = None,
) -> dict[str, Any]:
    """What ``summary.json`` holds: *record*, ``systems`` (label -> ``Result.to_dict()``, with its ``legal``
    block where *legal* has the label), the utility, provenance and sensitivity (label -> ``to_dict()``), if any.

    Where a system of *report* has several attackers (several labels map to it: the
    real-voice demo's attackers and rungs), also ``worst_case``: per system the attacker
    with the highest ALID and the one with the highest LID q99, with their intervals and
    how clearly each is separated from the runner-up
    (:func:`lidframe.report.sections.worst_attacker.worst_case_json`).
    """
    legal = legal or {}
    systems = {
        label: {**result.to_dict(), **({"legal": legal[label].to_dict()} if label in legal else {})}
        for label, result in results.items()
    }
    summary = {**record, "systems": systems}
    if sensitivity:
        summary["sensitivity"] = {label: found.to_dict() for label, found in sensitivity.items()}
    if report is not None:
        from lidframe.report.sections.worst_attacker import worst_case_json

        worst = worst_case_json(report)
        if worst is not None:
            summary["worst_case"] = worst
    if score_files:
        summary["provenance"] = {item.role: item.to_dict() for item in score_files}
    if utility is not None:
        summary["utility"] = {system: measured.to_dict() for system, measured in utility.items()}
        if utility_note is not None:
            summary["utility_note"] = utility_note.strip()
    return summary


def _write_files(
    out: Path,
    summary: Mapping[str, Any],
    *,
    table: str,
    results: Mapping[str, Result],
    report: Report,
    log: Callable[[str], object],
) -> Path | None:
    """Write the four files into *out*, staged (``report.html`` only where it can be rendered); its path or None."""
    unavailable = report_unavailable()
    with staged_outputs():  # every file or, on an error, none
        write_json(out / "summary.json", summary)
        with atomic_write(out / "table.txt") as handle:
            handle.write(table + "\n")
        with atomic_path(out / PER_TRIAL_FILE) as tmp:
            _per_trial_frame(results).to_csv(tmp, index=False, float_format="%.12g", na_rep="nan")
        if unavailable is None:
            from lidframe.report import REPORT_FILE, write_report

            write_report(out / REPORT_FILE, report)
    if unavailable is not None:
        log(f"report.html not written: {unavailable}")
        return None
    return out / "report.html"


def _per_trial_frame(results: Mapping[str, Result]) -> pd.DataFrame:
    """The rows of ``per_trial.csv``: each result's :meth:`~lidframe.core.evaluation.Result.to_frame`, its label first.

    Parameters
    ----------
    results : mapping of str to Result
        label -> Result, in table order.

    Returns
    -------
    pandas.DataFrame
        One row per eval trial and label (the results' rows one after the other): the
        column ``system`` (the label), then ``trial_id, trial_spk, outsider, lid_bits,
        posterior_true``.
    """
    import pandas as pd

    frames = [result.to_frame() for result in results.values()]
    for label, frame in zip(results, frames):
        frame.insert(0, "system", label)
    return pd.concat(frames, ignore_index=True)


def _demo_report(
    results: Mapping[str, Result],
    *,
    title: str,
    systems: Mapping[str, str] | None,
    inputs: Mapping[str, StrPath],
    settings: Mapping[str, Any],
    notes: list[str],
    ladder: Sequence[LadderEntry] | None = None,
    command: str | None = None,
    attackers: Sequence[AttackerSettings] = (),
    engines: Mapping[str, str] | None = None,
    utility: Mapping[str, Utility] | None = None,
    utility_note: str | None = None,
    score_files: Sequence[ScoreFile] = (),
    open_set: Mapping[str, Result] | None = None,
    sensitivity: Mapping[str, SensitivityResult] | None = None,
    legal: Mapping[str, LegalCriteria] | None = None,
) -> Report:
    """The report of a demo's results, with each result's per-speaker table (:func:`lidframe.report.report_from_results`)."""
    from lidframe.analyses.per_speaker import per_speaker
    from lidframe.report import report_from_results

    return report_from_results(
        results,
        title=title,
        systems=systems,
        per_speaker={label: per_speaker(result) for label, result in results.items()},
        inputs=inputs,
        settings=settings,
        notes=notes,
        ladder=ladder,
        command=command,
        attackers=attackers,
        engines=engines,
        utility=utility,
        utility_note=utility_note,
        score_files=score_files,
        open_set=open_set,
        sensitivity=sensitivity,
        legal=legal,
    )
