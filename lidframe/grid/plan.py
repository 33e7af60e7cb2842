"""Plan a grid: its cells with their inputs, grouped into score jobs and calibrator fit tasks.

A cell is (system, attacker, mechanism, calibrator, prior, seed) and, in a grid with the
``scenarios`` axis, a scenario; the attacker, the mechanism (a Gaussian speaker mechanism
releasing the trial embeddings) and the scenario apply to data-dir systems only, and are
None for score-file systems.  The work is shared: score sets once per (system, attacker,
mechanism, scenario, split), into the content-addressed cache
``OUT/cache/scores/<hash>.npz`` (:class:`~lidframe.grid.records.ScoreJob`); calibrator
fits once per (system, attacker, mechanism, scenario, calibrator), each evaluating every
(prior, seed) cell (:class:`~lidframe.grid.records.FitTask`).

A fused attacker (``fusion?of=ecapa,xvector`` in ``[grid] attackers``,
:mod:`lidframe.grid.spec.fusion`) reuses its members' score jobs of the same (system,
mechanism, scenario) and adds one :class:`~lidframe.grid.records.FusionJob`, which fits
the fusion on the dev sets and writes the fused dev and eval sets to
``OUT/cache/fused/<hash>/``, keyed by the members' score-cache keys and the fusion's
settings; its cells read those like any attacker's, and record the members' inputs.

A scenario changes what is scored, not how: an ``ignorant`` split is scored with the
split's ``original_enrol`` as its enrolment (its inputs are that folder's, under the role
``original_enrol``), a ``semi-informed`` one by the attacker with the system's adapted
checkpoint (:meth:`~lidframe.grid.spec.SystemSpec.scoring_attacker`, whose file is the
attacker's input).  The cache is keyed by what is scored, so a ``lazy-informed`` split
shares its score set with the same split of a grid without scenarios.

A cell's inputs do not depend on its seed, so the cells of one (task, prior) share one
inputs record and its digest, computed once; their ids are hashed from the components'
JSON written once (:func:`lidframe.grid.store.cell_ids`).  The planning bar moves at
least every :data:`PROGRESS_STEP` cells, so a task of many seeds does not hold it at 0.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import cast

from lidframe._version import code_version
from lidframe.data.digests import DigestCache
from lidframe.data.fileio import StrPath
from lidframe.data.scenario import SCENARIOS
from lidframe.grid import store
from lidframe.grid.inputs import InputDigests, hash_parts, inputs_digest, settings_inputs
from lidframe.grid.progress import progress_bar
from lidframe.grid.records import Cell, FitTask, FusionJob, GridPlan, Inputs, ScoreJob, stored_name
from lidframe.grid.spec.fusion import fused_attacker, is_fusion
from lidframe.grid.spec.records import GridSpec, SystemSpec

__all__ = ["plan_grid", "PROGRESS_STEP"]

#: The most cells planned between two moves of the planning bar.
PROGRESS_STEP = 1000


def plan_grid(
    spec: GridSpec, out_dir: StrPath, *, digests: DigestCache | None = None, progress: bool = False
) -> GridPlan:
    """Score jobs and fit tasks of *spec*, every cell with its inputs (see the module docstring).

    Parameters
    ----------
    spec : GridSpec
        A validated spec.
    out_dir : str or os.PathLike
        The output folder (score-cache paths lie below it).
    digests : DigestCache, optional
        Where file digests are looked up and remembered; an in-memory one by default.
    progress : bool
        A tqdm bar over the planned cells.

    Returns
    -------
    GridPlan
        Its ``score_jobs`` and ``tasks``; each task has its ``cells``, each cell its
        ``cell_id``, components, ``inputs`` and ``inputs_digest``.
    """
    found = InputDigests(digests if digests is not None else DigestCache())
    tasks = []
    with progress_bar(spec.n_cells(), "planning cells", "cell", enabled=progress) as advance:
        planner = _Planner(spec, Path(out_dir), found, advance)
        for system in spec.systems:
            for attacker, mechanism, scenario in _attacks(spec, system):
                tasks.extend(planner.tasks(system, attacker, mechanism, scenario))
    return GridPlan(
        score_jobs=tuple(planner.score_jobs.values()),
        tasks=tuple(tasks),
        fusion_jobs=tuple(planner.fusion_jobs.values()),
    )


def _attacks(spec: GridSpec, system: SystemSpec) -> list[tuple[str | None, str | None, str | None]]:
    """The (attacker, mechanism, scenario) of *system*: every one for data dirs, all None for score files."""
    if not system.needs_attacker:
        return [(None, None, None)]
    return [
        (a, m, s) for a in spec.attackers for m in (spec.mechanisms or (None,)) for s in (spec.scenarios or (None,))
    ]


class _Planner:
    """The tasks of one (system, attacker, mechanism) at a time, sharing input digests and score jobs.

    *advance* (``advance(n)``) is told of every *n* cells planned, at most :data:`PROGRESS_STEP` at a time.
    """

    def __init__(self, spec: GridSpec, out: Path, found: InputDigests, advance: Callable[[int], object]):
        self.spec, self.out, self.found, self.advance = spec, out, found, advance
        self.version = code_version()
        self.settings = settings_inputs(spec, self.version)
        self.score_jobs: dict[str, ScoreJob] = {}
        self.fusion_jobs: dict[str, FusionJob] = {}

    def tasks(
        self, system: SystemSpec, attacker: str | None, mechanism: str | None, scenario: str | None = None
    ) -> list[FitTask]:
        """One fit task per calibrator, each with its (prior, seed) cells."""
        sources, read = self._sources(system, attacker, mechanism, scenario)
        return [
            FitTask(
                dev=sources["dev"],
                eval=sources["eval"],
                calibrator=calibrator,
                cells=self._cells(system, attacker, mechanism, scenario, calibrator, read),
                options=self.spec.evaluate,
                longitudinal=self.spec.longitudinal,
                legal=self.spec.legal,
            )
            for calibrator in self.spec.calibrators
        ]

    def _sources(
        self, system: SystemSpec, attacker: str | None, mechanism: str | None, scenario: str | None
    ) -> tuple[dict[str, str], Inputs]:
        """The dev and eval score-set files of the tasks (planning the score and fusion jobs), and what they read."""
        data_inputs: Inputs = {}
        if attacker is None:  # score-set files, read as they are
            for split in ("dev", "eval"):
                data_inputs.update(self.found.source(split, getattr(system, split), reads_audio=False))
            return {"dev": cast(str, system.dev), "eval": cast(str, system.eval)}, data_inputs
        if is_fusion(attacker):
            return self._fused(system, attacker, mechanism, scenario)
        sources, data_inputs, attacker_inputs = self._scored(system, attacker, mechanism, scenario)
        return sources, {**data_inputs, **attacker_inputs}

    def _scored(
        self, system: SystemSpec, attacker: str, mechanism: str | None, scenario: str | None
    ) -> tuple[dict[str, str], Inputs, Inputs]:
        """The score-cache files of a data-dir system's splits scored by *attacker* (planning their score jobs),
        what of the data they read, and the attacker's inputs."""
        scoring = system.scoring_attacker(attacker, scenario)  # semi-informed: the adapted checkpoint
        attacker_inputs, reads_audio = self.found.component("attacker", scoring)
        enrol_role = "original_enrol" if scenario is not None and SCENARIOS[scenario].original_enrolment else "enrol"
        data_inputs: Inputs = {}
        sources: dict[str, str] = {}
        for split in ("dev", "eval"):
            source = system.scored_source(split, scenario)  # ignorant: the original enrolment
            split_inputs = self.found.source(split, source, reads_audio=reads_audio, enrol_role=enrol_role)
            data_inputs.update(split_inputs)
            key = hash_parts(
                "scores",
                inputs_digest(split_inputs),
                inputs_digest(attacker_inputs),
                scoring,
                stored_name(mechanism),  # "-": the key every earlier lidframe computed
                split,
                self.version,
            )
            target = str(self.out / "cache" / "scores" / f"{key}.npz")
            self.score_jobs[target] = ScoreJob(source=source, attacker=scoring, mechanism=mechanism, target=target)
            sources[split] = target
        return sources, data_inputs, attacker_inputs

    def _fused(
        self, system: SystemSpec, attacker: str, mechanism: str | None, scenario: str | None
    ) -> tuple[dict[str, str], Inputs]:
        """The fused dev and eval files of a ``fusion?of=`` entry (planning its fusion job), and what they read.

        What they read: the data the members read, each member's spec (``fused 1 attacker``:
        a changed option is named with its old and new value) and inputs (``fused 1 attacker
        code``, ...), and the fusion's settings.  The cache key hashes the members'
        score-cache keys -- each a hash of what it read -- and the settings.
        """
        fused = fused_attacker(attacker, self.spec.attackers)  # checked when the spec was read
        settings = fused.settings(self.spec.znorm_ddof)
        read: Inputs = {}
        members: list[tuple[str, dict[str, str]]] = []
        for k, member in enumerate(fused.members, start=1):
            sources, data_inputs, member_inputs = self._scored(system, member, mechanism, scenario)
            scoring = system.scoring_attacker(member, scenario)
            read.update(data_inputs)
            read[f"fused {k} attacker"] = [f"fused attacker {k}", scoring]
            read.update(
                {
                    f"fused {k} {key}": [f"fused attacker {k}: {label}", digest]
                    for key, (label, digest) in member_inputs.items()
                }
            )
            members.append((scoring, sources))
        read["fusion settings"] = ["fusion settings", json.dumps(settings, sort_keys=True)]
        keys = [[Path(sources[split]).stem for split in ("dev", "eval")] for _, sources in members]
        folder = self.out / "cache" / "fused" / hash_parts("fusion", keys, settings, self.version)
        job = FusionJob(
            system=system.name,
            attacker=attacker,
            mechanism=mechanism,
            scenario=scenario,
            members=tuple(scoring for scoring, _ in members),
            dev=tuple(sources["dev"] for _, sources in members),
            eval=tuple(sources["eval"] for _, sources in members),
            C=fused.C,
            znorm_ddof=self.spec.znorm_ddof,
            dev_target=str(folder / "dev.npz"),
            eval_target=str(folder / "eval.npz"),
        )
        self.fusion_jobs[job.dev_target] = job
        return {"dev": job.dev_target, "eval": job.eval_target}, read

    def _cells(
        self,
        system: SystemSpec,
        attacker: str | None,
        mechanism: str | None,
        scenario: str | None,
        calibrator: str,
        read: Inputs,
    ) -> tuple[Cell, ...]:
        """The (prior, seed) cells of one task: one inputs record and digest per prior, shared by its seeds."""
        calibrator_inputs, _ = self.found.component("calibrator", calibrator)
        seeds = self.spec.seeds
        cells: list[Cell] = []
        for prior in self.spec.priors:
            prior_inputs, _ = self.found.component("prior", prior)
            inputs = {**read, **calibrator_inputs, **prior_inputs, **self.settings}  # the seed is no input
            digest = inputs_digest(inputs)
            for start in range(0, len(seeds), PROGRESS_STEP):
                chunk = seeds[start : start + PROGRESS_STEP]
                ids = store.cell_ids(system.name, attacker, mechanism, calibrator, prior, chunk, scenario)
                cells.extend(
                    Cell(
                        cell_id=cell_id,
                        system=system.name,
                        attacker=attacker,
                        mechanism=mechanism,
                        scenario=scenario,
                        calibrator=calibrator,
                        prior=prior,
                        seed=seed,
                        inputs=inputs,
                        inputs_digest=digest,
                    )
                    for seed, cell_id in zip(chunk, ids)
                )
                self.advance(len(chunk))
        return tuple(cells)
