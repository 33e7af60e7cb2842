"""Grids: planning and shared work, resumability under SIGKILL, determinism, dask backend, bad specs."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from lidframe import evaluate
from lidframe.cli import main
from lidframe.data.simulate import simulate_system
from lidframe.grid.report import write_report
from lidframe.grid.runner import run_grid

SPEC = """
[grid]
calibrators = ["logistic", "isotonic"]
priors = ["uniform", "watchlist?ids=eval-spk000,eval-spk001&weight=4"]
seeds = [3]
{ci}
[systems.weak]
dev = "weak_dev.npz"
eval = "weak_eval.npz"

[systems.strong]
dev = "strong_dev.npz"
eval = "strong_eval.npz"

[systems.uneven]
dev = "uneven_dev.npz"
eval = "uneven_eval.npz"
"""


def make_spec(folder: Path, ci: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, params in {
        "weak": {"leakage": 0.5},
        "strong": {"leakage": 0.2},
        "uneven": {"leakage": 0.1, "leaky_share": 0.1, "leaky_leakage": 0.6},
    }.items():
        dev, ev = simulate_system(seed=len(name), n_enrolled=12, trials_per_speaker=10, **params)
        dev.save(folder / f"{name}_dev.npz")
        ev.save(folder / f"{name}_eval.npz")
    (folder / "grid.toml").write_text(SPEC.format(ci=ci))
    return folder / "grid.toml"


def rows(out: Path):
    connection = sqlite3.connect(out / "results.sqlite")
    try:
        return connection.execute(
            "SELECT system, calibrator, prior, status, summary FROM cells ORDER BY cell_id"
        ).fetchall()
    finally:
        connection.close()


def test_cells_shared_work_and_agreement_with_evaluate(tmp_path):
    spec = make_spec(tmp_path / "spec")
    counts = run_grid(spec, tmp_path / "out")
    assert counts == {
        "cells": 12,
        "skipped": 0,
        "ok": 12,
        "error": 0,
        "fits": 6,
        "scored": 0,
        "recomputed": 0,
    }  # 3 x 2 fits
    import json

    from lidframe import WatchList

    for system, calibrator, prior, status, summary in rows(tmp_path / "out"):
        assert status == "ok"
        want_prior = "uniform" if prior == "uniform" else WatchList(["eval-spk000", "eval-spk001"], 4.0)
        want = evaluate(
            spec.parent / f"{system}_dev.npz",
            spec.parent / f"{system}_eval.npz",
            calibrator=calibrator,
            prior=want_prior,
        ).summary
        got = json.loads(summary)
        for key in ("alid", "pdr", "lid_max", "eer", "cllr"):
            assert got[key] == pytest.approx(want[key], abs=1e-12), (system, calibrator, prior, key)
    again = run_grid(spec, tmp_path / "out")
    assert again.skipped == 12 and again.ok == 0 and again.fits == 0


def table_bytes(out: Path) -> bytes:
    write_report(out, figures=False)
    return (out / "report" / "table.csv").read_bytes()


@pytest.mark.slow
def test_same_spec_gives_a_byte_identical_table(tmp_path):
    spec = make_spec(tmp_path / "spec", ci="[grid.bootstrap]\nn_boot = 200\nlevel = 0.9\n")
    run_grid(spec, tmp_path / "a")
    run_grid(spec, tmp_path / "b", jobs=2)
    assert table_bytes(tmp_path / "a") == table_bytes(tmp_path / "b")
    assert b"alid_low" in table_bytes(tmp_path / "a")


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_gives_the_uninterrupted_result(tmp_path):
    spec = make_spec(tmp_path / "spec", ci="[grid.bootstrap]\nn_boot = 3000\n")  # slow cells: time to kill
    reference = tmp_path / "reference"
    run_grid(spec, reference)
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lidframe.cli", "grid", str(spec), "--out", str(killed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    target = np.random.default_rng().integers(1, 11)  # kill after a random number of finished cells
    deadline = time.time() + 120
    while time.time() < deadline:
        if (killed / "results.sqlite").is_file():
            try:
                if len(rows(killed)) >= target:
                    break
            except sqlite3.OperationalError:
                pass
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    stored = len(rows(killed))
    assert stored < 12, "the run finished before it could be killed"
    counts = run_grid(spec, killed)
    assert counts.skipped == stored and counts.ok == 12 - stored
    assert len(rows(killed)) == 12  # every cell exactly once
    leftovers = [p.name for p in (killed / "cells").iterdir() if not p.name.endswith(".npz") or p.name.startswith(".")]
    assert leftovers == []  # no half-written file
    assert table_bytes(killed) == table_bytes(reference)


@pytest.mark.slow
def test_dask_backend_on_a_local_cluster_gives_the_same_table(tmp_path):
    distributed = pytest.importorskip("distributed")
    spec = make_spec(tmp_path / "spec")
    run_grid(spec, tmp_path / "local")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None, processes=True
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        counts = run_grid(spec, tmp_path / "dask", backend="dask", scheduler=client)
    assert counts.ok == 12
    assert table_bytes(tmp_path / "dask") == table_bytes(tmp_path / "local")


@pytest.mark.parametrize(
    "edit, message",
    [
        (('"isotonic"', '"isotonc"'), "[grid.calibrators[1]] 'isotonc': unknown calibrator 'isotonc'"),
        (("uneven_eval.npz", "missing.npz"), "[systems.uneven.eval] 'missing.npz': no such file"),
        (("seeds = [3]", "seeds = 3"), "[grid.seeds] must be a non-empty list of integers"),
        (("[grid]", "[grid]\ncolour = 1"), "[grid.colour] unknown key"),
    ],
)
def test_bad_spec_names_the_key_exits_2_and_writes_nothing(tmp_path, capsys, edit, message):
    spec = make_spec(tmp_path / "spec")
    spec.write_text(spec.read_text().replace(*edit))
    code = main(["grid", str(spec), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_report_command_writes_tables_and_figures(tmp_path, capsys):
    spec = make_spec(tmp_path / "spec")
    run_grid(spec, tmp_path / "out")
    assert main(["report", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "| system | N | EER | ALID |" in out
    for name in (
        "table.csv",
        "summary.md",
        "summary.html",
        "table.tex",
        "lid_ccdf.png",
        "eer_vs_lid.png",
        "calibrator_sensitivity.png",
    ):
        assert (tmp_path / "out" / "report" / name).stat().st_size > 0, name


@pytest.mark.slow
def test_gaussian_mechanism_as_a_grid_transform(tmp_path):
    """A mu sweep over a data-dir system (precomputed embeddings): EER falls and ALID rises with mu."""
    rng = np.random.default_rng(5)
    folder = tmp_path / "spec"
    folder.mkdir()
    ids, vectors = [], []
    for split in ("dev", "eval"):
        identity = rng.normal(size=(20, 16))
        for kind, per in (("enrolls", 3), ("trials", 8)):
            d = folder / f"{split}_{kind}"
            d.mkdir()
            lines, spk = [], []
            for s in range(20):
                for k in range(per):
                    utt = f"{split}-{kind}-{s}-{k}"
                    ids.append(utt)
                    vectors.append(identity[s] + 0.3 * rng.normal(size=16))
                    lines.append(f"{utt} none.wav\n")
                    spk.append(f"{utt} {split}spk{s}\n")
            (d / "wav.scp").write_text("".join(lines))
            (d / "utt2spk").write_text("".join(spk))
    np.savez(folder / "emb.npz", utt_ids=np.array(ids), vectors=np.array(vectors))
    (folder / "grid.toml").write_text(f"""
[grid]
calibrators = ["logistic"]
attackers = ["precomputed?path={folder / "emb.npz"}"]
mechanisms = ["gaussian?mu=0.5&seed=1", "gaussian?mu=2&seed=1", "gaussian?mu=8&seed=1"]

[systems.sim]
dev = {{ enrol = "dev_enrolls", trials = ["dev_trials"] }}
eval = {{ enrol = "eval_enrolls", trials = ["eval_trials"] }}
""")
    counts = run_grid(folder / "grid.toml", tmp_path / "out")
    assert counts.ok == 3 and counts.scored == 6  # dev + eval per mechanism
    written = write_report(tmp_path / "out")
    assert any(p.endswith("dp_vs_mu.png") for p in written)
    import pandas as pd

    table = pd.read_csv(tmp_path / "out" / "report" / "table.csv").sort_values("mechanism", key=lambda m: m.str.len())
    order = table.assign(mu=[float(m.split("mu=")[1].split("&")[0]) for m in table["mechanism"]]).sort_values("mu")
    assert list(order["eer"]) == sorted(order["eer"], reverse=True)
    assert list(order["alid"]) == sorted(order["alid"])
    from lidframe.privacy.mechanism import gdp_eer_bound

    assert all(e >= gdp_eer_bound(mu) for e, mu in zip(order["eer"], order["mu"]))


def test_example_spec_is_valid_and_its_scores_are_the_demo_output():
    from lidframe import ScoreSet
    from lidframe.demo import DEMO_SYSTEMS
    from lidframe.grid.spec import load_grid_spec

    root = Path(__file__).resolve().parents[2] / "examples"
    spec = load_grid_spec(root / "grid.toml")
    assert spec.n_cells() == 30 and [s.name for s in spec.systems] == list(DEMO_SYSTEMS)
    for offset, (name, params) in enumerate(DEMO_SYSTEMS.items()):
        dev, ev = simulate_system(seed=offset, **params)  # lidframe demo, seed 0
        for split, fresh in (("dev", dev), ("eval", ev)):
            shipped = ScoreSet.load(root / "scores" / f"{name}_{split}.npz")
            # ids exactly; scores to a few ulps: the simulator's float64 arithmetic (SIMD
            # exp/log) may round the last bit differently on another CPU than the one that
            # wrote the shipped files
            for field in ("enrolled", "trial_speakers", "trial_ids"):
                assert np.array_equal(getattr(shipped, field), getattr(fresh, field)), (name, split, field)
            np.testing.assert_allclose(shipped.scores, fresh.scores, rtol=0, atol=1e-12)


def test_longitudinal_attacker_as_a_grid_dimension(tmp_path):
    from lidframe.analyses.longitudinal import longitudinal

    spec = make_spec(tmp_path / "spec")
    text = spec.read_text().replace(
        "seeds = [3]", 'seeds = [3]\n\n[grid.longitudinal]\nk = [1, 4, "all"]\nfusions = ["sum", "mean"]\n'
    )
    spec.write_text(text)
    run_grid(spec, tmp_path / "out")
    write_report(tmp_path / "out", figures=False)
    import pandas as pd

    table = pd.read_csv(tmp_path / "out" / "report" / "table.csv")
    uniform = table[table["prior"] == "uniform"]
    assert uniform["long_sum_k4_alid"].notna().all() and uniform["long_mean_kall_lid_max"].notna().all()
    assert table[table["prior"] != "uniform"]["long_sum_k4_alid"].isna().all()  # uniform-prior cells only
    row = uniform[(uniform["system"] == "weak") & (uniform["calibrator"] == "logistic")].iloc[0]
    want = longitudinal(
        spec.parent / "weak_dev.npz", spec.parent / "weak_eval.npz", [1, 4, "all"], bootstrap=None, seed=3
    )
    assert row["long_sum_k4_alid"] == pytest.approx(want.rows[1]["alid"], abs=1e-9)  # the CSV keeps 10 digits
    assert row["long_sum_k1_alid"] == pytest.approx(row["alid"], abs=1e-9)  # k = 1 is per-trial LID
