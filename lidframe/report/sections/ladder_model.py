"""The threat-model ladder's records: which attacker scored which speech of which system, and its numbers.

A report of an attack up the VoicePrivacy threat-model ladder (:mod:`lidframe.data.scenario`)
holds a :class:`Ladder`: one :class:`LadderEntry` per evaluated row (which attacker
scored which speech with which model), each with its Result's numbers
(:class:`LadderCell`); :func:`ladder_from_results` builds it.  The ladder section of the
page (:mod:`lidframe.report.sections.ladder`) shows it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.data.scenario import ANONYMISED, ORIGINAL, SCENARIOS, check_scenario
from lidframe.errors import InputError, preview, quote
from lidframe.report.headline import Headline
from lidframe.stats.interval import Interval

if TYPE_CHECKING:
    from lidframe.core.result import Result

__all__ = [
    "REFERENCE",
    "LadderEntry",
    "LadderCell",
    "LadderRung",
    "Ladder",
    "ladder_from_results",
    "check_ladder_labels",
]


#: The rung name of the ladder's reference entries: the plain speech, nothing anonymised (no scenario).
REFERENCE = "reference"


def _where(label: object) -> str:
    return f"ladder entry {quote(label) if isinstance(label, str) else repr(label)}"


@attrs.frozen
class LadderEntry:
    """One evaluated row of the threat-model ladder: which attacker scored which speech of which system, and how.

    The real-voice demo's rows are these records (:func:`lidframe.demo.voice.plan.demo_rows`).

    Attributes
    ----------
    label : str
        The label of its Result (a key of the results given to
        :func:`lidframe.report.report_from_results`).
    system : str
        The system under audit: an anonymiser, or the plain speech.
    attacker : str
        The attacker that scored (``"ge2e"``, ``"ecapa"``, ``"random"``).
    scenario : str or None
        Its rung, one of :data:`lidframe.data.scenario.SCENARIOS`; None for a reference
        entry (plain speech: nothing anonymised).
    enrolment, trials : {"original", "anonymised"}
        The speech the attacker enrolled and the speech of the trials it linked: the
        rung's sides; both ``"original"`` for a reference entry.
    model : str
        What the attacker's model is, in words.

    Raises
    ------
    InputError
        A field that is not a non-empty string, a side that is not ``original`` or
        ``anonymised``, an unknown scenario, or sides that contradict the scenario (or,
        without a scenario, are not both ``original``); the message names the label.
    """

    label: str
    system: str
    attacker: str
    scenario: str | None
    enrolment: str
    trials: str
    model: str

    def __attrs_post_init__(self) -> None:
        where = _where(self.label)
        for name in ("label", "system", "attacker", "enrolment", "trials", "model"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"{where}: {name} must be a non-empty string, got {value!r:.80}")
        for name in ("enrolment", "trials"):
            if getattr(self, name) not in (ORIGINAL, ANONYMISED):
                raise InputError(f"{where}: {name} {quote(getattr(self, name))}; expected {ORIGINAL} or {ANONYMISED}")
        if self.scenario is None:
            if (self.enrolment, self.trials) != (ORIGINAL, ORIGINAL):
                raise InputError(
                    f"{where}: no scenario, so a reference entry on plain speech (enrolment and trials {ORIGINAL}), "
                    f"but enrolment is {self.enrolment} and trials {self.trials}; give its scenario"
                )
            return
        rung = check_scenario(self.scenario, key=f"{where}: scenario")
        if (self.enrolment, self.trials) != (rung.enrolment, rung.trials):
            raise InputError(
                f"{where}: enrolment {self.enrolment} and trials {self.trials} contradict its scenario {rung.name} "
                f"({rung.code}: enrolment {rung.enrolment}, trials {rung.trials})"
            )

    @property
    def rung(self) -> str:
        """Its scenario, or :data:`REFERENCE` without one."""
        return REFERENCE if self.scenario is None else self.scenario

    @property
    def code(self) -> str:
        """The VoicePrivacy code of its sides: ``"o-a"``, ``"a-a"``, or ``"o-o"`` for a reference entry."""
        return f"{self.enrolment[0]}-{self.trials[0]}"


@attrs.frozen
class LadderCell:
    """One entry of the ladder with its Result's numbers.

    Attributes
    ----------
    entry : LadderEntry
    alid : float
        ALID (bits).
    alid_interval : Interval or None
        Its bootstrap interval (bits), None without one.
    lid_max : float
        LIDmax (bits).
    lid_max_interval : Interval or None
        Its bootstrap interval (bits): a percentile interval of a maximum, biased low (a
        resample never exceeds the observed maximum; :mod:`lidframe.stats.bootstrap`).
    eer : float
        Pairwise EER (a fraction); NaN when not computed.
    n_enrolled : int
        N, the enrolled speakers searched.
    log2_n : float
        log2 N (bits), the ceiling of ALID under a uniform prior.
    interval_level : float or None
        The intervals' confidence level (0.95); None without intervals.
    """

    entry: LadderEntry
    alid: float
    alid_interval: Interval | None
    lid_max: float
    lid_max_interval: Interval | None
    eer: float
    n_enrolled: int
    log2_n: float
    interval_level: float | None = None

    @property
    def label(self) -> str:
        """The label of its entry and Result."""
        return self.entry.label

    @classmethod
    def from_summary(cls, entry: LadderEntry, summary: Mapping[str, Any]) -> LadderCell:
        """*entry* with the numbers of its Result's summary (``Result.summary`` or its JSON form).

        Raises
        ------
        InputError
            The summary lacks the keys of :meth:`Headline.from_summary`.
        """
        headline = Headline.from_summary(summary, where=_where(entry.label))
        return cls(
            entry=entry,
            alid=headline.alid,
            alid_interval=headline.intervals.get("alid"),
            lid_max=headline.lid_max,
            lid_max_interval=headline.intervals.get("lid_max"),
            eer=headline.eer,
            n_enrolled=headline.n_enrolled,
            log2_n=headline.log2_n,
            interval_level=headline.interval_level,
        )


@attrs.frozen
class LadderRung:
    """One row of the ladder's rung table: a rung, its two sides, and each attacker's model there.

    Attributes
    ----------
    name : str
        A scenario of :data:`lidframe.data.scenario.SCENARIOS`, or :data:`REFERENCE`.
    code : str
        ``"o-a"``, ``"a-a"``, or ``"o-o"`` for the reference (enrolment side, trial side).
    enrolment, trials : {"original", "anonymised"}
        The speech enrolled and the speech of the trials.
    model : str or None
        The rung's model (:attr:`lidframe.data.scenario.Scenario.model`); None for the reference.
    models : tuple of (str, str)
        (attacker, what its model is) of the rung's entries, in order of first appearance.
    """

    name: str
    code: str
    enrolment: str
    trials: str
    model: str | None
    models: tuple[tuple[str, str], ...]


def _ladder_cells(cells: Iterable[LadderCell]) -> tuple[LadderCell, ...]:
    """The cells, checked: at least one on a rung, labels unique, one cell per system, attacker and rung."""
    cells = tuple(cells)
    if not any(c.entry.scenario is not None for c in cells):
        raise InputError(
            f"the ladder needs at least one entry with a scenario (one of {', '.join(SCENARIOS)}); "
            "entries without one are only its reference"
        )
    labels: set[str] = set()
    keys: dict[tuple[str, str, str], str] = {}
    for cell in cells:
        entry = cell.entry
        if entry.label in labels:
            raise InputError(f"{_where(entry.label)} appears twice; each needs its own label")
        labels.add(entry.label)
        key = (entry.system, entry.attacker, entry.rung)
        if key in keys:
            raise InputError(
                f"{_where(entry.label)}: the same system ({quote(entry.system)}), attacker ({quote(entry.attacker)}) "
                f"and rung ({entry.rung}) as ladder entry {quote(keys[key])}; give one entry per system, attacker and rung"
            )
        keys[key] = entry.label
    return cells


@attrs.frozen(eq=False)
class Ladder:
    """The threat-model ladder of a report: each entry's numbers, by system, attacker and rung.

    Attributes
    ----------
    cells : tuple of LadderCell
        One per entry, in the order given: at least one on a rung (with a scenario); labels
        unique; one per (system, attacker, rung).
    """

    cells: tuple[LadderCell, ...] = attrs.field(converter=_ladder_cells)

    def labels(self) -> list[str]:
        """The entries' labels, in order."""
        return [c.label for c in self.cells]

    def on_rungs(self) -> list[LadderCell]:
        """The cells with a scenario, in order."""
        return [c for c in self.cells if c.entry.scenario is not None]

    def references(self) -> list[LadderCell]:
        """The cells without a scenario (plain speech: the reference), in order."""
        return [c for c in self.cells if c.entry.scenario is None]

    def systems(self) -> list[str]:
        """The anonymised systems (those with an entry on a rung), in order of first appearance."""
        return list(dict.fromkeys(c.entry.system for c in self.on_rungs()))

    def attackers(self) -> list[str]:
        """The attackers with an entry on a rung, in order of first appearance among all entries."""
        on_rungs = {c.entry.attacker for c in self.on_rungs()}
        return [a for a in dict.fromkeys(c.entry.attacker for c in self.cells) if a in on_rungs]

    def rung_names(self) -> list[str]:
        """The rungs with an entry, in ladder order (:data:`lidframe.data.scenario.SCENARIOS`)."""
        found = {c.entry.scenario for c in self.on_rungs()}
        return [name for name in SCENARIOS if name in found]

    def columns(self) -> list[tuple[str, str]]:
        """(attacker, rung) of every pair with an entry: by attacker (:meth:`attackers`), rungs in ladder order."""
        found = {(c.entry.attacker, c.entry.scenario) for c in self.on_rungs()}
        return [(a, r) for a in self.attackers() for r in self.rung_names() if (a, r) in found]

    def cell(self, system: str, attacker: str, scenario: str | None) -> LadderCell | None:
        """The cell of *system* and *attacker* at rung *scenario* (None: the reference), or None."""
        return next(
            (
                c
                for c in self.cells
                if (c.entry.system, c.entry.attacker, c.entry.scenario) == (system, attacker, scenario)
            ),
            None,
        )

    def rungs(self) -> list[LadderRung]:
        """The rung table: each rung with an entry, in ladder order, then the reference when there is one."""
        out = []
        for name in [*self.rung_names(), *([REFERENCE] if self.references() else [])]:
            cells = [c for c in self.cells if c.entry.rung == name]
            models = tuple(dict.fromkeys((c.entry.attacker, c.entry.model) for c in cells))
            first = cells[0].entry
            model = None if name == REFERENCE else SCENARIOS[name].model
            out.append(LadderRung(name, first.code, first.enrolment, first.trials, model, models))
        return out

    def log2_n_values(self) -> list[float]:
        """The distinct log2 N of the cells (bits), ascending: one value when every entry searched N speakers alike."""
        return sorted({round(c.log2_n, 12) for c in self.cells})


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


def check_ladder_labels(ladder: Ladder, labels: Sequence[str]) -> None:
    """Check that every label of *ladder* is one of *labels* (the report's systems').

    Raises
    ------
    InputError
        A ladder label that is not a system of the report, named with the report's labels.
    """
    missing = [label for label in ladder.labels() if label not in labels]
    if missing:
        raise InputError(f"{_where(missing[0])}: not a system of the report (its labels: {preview(labels)})")
