"""The builder of a :class:`~lidframe.report.model.Report` from a grid's finished cells (``lidframe report GRID_DIR``).

:func:`report_from_grid` reads the finished cells (the records
:func:`lidframe.grid.report.load_results` returns, by their attributes: :class:`GridCell`;
a mapping is read into one at the edge) and each cell's per-trial file
(checked: a damaged, truncated or stale file is one line naming it and what to do), and
digests the store and every per-trial file it reads into the report's provenance.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import attrs
import numpy as np

from lidframe.analyses.legal_criteria import LegalCriteria
from lidframe.core.summary import Summary
from lidframe.data.fileio import StrPath
from lidframe.data.npzfile import read_npz
from lidframe.data.provenance import ScoreFile
from lidframe.data.scenario import check_scenario
from lidframe.errors import InputError
from lidframe.report.headline import Headline
from lidframe.report.model import Report, ReportSystem
from lidframe.report.sections.environment import utility_packages
from lidframe.report.sections.ladder_model import Ladder, LadderCell, LadderEntry
from lidframe.report.sections.open_set_model import OpenSetHeadline, OpenSetPerTrial
from lidframe.report.sections.provenance_model import (
    AttackerSettings,
    InputFile,
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

__all__ = ["report_from_grid", "GridCell", "grid_attack", "grid_worst_case"]


_GRID_KEYS = ("system", "attacker", "mechanism", "calibrator", "prior", "seed")
#: How the grid's store writes a component a cell does not have (``lidframe.grid.records.NONE``; a
#: report does not import the grid): names and messages print it, records hold None.
_NONE = "-"


class GridCell(Protocol):
    """A finished grid cell as :func:`report_from_grid` reads it: a :class:`lidframe.grid.records.FinishedCell`.

    A component the cell does not have is None; ``summary`` is a
    :class:`~lidframe.core.summary.Summary`, ``calibrator_fit`` the fitted calibrator's record
    stored beside it (None without one), ``legal`` its linkability and singling out (the
    section "Singling out, linkability, inference"; None in a cell stored without them).
    """

    @property
    def system(self) -> str: ...
    @property
    def attacker(self) -> str | None: ...
    @property
    def mechanism(self) -> str | None: ...
    @property
    def calibrator(self) -> str: ...
    @property
    def prior(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def scenario(self) -> str | None: ...
    @property
    def summary(self) -> Summary: ...
    @property
    def calibrator_fit(self) -> dict[str, Any] | None: ...
    @property
    def legal(self) -> LegalCriteria | None: ...
    @property
    def per_trial(self) -> str: ...


@attrs.frozen(kw_only=True)
class _MappedCell:
    """A :class:`GridCell` read from a mapping, as ``FinishedCell.to_dict()`` gives it (:func:`_grid_cell`)."""

    system: str
    attacker: str | None
    mechanism: str | None
    calibrator: str
    prior: str
    seed: int
    scenario: str | None
    summary: Summary = attrs.field(eq=False)
    calibrator_fit: dict[str, Any] | None = attrs.field(eq=False)
    per_trial: str
    legal: LegalCriteria | None = attrs.field(default=None, eq=False)


def _component(value: Any) -> str | None:
    """A component of a mapping, as stored: None for ``-`` (the mapping's text edge), the value as text otherwise."""
    return None if value is None or value == _NONE else str(value)


def _grid_cell(cell: Any) -> GridCell:
    """*cell* as a :class:`GridCell`: a record with a :class:`Summary` as it is, a mapping (or ``to_dict()``) read into one.

    Raises
    ------
    InputError
        A mapping without the keys of a finished cell, or whose summary is not one that
        lidframe wrote (:meth:`Summary.from_dict`, which also reads one of lidframe 0.2.0).
    """
    if isinstance(getattr(cell, "summary", None), Summary):
        return cast(GridCell, cell)
    row = cell.to_dict() if hasattr(cell, "to_dict") else cell
    missing = [k for k in (*_GRID_KEYS, "summary", "per_trial") if k not in row]
    if missing:
        raise InputError(f"grid cell {row!r:.80}: not a finished cell record (no {', '.join(missing)})")
    stored = row["summary"]
    try:
        summary = stored if isinstance(stored, Summary) else Summary.from_dict(stored, earlier=True)
    except (InputError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"grid cell {row!r:.80}: not a summary lidframe wrote ({exc})") from None
    block = None if isinstance(stored, Summary) else stored.get("legal")
    legal = None if block is None else LegalCriteria.from_dict(block, where=f"grid cell {row!r:.80}: its legal block")
    return _MappedCell(
        system=str(row["system"]),
        attacker=_component(row["attacker"]),
        mechanism=_component(row["mechanism"]),
        calibrator=str(row["calibrator"]),
        prior=str(row["prior"]),
        seed=int(row["seed"]),
        scenario=_component(row.get("scenario")),
        summary=summary,
        calibrator_fit=None if isinstance(stored, Summary) else stored.get("calibrator_fit"),
        per_trial=str(row["per_trial"]),
        legal=legal,
    )


def _text(component: str | None) -> str:
    """A component as names and messages print it: ``-`` for none."""
    return _NONE if component is None else component


def _cell_name(cell: GridCell) -> str:
    """The cell's components joined by ``/`` (its scenario after the mechanism), as messages name it."""
    parts = [cell.system, _text(cell.attacker), _text(cell.mechanism)]
    if cell.scenario is not None:
        parts.append(cell.scenario)
    return "/".join([*parts, cell.calibrator, cell.prior, str(cell.seed)])


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
    path: Path, cell: GridCell, out: Path
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


def _grid_cells(cells: Sequence[Any], out: Path) -> list[GridCell]:
    """Each finished cell as a :class:`GridCell` (:func:`_grid_cell`), checked and sorted by its components."""
    rows = [_grid_cell(cell) for cell in cells]
    if not rows:
        raise InputError(f"{out}: the grid has no finished cells to report")
    return sorted(
        rows,
        key=lambda c: (
            c.system,
            _text(c.attacker),
            _text(c.mechanism),
            c.calibrator,
            c.prior,
            f"{int(c.seed):012d}",
            c.scenario or "",
        ),
    )


#: The axes of a grid that name a cell's attack where the grid has several values of them (:func:`grid_attack`).
_ATTACK_AXES = ("calibrator", "prior", "seed")


def grid_attack(cell: GridCell, *, varying: Collection[str] = _ATTACK_AXES) -> tuple[str, str]:
    """(the system under audit, what attacked it) of a grid cell, as the worst case across attackers names them.

    The system is the cell's with its ``[mechanism]``; the attack its attacker with its
    ``(scenario)``, then those of its calibrator, prior and seed that are *varying* (the
    grid has several of them: :func:`_varying`), joined by ``·`` (``"ecapa (semi-informed)
    · isotonic"``); ``-`` where nothing is left.  A score-file system (no attacker) named
    ``SYSTEM/ATTACKER`` in the spec is the system SYSTEM attacked by ATTACKER: the score
    sets of several attackers of one system, each a ``[systems."SYSTEM/ATTACKER"]`` table
    (docs/report.md).
    """
    system, attacker = cell.system, cell.attacker
    if attacker is None and "/" in system:
        head, _, tail = system.partition("/")
        if head.strip() and tail.strip():
            system, attacker = head.strip(), tail.strip()
    if cell.mechanism is not None:
        system += f" [{cell.mechanism}]"
    parts = [] if attacker is None else [attacker + ("" if cell.scenario is None else f" ({cell.scenario})")]
    parts += [cell.calibrator] if "calibrator" in varying else []
    parts += [cell.prior] if "prior" in varying else []
    parts += [f"seed {cell.seed}"] if "seed" in varying else []
    return system, " · ".join(parts) or _NONE


def _varying(rows: Sequence[GridCell]) -> tuple[str, ...]:
    """The axes of :data:`_ATTACK_AXES` on which the grid's cells take several values."""
    return tuple(axis for axis in _ATTACK_AXES if len({getattr(c, axis) for c in rows}) > 1)


def _grid_system(
    cell: GridCell, out: Path, *, several_attackers: bool, several_seeds: bool, varying: Collection[str] = ()
) -> tuple[ReportSystem, SystemSettings, InputFile]:
    """One finished grid cell's row of the report, its settings, and its per-trial file (digested).

    *varying*: the axes that name its attack (:func:`grid_attack`).
    """
    summary = cell.summary
    name = cell.system
    if cell.mechanism is not None:
        name += f" [{cell.mechanism}]"
    # the system under audit: what "N systems" counts, whichever attacker and rung
    audited, attack = grid_attack(cell, varying=varying)
    if cell.scenario is not None:  # a section per scenario (the grid's scenarios axis)
        name += f" ({cell.scenario})"
    if several_attackers:
        name += f" / {_text(cell.attacker)}"
    label = f"{name} · {cell.calibrator} · {cell.prior}"
    if several_seeds:
        label += f" · seed {cell.seed}"
    path = out / cell.per_trial
    if not path.is_file():
        raise InputError(
            f"{path}: the per-trial file of grid cell {_cell_name(cell)} is missing; rerun lidframe grid on {out}"
        )
    lid, posterior, open_trials = _per_trial_lid(path, cell, out)
    with_lid = ~np.isnan(lid)  # the enrolled trials in the closed set, every trial in the open set
    open_set = OpenSetHeadline.from_summary(summary)
    stored_trials = summary.n_enrolled_trials  # None only in a store row no lidframe wrote: not checked
    if stored_trials is not None and open_set is not None:
        stored_trials += summary.n_outsider_trials or 0
    if stored_trials is not None and stored_trials != int(with_lid.sum()):
        # the file and the stored summary come from different runs: no page mixes the two
        raise InputError(
            f"{path}: holds {int(with_lid.sum())} {'trials with a LID' if open_set else 'closed-set trials'} but grid "
            f"cell {_cell_name(cell)} was summarised over {stored_trials}; the file is stale: delete it and "
            f"rerun lidframe grid on {out}"
        )
    headline = Headline.from_summary(summary, where=f"grid cell {_cell_name(cell)}")
    if open_trials is not None and not with_lid.all():
        open_trials = None  # a closed-set file: its outsider trials have no LID to draw
    system = ReportSystem(
        label=label,
        name=name,
        calibrator=cell.calibrator,
        prior=cell.prior,
        headline=headline,
        lid_bits=lid[with_lid],
        lid_ceiling_bits=_grid_ceiling(
            lid[with_lid], None if posterior is None else posterior[with_lid], headline.log2_n
        ),
        attacker=_text(cell.attacker),
        seed=int(cell.seed),
        open_set=open_set,
        open_trials=open_trials,
        system=audited,
        legal=cell.legal,
        attack=attack,
    )
    settings = SystemSettings.from_summary(label, summary, cell.calibrator_fit)
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
    score_files: Sequence[ScoreFile] = (),
    policy: Policy | None = None,
) -> Report:
    """A report of a grid's finished cells, one row per cell and one section per system.

    Parameters
    ----------
    cells : sequence of FinishedCell or mapping
        The finished cells as :func:`lidframe.grid.report.load_results` returns them (read
        by their attributes, :class:`GridCell`), or mappings as their ``to_dict()`` gives
        them: ``system, attacker, mechanism, calibrator, prior, seed, summary`` (as stored)
        and ``per_trial`` (its per-trial file, relative to *out_dir*).
    out_dir : str or os.PathLike
        The grid's output folder; its ``results.sqlite`` and every per-trial file read are
        digested into the provenance.
    title, inputs, settings, notes, created, command, utility_note, score_files
        As for :func:`~lidframe.report.build.report_from_results` (title: default ``"lidframe
        grid report: <folder>"``; an input: the grid spec file; the score files: the systems').
    utility : mapping of str to Utility, optional
        A system of the grid (a cell's ``system``) -> :func:`lidframe.utility.utility` of its
        speech: every cell of that system is a point of the privacy-utility chart at its WER.
    policy : Policy, optional
        A verdict policy: every cell is judged against it on its stored summary and legal
        block (the section "Verdict"), the policy file an input of the page.

    Returns
    -------
    Report
        Cells sorted by system, attacker, mechanism, calibrator, prior and seed.  A cell's
        name is its system with ``[mechanism]``, ``(scenario)`` and, with several attackers,
        ``/ attacker``; its label adds calibrator, prior and, with several seeds, the seed;
        the ladder is :func:`_grid_ladder`'s.  Its provenance names each attacker (its spec,
        :meth:`~lidframe.report.sections.provenance_model.AttackerSettings.from_spec`: its
        settings and the digest of each file they name, relative to the working folder).

    Raises
    ------
    InputError
        No cells, a cell without its fields, summary or per-trial file, a utility of no system of the grid.
    """
    out = Path(out_dir)
    rows = _grid_cells(cells, out)
    report_systems, settings_rows, files = _grid_rows(rows, out, policy)
    labels = [(system.label, row.system) for system, row in zip(report_systems, rows)]
    utility_rows, note = utility_of(utility, utility_note, labels, where="the grid's systems")
    specs = dict.fromkeys(c.attacker for c in rows if c.attacker is not None)
    provenance = make_provenance(
        lidframe_version=lidframe_versions([c.summary for c in rows]),
        created=created,
        systems=settings_rows,
        inputs=files + input_files(inputs) + policy_input(policy),
        settings=settings,
        command=command,
        attackers=[AttackerSettings.from_spec(spec) for spec in specs],
        score_files=score_files,
        used=utility_packages((utility or {}).values()),
    )
    return Report(
        title=title or f"lidframe grid report: {out}",
        kind="grid",
        systems=report_systems,
        provenance=provenance,
        notes=notes,
        ladder=_grid_ladder(rows, report_systems),
        utility=utility_rows,
        utility_note=note,
        policy=policy,
    )


#: The model of a grid cell's rung, in the grid spec's terms (:attr:`LadderEntry.model`), by whether it is adapted.
_GRID_MODEL = {
    False: "the attacker as grid.attackers gives it",
    True: "the system's [systems.NAME.adapted] checkpoint, for an attacker that takes one",
}


def _grid_ladder(rows: Sequence[GridCell], systems: Sequence[ReportSystem]) -> Ladder | None:
    """The threat-model ladder of a grid with a ``scenarios`` axis; None without one.

    A ladder holds one number per system, attacker and rung, so it takes the cells of one
    calibrator, prior and seed: those of the first cell with a scenario in page order
    (the section names them).  Each such cell is an entry: its system under audit (with
    its mechanism), its attacker, its rung with the rung's sides, and the model in the
    spec's terms.  Cells without a scenario (score-file systems) are no part of it.

    Parameters
    ----------
    rows : sequence of GridCell
        The finished cells, in page order.
    systems : sequence of ReportSystem
        Their rows of the report, in the same order.
    """
    on_rungs = [(row, system) for row, system in zip(rows, systems, strict=True) if row.scenario is not None]
    if not on_rungs:
        return None
    first = on_rungs[0][0]
    cells = []
    for row, system in on_rungs:
        if (row.calibrator, row.prior, row.seed) != (first.calibrator, first.prior, first.seed):
            continue
        rung = check_scenario(row.scenario, key=f"grid cell {_cell_name(row)}: scenario")
        entry = LadderEntry(
            label=system.label,
            system=system.system or system.name,
            attacker=_text(row.attacker),
            scenario=rung.name,
            enrolment=rung.enrolment,
            trials=rung.trials,
            model=_GRID_MODEL[rung.adapted_model],
        )
        cells.append(LadderCell.from_summary(entry, row.summary))
    return Ladder(cells)


def grid_worst_case(cells: Sequence[Any], *, out_dir: StrPath, policy: Policy | None = None) -> dict[str, Any] | None:
    """The ``worst_case`` block of a grid report's ``summary.json``; None where every system has one attack.

    Each finished cell is one attack of its system (:func:`grid_attack`), its ALID and
    LID q99 read from its stored summary with their intervals
    (:meth:`~lidframe.analyses.worst_attacker.AttackScore.of_summary`), in page order
    (ties go to the first); with *policy*, each cell is judged on its stored summary and
    legal block and each system on its worst case
    (:func:`~lidframe.analyses.worst_attacker.judge_worst`).  Where two cells of a system
    would share an attack's name (a score-file system ``A/x`` beside a data-dir system
    ``A`` attacked by ``x``), the system's cells are named by all their components.

    Parameters
    ----------
    cells : sequence of FinishedCell or mapping
        As :func:`report_from_grid` takes them.
    out_dir : str or os.PathLike
        The grid's output folder (named in an error).
    policy : Policy, optional
        A verdict policy (:func:`lidframe.analyses.verdict.read_policy`).
    """
    from collections import Counter

    from lidframe.analyses.verdict import Verdict, judge
    from lidframe.analyses.worst_attacker import AttackScore, judge_worst, worst_attackers, worst_case_json

    rows = _grid_cells(cells, Path(out_dir))
    varying = _varying(rows)
    named = [(grid_attack(c, varying=varying), c) for c in rows]
    clashing = {system for (system, _), n in Counter(key for key, _ in named).items() if n > 1}
    scores: list[AttackScore] = []
    verdicts: dict[str, dict[str, Verdict]] = {}
    for (system, attack), cell in named:
        name = _cell_name(cell) if system in clashing else attack
        scores.append(AttackScore.of_summary(system, name, cell.summary))
        if policy is not None:
            verdicts.setdefault(system, {})[name] = judge(policy, cell.summary, cell.legal, system=name)
    cases = worst_attackers(scores)
    if not any(len(case.attackers) > 1 for case in cases):
        return None
    return worst_case_json(cases, {system: judge_worst(system, v) for system, v in verdicts.items()} or None)


def _grid_rows(
    rows: Sequence[GridCell], out: Path, policy: Policy | None = None
) -> tuple[list[ReportSystem], list[SystemSettings], list[InputFile]]:
    """Each finished cell's row of the report (judged under *policy*, where given) and its settings; the files read."""
    several = {
        "several_attackers": len({c.attacker for c in rows}) > 1,
        "several_seeds": len({c.seed for c in rows}) > 1,
    }
    varying = _varying(rows)
    files = [InputFile.of("grid store", out / "results.sqlite")] if (out / "results.sqlite").is_file() else []
    report_systems, settings_rows = [], []
    for row in rows:
        system, system_settings, per_trial = _grid_system(row, out, **several, varying=varying)
        report_systems.append(with_verdict(system, policy, row.summary, row.legal))
        settings_rows.append(system_settings)
        files.append(per_trial)
    return report_systems, settings_rows, files
