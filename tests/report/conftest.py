"""Reports of each kind, built once per test session from small simulated runs.

``evaluate``  one Result from score-set files on disk, with bootstrap intervals;
``systems``   four systems, one with its calibrator sensitivity, two with their per-speaker tables;
``dp-audit``  a DP audit over three mu;
``grid``      a 2 systems x 2 calibrators x 2 priors grid run with ``run_grid``.

Each fixture value is a :class:`Built`: the Report, the objects it was built from, and
its input files.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import attrs
import pytest

import lidframe
from lidframe.data.simulate import simulate_system

CREATED = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
GRID_SPEC = """
[grid]
calibrators = ["logistic", "isotonic"]
priors = ["uniform", "watchlist?ids=eval-spk000,eval-spk001&weight=4"]
seeds = [3]

[systems.weak]
dev = "weak_dev.npz"
eval = "weak_eval.npz"

[systems.strong]
dev = "strong_dev.npz"
eval = "strong_eval.npz"
"""


@attrs.frozen(eq=False)
class Built:
    """A report and what it was built from."""

    kind: str
    report: Any
    sources: dict
    files: dict


@pytest.fixture(scope="session")
def evaluate_built(tmp_path_factory) -> Built:
    from lidframe.report import report_from_results

    folder = tmp_path_factory.mktemp("evaluate")
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=10, trials_per_speaker=6)
    files = {"dev": folder / "dev.npz", "eval": folder / "eval.npz"}
    dev.save(files["dev"])
    ev.save(files["eval"])
    result = lidframe.evaluate(files["dev"], files["eval"], bootstrap=lidframe.Bootstrap(n_boot=100))
    report = report_from_results({"anon-weak": result}, inputs=files, created=CREATED)
    return Built("evaluate", report, {"anon-weak": result}, files)


SYSTEMS = {
    "plain": {"leakage": 1.0},
    "anon-weak": {"leakage": 0.5},
    "uneven": {"leakage": 0.1, "leaky_share": 0.3, "leaky_leakage": 0.7},
    "random": {"leakage": 0.0},
}


@pytest.fixture(scope="session")
def systems_built() -> Built:
    from lidframe.analyses.per_speaker import per_speaker
    from lidframe.analyses.sensitivity import sensitivity
    from lidframe.report import report_from_results

    results, per_speaker_of, sensitivity_of = {}, {}, {}
    for offset, (name, params) in enumerate(SYSTEMS.items()):
        dev, ev = simulate_system(seed=offset, n_enrolled=8, trials_per_speaker=5, **params)
        results[name] = lidframe.evaluate(dev, ev)
        if name in ("anon-weak", "uneven"):  # one with intervals, one without
            boot = lidframe.Bootstrap(n_boot=100) if name == "uneven" else None
            per_speaker_of[name] = per_speaker(results[name], bootstrap=boot)
        if name == "uneven":
            sensitivity_of[name] = sensitivity(dev, ev, calibrators=["logistic", "isotonic"])
    report = report_from_results(results, sensitivity=sensitivity_of, per_speaker=per_speaker_of, created=CREATED)
    return Built(
        "systems", report, {"results": results, "per_speaker": per_speaker_of, "sensitivity": sensitivity_of}, {}
    )


@pytest.fixture(scope="session")
def dp_built() -> Built:
    from lidframe.privacy.audit import dp_audit, simulated_splits
    from lidframe.report import report_from_dp_audit

    dev, ev = simulated_splits(n_enrolled=8, trials_per_speaker=4, dim=16, seed=1)
    record = dp_audit(dev, ev, [0.5, 2.0, 8.0], bootstrap=lidframe.Bootstrap(n_boot=100))
    report = report_from_dp_audit(record, created=CREATED)
    return Built("dp-audit", report, {"record": record}, {})


@pytest.fixture(scope="session")
def grid_built(tmp_path_factory) -> Built:
    from lidframe.grid.report import load_results
    from lidframe.grid.runner import run_grid
    from lidframe.report import report_from_grid

    folder = tmp_path_factory.mktemp("grid")
    for name, leakage in {"weak": 0.5, "strong": 0.2}.items():
        dev, ev = simulate_system(seed=len(name), n_enrolled=8, trials_per_speaker=5, leakage=leakage)
        dev.save(folder / f"{name}_dev.npz")
        ev.save(folder / f"{name}_eval.npz")
    (folder / "grid.toml").write_text(GRID_SPEC)
    out = folder / "out"
    run_grid(folder / "grid.toml", out, jobs=1)
    cells = load_results(out)
    report = report_from_grid(cells, out_dir=out, inputs={"grid spec": folder / "grid.toml"}, created=CREATED)
    return Built("grid", report, {"cells": cells, "out": out}, {"grid spec": folder / "grid.toml"})


@pytest.fixture(scope="session")
def rendered(evaluate_built, systems_built, dp_built, grid_built) -> dict[str, tuple[Built, str]]:
    """kind -> (Built, its HTML page), each rendered once."""
    from lidframe.report import render_html

    return {b.kind: (b, render_html(b.report)) for b in (evaluate_built, systems_built, dp_built, grid_built)}


def page_path(folder: Path, kind: str) -> Path:
    return folder / f"{kind}-report.html"


# ------------------------------------------------------------------ pages written by the command line
CLI_GRID_SPEC = GRID_SPEC.replace(
    "seeds = [3]", 'seeds = [3]\n\n[grid.ci]\nn_boot = 100\nlevel = 0.9\nunit = "speaker"'
)


@attrs.frozen(eq=False)
class CliRun:
    """A report.html that a ``lidframe`` command wrote, with what else the same run wrote.

    Attributes
    ----------
    kind : str
        ``"evaluate"`` (``evaluate --report``), ``"grid"`` (``lidframe report``) or ``"dp-audit"``.
    page : Path
        The report.html.
    stdout : str
        What the command printed.
    record : Any
        The JSON the same run wrote (evaluate and dp-audit ``--json``), or the grid's
        finished cells (:func:`lidframe.grid.report.load_results`).
    files : dict
        Further files of the run (inputs, the per-speaker CSV, the grid folder).
    """

    kind: str
    page: Path
    stdout: str
    record: Any
    files: dict


def run_cli(argv) -> tuple[int, str]:
    """``lidframe *argv*`` in this process: (exit status, stdout)."""
    import contextlib
    import io

    from lidframe.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([str(a) for a in argv])
    return code, out.getvalue()


@pytest.fixture(scope="session")
def cli_runs(tmp_path_factory) -> dict[str, CliRun]:
    """kind -> the page one ``lidframe`` command line wrote (each run once per session)."""
    import json

    from lidframe.grid.report import load_results

    runs = {}
    folder = tmp_path_factory.mktemp("cli-evaluate")
    dev, ev = simulate_system(leakage=0.5, seed=5, n_enrolled=10, trials_per_speaker=6)
    dev.save(folder / "dev.npz")
    ev.save(folder / "eval.npz")
    files = {"dev": folder / "dev.npz", "eval": folder / "eval.npz", "per_speaker": folder / "speakers.csv"}
    code, out = run_cli(
        ["evaluate", "--dev", files["dev"], "--eval", files["eval"], "--bootstrap", "--n-boot", "120", "--seed", "4",
         "--json", folder / "summary.json", "--per-speaker", files["per_speaker"], "--report", folder / "audit"]
    )  # fmt: skip
    assert code == 0, out
    record = json.loads((folder / "summary.json").read_text())
    runs["evaluate"] = CliRun("evaluate", folder / "audit" / "report.html", out, record, files)

    folder = tmp_path_factory.mktemp("cli-grid")
    for name, leakage in {"weak": 0.5, "strong": 0.2}.items():
        dev, ev = simulate_system(seed=len(name), n_enrolled=8, trials_per_speaker=5, leakage=leakage)
        dev.save(folder / f"{name}_dev.npz")
        ev.save(folder / f"{name}_eval.npz")
    (folder / "grid.toml").write_text(CLI_GRID_SPEC)
    code, _ = run_cli(["grid", folder / "grid.toml", "--out", folder / "out"])
    assert code == 0
    code, out = run_cli(["report", folder / "out"])
    assert code == 0, out
    runs["grid"] = CliRun(
        "grid", folder / "out" / "report" / "report.html", out, load_results(folder / "out"), {"out": folder / "out"}
    )

    folder = tmp_path_factory.mktemp("cli-dp")
    code, out = run_cli(
        ["dp-audit", "--mu", "0.5,4", "--n-boot", "100", "--json", folder / "dp.json", "--report", folder / "dp"]
    )
    assert code == 0, out
    record = json.loads((folder / "dp.json").read_text())
    runs["dp-audit"] = CliRun("dp-audit", folder / "dp" / "report.html", out, record, {})
    return runs


# ------------------------------------------------------------------ utility records, made by hand
def utility_record(
    wer: float,
    *,
    wer_interval: tuple[float, float] | None = None,
    rho_f0: float | None = None,
    rho_interval: tuple[float, float] | None = None,
    utterances: int = 15,
    speakers: int = 3,
    reference_words: int = 120,
    recogniser: str = "pocketsphinx?lm=default",
    data: str = "systems/x/eval_trials",
) -> Any:
    """A :class:`lidframe.utility.Utility` with the numbers given (no recogniser run): what the report must show.

    The error counts are made to give *wer* over *reference_words* (rounded: the record's
    ``wer`` is *wer* itself); intervals, when given, are 95 % BCa over 1,000 resamples of speakers.
    """
    from lidframe.stats.bootstrap import Interval
    from lidframe.utility import Utility

    errors = round(wer * reference_words)
    intervals = {}
    if wer_interval is not None:
        intervals["wer"] = Interval(wer, wer_interval[0], wer_interval[1], 0.95, "bca")
    if rho_interval is not None:
        intervals["rho_f0"] = Interval(rho_f0, rho_interval[0], rho_interval[1], 0.95, "bca")
    return Utility(
        wer=wer,
        substitutions=errors,
        deletions=0,
        insertions=0,
        reference_words=reference_words,
        rho_f0=rho_f0,
        rho_f0_utterances=0 if rho_f0 is None else utterances,
        utterances=utterances,
        recogniser=recogniser,
        resampled=0,
        normalisation="NFKC, case folded",
        data=data,
        reference=None if rho_f0 is None else "corpus/eval_trials",
        speakers=speakers,
        bootstrap={"n_boot": 1000, "level": 0.95, "unit": "speaker", "method": "bca", "seed": 0} if intervals else None,
        intervals=intervals or None,
        rows=[],
    )


# ------------------------------------------------------------------ a page of every kind
@pytest.fixture(scope="session")
def pages(tmp_path_factory, cli_runs, rendered) -> dict[str, Path]:
    """kind -> a report.html of that kind (:data:`tests.report.test_sections.KINDS`), each written once per session.

    Here, not in a test module: a session fixture imported into several modules is a fixture
    of each and was made once per module (four times).
    """
    from lidframe.demo import write_demo_outputs
    from lidframe.demo.voice import demo_rows

    found = {kind: cli_runs[kind].page for kind in ("evaluate", "grid", "dp-audit")}
    folder = tmp_path_factory.mktemp("simulated-demo")
    code, out = run_cli(["demo", "--simulated", "--out", folder])
    assert code == 0, out
    found["simulated demo"] = folder / "report.html"
    # the real-voice demo's page, from simulated Results with its rows (its synthesis is too slow for a test),
    # outsiders and the demo's open set and calibrator sensitivity
    from lidframe.analyses.legal_criteria import legal_criteria
    from lidframe.analyses.sensitivity import sensitivity
    from lidframe.demo.voice import OPEN_SET_PRIOR, SENSITIVITY_CALIBRATORS

    rows = demo_rows()
    results, open_set, sensitivity_of, legal = {}, {}, {}, {}
    for seed, row in enumerate(rows):
        dev, ev = simulate_system(
            leakage=0.1 + 0.05 * (seed % 8), seed=seed, n_enrolled=8, trials_per_speaker=4, n_outsiders=2
        )
        # with intervals, as the real demo's cards carry them (they take the summary's room: issue 41)
        bootstrap = lidframe.Bootstrap(n_boot=100, seed=seed)
        results[row.label] = lidframe.evaluate(dev, ev, bootstrap=bootstrap)
        # the legal criteria of every row, as the demo computes them (lidframe.demo.voice.run._legal_rows)
        legal[row.label] = legal_criteria(results[row.label], ev, bootstrap=bootstrap, seed=seed)
        open_set[row.label] = lidframe.evaluate(dev, ev, prior=OPEN_SET_PRIOR)
        sensitivity_of[row.label] = sensitivity(dev, ev, SENSITIVITY_CALIBRATORS)
    folder = tmp_path_factory.mktemp("voice-demo")
    systems = {row.label: row.system for row in rows}
    measured = [s for s in dict.fromkeys(systems.values()) if s != "random"]
    utility = {
        system: utility_record(
            0.15 + 0.5 * k / len(measured), wer_interval=(0.1 + 0.5 * k / len(measured), 0.3 + 0.5 * k / len(measured)),
            rho_f0=1.0 - 0.1 * k, rho_interval=(0.9 - 0.1 * k, 1.0 - 0.05 * k),
            data=f"{folder}/systems/{system}/eval_trials_with_a_long_path_to_wrap",
        )
        for k, system in enumerate(measured)
    }  # fmt: skip
    # the real demo's title and notes (its corpus of 48 voices and 9 outsiders), which take the summary's room too
    from types import SimpleNamespace

    from lidframe.demo.voice.outputs import _report_notes

    corpus = {
        "utterances": 429,
        "speakers": {"train": [0] * 14, "dev": [0] * 10, "eval": [0] * 24},
        "outsiders": {"dev": [0] * 3, "eval": [0] * 6},
    }
    notes = _report_notes(SimpleNamespace(epochs=15), corpus, n_boot=1000, utility_note=None)
    page = write_demo_outputs(
        folder, results, table="t", record={}, inputs={}, notes=notes, settings={},
        title="lidframe demo: real synthesized voices, the threat-model ladder",
        systems=systems, ladder=list(rows), log=lambda _: None, utility=utility,
        utility_note="WER on the 15 eval trials of the English voices built from recordings; ρ_F0 against plain.",
        open_set=open_set, sensitivity=sensitivity_of, legal=legal,
    )  # fmt: skip
    assert page is not None
    found["demo"] = page
    folder = tmp_path_factory.mktemp("systems")
    found["systems"] = folder / "report.html"
    found["systems"].write_text(rendered["systems"][1], encoding="utf-8")
    return found
