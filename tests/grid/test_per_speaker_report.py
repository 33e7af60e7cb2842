"""The grid's report.html has the per-speaker section of the other pages: per system, its speakers with intervals.

``lidframe report GRID_DIR`` gives each system's first cell the table of
:func:`lidframe.analyses.per_speaker.per_speaker` (the one ``lidframe evaluate --report``
and the demos show), rebuilt from the cell's per-trial file
(:func:`lidframe.grid.report.cell_per_speaker`).  Checked against ``per_speaker`` of
``lidframe.evaluate`` run here on the same score sets, calibrator, prior and interval
settings, against a group-by of the per-trial LIDs done here, in the closed and the open
set, and on the page.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import lidframe
from lidframe.analyses.per_speaker import per_speaker
from lidframe.grid.report import cell_per_speaker, load_results, with_per_speaker, write_report
from lidframe.grid.runner import run_grid
from lidframe.stats.bootstrap import Bootstrap
from tests.grid.test_open_set_grid import make_spec
from tests.report.htmltree import parse

pytest.importorskip("matplotlib")

#: The fields compared row for row (rank-1 is not in a grid's per-trial file).
COMPARED = ("n_trials", "alid", "lid_max", "pdr", "lid_ceiling", "alid_low", "alid_high", "pdr_low", "pdr_high")


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    folder = tmp_path_factory.mktemp("per-speaker-grid")
    spec = make_spec(
        folder / "spec", ["uniform", "watchlist?ids=eval-spk000,eval-spk001&weight=4", "uniform?outside=0.2"], ci=True
    )
    run_grid(spec, folder / "out")
    return folder / "spec", folder / "out"


def _reference(spec_folder, cell, bootstrap):
    """per_speaker of lidframe.evaluate on the cell's own score sets, calibrator and prior."""
    result = lidframe.evaluate(
        spec_folder / f"{cell.system}_dev.npz",
        spec_folder / f"{cell.system}_eval.npz",
        calibrator=cell.calibrator,
        prior=cell.prior,
    )
    return result, per_speaker(result, bootstrap=bootstrap)


@pytest.mark.parametrize("prior", ["uniform", "watchlist?ids=eval-spk000,eval-spk001&weight=4", "uniform?outside=0.2"])
def test_a_cells_table_is_per_speaker_of_its_evaluation(grid, prior):
    spec_folder, out = grid
    cells = [c for c in load_results(out) if c.prior == prior and c.calibrator == "logistic"]
    assert cells
    boot = Bootstrap(n_boot=100, seed=5)
    for cell in cells:
        table = cell_per_speaker(cell, out, bootstrap=boot)
        result, want = _reference(spec_folder, cell, boot)
        speakers = [r for r in want.rows if r.n_trials > 0]
        assert [r.speaker for r in table.rows] == [r.speaker for r in speakers]
        for got, expected in zip(table.rows, speakers):
            for key in COMPARED:
                assert got[key] == pytest.approx(expected[key], rel=1e-9, abs=1e-12, nan_ok=True), (got.speaker, key)
            assert math.isnan(got.rank1_rate)  # not in the file: not computed, rather than 0
            if prior.endswith("outside=0.2"):
                for key in ("outsider", "membership_bits", "misattribution_rate"):
                    assert got[key] == pytest.approx(expected[key], rel=1e-9, nan_ok=True), (got.speaker, key)
        assert table.n_enrolled == want.n_enrolled and table.log2_n == pytest.approx(want.log2_n)
        assert table.n_speakers_without_trials == want.n_speakers_without_trials
        assert table.alid == pytest.approx(result.summary.alid, rel=1e-12)
        # and against a group-by done here on the eval trials' LIDs
        frame = pd.DataFrame({"speaker": result.trial_speakers, "lid": result.lid})
        frame = frame[~np.asarray(result.is_outsider)] if not prior.endswith("outside=0.2") else frame
        grouped = frame.groupby("speaker")["lid"].agg(["mean", "max", "size", lambda v: float(np.mean(v > 0))])
        for row in table.rows:
            mean, top, size, share = grouped.loc[row.speaker]
            assert (row.alid, row.lid_max, row.n_trials, row.pdr) == pytest.approx((mean, top, size, share), rel=1e-12)


def test_the_tables_intervals_follow_the_grids_bootstrap_settings(grid):
    _, out = grid
    cell = load_results(out)[0]
    table = cell_per_speaker(cell, out)
    assert table.bootstrap["n_boot"] == 100 and table.bootstrap["seed"] == cell.seed  # [grid.bootstrap] n_boot = 100
    assert all(math.isfinite(r.alid_low) and r.alid_low <= r.alid <= r.alid_high for r in table.rows if r.n_trials > 1)


@pytest.mark.slow
def test_every_system_section_of_the_grid_page_has_its_per_speaker_table(grid):
    """lidframe report: per system the table of its first cell, speakers most disclosed first, with intervals."""
    _, out = grid
    write_report(out)
    page = parse((out / "report" / "report.html").read_text(encoding="utf-8"))
    sections = [s for s in page.find_all("section") if "system" in (s.attrs.get("class") or "").split()]
    assert len(sections) == 2  # weak and strong
    for section in sections:
        headings = [h.text() for h in section.find_all("h3")]
        assert "Per speaker" in headings, headings
        tables = [t for t in section.find_all("table") if t.attrs.get("id", "").startswith("per-speaker-")]
        assert len(tables) == 1
        rows = tables[0].find("tbody").find_all("tr")
        alids = [float(r.find_all("td")[2].attrs["data-sort"]) for r in rows]
        assert alids == sorted(alids, reverse=True) and len(rows) >= 8
        assert all("[" in r.find_all("td")[2].text() for r in rows)  # each ALID with its interval
        figures = [f for f in section.find_all("figure") if "ALID per speaker" in f.find("figcaption").text()]
        assert len(figures) == 1


def test_with_per_speaker_leaves_the_report_it_is_given(grid):
    from lidframe.report import report_from_grid

    _, out = grid
    cells = load_results(out)
    report = report_from_grid(cells, out_dir=out)
    added = with_per_speaker(report, cells, out, bootstrap=Bootstrap(n_boot=100))
    assert all(s.per_speaker is None for s in report.systems)
    named = [s for s in added.systems if s.per_speaker is not None]
    assert [s.name for s in named] == list(dict.fromkeys(s.name for s in report.systems))
    assert [s.label for s in named] == [next(c.label for c in report.systems if c.name == s.name) for s in named]
