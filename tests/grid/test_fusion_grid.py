"""Fusion in the grid as an attacker (``fusion?of=NAME,NAME`` in ``[grid] attackers``, issue 42).

Two attackers score the same data dirs: ``precomputed`` (embeddings written here, the
speaker's identity vector plus noise) and ``adaptable`` (:mod:`tests.grid.scenario_data`,
its own independent noise).  Every fused number is compared with an independent path:
the members scored here with the attackers built here (not the grid's cache), then
``lidframe fuse`` and ``lidframe evaluate`` on those files, or
:func:`~lidframe.core.fusion.fit_fusion` / :func:`~lidframe.core.fusion.apply_fusion`
and :func:`lidframe.evaluate`.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import lidframe
from lidframe.cli import main
from lidframe.core.fusion import apply_fusion, fit_fusion
from lidframe.data.fileio import file_sha256
from lidframe.data.kaldi import read_data_dir
from lidframe.data.provenance import read_provenance
from lidframe.data.scoreset import ScoreSet
from lidframe.data.utterance import group_by_speaker
from lidframe.grid.plan import plan_grid
from lidframe.grid.report import load_results, write_report
from lidframe.grid.runner import run_grid
from lidframe.grid.spec import load_grid_spec
from lidframe.registry import create
from tests.bad_input.conftest import assert_refused
from tests.grid.scenario_data import ladder_system, registered_adaptable, write_dir

FUSED = "fusion?of=precomputed,adaptable"

SPEC = """[grid]
attackers = {attackers}
calibrators = ["logistic"]
legal = false
{extra}

[systems.anon]
dev = {{ enrol = "dev_enrol", trials = ["dev_trials"] }}
eval = {{ enrol = "eval_enrol", trials = ["eval_trials"] }}
"""


def write_embeddings(folder: Path, seed: int) -> None:
    """``emb.npz`` of every utterance: its speaker's identity vector (fixed) plus unit noise drawn with *seed*."""
    identity = np.random.default_rng(100).normal(size=(2, 8, 8))  # (split, speaker, dim)
    rng = np.random.default_rng(seed)
    ids, vectors = [], []
    for i, split in enumerate(("dev", "eval")):
        for kind in ("enrol", "trials"):
            for utt in read_data_dir(folder / f"{split}_{kind}"):
                ids.append(utt.utt_id)
                vectors.append(identity[i, int(utt.speaker.removeprefix(f"{split}spk"))] + rng.normal(size=8))
    np.savez(folder / "emb.npz", utt_ids=np.array(ids), vectors=np.array(vectors))


def make_folder(folder: Path, attackers: list[str], extra: str = "") -> Path:
    """Data dirs of 8 speakers per split (2 enrolment and 4 trial utterances each), ``emb.npz``, and the spec."""
    folder.mkdir(parents=True)
    for split in ("dev", "eval"):
        for kind, per in (("enrol", 2), ("trials", 4)):
            write_dir(
                folder / f"{split}_{kind}",
                [(f"{split}-{kind}-{s}-{k}", f"{split}spk{s}") for s in range(8) for k in range(per)],
            )
    write_embeddings(folder, seed=1)
    return write_spec(folder, attackers, extra)


def write_spec(folder: Path, attackers: list[str], extra: str = "") -> Path:
    text = SPEC.format(attackers=json.dumps([a.replace("{folder}", str(folder)) for a in attackers]), extra=extra)
    (folder / "grid.toml").write_text(text)
    return folder / "grid.toml"


def members(folder: Path) -> list[str]:
    return [f"precomputed?path={folder}/emb.npz", "adaptable"]


def score_here(folder: Path, spec: str) -> dict[str, ScoreSet]:
    """The dev and eval score sets of *spec* scored here, with the attacker built here (not the grid's cache)."""
    from tests.grid.scenario_data import Adaptable

    attacker = Adaptable(**_params(spec)) if spec.startswith("adaptable") else create("attacker", spec)
    out = {}
    for split in ("dev", "eval"):
        enrol = group_by_speaker(read_data_dir(folder / f"{split}_enrol"))
        out[split] = attacker.score(read_data_dir(folder / f"{split}_trials"), enrol)
    return out


def _params(spec: str) -> dict[str, int]:
    _, _, query = spec.partition("?")
    return {k: int(v) for k, v in (p.split("=") for p in query.split("&") if p)}


def cli(*argv: object) -> int:
    """``lidframe *argv*`` in this process (paths as strings)."""
    return main([str(a) for a in argv])


def fused_cell(out: Path):
    (cell,) = [c for c in load_results(out) if c.attacker == FUSED]
    return cell


def fused_alid_here(folder: Path, specs: list[str]) -> float:
    """ALID of the fusion of *specs*, scored and fused here (fit_fusion, apply_fusion, lidframe.evaluate)."""
    scored = [score_here(folder, spec) for spec in specs]
    fusion = fit_fusion([s["dev"] for s in scored], C=1.0, znorm_ddof=1)
    dev, ev = (apply_fusion(fusion, [s[split] for s in scored]) for split in ("dev", "eval"))
    return lidframe.evaluate(dev, ev, calibrator="logistic").summary.alid


@pytest.mark.slow
def test_the_fused_cell_is_lidframe_fuse_then_evaluate_of_its_members_scores(tmp_path, capsys):
    folder = tmp_path / "spec"
    spec = make_folder(folder, [*members(folder), FUSED])
    with registered_adaptable():
        run = run_grid(spec, tmp_path / "out")
        plan = plan_grid(load_grid_spec(spec), tmp_path / "out")
    assert (run.ok, run.error, run.scored) == (3, 0, 2 * 2 + 2)  # two members' splits scored once, one fused pair
    # the independent path: the members scored here, fused and evaluated by the command line
    files = {}
    for k, member in enumerate(members(folder), start=1):
        for split, scores in score_here(folder, member).items():
            files[split, k] = tmp_path / f"m{k}_{split}.npz"
            scores.save(files[split, k])
    fused = tmp_path / "fused"
    assert (
        cli(
            "fuse",
            "--dev",
            files["dev", 1],
            files["dev", 2],
            "--eval",
            *(files["eval", k] for k in (1, 2)),
            "--out",
            fused,
        )
        == 0
    )
    assert cli("evaluate", "--dev", fused / "dev.npz", "--eval", fused / "eval.npz", "--json", tmp_path / "e.json") == 0
    capsys.readouterr()
    expected = json.loads((tmp_path / "e.json").read_text())
    cell = fused_cell(tmp_path / "out")
    for metric in ("alid", "lid_q99", "eer", "rank1_rate"):
        assert cell.summary.to_dict()[metric] == pytest.approx(expected[metric], rel=1e-9, abs=1e-12), metric
    # the grid reused its members' score sets: the fused job reads the very files their cells read
    (job,) = plan.fusion_jobs
    member_tasks = {t.cells[0].attacker: t for t in plan.tasks if t.cells[0].attacker != FUSED}
    assert job.dev == tuple(member_tasks[m].dev for m in members(folder))
    assert job.eval == tuple(member_tasks[m].eval for m in members(folder))
    for k in (1, 2):  # and those hold what the attackers score here
        np.testing.assert_allclose(ScoreSet.load(job.dev[k - 1]).scores, ScoreSet.load(files["dev", k]).scores)
    # provenance: the members' files with their digests, and the weights named by the members' specs
    provenance = read_provenance(job.eval_target)
    assert provenance is not None and provenance.attacker.name == "fusion"
    settings = dict(provenance.attacker.settings)
    assert settings["weight 1"].endswith(f"({members(folder)[0]})") and settings["weight 2"].endswith("(adaptable)")
    fused_from = {item.file.role: item.file.sha256 for item in provenance.fused_from}
    assert fused_from == {
        f"{split} {k}": file_sha256(path) for split in ("dev", "eval") for k, path in enumerate(getattr(job, split), 1)
    }
    # the fused cell is a row of the tidy table like any attacker's, and the page shows the fused files' provenance
    with registered_adaptable():
        write_report(tmp_path / "out")
    table = pd.read_csv(tmp_path / "out/report/table.csv")
    assert sorted(table["attacker"]) == sorted([*members(folder), FUSED])
    page = (tmp_path / "out/report/report.html").read_text()
    assert f"eval fused by {FUSED}" in page and "weight 2" in page


@pytest.mark.slow
def test_a_changed_member_recomputes_the_fused_cell_never_reuses_it(tmp_path):
    folder = tmp_path / "spec"
    spec = make_folder(folder, [*members(folder), FUSED])
    lines: list[str] = []
    with registered_adaptable():
        run_grid(spec, tmp_path / "out")
        before = fused_cell(tmp_path / "out").summary.alid
        assert before == pytest.approx(fused_alid_here(folder, members(folder)), rel=1e-9)
        assert run_grid(spec, tmp_path / "out").skipped == 3  # unchanged: all reused
        # a member's option changes: its cells are new, and the fused cell (same name) is recomputed
        changed = [members(folder)[0], "adaptable?dim=6"]
        write_spec(folder, [*changed, FUSED])
        run = run_grid(spec, tmp_path / "out", log=lines.append)
        assert (run.recomputed, run.ok) == (1, 2)
        assert "recomputing 1 cell: fused attacker 2 changed (adaptable -> adaptable?dim=6)" in lines, lines
        after = fused_cell(tmp_path / "out").summary.alid
        assert after == pytest.approx(fused_alid_here(folder, changed), rel=1e-9)
        assert after != pytest.approx(before, rel=1e-6)
        # a member's file changes (same spec): that member's cell and the fused one are recomputed
        write_embeddings(folder, seed=2)
        lines.clear()
        run = run_grid(spec, tmp_path / "out", log=lines.append)
        assert (run.recomputed, run.skipped) == (2, 1)
        assert any("fused attacker 1: attacker file" in line and "emb.npz changed" in line for line in lines), lines
        assert fused_cell(tmp_path / "out").summary.alid == pytest.approx(fused_alid_here(folder, changed), rel=1e-9)
    assert len(list((tmp_path / "out/cache/fused").iterdir())) == 3  # each fusion under its own key


def test_whole_specs_name_members_that_share_a_name_and_the_plan_shares_their_score_jobs(tmp_path):
    """``of=`` may give a member's whole spec (an ``&`` of its own as ``%26``); no member is scored twice."""
    folder = tmp_path / "spec"
    spec = make_folder(folder, ["random?dim=8&seed=1", "random?dim=4", "fusion?of=random?dim=4,random?dim=8%26seed=1"])
    plan = plan_grid(load_grid_spec(spec), tmp_path / "out")
    assert len(plan.score_jobs) == 4  # two attackers x two splits: the fusion adds none
    (job,) = plan.fusion_jobs
    assert job.members == ("random?dim=4", "random?dim=8&seed=1")
    by_attacker = {t.cells[0].attacker: t for t in plan.tasks}
    assert job.dev == (by_attacker["random?dim=4"].dev, by_attacker["random?dim=8&seed=1"].dev)
    fused = by_attacker["fusion?of=random?dim=4,random?dim=8%26seed=1"]
    assert (fused.dev, fused.eval) == job.targets


def test_each_scenario_fuses_its_own_members_scores(tmp_path):
    """With the scenarios axis, one fusion per rung, of the members' score jobs of that rung (adapted model included)."""
    dirs = ladder_system(tmp_path)
    (tmp_path / "adapted.txt").write_text("0.8")
    source = {
        split: f'{{ enrol = "{d["enrol"]}", trials = ["{d["trials"]}"], original_enrol = "{d["original_enrol"]}" }}'
        for split, d in dirs.items()
    }
    spec = tmp_path / "grid.toml"
    spec.write_text(
        '[grid]\nattackers = ["adaptable", "random?dim=8", "fusion?of=adaptable,random"]\n'
        'scenarios = ["ignorant", "lazy-informed", "semi-informed"]\n'
        f"[systems.anon]\ndev = {source['dev']}\neval = {source['eval']}\n"
        f'[systems.anon.adapted]\nadaptable = "{tmp_path / "adapted.txt"}"\n'
    )
    with registered_adaptable():
        plan = plan_grid(load_grid_spec(spec), tmp_path / "out")
    jobs = {job.scenario: job for job in plan.fusion_jobs}
    assert sorted(jobs) == sorted(["ignorant", "lazy-informed", "semi-informed"])
    targets = {(j.attacker, j.source["enrol"]): j.target for j in plan.score_jobs}
    for scenario, job in jobs.items():
        enrol = dirs["dev"]["original_enrol" if scenario == "ignorant" else "enrol"]
        adaptable = f"adaptable?checkpoint={tmp_path / 'adapted.txt'}" if scenario == "semi-informed" else "adaptable"
        assert job.members == (adaptable, "random?dim=8")
        assert job.dev == (targets[adaptable, str(enrol)], targets["random?dim=8", str(enrol)])
    assert len({job.targets for job in jobs.values()}) == 3


#: A precomputed attacker and a random one, then the bad fusion entry (``grid.attackers[2]``).
TWO = ["precomputed?path={folder}/emb.npz", "random?dim=8"]

BAD = {
    "a name not in the grid": (
        [*TWO, "fusion?of=random,xvector"],
        ["no attacker 'xvector' in grid.attackers", "'random?dim=8'"],
    ),
    "one name": ([*TWO, "fusion?of=random"], ["at least two attackers", "got 1"]),
    "no of": ([*TWO, "fusion"], ["at least two attackers", "got 0"]),
    "a fusion of a fusion": ([*TWO, "fusion?of=random,fusion"], ["'fusion' is a fusion"]),
    "a name twice": ([*TWO, "fusion?of=random,random"], ["'random?dim=8' is named twice"]),
    "a name of two attackers": (
        ["random?dim=4", "random?dim=8", "fusion?of=random?dim=4,random"],
        ["'random' names 2 attackers", "give the whole spec"],
    ),
    "an unknown option": ([*TWO, "fusion?of=random,precomputed&colour=red"], ["no option 'colour'"]),
    "a negative C": ([*TWO, "fusion?of=random,precomputed&C=-1"], ["C must be a positive number", "'-1'"]),
    "a C that is no number": ([*TWO, "fusion?of=random,precomputed&C=big"], ["C must be a positive number", "'big'"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_fusion_entry_is_one_line_naming_the_spec_and_the_key(case, tmp_path, capsys):
    attackers, expect = BAD[case]
    spec = make_folder(tmp_path / "spec", attackers)
    where = [str(spec), "[grid.attackers[2]]"]
    assert_refused(["grid", spec, "--out", tmp_path / "out"], capsys, expect=[*where, *expect], watch=[tmp_path])
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_dask_backend_gives_the_fused_cells_of_the_local_one(tmp_path):
    distributed = pytest.importorskip("distributed")
    folder = tmp_path / "spec"
    spec = make_folder(folder, [*members(folder), FUSED])
    with registered_adaptable():  # the members are scored (and fused) by this process, the cells by the workers
        run_grid(spec, tmp_path / "local")
        with (
            distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None, processes=True
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            run = run_grid(spec, tmp_path / "dask", backend="dask", scheduler=client)
    assert (run.ok, run.error) == (3, 0)
    local, dask = (
        {c.attacker: c.summary.to_dict() for c in load_results(tmp_path / name)} for name in ("local", "dask")
    )
    assert dask[FUSED] == local[FUSED]


@pytest.mark.parametrize(("option", "penalty"), [("", 1.0), ("&C=0.25", 0.25), ("&C=none", None), ("&C=2", 2.0)])
def test_the_penalty_option_is_the_fusions_C(option, penalty):
    from lidframe.grid.spec.fusion import fused_attacker

    attackers = ("ecapa?checkpoint=m.ckpt", "xvector", f"fusion?of=xvector,ecapa{option}")
    fused = fused_attacker(attackers[2], attackers)
    assert (fused.members, fused.C) == (("xvector", "ecapa?checkpoint=m.ckpt"), penalty)


@pytest.mark.slow
def test_a_member_that_cannot_score_is_the_fused_cells_error_and_the_others_go_on(tmp_path):
    folder = tmp_path / "spec"
    spec = make_folder(folder, [*members(folder), FUSED])
    with np.load(folder / "emb.npz") as emb:  # one eval trial has no embedding: precomputed cannot score eval
        keep = emb["utt_ids"] != "eval-trials-3-1"
        np.savez(folder / "emb.npz", utt_ids=emb["utt_ids"][keep], vectors=emb["vectors"][keep])
    with registered_adaptable():
        run = run_grid(spec, tmp_path / "out")
    assert (run.ok, run.error) == (1, 2)
    with contextlib.closing(sqlite3.connect(tmp_path / "out/results.sqlite")) as db:
        rows = {
            attacker: (status, error)
            for attacker, status, error in db.execute("SELECT attacker, status, error FROM cells")
        }
    assert rows["adaptable"] == ("ok", None)
    status, error = rows[FUSED]
    assert status == "error" and error.startswith(f"{FUSED}: ") and "eval-trials-3-1" in error  # which member, and why
    assert not (tmp_path / "out/cache/fused").exists()  # nothing half-fused
