"""The simulated demo (``lidframe demo --simulated``): five simulated systems through ``evaluate``, one table.

The systems are drawn from the generative model of :mod:`lidframe.data.simulate`
(N = 29 enrolled speakers as in the VoicePrivacy LibriSpeech splits, 20 trials each, and
7 speakers who are not enrolled, 20 outsider trials each: 140 of the 720 trials of each
dev and eval set):

===============  ===================================================================
``plain``        no anonymisation (leakage 1)
``anon-weak``    leakage 0.5
``anon-strong``  leakage 0.2
``uneven``       leakage 0.1, but the anonymiser fails (leakage 0.6) on ~10 % of speakers:
                 EER near 50 %, yet some trials disclose a bit or more
``random``       leakage 0, no speaker information at all
===============  ===================================================================

Each system is evaluated twice with the logistic calibrator: in the closed set (uniform
prior, outsider trials left out: the table's first columns) and in the open set
(:data:`DEMO_OPEN_SET_PRIOR`, :mod:`lidframe.core.openset`: the columns ``outALID``, the
outsider trials' mean membership disclosure, and ``misattr``, their misattribution rate).
The closed-set evaluations carry speaker-bootstrap intervals (:data:`DEMO_BOOTSTRAP`),
which the report's headlines show.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from lidframe.core.evaluation import evaluate
from lidframe.core.result import Result
from lidframe.core.summary import Summary
from lidframe.data.fileio import StrPath, check_output_dir
from lidframe.data.simulate import simulate_system
from lidframe.demo.outputs import write_demo_outputs
from lidframe.report.text import SUMMARY_COLUMNS, format_value, summary_value, text_table
from lidframe.stats.bootstrap import Bootstrap

if TYPE_CHECKING:
    from lidframe.report import AttackerSettings

__all__ = [
    "DEMO_OPEN_SET_PRIOR",
    "DEMO_OUTSIDERS",
    "DEMO_SYSTEMS",
    "DEMO_BOOTSTRAP",
    "OPEN_SET_COLUMNS",
    "format_demo_table",
    "run_demo",
]

#: Speakers of each dev and eval set who are not enrolled (20 outsider trials each).
DEMO_OUTSIDERS = 7
#: name -> keyword arguments of :func:`lidframe.data.simulate.simulate_system`.
DEMO_SYSTEMS = {
    name: {**params, "n_outsiders": DEMO_OUTSIDERS}
    for name, params in {
        "plain": {"leakage": 1.0},
        "anon-weak": {"leakage": 0.5},
        "anon-strong": {"leakage": 0.2},
        "uneven": {"leakage": 0.1, "leaky_share": 0.1, "leaky_leakage": 0.6},
        "random": {"leakage": 0.0},
    }.items()
}
#: The prior of the demo's open-set evaluation: uniform over the enrolled, π_∅ = 0.2.
DEMO_OPEN_SET_PRIOR = "uniform?outside=0.2"
#: The intervals of the closed-set headlines: the library's defaults (1000 resamples of speakers, 95 %, BCa, seed 0).
DEMO_BOOTSTRAP = Bootstrap()
#: The demo table's open-set columns: (header, what it holds, format), after :data:`~lidframe.report.text.SUMMARY_COLUMNS`.
OPEN_SET_COLUMNS = (
    ("outALID", "mean membership disclosure of the outsider trials (bits), summary.open_set.outsider.alid", ".3f"),
    (
        "misattr",
        "share of outsider trials with top enrolled posterior > 0.5, summary.open_set.misattribution_rate",
        ".3f",
    ),
)


def format_demo_table(
    closed: Mapping[str, Summary], open_set: Mapping[str, Summary], *, name_header: str = "system"
) -> str:
    """The demo table: a system's closed-set row (as ``lidframe evaluate`` prints it), then its open-set columns.

    Parameters
    ----------
    closed : mapping of str to Summary
        System -> summary of the closed-set evaluation (uniform prior), in table order.
    open_set : mapping of str to Summary
        System -> summary of the open-set evaluation (:data:`DEMO_OPEN_SET_PRIOR`).
    name_header : str
        The first column's title (the real-voice demo's rows are ``system/attacker/scenario``).

    Returns
    -------
    str
        The aligned table: :data:`~lidframe.report.text.SUMMARY_COLUMNS` of *closed*, then
        :data:`OPEN_SET_COLUMNS` of *open_set* (``-`` where a system has no outsider trial).
    """
    header = [name_header, *(t for _, t, _ in SUMMARY_COLUMNS), *(t for t, _, _ in OPEN_SET_COLUMNS)]
    rows = []
    for name, summary in closed.items():
        view = open_set[name].open_set
        extra: tuple[float | None, float | None] = (None, None)
        if view is not None and view.outsider is not None:
            extra = (view.outsider.alid, view.misattribution_rate)
        rows.append(
            [
                name,
                *(format_value(summary_value(summary, key), fmt) for key, _, fmt in SUMMARY_COLUMNS),
                *(format_value(value, fmt) for value, (_, _, fmt) in zip(extra, OPEN_SET_COLUMNS)),
            ]
        )
    return text_table(header, rows)


def run_demo(
    out_dir: StrPath | None = None,
    *,
    seed: int = 0,
    log: Callable[[str], object] = print,
    command: str | None = None,
) -> tuple[str, dict]:
    """Simulate, evaluate (closed and open set) and tabulate the demo systems.

    Parameters
    ----------
    out_dir : path, optional
        If given (checked before any work, made when missing), writes
        ``<system>_dev.npz`` and ``<system>_eval.npz`` there, then
        :func:`~lidframe.demo.outputs.write_demo_outputs`: ``summary.json``, ``table.txt``, ``per_trial.csv``
        and ``report.html``.
    seed : int
        Seed of the simulation (the table is a deterministic function of it).
    log : callable
        Told when ``report.html`` cannot be rendered here.
    command : str, optional
        The command line for the report's provenance (default this process's).

    Returns
    -------
    table : str
        The comparison table (:func:`format_demo_table`).
    record : dict
        What ``summary.json`` holds: ``seed``; ``systems``, system -> the closed-set
        ``Result.to_dict()`` (with the intervals of :data:`DEMO_BOOTSTRAP`); ``open_set``, with the ``prior`` (:data:`DEMO_OPEN_SET_PRIOR`)
        and ``systems``, system -> the open-set ``Result.to_dict()``.
    """
    out = None if out_dir is None else check_output_dir(out_dir, "--out")
    results: dict[str, Result] = {}
    open_results: dict[str, Result] = {}
    sets = {}
    for offset, (name, params) in enumerate(DEMO_SYSTEMS.items()):
        dev, ev = simulate_system(seed=seed * 1000 + offset, **params)
        results[name] = evaluate(dev, ev, bootstrap=DEMO_BOOTSTRAP)
        open_results[name] = evaluate(dev, ev, prior=DEMO_OPEN_SET_PRIOR)
        sets[name] = (dev, ev)
    table = format_demo_table(
        {name: r.summary for name, r in results.items()}, {name: r.summary for name, r in open_results.items()}
    )
    open_set = {"prior": DEMO_OPEN_SET_PRIOR, "systems": {name: r.to_dict() for name, r in open_results.items()}}
    record = {"seed": seed, "systems": {name: r.to_dict() for name, r in results.items()}, "open_set": open_set}
    if out is not None:
        out.mkdir(exist_ok=True)
        inputs: dict[str, StrPath] = {}
        for name, (dev, ev) in sets.items():
            for split, data in (("dev", dev), ("eval", ev)):
                path = out / f"{name}_{split}.npz"
                data.save(path)
                inputs[f"{name} {split}"] = path
        write_demo_outputs(
            out,
            results,
            table=table,
            record={"seed": seed, "open_set": open_set},
            inputs=inputs,
            title="lidframe demo: simulated systems",
            notes=[
                "Five simulated systems (lidframe.data.simulate, N = 29 enrolled speakers and 7 speakers who are "
                "not enrolled, 20 trials each), logistic calibrator fitted on each system's dev set, uniform prior; "
                "outsider trials are left out of LID here. summary.json's open_set holds the same systems evaluated "
                f"under the prior {DEMO_OPEN_SET_PRIOR} (docs/openset.md); see docs/quickstart.md."
            ],
            settings={
                "seed": seed,
                "calibrator": "logistic",
                "prior": "uniform",
                "intervals": f"{DEMO_BOOTSTRAP.n_boot} resamples of speakers, {DEMO_BOOTSTRAP.level:.0%}, "
                f"{DEMO_BOOTSTRAP.method}, seed {DEMO_BOOTSTRAP.seed}",
                "open set (summary.json's open_set)": DEMO_OPEN_SET_PRIOR,
            },
            log=log,
            command=command,
            attackers=[_simulated_attacker()],
        )
    return table, record


def _simulated_attacker() -> AttackerSettings:
    """The demo's "attacker": scores drawn from the generative model, its parameters per system."""
    from lidframe.report import AttackerSettings

    settings = {"scores": "simulated by lidframe.data.simulate.simulate_system (no audio, no model)"}
    for name, params in DEMO_SYSTEMS.items():
        settings[name] = ", ".join(f"{key} {value:g}" for key, value in params.items())
    return AttackerSettings.of("simulated", settings)
