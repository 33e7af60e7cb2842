"""Every cached number fresh: a cell whose inputs changed is recomputed, replaces its row, and equals a fresh run.

Each scenario runs a grid, changes one input behind it (at the same path), reruns it, and
compares the resumed store with a fresh run on a new output folder and with an
independent computation (``lidframe.evaluate`` on the same inputs, without the grid).
"""

import importlib
import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from lidframe import WatchList, evaluate
from lidframe.cli import main
from lidframe.data import fileio
from lidframe.data.simulate import simulate_system
from lidframe.grid import store
from lidframe.grid.report import write_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "speechbrain"


def grid(spec: Path, out: Path, capsys) -> str:
    """``lidframe grid SPEC --out OUT``; its stdout (the command must succeed)."""
    code = main(["grid", str(spec), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def rows(out: Path) -> list[dict]:
    connection = sqlite3.connect(out / "results.sqlite")
    connection.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in connection.execute("SELECT * FROM cells ORDER BY system, calibrator, prior")]
    finally:
        connection.close()


def summaries(out: Path) -> dict:
    """(system, calibrator, prior) -> summary dict, asserting one row per logical cell."""
    found = rows(out)
    keys = [(r["system"], r["attacker"], r["mechanism"], r["calibrator"], r["prior"], r["seed"]) for r in found]
    assert len(keys) == len(set(keys)), "two rows for one cell"
    return {(r["system"], r["calibrator"], r["prior"]): json.loads(r["summary"]) for r in found}


def settle(*paths: Path) -> None:
    """Put the files' mtimes a minute back, as for data that was not written just now."""
    when = time.time_ns() - 60 * 10**9
    for path in paths:
        os.utime(path, ns=(when, when))


def replace_file(path: Path, write) -> None:
    """Write new content to a temporary name and rename it onto *path* (how most tools replace a file)."""
    tmp = path.with_name(path.name + ".new" + path.suffix)
    write(tmp)
    os.replace(tmp, path)


# ------------------------------------------------------------------ score-set systems
def score_system(folder: Path, name: str, leakage: float, seed: int) -> tuple[Path, Path]:
    dev, ev = simulate_system(leakage=leakage, seed=seed, n_enrolled=12, trials_per_speaker=8)
    dev.save(folder / f"{name}_dev.npz")
    ev.save(folder / f"{name}_eval.npz")
    return folder / f"{name}_dev.npz", folder / f"{name}_eval.npz"


@pytest.mark.slow
def test_changed_score_file_replaces_its_row_and_the_report_works(tmp_path, capsys):
    folder = tmp_path / "spec"
    folder.mkdir()
    dev, ev = score_system(folder, "sys", leakage=0.6, seed=1)
    (folder / "grid.toml").write_text(
        '[grid]\ncalibrators = ["logistic", "isotonic"]\n[systems.sys]\ndev = "sys_dev.npz"\neval = "sys_eval.npz"\n'
    )
    out = tmp_path / "out"
    grid(folder / "grid.toml", out, capsys)
    first_files = sorted(p.name for p in (out / "cells").iterdir())
    before = summaries(out)
    _, new_eval = simulate_system(leakage=0.1, seed=2, n_enrolled=12, trials_per_speaker=8)
    replace_file(ev, new_eval.save)
    said = grid(folder / "grid.toml", out, capsys)
    assert "recomputing 2 cells: eval file" in said and "sys_eval.npz changed" in said
    assert "(2 stored with inputs that changed)" in said
    after = summaries(out)
    assert len(after) == 2  # replaced, not added beside the old rows
    for calibrator in ("logistic", "isotonic"):
        want = evaluate(dev, ev, calibrator=calibrator).summary
        got = after[("sys", calibrator, "uniform")]
        assert got["alid"] == pytest.approx(want["alid"], abs=1e-12)
        assert got["alid"] != pytest.approx(before[("sys", calibrator, "uniform")]["alid"], abs=1e-3)
    # the replaced cells' per-trial files are gone; the new ones hold the new LIDs
    files = sorted(p.name for p in (out / "cells").iterdir())
    assert len(files) == 2 and not set(files) & set(first_files)
    record = next(r for r in rows(out) if r["calibrator"] == "logistic")
    with np.load(out / record["per_trial"]) as data:
        np.testing.assert_allclose(data["lid"], evaluate(dev, ev, calibrator="logistic").lid, atol=1e-12)
    written = write_report(out, figures=True)  # before the fix: pandas "duplicate labels" traceback
    import pandas as pd

    table = pd.read_csv(out / "report" / "table.csv")
    assert len(table) == 2 and any(p.endswith("lid_ccdf.png") for p in written)


def test_changed_watchlist_file_recomputes_and_equals_a_fresh_run(tmp_path, capsys):
    folder = tmp_path / "spec"
    folder.mkdir()
    dev, ev = score_system(folder, "sys", leakage=0.5, seed=4)
    ids = folder / "watch.txt"
    ids.write_text("eval-spk000\n")
    (folder / "grid.toml").write_text(
        f'[grid]\npriors = ["watchlist?file={ids}&weight=5"]\n'
        '[systems.sys]\ndev = "sys_dev.npz"\neval = "sys_eval.npz"\n'
    )
    out = tmp_path / "out"
    grid(folder / "grid.toml", out, capsys)
    one = next(iter(summaries(out).values()))
    eight = [f"eval-spk{i:03d}" for i in range(8)]
    ids.write_text("".join(f"{i}\n" for i in eight))  # edited in place
    said = grid(folder / "grid.toml", out, capsys)
    assert "recomputing 1 cell: prior file" in said and "watch.txt changed" in said
    resumed = next(iter(summaries(out).values()))
    fresh_out = tmp_path / "fresh"
    grid(folder / "grid.toml", fresh_out, capsys)
    fresh = next(iter(summaries(fresh_out).values()))
    want = evaluate(dev, ev, prior=WatchList(eight, 5.0)).summary
    assert resumed["alid"] == fresh["alid"] == pytest.approx(want["alid"], abs=1e-12)
    assert resumed["alid"] != pytest.approx(one["alid"], abs=1e-3)


def test_settings_and_code_versions_are_inputs(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "spec"
    folder.mkdir()
    dev, ev = score_system(folder, "sys", leakage=0.5, seed=4)
    spec = folder / "grid.toml"
    spec.write_text('[grid]\nznorm_ddof = 1\n[systems.sys]\ndev = "sys_dev.npz"\neval = "sys_eval.npz"\n')
    out = tmp_path / "out"
    grid(spec, out, capsys)
    spec.write_text(spec.read_text().replace("znorm_ddof = 1", "znorm_ddof = 0"))
    said = grid(spec, out, capsys)
    assert "recomputing 1 cell: [grid] znorm_ddof changed (1 -> 0)" in said
    want = evaluate(dev, ev, znorm_ddof=0).summary["alid"]
    assert next(iter(summaries(out).values()))["alid"] == pytest.approx(want, abs=1e-12)
    import lidframe._version

    real = lidframe._version.code_version()
    monkeypatch.setattr(lidframe._version, "__version__", "99.0")
    said = grid(spec, out, capsys)
    bumped = lidframe._version.code_version()
    assert bumped.startswith("99.0+src.")
    assert f"recomputing 1 cell: lidframe code changed (lidframe {real} -> lidframe {bumped})" in said
    assert len(rows(out)) == 1
    # the same version string with other source (an editable install after a pull, or a
    # source tree that is not installed): the cells follow the code, not the label
    monkeypatch.setattr(lidframe._version, "_source_digest", lambda: "e" * 64)
    said = grid(spec, out, capsys)
    assert f"lidframe code changed (lidframe {bumped} -> lidframe 99.0+src.{'e' * 16})" in said
    assert len(rows(out)) == 1


def test_the_code_digest_covers_every_code_file_by_path_and_content(tmp_path):
    import hashlib

    from lidframe._version import tree_digest

    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("x = 1\n")
    (root / "sub" / "b.py").write_text("y = 2\n")
    (root / "notes.txt").write_text("not code")
    want = hashlib.sha256()
    for rel in ("a.py", "sub/b.py"):  # sorted paths, "root index:path\0", bytes, "\0"
        want.update(f"0:{rel}\0".encode() + (root / rel).read_bytes() + b"\0")
    assert tree_digest([root]) == want.hexdigest()
    before = tree_digest([root])
    (root / "notes.txt").write_text("still not code")
    assert tree_digest([root]) == before
    (root / "sub" / "b.py").write_text("y = 3\n")
    assert tree_digest([root]) != before
    edited = tree_digest([root])
    (root / "sub" / "b.py").rename(root / "sub" / "c.py")
    assert tree_digest([root]) != edited


def test_a_plugin_version_bump_recomputes_its_cells(tmp_path, capsys, monkeypatch):
    from lidframe import registry

    site = tmp_path / "site"

    def install(version: str) -> None:
        shutil.rmtree(site, ignore_errors=True)
        info = site / f"probe_dist-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: probe-dist\nVersion: {version}\n")
        (info / "entry_points.txt").write_text("[lidframe.calibrators]\nprobe = lidframe.calibrators:Logistic\n")
        importlib.invalidate_caches()
        registry.refresh()

    monkeypatch.syspath_prepend(str(site))
    install("1.0")
    assert registry.spec_inputs("calibrator", "probe").version == "probe-dist 1.0"
    folder = tmp_path / "spec"
    folder.mkdir()
    score_system(folder, "sys", leakage=0.5, seed=4)
    spec = folder / "grid.toml"
    spec.write_text(
        '[grid]\ncalibrators = ["probe", "logistic"]\n[systems.sys]\ndev = "sys_dev.npz"\neval = "sys_eval.npz"\n'
    )
    out = tmp_path / "out"
    try:
        grid(spec, out, capsys)
        install("2.0")
        said = grid(spec, out, capsys)
    finally:
        registry.refresh()
    assert "recomputing 1 cell: calibrator 'probe' code changed (probe-dist 1.0 -> probe-dist 2.0)" in said
    assert "2 cells, 1 already stored, 1 computed" in said


def test_unchanged_inputs_recompute_nothing_and_read_no_file_again(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "spec"
    folder.mkdir()
    dev, ev = simulate_system(leakage=0.4, seed=3, n_enrolled=100, trials_per_speaker=10)  # the "big" files
    dev.save(folder / "big_dev.npz")
    ev.save(folder / "big_eval.npz")
    small_dev, small_eval = score_system(folder, "small", leakage=0.5, seed=5)
    ids = folder / "watch.txt"
    ids.write_text("eval-spk001\n")
    spec = folder / "grid.toml"
    spec.write_text(
        f'[grid]\npriors = ["uniform", "watchlist?file={ids}"]\n'
        '[systems.big]\ndev = "big_dev.npz"\neval = "big_eval.npz"\n'
        '[systems.small]\ndev = "small_dev.npz"\neval = "small_eval.npz"\n'
    )
    settle(folder / "big_dev.npz", folder / "big_eval.npz", small_dev, small_eval, ids)
    hashed = []
    real = fileio.file_sha256
    monkeypatch.setattr(fileio, "file_sha256", lambda path: hashed.append(Path(path).name) or real(path))
    out = tmp_path / "out"
    grid(spec, out, capsys)
    assert sorted(hashed) == sorted(["big_dev.npz", "big_eval.npz", "small_dev.npz", "small_eval.npz", "watch.txt"])
    hashed.clear()
    said = grid(spec, out, capsys)
    # no input is read again; the reused cells' per-trial files (outputs, checked against the digests stored
    # with their cells) were written less than 2 s ago, so the digest cache does not trust them yet
    per_trial = {Path(r["per_trial"]).name for r in rows(out)}
    assert [name for name in hashed if name not in per_trial] == [] and "recomputing" not in said
    assert "4 cells, 4 already stored, 0 computed" in said
    cache = sqlite3.connect(out / "cache" / "digests.sqlite")
    inputs = cache.execute("SELECT count(*) FROM digests WHERE path NOT LIKE ?", (f"{out / 'cells'}%",)).fetchone()
    assert inputs == (5,)
    cache.close()
    # one file changes: only it is read again, only its cells are recomputed
    _, other = simulate_system(leakage=0.1, seed=9, n_enrolled=12, trials_per_speaker=8)
    replace_file(small_eval, other.save)
    hashed.clear()
    said = grid(spec, out, capsys)
    assert [name for name in hashed if name not in per_trial] == ["small_eval.npz"]
    assert "recomputing 2 cells: eval file" in said and "4 cells, 2 already stored, 2 computed" in said


def test_a_deleted_per_trial_file_is_recomputed(tmp_path, capsys):
    folder = tmp_path / "spec"
    folder.mkdir()
    score_system(folder, "sys", leakage=0.5, seed=4)
    spec = folder / "grid.toml"
    spec.write_text('[systems.sys]\ndev = "sys_dev.npz"\neval = "sys_eval.npz"\n')
    out = tmp_path / "out"
    grid(spec, out, capsys)
    (out / rows(out)[0]["per_trial"]).unlink()
    said = grid(spec, out, capsys)
    assert "recomputing 1 cell: its per-trial file" in said
    assert (out / rows(out)[0]["per_trial"]).is_file()


def test_a_first_layout_store_with_duplicate_rows_is_read_once_and_migrated(tmp_path, capsys):
    """A store written before input digests -- with the old row left beside the new one -- still reports."""
    folder = tmp_path / "spec"
    folder.mkdir()
    dev, ev = score_system(folder, "sys", leakage=0.5, seed=4)
    spec = folder / "grid.toml"
    spec.write_text('[systems.sys]\ndev = "sys_dev.npz"\neval = "sys_eval.npz"\n')
    out = tmp_path / "out"
    (out / "cells").mkdir(parents=True)
    legacy = sqlite3.connect(out / "results.sqlite")
    legacy.execute(
        "CREATE TABLE cells (cell_id TEXT PRIMARY KEY, system TEXT, attacker TEXT, mechanism TEXT, calibrator TEXT, "
        "prior TEXT, seed INTEGER, spec_digest TEXT, status TEXT, error TEXT, summary TEXT, per_trial TEXT, "
        "seconds REAL, finished_at REAL)"
    )
    right = evaluate(dev, ev)
    for cell, alid, finished in (("old0", 9.0, 1.0), ("new1", right.summary["alid"], 2.0)):
        np.savez(out / "cells" / f"{cell}.npz", lid=right.lid, trial_ids=right.trial_ids)
        legacy.execute(
            "INSERT INTO cells VALUES (?, 'sys', '-', '-', 'logistic', 'uniform', 0, 'x', 'ok', NULL, ?, ?, 1.0, ?)",
            (cell, json.dumps({"alid": alid, "eer": 0.1, "n_enrolled": 12}), f"cells/{cell}.npz", finished),
        )
    legacy.commit()
    legacy.close()
    with pytest.warns(UserWarning, match="without input digests"):
        found = store.read_finished(out)
    assert [r["summary"]["alid"] for r in found] == [right.summary["alid"]]  # the newest row only
    said = grid(spec, out, capsys)
    assert "migrated" in said and "dropped 1 older duplicate rows" in said
    assert "recomputing 1 cell: stored without input digests" in said
    assert len(rows(out)) == 1 and not (out / "cells" / "old0.npz").exists()
    assert next(iter(summaries(out).values()))["alid"] == pytest.approx(right.summary["alid"], abs=1e-12)


# ------------------------------------------------------------------ data-dir systems
def embedding_dirs(folder: Path, rng) -> list[str]:
    """dev/eval enrolment and trial data dirs (20 speakers); returns the utterance ids."""
    ids = []
    for split in ("dev", "eval"):
        for kind, per in (("enrolls", 3), ("trials", 6)):
            d = folder / f"{split}_{kind}"
            d.mkdir()
            utts = [(f"{split}-{kind}-{s}-{k}", f"{split}spk{s}") for s in range(20) for k in range(per)]
            (d / "wav.scp").write_text("".join(f"{u} none.wav\n" for u, _ in utts))
            (d / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
            ids += [u for u, _ in utts]
    return ids


def test_replaced_embedding_file_recomputes_and_equals_a_fresh_run(tmp_path, capsys):
    from lidframe.attackers.precomputed import PrecomputedEmbeddings
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker

    rng = np.random.default_rng(11)
    folder = tmp_path / "spec"
    folder.mkdir()
    ids = embedding_dirs(folder, rng)
    identity = {f"{split}spk{s}": rng.normal(size=16) for split in ("dev", "eval") for s in range(20)}

    def vectors(leak: float) -> np.ndarray:
        return np.array([leak * identity[f"{u.split('-')[0]}spk{u.split('-')[2]}"] + rng.normal(size=16) for u in ids])

    emb = folder / "emb.npz"
    np.savez(emb, utt_ids=np.array(ids), vectors=vectors(0.0))  # no speaker information: ALID ~ 0
    (folder / "grid.toml").write_text(
        f'[grid]\nattackers = ["precomputed?path={emb}"]\n'
        '[systems.dd]\ndev = { enrol = "dev_enrolls", trials = ["dev_trials"] }\n'
        'eval = { enrol = "eval_enrolls", trials = ["eval_trials"] }\n'
    )
    out = tmp_path / "out"
    grid(folder / "grid.toml", out, capsys)
    stale = next(iter(summaries(out).values()))["alid"]
    replace_file(emb, lambda p: np.savez(p, utt_ids=np.array(ids), vectors=vectors(3.0)))
    said = grid(folder / "grid.toml", out, capsys)
    assert "recomputing 1 cell: attacker file" in said and "emb.npz changed" in said
    assert "2 score sets computed" in said  # the score cache is keyed by the file's digest too
    resumed = next(iter(summaries(out).values()))["alid"]
    fresh_out = tmp_path / "fresh"
    grid(folder / "grid.toml", fresh_out, capsys)
    fresh = next(iter(summaries(fresh_out).values()))["alid"]
    attacker = PrecomputedEmbeddings(path=emb)
    scored = {
        split: attacker.score(
            read_data_dir(folder / f"{split}_trials"), group_by_speaker(read_data_dir(folder / f"{split}_enrolls"))
        )
        for split in ("dev", "eval")
    }
    want = evaluate(scored["dev"], scored["eval"]).summary["alid"]
    assert resumed == fresh == pytest.approx(want, abs=1e-12)
    assert want > 1.0 and abs(stale) < 0.5


def test_a_damaged_score_cache_file_is_scored_again(tmp_path, capsys):
    rng = np.random.default_rng(2)
    folder = tmp_path / "spec"
    folder.mkdir()
    ids = embedding_dirs(folder, rng)
    np.savez(folder / "emb.npz", utt_ids=np.array(ids), vectors=rng.normal(size=(len(ids), 8)))
    (folder / "grid.toml").write_text(
        f'[grid]\nattackers = ["precomputed?path={folder / "emb.npz"}"]\n'
        '[systems.dd]\ndev = { enrol = "dev_enrolls", trials = ["dev_trials"] }\n'
        'eval = { enrol = "eval_enrolls", trials = ["eval_trials"] }\n'
    )
    out = tmp_path / "out"
    grid(folder / "grid.toml", out, capsys)
    reference = next(iter(summaries(out).values()))["alid"]
    cached = sorted((out / "cache" / "scores").iterdir())
    assert len(cached) == 2
    cached[0].write_bytes(b"damaged")
    (out / rows(out)[0]["per_trial"]).unlink()  # so that the cell must be recomputed from the cache
    said = grid(folder / "grid.toml", out, capsys)
    assert "1 score sets computed" in said
    assert next(iter(summaries(out).values()))["alid"] == reference


# ---------------------------------------------------- audio attacker: checkpoint and audio
@pytest.fixture()
def audio_grid(tmp_path):
    """A data-dir system of generated voices scored by a small ECAPA-TDNN with the fixture checkpoint."""
    pytest.importorskip("torch")
    from tests.voices import write_voice

    folder = tmp_path / "spec"
    wavs = folder / "wav"
    wavs.mkdir(parents=True)
    for split, offset in (("dev", 0), ("eval", 10)):
        for kind, per, base in (("enrolls", 2, 0), ("trials", 2, 10)):
            d = folder / f"{split}_{kind}"
            d.mkdir()
            utts = [(f"{split}{kind[0]}{s}_{k}", f"{split}spk{s}") for s in range(4) for k in range(per)]
            for (utt, _), (s, k) in zip(utts, [(s, k) for s in range(4) for k in range(per)]):
                write_voice(wavs / f"{utt}.wav", s + offset, base + k, 0.8)
            (d / "wav.scp").write_text("".join(f"{u} {wavs / u}.wav\n" for u, _ in utts))
            (d / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
    checkpoint = folder / "model.ckpt"
    shutil.copy(FIXTURES / "ecapa.ckpt", checkpoint)
    attacker = f"ecapa?channels=128,128,128,128,384&attention_channels=64&device=cpu&checkpoint={checkpoint}"
    (folder / "grid.toml").write_text(
        f'[grid]\nattackers = ["{attacker}"]\ncalibrators = ["identity"]\n'
        '[systems.voices]\ndev = { enrol = "dev_enrolls", trials = ["dev_trials"] }\n'
        'eval = { enrol = "eval_enrolls", trials = ["eval_trials"] }\n'
    )
    return folder, checkpoint, wavs


def direct_alid(folder: Path, checkpoint: Path) -> float:
    """The cell's number without the grid: score both splits with the attacker, then evaluate."""
    from lidframe.attackers.ecapa import EcapaTdnn
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker

    attacker = EcapaTdnn(channels=(128, 128, 128, 128, 384), attention_channels=64, device="cpu", checkpoint=checkpoint)
    scored = [
        attacker.score(
            read_data_dir(folder / f"{split}_trials"), group_by_speaker(read_data_dir(folder / f"{split}_enrolls"))
        )
        for split in ("dev", "eval")
    ]
    return evaluate(*scored, calibrator="identity").summary["alid"]


@pytest.mark.slow
def test_changed_checkpoint_recomputes_and_equals_a_fresh_run(audio_grid, tmp_path, capsys):
    import torch

    folder, checkpoint, _ = audio_grid
    out = tmp_path / "out"
    grid(folder / "grid.toml", out, capsys)
    before = next(iter(summaries(out).values()))["alid"]
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    generator = torch.Generator().manual_seed(0)
    perturbed = {  # retrained, as it were: new convolution weights (norm statistics kept)
        k: v + 0.5 * v.std() * torch.randn(v.shape, generator=generator) if k.endswith("conv.weight") else v
        for k, v in state.items()
    }
    replace_file(checkpoint, lambda p: torch.save(perturbed, p))
    said = grid(folder / "grid.toml", out, capsys)
    assert "recomputing 1 cell: attacker file" in said and "model.ckpt changed" in said
    resumed = next(iter(summaries(out).values()))["alid"]
    fresh_out = tmp_path / "fresh"
    grid(folder / "grid.toml", fresh_out, capsys)
    fresh = next(iter(summaries(fresh_out).values()))["alid"]
    assert resumed == fresh == pytest.approx(direct_alid(folder, checkpoint), abs=1e-9)
    assert resumed != pytest.approx(before, abs=1e-6)


@pytest.mark.slow
def test_changed_audio_file_recomputes_and_equals_a_fresh_run(audio_grid, tmp_path, capsys):
    from tests.voices import write_voice

    folder, checkpoint, wavs = audio_grid
    out = tmp_path / "out"
    grid(folder / "grid.toml", out, capsys)
    before = next(iter(summaries(out).values()))["alid"]
    # one eval trial now holds another speaker's voice (same length, same path)
    replace_file(wavs / "evalt0_0.wav", lambda p: write_voice(p.with_suffix(".wav"), 13, 77, 0.8))
    said = grid(folder / "grid.toml", out, capsys)
    assert "recomputing 1 cell: eval audio listed in" in said and "eval_trials/wav.scp changed" in said
    resumed = next(iter(summaries(out).values()))["alid"]
    fresh_out = tmp_path / "fresh"
    grid(folder / "grid.toml", fresh_out, capsys)
    fresh = next(iter(summaries(fresh_out).values()))["alid"]
    assert resumed == fresh == pytest.approx(direct_alid(folder, checkpoint), abs=1e-9)
    assert resumed != pytest.approx(before, abs=1e-6)
