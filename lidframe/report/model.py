"""What an audit report shows, as attrs records: independent of HTML, built by :mod:`lidframe.report.build`.

A :class:`Report` holds one :class:`ReportSystem` per evaluated *cell* (a system under
one calibrator and one prior: a grid has many per system), the
:class:`~lidframe.report.sections.provenance_model.Provenance` of the run, and, for a DP
audit, the audit record.  Every number the page prints comes from these records:
:class:`~lidframe.report.headline.Headline` from a
:class:`~lidframe.core.evaluation.Result`'s summary, the reading sentence
(:func:`~lidframe.report.headline.reading_sentence`) from the per-trial LIDs, and each
section's own records (:mod:`lidframe.report.sections`): in the open set (the prior's
``outside`` > 0, :mod:`lidframe.core.openset`) a system's
:class:`~lidframe.report.sections.open_set_model.OpenSetHeadline` and
:class:`~lidframe.report.sections.open_set_model.OpenSetPerTrial`; for an attack up the
VoicePrivacy threat-model ladder the report's
:class:`~lidframe.report.sections.ladder_model.Ladder`; given what each system's
anonymisation costs the speech, a
:class:`~lidframe.report.sections.utility.SystemUtility` per system.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

import attrs
import numpy as np

from lidframe.errors import InputError
from lidframe.report.headline import Headline, reading_sentence
from lidframe.report.sections.ladder_model import Ladder, check_ladder_labels
from lidframe.report.sections.open_set_model import OpenSetHeadline, OpenSetPerTrial
from lidframe.report.sections.sensitivity import WorstCase
from lidframe.report.sections.utility import SystemUtility, check_utility

if TYPE_CHECKING:
    from lidframe.analyses.legal_criteria import LegalCriteria
    from lidframe.analyses.verdict import Policy, Verdict
    from lidframe.core.cmc import CMCCurve
    from lidframe.report.sections.provenance_model import Provenance

__all__ = ["ReportKind", "ReportSystem", "Report"]


def _optional_lids(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    lid = np.asarray(value, dtype=np.float64).ravel()
    if lid.size == 0 or np.isnan(lid).any():
        raise InputError(
            "a report system's lid_bits must be the LIDs of the trials that have one (the enrolled trials; every "
            "trial in the open set): non-empty, without NaN"
        )
    return lid


@attrs.frozen(eq=False)
class ReportSystem:
    """One evaluated cell of the report: a system under one calibrator and one prior.

    Attributes
    ----------
    label : str
        Unique row label in the page (``"anon-weak"``, or ``"anon-weak · isotonic · uniform"`` in a grid).
    name : str
        The system: its cells share a colour in the figures and a section of the page.
    calibrator, prior : str
        Calibrator and prior as the summary describes them (spec with non-default parameters).
    headline : Headline
    lid_bits : ndarray, shape (T,), or None
        LID of the eval trials that have one (bits): the enrolled trials in the closed set,
        every trial in the open set; None when the source keeps only aggregates.
    lid_ceiling_bits : float
        max over those trials of -log2 prior(true speaker): log2 N under a uniform prior
        (in the open set the prior of an enrolled speaker is (1 - π_∅) times its prior
        given enrolment, and an outsider trial's is π_∅).
    attacker : str or None
    seed : int or None
        Grid seed of the cell.
    sensitivity : SensitivityResult or None
        :func:`lidframe.analyses.sensitivity.sensitivity` of the same dev/eval pair.
    per_speaker : record or None
        :func:`lidframe.analyses.per_speaker.per_speaker` of the result (rows with
        ``speaker, n_trials, alid, lid_max, pdr, rank1_rate`` and, bootstrapped,
        ``alid_low, alid_high``).
    open_set : OpenSetHeadline or None
        The open-set numbers (:meth:`OpenSetHeadline.from_summary`): of the cell's own
        evaluation, or of one beside it (:attr:`OpenSetHeadline.beside`); None in the closed set.
    open_trials : OpenSetPerTrial or None
        Open set: which trials of :attr:`lid_bits` (or of its own LIDs, for an open set
        evaluated beside the closed set) are outsider trials, and their top enrolled
        posterior (for the open-set figure); None in the closed set or when the source did
        not keep them.
    no_intervals : str or None
        Why the headline has no intervals, when it has none for a reason worth saying
        (``"the eval set has 7 speakers, too few for a speaker bootstrap"``); the card says it.
    system : str or None
        The system under audit when :attr:`name` says more (a grid cell's name adds its
        attacker); None: :attr:`name` is the system.  "N systems" counts these.
    legal : LegalCriteria or None
        Its linkability and singling out
        (:func:`lidframe.analyses.legal_criteria.legal_criteria`), for the section
        "Singling out, linkability, inference"; None: not computed.
    cmc : CMCCurve or None
        Its CMC curve with chance k/N (:func:`lidframe.core.cmc.result_cmc` of its
        enrolled trials' ranks), for the section "Identification against chance"; None
        where the source keeps no ranks (a grid cell's per-trial file, a DP audit).
    verdict : Verdict or None
        Its verdict under the report's policy (:func:`lidframe.analyses.verdict.judge` of
        its summary and legal record), for the section "Verdict"; None without a policy.
    attack : str or None
        What attacked :attr:`system` in this row, as the section "Worst case across
        attackers" names it (a grid cell's attacker, rung, calibrator and prior; a DP audit's
        attacker); None: the label, less a leading ``"<system>/"``
        (:func:`~lidframe.report.sections.worst_attacker.attack_name`).
    """

    label: str
    name: str
    calibrator: str
    prior: str
    headline: Headline
    lid_bits: np.ndarray | None = attrs.field(converter=_optional_lids)
    lid_ceiling_bits: float
    attacker: str | None = None
    seed: int | None = None
    sensitivity: Any = None
    per_speaker: Any = None
    open_set: OpenSetHeadline | None = None
    open_trials: OpenSetPerTrial | None = attrs.field(default=None)
    no_intervals: str | None = None
    system: str | None = None
    legal: LegalCriteria | None = None
    cmc: CMCCurve | None = None
    verdict: Verdict | None = None
    attack: str | None = None

    @open_trials.validator
    def _check_open_trials(self, attribute: Any, value: OpenSetPerTrial | None) -> None:
        if value is None:
            return
        sizes = {value.outsider.size, *(() if value.top_posterior is None else (value.top_posterior.size,))}
        lid = value.lid_bits(self.lid_bits)
        if lid is None or sizes != {lid.size}:
            raise InputError(
                f"report system {self.label!r}: the open-set trial arrays must align with its "
                f"{'lid_bits' if value.lid is None else 'open-set LIDs'} "
                f"({None if lid is None else lid.size} trials), got sizes {sorted(sizes)}"
            )

    @property
    def reading(self) -> str:
        """The one-sentence reading (:func:`reading_sentence`)."""
        return reading_sentence(self.headline, self.lid_bits, self.lid_ceiling_bits)

    @property
    def worst_case(self) -> WorstCase | None:
        """The attacker's worst case over the calibrators and priors of its sensitivity record; None without one."""
        return None if self.sensitivity is None else WorstCase.of(self.sensitivity)


def _notes_tuple(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(note) for note in items)


#: The kinds of report, after the command that writes them.
ReportKind = Literal["evaluate", "sensitivity", "grid", "dp-audit"]


def _utility_tuple(items: Iterable[SystemUtility]) -> tuple[SystemUtility, ...]:
    return tuple(items)


def _check_systems(systems: Iterable[ReportSystem]) -> tuple[ReportSystem, ...]:
    systems = tuple(systems)
    if not systems:
        raise InputError("a report needs at least one system")
    seen: set[str] = set()
    for system in systems:
        if system.label in seen:
            raise InputError(f"report system {system.label!r} appears twice; each needs its own label")
        seen.add(system.label)
    return systems


@attrs.frozen(eq=False)
class Report:
    """Everything one ``report.html`` shows.

    Attributes
    ----------
    title : str
    kind : {"evaluate", "sensitivity", "grid", "dp-audit"}
        What computed the numbers: the layout of the page follows it (a sensitivity
        report is laid out as an evaluate report).
    systems : tuple of ReportSystem
        One per cell, in the order given; labels unique.
    provenance : Provenance
    dp_audit : DPAuditResult or None
        The :func:`lidframe.privacy.audit.dp_audit` record of a DP-audit report.
    notes : tuple of str
        Sentences shown under the title (what the run was, caveats).
    ladder : Ladder or None
        The threat-model ladder (the page's section "Threat-model ladder"); every one of
        its labels is a system's label.  None: no such section.
    utility : tuple of SystemUtility
        Each system's utility (the page's section "Privacy and utility"), in page order;
        every label of each is a system's label, and no label belongs to two.  Empty: the
        section says why there is none.
    utility_note : str or None
        A sentence of the caller's on the speech the utility was measured on (the voice
        set, what ρ_F0 is against), shown with the table and the chart.
    policy : Policy or None
        The verdict policy every system was judged against (each system's
        :attr:`ReportSystem.verdict`; the section "Verdict"); None: the section says how
        to give one.
    """

    title: str
    kind: ReportKind
    systems: tuple[ReportSystem, ...] = attrs.field(converter=_check_systems)
    provenance: Provenance
    dp_audit: Any = None
    notes: tuple[str, ...] = attrs.field(converter=_notes_tuple, factory=tuple)
    ladder: Ladder | None = attrs.field(default=None)
    utility: tuple[SystemUtility, ...] = attrs.field(converter=_utility_tuple, factory=tuple)
    utility_note: str | None = None
    policy: Policy | None = None

    @utility.validator
    def _check_utility(self, attribute: Any, value: tuple[SystemUtility, ...]) -> None:
        check_utility(value, [s.label for s in self.systems])

    @ladder.validator
    def _check_ladder(self, attribute: Any, value: Ladder | None) -> None:
        if value is not None:
            check_ladder_labels(value, [s.label for s in self.systems])

    def system_names(self) -> list[str]:
        """The names of the page's systems (:attr:`ReportSystem.name`: a section each), in order of first appearance."""
        return list(dict.fromkeys(s.name for s in self.systems))

    def audited_systems(self) -> list[str]:
        """The systems under audit, in order: each cell's :attr:`ReportSystem.system` (or its name), once.

        What the page's "N systems" counts: not its rows (a system's calibrators, a grid's
        cells) and not its attackers.
        """
        return list(dict.fromkeys(s.system or s.name for s in self.systems))
