"""The grid's ``scenarios`` axis: the threat-model ladder, each rung's enrolment and model, keys, freshness, report.

The attacker ``adaptable`` (:mod:`tests.grid.scenario_data`) has a model whose checkpoint
is one number, and ``random`` has none.  Every cell's number is compared with scoring the
dirs that the scenario names -- chosen here, from the scenario's definition -- with the
attacker built here, and evaluating that without the grid.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lidframe import evaluate
from lidframe.cli import main
from lidframe.data.kaldi import read_data_dir
from lidframe.data.simulate import simulate_system
from lidframe.data.utterance import group_by_speaker
from lidframe.errors import InputError
from lidframe.grid.plan import plan_grid
from lidframe.grid.report import load_results, tidy_table, write_report
from lidframe.grid.runner import run_grid
from lidframe.grid.spec import load_grid_spec
from lidframe.registry import parse_spec
from tests.bad_input.conftest import assert_refused
from tests.grid.scenario_data import Adaptable, ladder_system, registered_adaptable, write_dir

LADDER = ("ignorant", "lazy-informed", "semi-informed")
#: Each scenario by the VoicePrivacy definition: (code, enrolment side, the model adapted?).
DEFINITION = {
    "ignorant": ("o-a", "original_enrol", False),
    "lazy-informed": ("a-a", "enrol", False),
    "semi-informed": ("a-a", "enrol", True),
}

SPEC = """[grid]
attackers = ["adaptable", "random?dim=8"]
calibrators = ["logistic"]
{scenarios}

[systems.plain]
dev = "plain_dev.npz"
eval = "plain_eval.npz"

[systems.anon]
dev = {{ enrol = "anon_dev_enrol", trials = ["anon_dev_trials"]{dev_original} }}
eval = {{ enrol = "anon_eval_enrol", trials = ["anon_eval_trials"]{eval_original} }}
{adapted}
"""


def spec_text(
    *,
    scenarios: str = 'scenarios = ["ignorant", "lazy-informed", "semi-informed"]',
    dev_original: str = ', original_enrol = "dev_enrol_original"',
    eval_original: str = ', original_enrol = "eval_enrol_original"',
    adapted: str = '[systems.anon.adapted]\nadaptable = "models/adapted.ckpt"',
) -> str:
    return SPEC.format(scenarios=scenarios, dev_original=dev_original, eval_original=eval_original, adapted=adapted)


@pytest.fixture()
def ladder(tmp_path, monkeypatch):
    """A score-file system and an anonymised data-dir system with its original enrolment and an adapted model."""
    folder = tmp_path / "spec"
    folder.mkdir()
    dirs = ladder_system(folder)
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=6, trials_per_speaker=4)
    dev.save(folder / "plain_dev.npz")
    ev.save(folder / "plain_eval.npz")
    (folder / "models").mkdir()
    (folder / "models" / "adapted.ckpt").write_text("0.9\n")
    (folder / "grid.toml").write_text(spec_text())
    monkeypatch.chdir(tmp_path)
    with registered_adaptable():
        yield folder, dirs


def direct_alid(dirs: dict, scenario: str, attacker_spec: str, checkpoint: Path | None) -> float:
    """A scenario's ALID without the grid: its enrolment dir per :data:`DEFINITION`, the attacker built here."""
    _, enrol_side, adapted = DEFINITION[scenario]
    if attacker_spec == "adaptable":
        attacker = Adaptable(checkpoint=str(checkpoint) if adapted else None)
    else:
        from lidframe.attackers.random import RandomAttacker

        attacker = RandomAttacker(dim=8)
    scored = [
        attacker.score(read_data_dir(dirs[split]["trials"]), group_by_speaker(read_data_dir(dirs[split][enrol_side])))
        for split in ("dev", "eval")
    ]
    return evaluate(*scored, calibrator="logistic").summary["alid"]


def old_cell_id(*components) -> str:
    """A cell id as the store hashes one: SHA-256 of the JSON list ["cell", components...], 32 hex digits."""
    return hashlib.sha256(json.dumps(["cell", *components]).encode()).hexdigest()[:32]


# ------------------------------------------------------------------ planning
def test_each_scenario_scores_its_enrolment_with_its_model(ladder):
    folder, dirs = ladder
    spec = load_grid_spec(folder / "grid.toml")
    assert spec.scenarios == LADDER and spec.n_cells() == 1 + 2 * 3
    plan = plan_grid(spec, folder.parent / "out")
    jobs = {job.target: job for job in plan.score_jobs}
    cells = list(plan.cells)
    assert len(cells) == 7
    plain = [c for c in cells if c.system == "plain"]
    assert [c.scenario for c in plain] == [None]  # a score-file system has no scenario: keyed as before
    assert plain[0].cell_id == old_cell_id("plain", "-", "-", "logistic", "uniform", 0)
    seen = set()
    for task in plan.tasks:
        (cell,) = task.cells
        if cell.system == "plain":
            continue
        seen.add((cell.attacker, cell.scenario))
        assert cell.cell_id == old_cell_id("anon", cell.attacker, "-", "logistic", "uniform", 0, cell.scenario)
        assert cell.name == f"anon/{cell.attacker}/-/{cell.scenario}/logistic/uniform/0"
        _, enrol_side, adapted = DEFINITION[cell.scenario]
        for split, target in (("dev", task.dev), ("eval", task.eval)):
            job = jobs[target]
            assert job.source == {"enrol": str(dirs[split][enrol_side]), "trials": [str(dirs[split]["trials"])]}
            if cell.attacker == "adaptable" and adapted:
                name, params = parse_spec(job.attacker)
                assert name == "adaptable" and params == {"checkpoint": str(folder / "models" / "adapted.ckpt")}
                assert f"attacker file {folder / 'models' / 'adapted.ckpt'}" in cell.inputs
            else:  # the attacker as the grid gives it (random has no model: the same in every scenario)
                assert job.attacker == cell.attacker
        enrol_key = (
            f"eval {'original_enrol' if enrol_side == 'original_enrol' else 'enrol'} {dirs['eval'][enrol_side]} wav.scp"
        )
        assert enrol_key in cell.inputs
    assert seen == {(a, s) for a in ("adaptable", "random?dim=8") for s in LADDER}


def test_lazy_informed_shares_the_score_sets_of_a_grid_without_scenarios(ladder):
    folder, _ = ladder
    with_axis = plan_grid(load_grid_spec(folder / "grid.toml"), folder.parent / "out")
    (folder / "plain.toml").write_text(spec_text(scenarios=""))
    without = plan_grid(load_grid_spec(folder / "plain.toml"), folder.parent / "out")
    lazy = {(c.attacker, t.dev, t.eval) for t in with_axis.tasks for c in t.cells if c.scenario == "lazy-informed"}
    plain = {(c.attacker, t.dev, t.eval) for t in without.tasks for c in t.cells if c.system == "anon"}
    assert lazy == plain
    # per split: adaptable 3 (one per scenario), random 2 (its ignorant one, and one its two a-a scenarios share)
    assert len({j.target for j in with_axis.score_jobs}) == 2 * (3 + 2)


def test_without_the_axis_original_enrol_and_adapted_change_no_cell(ladder):
    """A spec that names the ladder's inputs but not the axis plans the cells of one that does not name them."""
    folder, _ = ladder
    (folder / "named.toml").write_text(spec_text(scenarios=""))
    (folder / "bare.toml").write_text(spec_text(scenarios="", dev_original="", eval_original="", adapted=""))
    named, bare = (plan_grid(load_grid_spec(folder / f"{n}.toml"), folder.parent / "out") for n in ("named", "bare"))
    assert [(c.cell_id, c.name, c.inputs, c.inputs_digest) for c in named.cells] == [
        (c.cell_id, c.name, c.inputs, c.inputs_digest) for c in bare.cells
    ]
    assert [c.scenario for c in named.cells] == [None, None, None]
    assert named.score_jobs == bare.score_jobs


# ------------------------------------------------------------------ running
def test_every_cell_equals_scoring_its_scenario_without_the_grid(ladder):
    folder, dirs = ladder
    run = run_grid(folder / "grid.toml", folder.parent / "out")
    assert run.counts()["ok"] == 7 and run.error == 0
    found = {(c.system, c.attacker, c.scenario): c.summary["alid"] for c in load_results(folder.parent / "out")}
    checkpoint = folder / "models" / "adapted.ckpt"
    for attacker in ("adaptable", "random?dim=8"):
        for scenario in LADDER:
            want = direct_alid(dirs, scenario, attacker, checkpoint)
            assert found[("anon", attacker, scenario)] == pytest.approx(want, abs=1e-12), (attacker, scenario)
    rungs = [found[("anon", "adaptable", s)] for s in LADDER]
    assert len({round(r, 6) for r in rungs}) == 3  # the three rungs score differently here
    assert found[("plain", None, None)] == pytest.approx(
        evaluate(folder / "plain_dev.npz", folder / "plain_eval.npz").summary["alid"], abs=1e-12
    )


def test_a_changed_original_enrolment_or_adapted_checkpoint_recomputes_its_cells(ladder, capsys):
    folder, dirs = ladder
    out = folder.parent / "out"
    assert main(["grid", str(folder / "grid.toml"), "--out", str(out)]) == 0
    capsys.readouterr()
    # the same speakers' original enrolment, other utterances (same size: only the content differs)
    original = dirs["eval"]["original_enrol"]
    for name in ("wav.scp", "utt2spk"):
        text = (original / name).read_text().replace("-orig-enrol-", "-orig-ENROL-")
        (original / f"{name}.new").write_text(text)
        os.replace(original / f"{name}.new", original / name)
    assert main(["grid", str(folder / "grid.toml"), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert (
        "recomputing 2 cells: " in said
        and "eval spec/eval_enrol_original/wav.scp changed; eval spec/eval_enrol_original/utt2spk changed" in said
    )
    assert "5 already stored, 2 computed (2 stored with inputs that changed)" in said  # the two ignorant cells
    (folder / "models" / "adapted.ckpt.new").write_text("0.4\n")
    os.replace(folder / "models" / "adapted.ckpt.new", folder / "models" / "adapted.ckpt")
    assert main(["grid", str(folder / "grid.toml"), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "recomputing 1 cell: attacker file spec/models/adapted.ckpt changed" in said
    assert "6 already stored, 1 computed" in said  # adaptable's semi-informed cell only
    resumed = {(c.attacker, c.scenario): c.summary["alid"] for c in load_results(out) if c.system == "anon"}
    assert main(["grid", str(folder / "grid.toml"), "--out", str(folder.parent / "fresh")]) == 0
    fresh = {
        (c.attacker, c.scenario): c.summary["alid"] for c in load_results(folder.parent / "fresh") if c.system == "anon"
    }
    assert resumed == fresh
    for (attacker, scenario), alid in resumed.items():
        assert alid == pytest.approx(
            direct_alid(dirs, scenario, attacker, folder / "models" / "adapted.ckpt"), abs=1e-12
        )


# ------------------------------------------------------------------ the report
def test_the_report_has_a_scenario_column_and_states_each_scenario(ladder):
    folder, _ = ladder
    out = folder.parent / "out"
    run_grid(folder / "grid.toml", out)
    write_report(out, figures=False)
    table = pd.read_csv(out / "report" / "table.csv")
    assert list(table.columns[:7]) == ["system", "attacker", "mechanism", "scenario", "calibrator", "prior", "seed"]
    assert sorted(zip(table["system"], table["scenario"])) == sorted(
        [("plain", "-")] + [("anon", s) for s in LADDER for _ in range(2)]
    )
    summary = (out / "report" / "summary.md").read_text()
    rows = [line for line in summary.splitlines() if line.startswith("| ")]
    assert rows[0] == "| scenario | code | enrolment | trials | model |"
    for row, name in zip(rows[1:4], LADDER):
        cells = [c.strip() for c in row.strip("|").split("|")]
        code, side, adapted = DEFINITION[name]
        assert cells[:2] == [name, code]
        assert cells[2].startswith("original speech" if side == "original_enrol" else "anonymised speech")
        assert cells[3].startswith("anonymised speech")
        assert cells[4].startswith("adapted on anonymised training speech" if adapted else "trained on clear speech")
    assert "## attacker `adaptable`, scenario `ignorant` (o-a), calibrator `logistic`, prior `uniform`" in summary
    assert "## attacker `-`, calibrator `logistic`, prior `uniform`" in summary  # the score-file system: no scenario


@pytest.mark.slow
def test_the_audit_page_names_each_cell_by_its_scenario_and_states_the_ladder(ladder):
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    folder, _ = ladder
    out = folder.parent / "out"
    run_grid(folder / "grid.toml", out)
    write_report(out)
    page = (out / "report" / "report.html").read_text()
    for name in LADDER:
        code = DEFINITION[name][0]
        assert f"Scenario {name} ({code}): enrolment " in page
        assert f"anon ({name}) / adaptable" in page
    assert "model adapted on anonymised training speech" in page and "model trained on clear speech" in page


def test_a_store_of_the_layout_before_scenarios_is_read_and_migrated_without_recomputing(tmp_path, capsys):
    """Layout 3 (no scenario column): the report reads it; the next grid run adds the column and reuses every cell."""
    import sqlite3

    folder = tmp_path / "spec"
    folder.mkdir()
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=6, trials_per_speaker=4)
    dev.save(folder / "s_dev.npz")
    ev.save(folder / "s_eval.npz")
    (folder / "grid.toml").write_text(
        '[grid]\ncalibrators = ["logistic", "identity"]\n[systems.s]\ndev = "s_dev.npz"\neval = "s_eval.npz"\n'
    )
    out = tmp_path / "out"
    run_grid(folder / "grid.toml", out)
    before = {c.cell_id: c["summary"] for c in load_results(out)}
    connection = sqlite3.connect(out / "results.sqlite")  # as layout 3 wrote it
    columns = (
        "cell_id, system, attacker, mechanism, calibrator, prior, seed, spec_digest, status, error, summary, "
        "per_trial, seconds, finished_at, inputs_digest, inputs, per_trial_sha256"
    )
    connection.execute("ALTER TABLE cells RENAME TO newer")
    connection.execute(
        "CREATE TABLE cells (cell_id TEXT PRIMARY KEY, system TEXT NOT NULL, attacker TEXT NOT NULL, "
        "mechanism TEXT NOT NULL, calibrator TEXT NOT NULL, prior TEXT NOT NULL, seed INTEGER NOT NULL, "
        "spec_digest TEXT, status TEXT, error TEXT, summary TEXT, per_trial TEXT, seconds REAL, finished_at REAL, "
        "inputs_digest TEXT, inputs TEXT, per_trial_sha256 TEXT, UNIQUE (system, attacker, mechanism, calibrator, "
        "prior, seed))"
    )
    connection.execute(f"INSERT INTO cells SELECT {columns} FROM newer")
    connection.execute("DROP TABLE newer")
    connection.execute("PRAGMA user_version = 3")
    connection.commit()
    connection.close()
    assert main(["report", str(out), "--no-figures"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert "scenario" not in pd.read_csv(out / "report" / "table.csv").columns
    assert main(["grid", str(folder / "grid.toml"), "--out", str(out)]) == 0
    assert "2 cells, 2 already stored, 0 computed" in capsys.readouterr().out
    with sqlite3.connect(out / "results.sqlite") as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 4
        assert [r[0] for r in connection.execute("SELECT DISTINCT scenario FROM cells")] == ["-"]
    assert {c.cell_id: c["summary"] for c in load_results(out)} == before


def test_tidy_table_of_cells_without_scenarios_has_no_scenario_column(ladder):
    folder, _ = ladder
    (folder / "plain.toml").write_text(spec_text(scenarios=""))
    run_grid(folder / "plain.toml", folder.parent / "out")
    frame = tidy_table(load_results(folder.parent / "out"))
    assert "scenario" not in frame.columns
    assert list(frame.columns[:6]) == ["system", "attacker", "mechanism", "calibrator", "prior", "seed"]


# ------------------------------------------------------------------ spec errors
SPEC_ERRORS = {
    "one name, not a list": (
        {"scenarios": 'scenarios = "ignorant"'},
        ["[grid.scenarios]", "even of one entry", 'write ["ignorant"] for one'],
    ),
    "unknown name": (
        {"scenarios": 'scenarios = ["ignorant", "informed"]'},
        ["[grid.scenarios[1]]", "unknown scenario 'informed'", "ignorant, lazy-informed, semi-informed"],
    ),
    "empty": ({"scenarios": "scenarios = []"}, ["[grid.scenarios]", "is empty"]),
    "repeated": ({"scenarios": 'scenarios = ["ignorant", "ignorant"]'}, ["[grid.scenarios]", "repeated"]),
    "ignorant without original_enrol": (
        {"dev_original": ""},
        ["[systems.anon.dev.original_enrol]", "is missing", "ignorant", "original"],
    ),
    "semi-informed without an adapted checkpoint": (
        {"adapted": ""},
        ["[systems.anon.adapted.adaptable]", "is missing", "semi-informed", "'adaptable'"],
    ),
    "adapted for an attacker not in the grid": (
        {"adapted": '[systems.anon.adapted]\nadaptable = "models/adapted.ckpt"\nghost = "models/adapted.ckpt"'},
        ["[systems.anon.adapted.ghost]", "no attacker named 'ghost'"],
    ),
    "adapted for an attacker of no model": (
        {"adapted": '[systems.anon.adapted]\nadaptable = "models/adapted.ckpt"\nrandom = "models/adapted.ckpt"'},
        ["[systems.anon.adapted.random]", "takes no checkpoint"],
    ),
    "adapted checkpoint missing": (
        {"adapted": '[systems.anon.adapted]\nadaptable = "models/gone.ckpt"'},
        ["[systems.anon.adapted.adaptable]", "gone.ckpt", "no such checkpoint"],
    ),
    "adapted not a table": (
        {"adapted": 'adapted = "models/adapted.ckpt"'},
        ["[systems.anon.adapted]", "must be a table of attacker name = checkpoint path"],
    ),
    "original_enrol not a data dir": (
        {"eval_original": ', original_enrol = "nowhere"'},
        ["[systems.anon.eval.original_enrol]", "no such data directory"],
    ),
    "original_enrol of other speakers": (
        {"eval_original": ', original_enrol = "dev_enrol_original"'},
        ["[systems.anon.eval.original_enrol]", "must enrol the speakers of enrol", "devspk0"],
    ),
    "an unknown key beside enrol": (
        {"eval_original": ', clear_enrol = "eval_enrol_original"'},
        ["[systems.anon.eval]", "original_enrol", "clear_enrol"],
    ),
}


@pytest.mark.parametrize("case", list(SPEC_ERRORS))
def test_a_spec_error_of_the_ladder_names_its_key_in_one_line(ladder, case, capsys):
    folder, _ = ladder
    parts, expect = SPEC_ERRORS[case]
    (folder / "grid.toml").write_text(spec_text(**parts))
    out = folder.parent / "out"
    line = assert_refused(["grid", folder / "grid.toml", "--out", out], capsys, expect=expect, watch=[folder])
    assert line.startswith(f"lidframe: error: {folder / 'grid.toml'}: [")
    assert not out.exists()


def test_scenarios_need_a_data_dir_system(tmp_path):
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=6, trials_per_speaker=4)
    dev.save(tmp_path / "s_dev.npz")
    ev.save(tmp_path / "s_eval.npz")
    (tmp_path / "grid.toml").write_text(
        '[grid]\nscenarios = ["ignorant"]\n[systems.s]\ndev = "s_dev.npz"\neval = "s_eval.npz"\n'
    )
    with pytest.raises(InputError, match=r"\[grid\.scenarios\] scenarios say what an attacker enrols"):
        load_grid_spec(tmp_path / "grid.toml")


def test_adapted_belongs_to_data_dir_systems(tmp_path):
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=6, trials_per_speaker=4)
    dev.save(tmp_path / "s_dev.npz")
    ev.save(tmp_path / "s_eval.npz")
    (tmp_path / "m.ckpt").write_text("1\n")
    (tmp_path / "grid.toml").write_text(
        '[systems.s]\ndev = "s_dev.npz"\neval = "s_eval.npz"\n[systems.s.adapted]\nrandom = "m.ckpt"\n'
    )
    with pytest.raises(InputError, match=r"\[systems\.s\.adapted\] applies to data-dir systems"):
        load_grid_spec(tmp_path / "grid.toml")


def test_semi_informed_with_attackers_of_no_model_needs_no_adapted_table(tmp_path):
    """random and precomputed have no checkpoint: semi-informed scores them as they are."""
    dirs = ladder_system(tmp_path)
    ids = [u.utt_id for split in dirs.values() for d in split.values() for u in read_data_dir(d)]
    np.savez(tmp_path / "emb.npz", utt_ids=np.array(ids), vectors=np.random.default_rng(0).normal(size=(len(ids), 4)))
    (tmp_path / "grid.toml").write_text(
        f'[grid]\nattackers = ["random?dim=8", "precomputed?path={tmp_path / "emb.npz"}"]\n'
        'scenarios = ["lazy-informed", "semi-informed"]\n'
        '[systems.anon]\ndev = { enrol = "anon_dev_enrol", trials = ["anon_dev_trials"] }\n'
        'eval = { enrol = "anon_eval_enrol", trials = ["anon_eval_trials"] }\n'
    )
    plan = plan_grid(load_grid_spec(tmp_path / "grid.toml"), tmp_path / "out")
    by_scenario: dict = {}
    for task in plan.tasks:
        for cell in task.cells:
            by_scenario.setdefault(cell.attacker, {})[cell.scenario] = (task.dev, task.eval, cell.cell_id)
    for found in by_scenario.values():  # the same score sets, two cells
        assert found["lazy-informed"][:2] == found["semi-informed"][:2]
        assert found["lazy-informed"][2] != found["semi-informed"][2]


def test_write_dir_helper_and_speakers(tmp_path):
    """The fixture's original enrolment holds the anonymised enrolment's speakers (what validation requires)."""
    dirs = ladder_system(tmp_path)
    for split in ("dev", "eval"):
        anonymised = {u.speaker for u in read_data_dir(dirs[split]["enrol"])}
        assert anonymised == {u.speaker for u in read_data_dir(dirs[split]["original_enrol"])}
    assert write_dir(tmp_path / "x", [("u", "s")]).is_dir()


def test_a_grid_run_from_a_relative_spec_path_is_fresh_for_its_report(ladder, capsys, monkeypatch):
    """``lidframe grid grid.toml`` keys its data dirs (enrol, original_enrol, adapted) as the report that plans it again.

    ``OUT/grid.json`` records the spec resolved; a spec whose folders were keyed relative
    to the working directory would make every data-dir cell look stale to the report.
    """
    folder, _ = ladder
    monkeypatch.chdir(folder)
    assert main(["grid", "grid.toml", "--out", "out"]) == 0
    capsys.readouterr()
    assert main(["report", "out", "--no-figures"]) == 0
    captured = capsys.readouterr()
    assert "STALE" not in captured.err and "STALE" not in (folder / "out" / "report" / "summary.md").read_text()
    assert main(["grid", str(folder / "grid.toml"), "--out", str(folder / "out")]) == 0
    assert "7 cells, 7 already stored, 0 computed" in capsys.readouterr().out


@pytest.mark.slow
def test_the_audit_page_of_a_grid_with_scenarios_keeps_the_ladder_and_counts_its_systems(ladder):
    """The ladder section, each rung's cell computed without the grid; the header: 2 systems (plain, anon), 7 cells.

    The grid has a second calibrator: the ladder holds the cells of the page's first
    calibrator and prior (isotonic before logistic), and says which.
    """
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from lidframe.report import render_html, report_from_grid
    from tests.report.formatting import sort_text
    from tests.report.htmltree import parse

    folder, dirs = ladder
    (folder / "grid.toml").write_text(
        spec_text().replace('calibrators = ["logistic"]', 'calibrators = ["logistic", "isotonic"]')
    )
    out = folder.parent / "out"
    run_grid(folder / "grid.toml", out)
    report = report_from_grid(load_results(out), out_dir=out)
    root = parse(render_html(report))
    meta = root.find("p", **{"class": "meta"}).text()
    assert "· 2 systems, 14 cells ·" in meta  # plain and anon: a rung is a row of its system, as an attacker is
    section = root.find("section", id="ladder")
    table = section.find("table", id="ladder-table")
    assert table is not None, section.text()
    assert "calibrator isotonic, prior uniform" in table.find("caption").text()
    second = table.find("thead").find_all("tr")[1]
    columns = [(th.attrs["data-attacker"], th.attrs["data-rung"]) for th in second.find_all("th")]
    assert columns == [(a, s) for a in ("adaptable", "random?dim=8") for s in LADDER]
    (row,) = table.find("tbody").find_all("tr")  # the anonymised system; the score-file system has no rung
    assert row.attrs["data-system"] == "anon"
    checkpoint = folder / "models" / "adapted.ckpt"
    for cell, (attacker, scenario) in zip(row.find_all("td"), columns):
        _, enrol_side, adapted = DEFINITION[scenario]
        scorer = Adaptable(checkpoint=str(checkpoint) if adapted else None) if attacker == "adaptable" else None
        if scorer is None:
            from lidframe.attackers.random import RandomAttacker

            scorer = RandomAttacker(dim=8)
        scored = [
            scorer.score(read_data_dir(dirs[s]["trials"]), group_by_speaker(read_data_dir(dirs[s][enrol_side])))
            for s in ("dev", "eval")
        ]
        want = evaluate(*scored, calibrator="isotonic").summary.alid
        alid = cell.find("span", **{"data-metric": "alid"})
        assert float(alid.attrs["data-sort"]) == pytest.approx(want, abs=1e-12), (attacker, scenario)
        assert alid.attrs["data-sort"] != sort_text(None)
    assert section.find("figure") is not None  # ALID up the ladder
