"""What a component spec reads and which code runs it (lidframe.registry.spec_inputs), as the grid keys cells by."""

import sys
from pathlib import Path

import numpy as np
import pytest

from lidframe import registry
from lidframe.errors import InputError


def test_parameter_values_naming_existing_files_are_inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("ids.txt").write_text("a\n")
    (tmp_path / "folder").mkdir()
    found = registry.spec_inputs("prior", "watchlist?file=ids.txt&weight=3")
    assert found.files == (tmp_path / "ids.txt",)  # relative to the working directory, made absolute
    assert found.version.startswith("lidframe ")
    np.savez("a.npz", utt_ids=np.array(["u"]), vectors=np.ones((1, 2)))
    np.savez("b.npz", utt_ids=np.array(["v"]), vectors=np.ones((1, 2)))
    both = registry.spec_inputs("attacker", "precomputed?path=a.npz,b.npz")
    assert both.files == (tmp_path / "a.npz", tmp_path / "b.npz") and both.reads_audio is False
    # a folder (a cache directory, say) is not a file input; nor is a word that names no file
    neural = registry.spec_inputs("attacker", "random?seed=3")
    assert neural.files == () and neural.reads_audio is False


def test_declared_files_count_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("emb.npy", np.ones((2, 3)))
    Path("emb.ids").write_text("u1\nu2\n")
    found = registry.spec_inputs("attacker", "precomputed?path=emb.npy")
    assert set(found.files) == {tmp_path / "emb.npy", tmp_path / "emb.ids"}  # the .ids beside the .npy


def test_a_declared_file_that_does_not_exist_is_refused(tmp_path, monkeypatch):
    module = tmp_path / "declaring_plugin.py"
    module.write_text(
        "from lidframe.calibrators import Logistic\n"
        "class WithTable(Logistic):\n"
        "    @classmethod\n"
        "    def input_files(cls, params):\n"
        "        return ['lookup-table.csv']\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="input file 'lookup-table.csv' does not exist"):
        registry.spec_inputs("calibrator", "declaring_plugin:WithTable")
    Path("lookup-table.csv").write_text("x\n")
    assert registry.spec_inputs("calibrator", "declaring_plugin:WithTable").files == (tmp_path / "lookup-table.csv",)
    sys.modules.pop("declaring_plugin", None)


def test_a_local_module_is_versioned_by_its_source(tmp_path, monkeypatch):
    module = tmp_path / "local_calibrator.py"
    module.write_text("from lidframe.calibrators import Logistic as Local\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = registry.spec_inputs("calibrator", "local_calibrator:Local").version
    module.write_text("from lidframe.calibrators import Logistic as Local\n# edited\n")
    second = registry.spec_inputs("calibrator", "local_calibrator:Local").version
    assert first.startswith("module local_calibrator sha256:") and first != second
    sys.modules.pop("local_calibrator", None)


def test_an_installed_distribution_is_versioned_by_its_release(tmp_path, monkeypatch):
    import importlib

    site = tmp_path / "site"
    (site / "labcal").mkdir(parents=True)
    (site / "labcal" / "__init__.py").write_text("from lidframe.calibrators import Logistic as Lab\n")
    info = site / "labcal_dist-3.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: labcal-dist\nVersion: 3.1\n")
    (info / "top_level.txt").write_text("labcal\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    registry.refresh()  # rereads the installed distributions
    try:
        assert registry.spec_inputs("calibrator", "labcal:Lab").version == "labcal-dist 3.1"
    finally:
        registry.refresh()  # rereads the installed distributions
        sys.modules.pop("labcal", None)


def test_bad_parameters_are_refused_without_building(tmp_path):
    with pytest.raises(InputError, match="parameter 'dim' takes int"):
        registry.spec_inputs("attacker", "random?dim=wide")
    pytest.importorskip("torch", reason="ecapa's parameters are read from its class, which needs torch")
    with pytest.raises(InputError, match="no parameter 'colour'"):
        registry.spec_inputs("attacker", "ecapa?colour=red")


def test_a_data_dirs_spk2utt_is_an_input_when_present(tmp_path):
    # read_data_dir checks spk2utt against utt2spk, so it is something the cell read
    from lidframe.grid.runner import plan_grid
    from lidframe.grid.spec import load_grid_spec

    folder = tmp_path / "spec"
    for split in ("dev", "eval"):
        for kind in ("enrolls", "trials"):
            d = folder / f"{split}_{kind}"
            d.mkdir(parents=True)
            utts = [(f"{split}-{kind}-{s}-{k}", f"{split}spk{s}") for s in range(3) for k in range(2)]
            (d / "wav.scp").write_text("".join(f"{u} none.wav\n" for u, _ in utts))
            (d / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
    spk2utt = folder / "eval_trials" / "spk2utt"
    spk2utt.write_text("".join(f"evalspk{s} eval-trials-{s}-0 eval-trials-{s}-1\n" for s in range(3)))
    np.savez(folder / "emb.npz", utt_ids=np.array(["x"]), vectors=np.zeros((1, 4)))
    (folder / "grid.toml").write_text(
        f'[grid]\ncalibrators = ["logistic"]\nattackers = ["precomputed?path={folder / "emb.npz"}"]\n'
        '[systems.sim]\ndev = { enrol = "dev_enrolls", trials = ["dev_trials"] }\n'
        'eval = { enrol = "eval_enrolls", trials = ["eval_trials"] }\n'
    )

    def cell_inputs():
        plan = plan_grid(load_grid_spec(folder / "grid.toml"), tmp_path / "out")
        (cell,) = plan.cells
        return cell.inputs, cell.inputs_digest

    inputs, before = cell_inputs()
    assert any(key.endswith("spk2utt") for key in inputs)
    spk2utt.write_text("".join(f"evalspk{s} eval-trials-{s}-1 eval-trials-{s}-0\n" for s in range(3)))
    assert cell_inputs()[1] != before


def test_a_score_file_written_again_with_new_provenance_is_a_new_input(tmp_path):
    """A score-set input is keyed by its bytes, provenance included (issue 41): rewritten, its cells are recomputed.

    The key of a file without provenance is still the SHA-256 of its bytes, as every stored
    cell recorded it; a file scored again (the same scores, a new time in its provenance)
    is a new input, so no result computed from the old file is reused for it.
    """
    import hashlib

    import attrs

    from lidframe.data.digests import DigestCache
    from lidframe.data.provenance import AttackerRecord, ScoreProvenance
    from lidframe.data.simulate import simulate_system
    from lidframe.grid.inputs import InputDigests

    _, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=4, trials_per_speaker=2)
    path = tmp_path / "eval.npz"

    def key() -> str:
        return InputDigests(DigestCache()).source("eval", str(path), reads_audio=False)["eval file"][1]

    ev.save(path)
    assert key() == hashlib.sha256(path.read_bytes()).hexdigest()  # an old file: the key it always had
    record = ScoreProvenance.make(AttackerRecord.of("random"), [], command="lidframe score ...")
    ev.save(path, provenance=record)
    first = key()
    assert first == hashlib.sha256(path.read_bytes()).hexdigest()
    ev.save(path, provenance=attrs.evolve(record, created="2030-01-01T00:00:00+00:00"))
    assert key() != first
