"""Grids with open-set priors: each cell equals ``lidframe.evaluate`` with its prior, fitted once per openness.

A grid whose priors mix the closed set (``uniform``) and the open set (``uniform?outside=0.2``,
``uniform?outside=auto``) fits each calibrator at most twice -- without and with the dev
outsider trials as non-mated pairs -- and every cell's stored summary and per-trial file
are those of ``lidframe.evaluate`` run here with that calibrator and prior.  The tidy
table gains the open-set columns only when a cell is open, and a closed-only store (what
every grid wrote before the open set) reads as before.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import lidframe
from lidframe import ScoreSet
from lidframe.analyses.legal_criteria import legal_criteria
from lidframe.data.fileio import json_clean
from lidframe.data.simulate import simulate_system
from lidframe.grid import store
from lidframe.grid.report import OPEN_SET_COLUMNS, load_results, tidy_table, write_report
from lidframe.grid.runner import run_grid

PRIORS = ["uniform", "uniform?outside=0.2", "uniform?outside=auto"]


def with_outsiders(data: ScoreSet, n_dropped: int) -> ScoreSet:
    """*data* with its last *n_dropped* enrolled speakers removed: their trials become outsider trials."""
    return ScoreSet(data.scores[:, :-n_dropped], data.enrolled[:-n_dropped], data.trial_speakers, data.trial_ids)


def make_spec(folder: Path, priors, *, calibrators=("logistic", "isotonic"), ci: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, leakage in {"weak": 0.5, "strong": 0.2}.items():
        dev, ev = simulate_system(seed=len(name), n_enrolled=10, trials_per_speaker=5, leakage=leakage)
        with_outsiders(dev, 3).save(folder / f"{name}_dev.npz")
        with_outsiders(ev, 2).save(folder / f"{name}_eval.npz")
    bootstrap = "\n[grid.bootstrap]\nn_boot = 100\n" if ci else ""
    (folder / "grid.toml").write_text(
        f"[grid]\ncalibrators = {json.dumps(list(calibrators))}\npriors = {json.dumps(list(priors))}\n"
        f"seeds = [1]\n{bootstrap}\n"
        '[systems.weak]\ndev = "weak_dev.npz"\neval = "weak_eval.npz"\n\n'
        '[systems.strong]\ndev = "strong_dev.npz"\neval = "strong_eval.npz"\n'
    )
    return folder / "grid.toml"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("open-grid")
    spec = make_spec(folder / "spec", PRIORS, ci=True)
    run = run_grid(spec, folder / "out")
    return spec, folder / "out", run


def test_every_cell_is_evaluate_with_its_prior(mixed):
    spec, out, run = mixed
    assert (run.cells, run.ok, run.error) == (12, 12, 0)
    cells = load_results(out)
    assert len(cells) == 12
    for cell in cells:
        dev, ev = spec.parent / f"{cell.system}_dev.npz", spec.parent / f"{cell.system}_eval.npz"
        bootstrap = lidframe.Bootstrap(n_boot=100, seed=cell.seed)
        want = lidframe.evaluate(dev, ev, calibrator=cell.calibrator, prior=cell.prior, bootstrap=bootstrap)
        # and its legal block, as lidframe evaluate --seed SEED computes it (issue 40)
        legal = legal_criteria(want, ScoreSet.load(ev), bootstrap=bootstrap, seed=cell.seed)
        assert cell["summary"] == json_clean({**want.to_dict(), "legal": legal.to_dict()}), cell.name
        assert ("open_set" in cell.summary) == (cell.prior != "uniform")
        with np.load(out / cell.per_trial) as arrays:
            np.testing.assert_array_equal(arrays["lid"], want.lid)
            np.testing.assert_array_equal(arrays["posterior_true"], want.posterior_true)
            if cell.prior == "uniform":
                assert sorted(arrays.files) == ["lid", "posterior_true", "trial_ids", "trial_speakers"]
                assert np.isnan(arrays["lid"][want.is_outsider]).all()
            else:
                np.testing.assert_array_equal(arrays["outsider"], want.is_outsider.astype(np.int8))
                np.testing.assert_array_equal(arrays["membership_bits"], want.membership_bits)
                np.testing.assert_array_equal(arrays["top_posterior"], want.top_posterior)
                assert np.isfinite(arrays["lid"]).all()
    auto = next(c for c in cells if c.prior == "uniform?outside=auto")
    assert auto.summary["open_set"]["outside"] == 15 / 50 and auto.summary["open_set"]["outside_source"] == "auto"


@pytest.mark.parametrize(
    ("priors", "fits_per_task"),
    [(PRIORS, [False, True]), (["uniform"], [False]), (["uniform?outside=0.2", "uniform?outside=auto"], [True])],
    ids=["mixed", "closed", "open"],
)
def test_a_task_fits_once_per_openness_of_its_priors(tmp_path, monkeypatch, priors, fits_per_task):
    import lidframe.core.evaluation as evaluation

    calls = []
    real = evaluation.fit_calibrator

    def counting(dev, calibrator, **kwargs):
        if isinstance(calibrator, str):  # the fit tasks (checking the spec fits an instance once, closed)
            calls.append((calibrator, kwargs.get("outsider_pairs", False)))
        return real(dev, calibrator, **kwargs)

    monkeypatch.setattr(evaluation, "fit_calibrator", counting)
    spec = make_spec(tmp_path / "spec", priors, calibrators=["logistic"])
    run = run_grid(spec, tmp_path / "out", jobs=1)
    assert run.ok == 2 * len(priors) and run.fits == 2  # one task per system
    assert sorted(calls) == sorted(("logistic", openness) for openness in fits_per_task for _ in range(2))


def test_a_cell_id_follows_its_prior_spec_string():
    ids = {p: store.cell_id("s", None, None, "logistic", p, 0) for p in [*PRIORS, "uniform?outside=0.3"]}
    assert len(set(ids.values())) == len(ids)


def test_adding_open_priors_to_a_grid_keeps_its_closed_cells(tmp_path):
    spec = make_spec(tmp_path / "spec", ["uniform"])
    first = run_grid(spec, tmp_path / "out")
    before = {c.cell_id: c.per_trial for c in load_results(tmp_path / "out")}
    spec.write_text(spec.read_text().replace('priors = ["uniform"]', f"priors = {json.dumps(PRIORS)}"))
    second = run_grid(spec, tmp_path / "out")
    assert (first.ok, second.skipped, second.ok) == (4, 4, 8)
    after = {c.cell_id: c.per_trial for c in load_results(tmp_path / "out")}
    assert all(after[cell_id] == per_trial for cell_id, per_trial in before.items())  # the same files


def test_the_table_has_the_open_set_columns_of_the_summaries(mixed):
    _, out, _ = mixed
    write_report(out, figures=False)
    table = pd.read_csv(out / "report" / "table.csv")
    assert set(OPEN_SET_COLUMNS) <= set(table.columns)
    cells = {(c.system, c.calibrator, c.prior): c.summary for c in load_results(out)}
    for row in table.to_dict("records"):
        summary = cells[(row["system"], row["calibrator"], row["prior"])]
        o = summary.get("open_set")
        if o is None:
            assert row["outside"] == 0.0
            assert all(pd.isna(row[k]) for k in OPEN_SET_COLUMNS if k != "outside")
            continue
        expected = {
            "outside": o["outside"],
            "outside_source": o["outside_source"],
            "alid_enrolled": o["enrolled"]["alid"],
            "alid_outsider": o["outsider"]["alid"],
            "membership_enrolled": o["membership_enrolled"]["alid"],
            "misattribution_rate": o["misattribution_rate"],
            "misattribution_threshold": o["misattribution_threshold"],
            "misattribution_rate_at_threshold": o["misattribution_rate_at_threshold"],
        }
        for key, value in expected.items():
            if isinstance(value, str):
                assert row[key] == value
            else:
                assert row[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
        for key in ("alid_outsider", "misattribution_rate"):
            low, high = summary["intervals"][key]
            assert (row[f"{key}_low"], row[f"{key}_high"]) == pytest.approx((low, high), rel=1e-9, abs=1e-12)


@pytest.mark.slow
def test_the_grid_report_page_has_the_open_set_section(mixed):
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from lidframe.report import render_html, report_from_grid
    from tests.report.htmltree import parse

    _, out, _ = mixed
    cells = load_results(out)
    report = report_from_grid(cells, out_dir=out)
    open_cells = [s for s in report.systems if s.open_set is not None]
    assert sorted(s.prior for s in open_cells) == sorted([p for p in PRIORS if p != "uniform"] * 4)
    for system in report.systems:
        cell = next(c for c in cells if system.label.endswith(f"· {c.calibrator} · {c.prior}")
                    and system.name == c.system)  # fmt: skip
        n_trials = cell.summary["n_enrolled_trials"] + (cell.summary["n_outsider_trials"] if system.open_set else 0)
        assert system.lid_bits is not None and system.lid_bits.size == n_trials
        assert (system.open_trials is not None) == (system.open_set is not None)
    root = parse(render_html(report))
    section = root.find("section", id="open-set")
    rows = section.find("table", id="open-set-table").find("tbody").find_all("tr")
    assert len(rows) == 4 * len(open_cells)  # all, enrolled, outsider, membership of each open cell
    assert len(section.find_all("figure")) == 2 + 2  # per system, of its first open cell: LID and membership ROC


def test_a_closed_only_store_reads_as_before(tmp_path):
    """What every grid wrote before the open set: summaries without open_set, four arrays per file."""
    from lidframe.report import report_from_grid
    from lidframe.report.sections.open_set_model import OpenSetHeadline

    spec = make_spec(tmp_path / "spec", ["uniform"], calibrators=["logistic"])
    run_grid(spec, tmp_path / "out")
    cells = load_results(tmp_path / "out")
    assert all("open_set" not in c.summary for c in cells)
    with sqlite3.connect(tmp_path / "out" / "results.sqlite") as connection:
        stored = [json.loads(text) for (text,) in connection.execute("SELECT summary FROM cells")]
    connection.close()
    assert all(OpenSetHeadline.from_summary(s) is None for s in stored)
    table = tidy_table(cells)
    assert not set(OPEN_SET_COLUMNS) & set(table.columns)
    report = report_from_grid(cells, out_dir=tmp_path / "out")
    assert all(s.open_set is None and s.open_trials is None for s in report.systems)
    assert all(s.lid_bits is not None and not np.isnan(s.lid_bits).any() for s in report.systems)
