"""The law's criteria in a grid: each cell's legal block, its tidy columns, the grid page and ``[grid] legal``.

pi_link is checked against what the test computes from the stored eval scores by the
closed form -- for trial i with m_i enrolled speakers scored strictly higher than the true
one, P_i(link at N') = C(N-1-m_i, N'-1) / C(N-1, N'-1) -- on scores rounded so that ties
occur (they count for the attacker); pi_link(N) must equal the table's rank-1 column
exactly.  pi_sing is compared with :func:`lidframe.analyses.legal.singling_out` called on
the same set with the cell's seed: that is a wiring check only (the cell must hold what
the analysis computes, drawn once per task and seed), not an independent computation of
pi_sing, which tests/analyses checks against the peer package and brute force.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from lidframe.analyses.legal import linkability_curve, singling_out
from lidframe.data.scoreset import ScoreSet
from lidframe.data.simulate import simulate_system
from lidframe.grid.freshness import check_freshness
from lidframe.grid.report import load_results, tidy_table, write_report
from lidframe.grid.report.columns import LEGAL_COLUMNS
from lidframe.grid.runner import run_grid
from lidframe.stats.bootstrap import Bootstrap

N_BOOT = 100
SEEDS = (0, 3)
SPEC = """
[grid]
calibrators = ["logistic", "identity"]
priors = ["uniform", "watchlist?ids=eval-spk000&weight=5"]
seeds = [0, 3]
{legal}
[grid.bootstrap]
n_boot = 100

[systems.tied]
dev = "tied_dev.npz"
eval = "tied_eval.npz"

[systems.once]
dev = "once_dev.npz"
eval = "once_eval.npz"
"""


def write_spec(folder: Path, legal: str = "") -> Path:
    """Two systems: ``tied`` (eval scores rounded to 0.1, so ties occur; 2 outsiders), ``once`` (1 trial a speaker)."""
    folder.mkdir(parents=True, exist_ok=True)
    dev, ev = simulate_system(leakage=0.5, seed=4, n_enrolled=8, trials_per_speaker=4, n_outsiders=2)
    dev.save(folder / "tied_dev.npz")
    ScoreSet(np.round(ev.scores, 1), ev.enrolled, ev.trial_speakers, ev.trial_ids).save(folder / "tied_eval.npz")
    dev, ev = simulate_system(leakage=0.5, seed=5, n_enrolled=8, trials_per_speaker=1)
    dev.save(folder / "once_dev.npz")
    ev.save(folder / "once_eval.npz")
    (folder / "grid.toml").write_text(SPEC.format(legal=legal))
    return folder / "grid.toml"


def closed_form(eval_file: Path, n_prime: int) -> float:
    """pi_link(N') of the raw eval scores by the closed form, ties for the attacker, outsider trials left out."""
    scores = ScoreSet.load(eval_file)
    n = scores.n_enrolled
    values = []
    for row, true in zip(scores.scores, scores.true_index):
        if true < 0:
            continue
        m = int((row > row[true]).sum())
        values.append(math.comb(n - 1 - m, n_prime - 1) / math.comb(n - 1, n_prime - 1))
    return float(np.mean(values))


@pytest.fixture(scope="module")
def legal_grid(tmp_path_factory):
    """The grid run once with the legal criteria on (the default), singling out's draws counted."""
    import lidframe.analyses.legal_criteria as legal_criteria

    folder = tmp_path_factory.mktemp("legal")
    spec = write_spec(folder / "spec")
    calls = []
    original = legal_criteria.singling_out

    def counted(*args, **kwargs):
        calls.append(kwargs["seed"])
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(legal_criteria, "singling_out", counted)
        run = run_grid(spec, folder / "out")
    assert run.ok == 16
    return spec, folder / "out", calls


def test_each_cell_holds_pi_link_by_the_closed_form_and_rank_1_exactly(legal_grid):
    spec, out, _ = legal_grid
    table = tidy_table(load_results(out))
    assert {*LEGAL_COLUMNS} <= set(table.columns)
    for system in ("tied", "once"):
        rows = table[table["system"] == system]
        eval_file = spec.parent / f"{system}_eval.npz"
        n = ScoreSet.load(eval_file).n_enrolled
        assert (rows["pi_link_n"] == rows["rank1_rate"]).all()  # exactly: pi_link(N) is the rank-1 rate
        assert rows["pi_link_2"].to_numpy() == pytest.approx(closed_form(eval_file, 2), abs=1e-12)
        assert rows["pi_link_n"].to_numpy() == pytest.approx(closed_form(eval_file, n), abs=1e-12)
        assert (rows["pi_link_n_chance"] == 1 / n).all()
        for column in ("pi_link_2", "pi_link_n"):  # a bootstrap interval holding its estimate
            assert (rows[f"{column}_low"] <= rows[column]).all() and (rows[column] <= rows[f"{column}_high"]).all()


def test_ties_count_for_the_attacker(legal_grid):
    """The rounded scores tie the true speaker with others: counting ties against the attacker gives less."""
    spec, out, _ = legal_grid
    table = tidy_table(load_results(out))
    scores = ScoreSet.load(spec.parent / "tied_eval.npz")
    closed = scores.true_index >= 0
    true = scores.scores[closed, scores.true_index[closed]]
    ties = (scores.scores[closed] == true[:, None]).sum(axis=1) - 1
    assert ties.sum() > 0, "the rounded set must have ties"
    at_least = (scores.scores[closed] >= true[:, None]).sum(axis=1) - 1
    pessimistic = float(np.mean(1 - at_least / (scores.n_enrolled - 1)))
    assert (table.loc[table["system"] == "tied", "pi_link_2"] > pessimistic + 1e-9).all()


def test_singling_out_is_the_analysis_with_the_cells_seed_drawn_once_per_task_and_seed(legal_grid):
    spec, out, calls = legal_grid
    assert sorted(calls) == sorted(SEEDS * 4)  # 2 systems x 2 calibrators (tasks), each once per seed: not 16
    table = tidy_table(load_results(out))
    tied = table[table["system"] == "tied"]
    for seed in SEEDS:
        bootstrap = Bootstrap(n_boot=N_BOOT, seed=seed)
        want = singling_out(spec.parent / "tied_eval.npz", seed=seed, bootstrap=bootstrap)
        rows = tied[tied["seed"] == seed]
        assert len(rows) == 4 and want.pi_sing == pytest.approx(rows["pi_sing"].to_numpy(), abs=0)
        assert (rows["pi_sing_low"] == want.low).all() and (rows["pi_sing_high"] == want.high).all()
        curve = linkability_curve(spec.parent / "tied_eval.npz", [2], bootstrap=bootstrap)
        assert (rows["pi_link_2_low"] == curve.points[0].low).all()  # the cell's bootstrap, seeded by its seed
        assert (rows["pi_link_2_high"] == curve.points[0].high).all()
    assert tied["legal_absent"].eq("").all()


def test_a_criterion_the_set_does_not_allow_is_empty_with_its_reason(legal_grid):
    spec, out, _ = legal_grid
    table = tidy_table(load_results(out))
    once = table[table["system"] == "once"]
    assert once["pi_sing"].isna().all() and once["pi_sing_low"].isna().all()
    assert once["pi_link_2"].notna().all()
    for cell in load_results(out):
        assert cell.legal is not None
        assert set(cell.legal.absent) == ({"singling_out"} if cell.system == "once" else set())
    reason = (
        f"singling_out: {spec.parent / 'once_eval.npz'} (eval): singling out needs at least 2 trials of every speaker"
    )
    assert once["legal_absent"].str.startswith(reason).all()


def test_the_grid_page_shows_the_three_criteria_of_every_cell_with_chance(legal_grid):
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from lidframe.report import render_html, report_from_grid
    from tests.report.htmltree import parse

    _, out, _ = legal_grid
    cells = [cell for cell in load_results(out) if cell.seed == 3]  # 8 cells: a page that renders quickly
    table = tidy_table(cells).set_index(["system", "calibrator", "prior", "seed"])
    report = report_from_grid(cells, out_dir=out)
    section = parse(render_html(report))  # the headline rows' cards in the summary, the others' in the appendix
    for system in report.systems:
        row = table.loc[(system.name, system.calibrator, system.prior, system.seed)]
        cards = section.find("div", data_system=system.label)
        items = {d.attrs["data-metric"]: d for d in cards.find_all("div") if "data-metric" in d.attrs}
        assert float(items["pi_link_2"].attrs["data-sort"]) == row["pi_link_2"]
        assert float(items["pi_link_2"].attrs["data-chance"]) == 0.5
        assert float(items["pi_link_n"].attrs["data-sort"]) == row["pi_link_n"] == row["rank1_rate"]
        assert float(items["pi_link_n"].attrs["data-chance"]) == row["pi_link_n_chance"]
        if system.name == "tied":
            assert float(items["pi_sing"].attrs["data-sort"]) == row["pi_sing"]
            assert float(items["pi_sing"].attrs["data-chance"]) == pytest.approx(math.exp(-1), abs=1e-15)
        else:  # the card says why, in the words of the table's legal_absent
            absent = cards.find("div", data_criterion="singling-out").find("p", **{"class": "criterion-absent"})
            assert absent.text() == f"Not computed: {row['legal_absent'].removeprefix('singling_out: ')}"


def test_legal_false_computes_no_block_and_the_table_has_no_columns(tmp_path):
    spec = write_spec(tmp_path / "spec", legal="legal = false")
    assert run_grid(spec, tmp_path / "out").ok == 16
    cells = load_results(tmp_path / "out")
    assert all(cell.legal is None and "legal" not in cell["summary"] for cell in cells)
    assert not {*LEGAL_COLUMNS} & set(tidy_table(cells).columns)


def stored_rows(out: Path) -> dict[str, dict]:
    with sqlite3.connect(out / "results.sqlite") as connection:
        connection.row_factory = sqlite3.Row
        found = {r["cell_id"]: dict(r) for r in connection.execute("SELECT * FROM cells")}
    connection.close()
    return found


def test_switching_legal_recomputes_every_cell_and_says_why(tmp_path):
    spec = write_spec(tmp_path / "spec")
    out = tmp_path / "out"
    assert run_grid(spec, out).ok == 16
    assert run_grid(spec, out).skipped == 16
    spec.write_text(SPEC.format(legal="legal = false"))
    said: list[str] = []
    off = run_grid(spec, out, log=said.append)
    assert (off.recomputed, off.skipped) == (16, 0)
    assert any("recomputing 16 cells: [grid] legal changed (true -> false)" in line for line in said), said
    assert all("legal" not in json.loads(r["summary"]) for r in stored_rows(out).values())
    spec.write_text(SPEC.format(legal="legal = true"))  # as the default: the same key
    on = run_grid(spec, out, log=said.append)
    assert (on.recomputed, on.skipped) == (16, 0)
    assert all("legal" in json.loads(r["summary"]) for r in stored_rows(out).values())


def independent_digest(inputs: dict) -> str:
    """A cell's inputs digest, by the recipe every lidframe wrote: SHA-256 of the sorted (key, digest) JSON, NUL-ended."""
    part = json.dumps(sorted((key, value[1]) for key, value in inputs.items()), sort_keys=True)
    return hashlib.sha256(part.encode() + b"\0").hexdigest()[:32]


def test_a_cell_stored_before_the_legal_block_is_stale_and_recomputed_never_reused(tmp_path):
    """A row as a lidframe without ``[grid] legal`` wrote it (no block, no such input) is not taken as current."""
    spec = write_spec(tmp_path / "spec")
    out = tmp_path / "out"
    assert run_grid(spec, out).ok == 16
    rows = stored_rows(out)
    old_id = next(key for key, row in rows.items() if row["system"] == "tied")
    row = rows[old_id]
    summary = {k: v for k, v in json.loads(row["summary"]).items() if k != "legal"}
    inputs = {k: v for k, v in json.loads(row["inputs"]).items() if k != "setting legal"}
    with sqlite3.connect(out / "results.sqlite") as connection:
        connection.execute(
            "UPDATE cells SET summary = ?, inputs = ?, inputs_digest = ? WHERE cell_id = ?",
            (json.dumps(summary), json.dumps(inputs), independent_digest(inputs), old_id),
        )
    connection.close()
    # the report flags it and keeps its legal columns empty, saying why
    freshness = check_freshness(out)
    assert freshness.unchecked is None and freshness.stale == {old_id: "[grid] legal is a new input"}
    table = tidy_table(load_results(out))
    old = table[table["legal_absent"].str.startswith("not computed: the cell was stored without the legal block")]
    assert len(old) == 1 and old[["pi_link_2", "pi_link_n", "pi_sing"]].isna().all(axis=None)
    write_report(out, figures=False, freshness=freshness)
    assert "[grid] legal is a new input" in (out / "report" / "summary.md").read_text()
    # the grid recomputes it: the block is back, equal to the other cells of its task and seed
    said: list[str] = []
    again = run_grid(spec, out, log=said.append)
    assert (again.recomputed, again.skipped) == (1, 15)
    assert any("recomputing 1 cell: [grid] legal is a new input" in line for line in said), said
    assert json.loads(stored_rows(out)[old_id]["summary"])["legal"] == json.loads(row["summary"])["legal"]


def test_legal_criteria_uses_the_singling_out_it_is_given():
    """What the grid relies on: a singling out computed once is the one in every block it is given to."""
    from lidframe import evaluate
    from lidframe.analyses.legal_criteria import legal_criteria, singling_out_criterion

    dev, ev = simulate_system(leakage=0.4, seed=6, n_enrolled=6, trials_per_speaker=3)
    result = evaluate(dev, ev)
    given = singling_out_criterion(ev, bootstrap=None, seed=2)
    block = legal_criteria(result, ev, bootstrap=None, seed=2, singled_out=given)
    assert block.singling_out is given[0]
    assert block.to_dict() == legal_criteria(result, ev, bootstrap=None, seed=2).to_dict()
    absent = legal_criteria(result, ev, bootstrap=None, seed=2, singled_out=(None, "the reason"))
    assert absent.singling_out is None and absent.absent == {"singling_out": "the reason"}
