"""Builders of a :class:`~lidframe.report.model.Report` from ``evaluate`` Results and from a DP audit.

:func:`report_from_results`
    ``lidframe.evaluate`` Results (one per system, ``lidframe evaluate --report``, the
    demos), optionally with each system's calibrator sensitivity and per-speaker table,
    the threat-model ladder and each system's utility.
:func:`report_from_dp_audit`
    a :func:`lidframe.privacy.audit.dp_audit` record (``lidframe dp-audit --report``).

A grid's finished cells have their own builder, :func:`lidframe.report.build_grid.report_from_grid`.
Each digests the input files it is told about into the report's
:class:`~lidframe.report.sections.provenance_model.Provenance`
(:func:`~lidframe.report.sections.provenance_model.make_provenance`), with the command line
(:func:`~lidframe.report.sections.provenance_model.command_line`), the software behind
the numbers (:func:`~lidframe.report.sections.environment.environment`: lidframe's
version, source digest and git commit, the versions of numpy, scipy, scikit-learn and
torch) and the attackers with their settings.  The sections' own pieces build the rest:
:func:`~lidframe.report.sections.ladder_model.ladder_from_results` the ladder,
:func:`~lidframe.report.sections.utility.utility_of` each system's utility.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs
import numpy as np

from lidframe._version import __version__
from lidframe.analyses.legal_criteria import LegalCriteria
from lidframe.analyses.sensitivity import SensitivityResult
from lidframe.core.lid import LN2
from lidframe.core.result import Result
from lidframe.data.fileio import StrPath
from lidframe.data.provenance import ScoreFile
from lidframe.errors import InputError
from lidframe.privacy.audit import AUDIT_BOOTSTRAP, DPAuditResult
from lidframe.report.analysis_figures import DP_ATTACKERS
from lidframe.report.headline import Headline
from lidframe.report.model import Report, ReportSystem
from lidframe.report.sections.dp import dp_audit_headline, dp_audit_settings
from lidframe.report.sections.environment import utility_packages
from lidframe.report.sections.identification import page_cmc
from lidframe.report.sections.ladder_model import LadderEntry, ladder_from_results
from lidframe.report.sections.open_set_model import OpenSetHeadline, OpenSetPerTrial
from lidframe.report.sections.provenance_model import (
    AttackerSettings,
    SystemSettings,
    input_files,
    lidframe_versions,
    make_provenance,
)
from lidframe.report.sections.utility import utility_of
from lidframe.report.sections.verdict import policy_input, with_verdict

if TYPE_CHECKING:
    from lidframe.analyses.verdict import Policy
    from lidframe.utility import Utility

__all__ = ["ResultsOptions", "report_from_results", "report_from_dp_audit", "lid_ceiling_bits"]


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
    legal: LegalCriteria | None = None,
    open_beside: Result | None = None,
) -> ReportSystem:
    """The report's row of one ``evaluate`` Result: its headline and the LID of its trials that have one.

    Those are the enrolled trials in the closed set, every trial in the open set (with the
    open-set numbers and per-trial arrays: of *open_beside*, the same pair evaluated in
    the open set, where given); and its CMC curve (:func:`page_cmc`).
    """
    summary = result.summary
    open_set = result.outside > 0
    headline, trials = _open_set_records(result if open_beside is None else open_beside, beside=open_beside is not None)
    return ReportSystem(
        label=str(label),
        name=name,
        calibrator=str(summary.calibrator),
        prior=str(summary.prior),
        headline=Headline.from_summary(summary, where=f"result {label!r}"),
        lid_bits=result.lid if open_set else result.lid[~result.is_outsider],
        lid_ceiling_bits=lid_ceiling_bits(result),
        sensitivity=sensitivity,
        per_speaker=per_speaker,
        open_set=headline,
        open_trials=trials,
        no_intervals=None if summary.intervals else no_intervals,
        legal=legal,
        cmc=page_cmc(result),
    )


def _open_set_records(result: Result, *, beside: bool) -> tuple[OpenSetHeadline | None, OpenSetPerTrial | None]:
    """The open-set record and per-trial arrays of *result* (None, None in the closed set).

    *beside*: *result* is an open-set evaluation shown beside a closed-set headline; the
    records then carry its prior and every trial's LID.
    """
    if result.outside == 0:
        return None, None
    headline = OpenSetHeadline.from_summary(result.summary)
    if not beside or headline is None:
        return headline, OpenSetPerTrial(result.is_outsider, result.top_posterior)
    return (
        attrs.evolve(headline, beside=str(result.summary.prior)),
        OpenSetPerTrial(result.is_outsider, result.top_posterior, lid=result.lid),
    )


def _checked_open_set(results: Mapping[str, Result], open_set: Mapping[str, Result] | None) -> dict[str, Result]:
    """*open_set* checked: label -> an open-set Result of a closed-set one's eval trials, in the same order.

    Raises
    ------
    InputError
        A label that is not one of *results*, a value that is not a Result, one in the
        closed set or beside an open-set Result, or one of other eval trials.
    """
    checked = _keyed("open_set", open_set, list(results))
    for label, beside in checked.items():
        if not isinstance(beside, Result):
            raise InputError(f"open_set of {label!r} is a {type(beside).__name__}, not a lidframe Result")
        if beside.outside == 0 or results[label].outside > 0:
            raise InputError(
                f"open_set of {label!r} must be an open-set Result (a prior with outside > 0) beside a closed-set "
                f"one, got outside {beside.outside:g} beside {results[label].outside:g}"
            )
        if not np.array_equal(beside.trial_ids, results[label].trial_ids):
            raise InputError(f"open_set of {label!r} holds other eval trials than its Result: evaluate the same pair")
    return checked


@attrs.frozen(kw_only=True)
class ResultsOptions:
    """The keyword arguments of :func:`report_from_results`: what its page shows besides the Results' numbers.

    Attributes
    ----------
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
        ladder" (:func:`~lidframe.report.sections.ladder_model.ladder_from_results`).  None: no such section.
    command : str, optional
        The command line that made the report, as one shell-quoted string
        (:func:`~lidframe.report.sections.provenance_model.command_line` of a command's
        arguments); default this process's.
    attackers : sequence of AttackerSettings
        The attackers that scored, with their settings and checkpoint files
        (:meth:`AttackerSettings.of <lidframe.report.sections.provenance_model.AttackerSettings.of>`,
        :meth:`~lidframe.report.sections.provenance_model.AttackerSettings.from_spec`): a small table
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
    legal : mapping of str to LegalCriteria, optional
        label -> :func:`lidframe.analyses.legal_criteria.legal_criteria` of its Result and
        eval set: the section "Singling out, linkability, inference".  None: the section
        says how to get it.
    score_files : sequence of ScoreFile
        The score files behind the numbers, each with the provenance it holds
        (:meth:`ScoreFile.of <lidframe.data.provenance.ScoreFile.of>`): shown under
        "Settings and provenance", or that a file holds none.
    policy : Policy, optional
        A verdict policy (:func:`lidframe.analyses.verdict.read_policy`): every Result is
        judged against it with its legal record (the section "Verdict"), and the policy
        file is an input of the page with its SHA-256.  None: the section says how to give one.
    open_set : mapping of str to Result, optional
        label -> its dev/eval pair evaluated again under an open-set prior (``outside`` >
        0), beside its closed-set Result (the demos'): the section "Open set" shows it, while
        the headline, the comparison and every other section keep the closed-set numbers.
        None: only a Result evaluated in the open set is in the section.
    """

    title: str | None = None
    systems: Mapping[str, str] | None = None
    sensitivity: Mapping[str, SensitivityResult] | None = None
    per_speaker: Mapping[str, Any] | None = None
    inputs: Mapping[str, StrPath] | None = None
    settings: Mapping[str, Any] | None = None
    notes: Sequence[str] = ()
    created: _dt.datetime | None = None
    ladder: Sequence[LadderEntry] | None = None
    command: str | None = None
    attackers: Sequence[AttackerSettings] = ()
    engines: Mapping[str, str] | None = None
    no_intervals: Mapping[str, str] | None = None
    kind: Literal["evaluate", "sensitivity"] = "evaluate"
    utility: Mapping[str, Utility] | None = None
    utility_note: str | None = None
    legal: Mapping[str, LegalCriteria] | None = None
    score_files: Sequence[ScoreFile] = ()
    policy: Policy | None = None
    open_set: Mapping[str, Result] | None = None


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
    legal: Mapping[str, LegalCriteria] | None = None,
    score_files: Sequence[ScoreFile] = (),
    policy: Policy | None = None,
    open_set: Mapping[str, Result] | None = None,
) -> Report:
    """A report of ``lidframe.evaluate`` Results, one row and one section per label.

    Parameters
    ----------
    results : mapping of str to Result
        label -> Result (at least one), in the order the page shows them.
    title, systems, sensitivity, per_speaker, ladder, no_intervals, kind, utility, utility_note, legal, policy, open_set
        What the page shows besides the Results' numbers (the systems' names and variants,
        their sensitivity and per-speaker records, the threat-model ladder, each system's
        utility, its legal criteria, the verdict policy they are judged against, their open
        set beside the closed one): the attributes of :class:`ResultsOptions`, each described there.
    inputs, settings, notes, created, command, attackers, engines, score_files
        Its provenance and notes (the input files, the run's settings, the command line,
        the attackers, the speech engines, the score files' own provenance), as
        :class:`ResultsOptions` describes them.

    Returns
    -------
    Report

    Raises
    ------
    InputError
        No results, a value that is not a Result, a sensitivity / per-speaker / legal
        record for an unknown label (or a legal record that is not a LegalCriteria), an
        input file that does not exist, a ladder entry whose label has no Result (or the other faults
        :func:`~lidframe.report.sections.ladder_model.ladder_from_results` names), or a
        utility for a system that is not one of the results' (or not a Utility record), or an
        open-set Result that is not one beside a closed-set Result of the same eval trials.
    """
    options = ResultsOptions(
        title=title,
        systems=systems,
        sensitivity=sensitivity,
        per_speaker=per_speaker,
        inputs=inputs,
        settings=settings,
        notes=notes,
        created=created,
        ladder=ladder,
        command=command,
        attackers=attackers,
        engines=engines,
        no_intervals=no_intervals,
        kind=kind,
        utility=utility,
        utility_note=utility_note,
        legal=legal,
        score_files=score_files,
        policy=policy,
        open_set=open_set,
    )
    return _results_report(results, options)


def _results_report(results: Mapping[str, Result], options: ResultsOptions) -> Report:
    """:func:`report_from_results` of *results* with its keyword arguments *options*."""
    o = options
    results, sensitivity_of, per_speaker_of, name_of = _checked_results(
        results, o.sensitivity, o.per_speaker, o.systems
    )
    why_none = _keyed("no_intervals", o.no_intervals, list(results))
    open_of = _checked_open_set(results, o.open_set)
    legal_of = _keyed("legal", o.legal, list(results))
    for label, record in legal_of.items():
        if not isinstance(record, LegalCriteria):
            raise InputError(f"legal of {label!r} is a {type(record).__name__}, not a LegalCriteria")
    ladder_record = None if o.ladder is None else ladder_from_results(o.ladder, results)
    utility_rows, note = utility_of(
        o.utility,
        o.utility_note,
        [(str(label), str(name_of.get(label, label))) for label in results],
        where="the systems",
    )
    report_systems, settings_rows = [], []
    for label, result in results.items():
        system = _result_system(
            label,
            result,
            name=str(name_of.get(label, label)),
            sensitivity=sensitivity_of.get(label),
            per_speaker=per_speaker_of.get(label),
            no_intervals=None if why_none.get(label) is None else str(why_none[label]),
            legal=legal_of.get(label),
            open_beside=open_of.get(label),
        )
        report_systems.append(with_verdict(system, o.policy, result.summary, legal_of.get(label)))
        settings_rows.append(SystemSettings.from_summary(str(label), result.summary, result.calibrator_fit))
    provenance = make_provenance(
        lidframe_version=lidframe_versions([r.summary for r in results.values()]),
        created=o.created,
        systems=settings_rows,
        inputs=input_files(o.inputs) + policy_input(o.policy),
        settings=o.settings,
        command=o.command,
        attackers=o.attackers,
        engines=o.engines,
        score_files=o.score_files,
        used=utility_packages((o.utility or {}).values()),
    )
    if o.kind not in ("evaluate", "sensitivity"):
        raise InputError(f"kind must be 'evaluate' or 'sensitivity' for a report of Results, got {o.kind!r}")
    return Report(
        title=o.title or "lidframe audit report",
        kind=o.kind,
        systems=report_systems,
        provenance=provenance,
        notes=o.notes,
        ladder=ladder_record,
        utility=utility_rows,
        utility_note=note,
        policy=o.policy,
    )


def _dp_audit_cells(
    record: DPAuditResult, *, calibrator: str, ci_level: float
) -> tuple[list[ReportSystem], list[SystemSettings]]:
    """The rows of a DP audit's page, one per (attacker, mu), and their settings."""
    report_systems, settings_rows = [], []
    for attacker in DP_ATTACKERS:
        spec = "identity" if attacker == "bayes" else calibrator
        for row in record.rows:
            label = f"{attacker} · mu {row['mu']:g}"
            report_systems.append(
                ReportSystem(
                    label=label,
                    name=f"{attacker} attacker",
                    calibrator=spec,
                    prior="uniform",
                    headline=dp_audit_headline(row, attacker, ci_level=ci_level),
                    lid_bits=None,
                    lid_ceiling_bits=float(row["log2_n"]),
                    attacker=attacker,
                    system=f"mechanism at mu {row['mu']:g}",
                    attack=attacker,
                )
            )
            settings_rows.append(dp_audit_settings(label, calibrator=spec, ci_level=ci_level))
    return report_systems, settings_rows


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
    report_systems, settings_rows = _dp_audit_cells(record, calibrator=calibrator, ci_level=ci_level)
    provenance = make_provenance(
        lidframe_version=__version__,
        created=created,
        systems=settings_rows,
        inputs=input_files(inputs),
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
