"""A spec without ``scenarios`` plans, keys and reports its cells exactly as lidframe did before the axis.

``no_scenario_baseline.json`` was recorded from the code before the scenario axis (issue
26) with this module's :func:`build` spec: its planned cells (ids, names, inputs, with the
data folder written ``<ROOT>`` and lidframe's code version fixed), its fit tasks, its
``table.csv`` and its ``summary.md``.  The score-cache keys hash absolute paths, so they are recomputed here by
the recipe of that code (:func:`old_cache_key`), which reproduced the recorded targets
when the baseline was taken.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lidframe.data.simulate import simulate_system
from lidframe.grid.report.columns import LEGAL_COLUMNS
from tests.bad_input.audio_dirs import write_data_dir

BASELINE = json.loads((Path(__file__).with_name("no_scenario_baseline.json")).read_text())
FIXED_VERSION = "0.0.0+src.fixed"
NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")


def build(root: Path) -> Path:
    """A score-file system and a data-dir system scored by two attackers of no model; the spec file."""
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=6, trials_per_speaker=4)
    dev.save(root / "plain_dev.npz")
    ev.save(root / "plain_eval.npz")
    ids = []
    for split in ("dev", "eval"):
        for kind, per in (("enrol", 2), ("trials", 3)):
            utts = [(f"{split}-{kind}-{s}-{k}", f"{split}spk{s}", "none.wav") for s in range(6) for k in range(per)]
            write_data_dir(root / f"{split}_{kind}", utts)
            ids += [u for u, _, _ in utts]
    rng = np.random.default_rng(5)
    centre = {f"{split}spk{s}": rng.normal(size=8) for split in ("dev", "eval") for s in range(6)}
    vectors = np.array([centre[f"{u.split('-')[0]}spk{u.split('-')[2]}"] + 0.8 * rng.normal(size=8) for u in ids])
    np.savez(root / "emb.npz", utt_ids=np.array(ids), vectors=vectors)
    (root / "grid.toml").write_text(
        '[grid]\nattackers = ["random?dim=8", "precomputed?path=emb.npz"]\n'
        'calibrators = ["logistic", "identity"]\npriors = ["uniform"]\n'
        '[systems.plain]\ndev = "plain_dev.npz"\neval = "plain_eval.npz"\n'
        '[systems.dd]\ndev = { enrol = "dev_enrol", trials = ["dev_trials"] }\n'
        'eval = { enrol = "eval_enrol", trials = ["eval_trials"] }\n'
    )
    return root / "grid.toml"


def _hash(*parts) -> str:
    """The grid's hash of parts before the scenario axis: SHA-256 over each part's JSON, NUL-separated, 32 digits."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(json.dumps(part, sort_keys=True, default=str).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def old_cache_key(inputs: dict, split: str, attacker: str) -> str:
    """The score-cache key of one split before the scenario axis, from a planned cell's inputs."""
    split_inputs = {k: v for k, v in inputs.items() if k.startswith(f"{split} ")}
    attacker_inputs = {k: v for k, v in inputs.items() if k.startswith("attacker ")}

    def digest(found: dict) -> str:
        return _hash(sorted((key, value[1]) for key, value in found.items()))

    return _hash("scores", digest(split_inputs), digest(attacker_inputs), attacker, "-", split, FIXED_VERSION)


@pytest.fixture()
def fixed(tmp_path, monkeypatch):
    """The baseline spec in *tmp_path* (the working directory), lidframe's code version fixed."""
    import lidframe.grid.plan as plan

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(plan, "code_version", lambda: FIXED_VERSION)
    return build(tmp_path)


#: Inputs that are score-set files the test writes with numpy's ``savez``: their bytes (and so their
#: digests) follow numpy's npz writer, which changes between numpy versions, so they are checked against
#: the files as written here rather than against the digests recorded with the baseline's numpy.
WRITTEN_FILES = {"dev file": "plain_dev.npz", "eval file": "plain_eval.npz"}

#: Inputs every cell has had since the baseline was recorded: ``[grid] legal`` (issue 40), on by default.
ADDED_INPUTS = {"setting legal": ["[grid] legal", "true"]}


def normalised(inputs: dict, root: Path) -> dict:
    return {
        k.replace(str(root), "<ROOT>"): [v[0].replace(str(root), "<ROOT>"), "<npz>" if k in WRITTEN_FILES else v[1]]
        for k, v in inputs.items()
    }


def test_cells_of_a_spec_without_scenarios_are_those_of_the_code_before_the_axis(fixed, tmp_path):
    from lidframe.grid.plan import plan_grid
    from lidframe.grid.spec import load_grid_spec

    spec = load_grid_spec(fixed)
    plan = plan_grid(spec, tmp_path / "out")
    cells = list(plan.cells)
    assert [c.cell_id for c in cells] == [c["cell_id"] for c in BASELINE["cells"]]
    assert [c.name for c in cells] == [c["name"] for c in BASELINE["cells"]]
    for cell, recorded in zip(cells, BASELINE["cells"]):
        assert {k: cell.inputs[k] for k in ADDED_INPUTS} == ADDED_INPUTS
        before = {k: v for k, v in cell.inputs.items() if k not in ADDED_INPUTS}
        assert normalised(before, tmp_path) == normalised(recorded["inputs"], tmp_path)
        for key, name in WRITTEN_FILES.items():
            if key in cell.inputs:  # the digest of the file itself, as written by this numpy
                assert cell.inputs[key][1] == hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
        assert cell.inputs_digest == _hash(sorted((key, value[1]) for key, value in cell.inputs.items()))
    assert [[c.cell_id for c in t.cells] for t in plan.tasks] == [t["cells"] for t in BASELINE["tasks"]]
    for task in plan.tasks:
        attacker = task.cells[0].attacker
        if attacker is None:  # a score-file system: its files, read in place
            assert [task.dev, task.eval] == [str(tmp_path / "plain_dev.npz"), str(tmp_path / "plain_eval.npz")]
            continue
        inputs = task.cells[0].inputs
        for split, target in (("dev", task.dev), ("eval", task.eval)):
            assert (
                Path(target) == tmp_path / "out" / "cache" / "scores" / f"{old_cache_key(inputs, split, attacker)}.npz"
            )


def test_results_of_a_spec_without_scenarios_are_those_of_the_code_before_the_axis(fixed, tmp_path):
    from lidframe.grid.report import write_report
    from lidframe.grid.runner import run_grid

    run = run_grid(fixed, tmp_path / "out")
    assert run.counts() == BASELINE["counts"]
    write_report(tmp_path / "out", figures=False)
    table = (tmp_path / "out" / "report" / "table.csv").read_text()
    recorded = BASELINE["table_csv"]
    added = ["min_dcf", "act_dcf"]  # binary metrics added after the baseline was recorded (issue 27)
    added += list(LEGAL_COLUMNS)  # and the law's criteria (issue 40)
    header = [column for column in table.splitlines()[0].split(",") if column not in added]
    assert header == recorded.splitlines()[0].split(",")  # the same columns: no scenario column
    got = pd.read_csv(io.StringIO(table)).drop(columns=added)
    want = pd.read_csv(io.StringIO(recorded))
    numbers = want.select_dtypes("number").columns
    pd.testing.assert_frame_equal(got.drop(columns=numbers), want.drop(columns=numbers))
    np.testing.assert_allclose(got[numbers].to_numpy(float), want[numbers].to_numpy(float), rtol=1e-7, atol=1e-9)
    summary = (tmp_path / "out" / "report" / "summary.md").read_text().splitlines()
    recorded_summary = BASELINE["summary_md"].splitlines()
    assert len(summary) == len(recorded_summary)
    for line, want_line in zip(summary, recorded_summary):  # the same headings and rows; numbers to their 2 decimals
        assert len(line.split("|")) == len(want_line.split("|"))
        for cell, want_cell in zip(line.split("|"), want_line.split("|")):
            if NUMBER.fullmatch(want_cell.strip()):
                assert float(cell) == pytest.approx(float(want_cell), abs=0.011)
            else:
                assert cell == want_cell
