"""Planning a large grid: it says so on stderr, shows bars with --progress (moving while a task of many seeds is
planned), keys every cell as before, and the report does not refit calibrators."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe.cli import main
from lidframe.grid import plan as plan_module
from lidframe.grid import store
from lidframe.grid.plan import plan_grid
from lidframe.grid.records import Cell
from lidframe.grid.runner import check_freshness, run_grid
from lidframe.grid.spec import loading as grid_spec
from lidframe.grid.spec.loading import load_grid_spec
from tests.grid.test_grid import make_spec  # 3 systems x 2 calibrators x 2 priors x 1 seed: 12 cells


def test_a_large_grid_says_on_stderr_what_it_checks_and_plans(tmp_path, capsys, monkeypatch):
    spec = make_spec(tmp_path / "spec")
    monkeypatch.setattr(grid_spec, "NOTE_CELLS", 12)  # 12 cells count as large
    assert main(["grid", str(spec), "--out", str(tmp_path / "out")]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("lidframe: ") and "12 cells" in lines[0] and "planning" in lines[0]
    assert "3 systems x 2 calibrators x 2 priors x 1 seed" in lines[0]
    monkeypatch.setattr(grid_spec, "NOTE_CELLS", 13)  # now small: silent as before
    assert main(["grid", str(spec), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err == ""


def test_progress_shows_bars_while_checking_and_planning(tmp_path, capsys):
    pytest.importorskip("tqdm")
    spec = make_spec(tmp_path / "spec")
    assert main(["grid", str(spec), "--out", str(tmp_path / "out"), "--progress"]) == 0
    err = capsys.readouterr().err
    assert "12 cells" in err.splitlines()[0]  # the note, then the bars
    for bar in ("checking calibrators", "planning cells", "grid cells"):
        assert f"{bar}: 100%" in err, (bar, err)


def test_checking_a_finished_grid_does_not_fit_its_calibrators_again(tmp_path, monkeypatch):
    """The report plans the spec to compare digests; fitting each calibrator (the slow part of a check) is not needed."""
    spec = make_spec(tmp_path / "spec")
    run_grid(spec, tmp_path / "out")
    from lidframe.core import evaluation

    fitted = []
    original = evaluation.fit_calibrator
    monkeypatch.setattr(evaluation, "fit_calibrator", lambda *a, **k: fitted.append(a) or original(*a, **k))
    freshness = check_freshness(tmp_path / "out")
    assert freshness.unchecked is None and freshness.stale == {}
    assert fitted == []


# ------------------------------------------------------------------ planning large grids (issue 39)
SCORE_SYSTEMS = ("weak", "strong", "uneven")
CALIBRATORS = ("logistic", "isotonic", "identity")
PRIORS = ("uniform", "uniform?outside=0.1", "watchlist?ids=eval-spk000,eval-spk001&weight=4")


@pytest.fixture(scope="module")
def score_files(tmp_path_factory):
    """The folder holding ``<system>_dev.npz`` and ``<system>_eval.npz`` of :data:`SCORE_SYSTEMS`."""
    folder = tmp_path_factory.mktemp("scores")
    make_spec(folder)  # writes the three systems' score files (and a spec not used here)
    return folder


def write_spec(folder: Path, systems, calibrators, priors, seeds) -> Path:
    """A spec of score-file systems over the given axes, in *folder*."""
    lines = ["[grid]", f"calibrators = {json.dumps(list(calibrators))}", f"priors = {json.dumps(list(priors))}"]
    lines.append(f"seeds = {json.dumps(list(seeds))}")
    for system in systems:
        lines += [f"[systems.{system}]", f'dev = "{system}_dev.npz"', f'eval = "{system}_eval.npz"']
    path = folder / f"grid-{hashlib.sha256(chr(10).join(lines).encode()).hexdigest()[:12]}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def independent_digest(pairs) -> str:
    """32 hex digits of SHA-256 over the JSON of the sorted (key, digest) pairs and a NUL, as every lidframe keyed cells."""
    return hashlib.sha256(json.dumps(sorted(pairs), sort_keys=True).encode() + b"\0").hexdigest()[:32]


@settings(max_examples=30, deadline=None)
@given(
    systems=st.lists(st.sampled_from(SCORE_SYSTEMS), min_size=1, max_size=3, unique=True),
    calibrators=st.lists(st.sampled_from(CALIBRATORS), min_size=1, max_size=3, unique=True),
    priors=st.lists(st.sampled_from(PRIORS), min_size=1, max_size=3, unique=True),
    seeds=st.one_of(
        st.lists(st.integers(0, 2**40), min_size=1, max_size=6, unique=True),
        st.integers(1, 1100).map(lambda n: list(range(n))),  # up to and over one progress step
    ),
)
def test_planned_cells_have_the_ids_and_input_digests_every_lidframe_computed(
    score_files, systems, calibrators, priors, seeds
):
    """Each cell's id and inputs digest are recomputed here from the files' bytes and the components' JSON."""
    from lidframe._version import code_version
    from lidframe.registry import spec_inputs

    spec = load_grid_spec(write_spec(score_files, systems, calibrators, priors, seeds), fit_calibrators=False)
    axes = (("calibrator", calibrators), ("prior", priors))
    plan = plan_grid(spec, score_files / "out")
    file_digest = {
        (system, split): hashlib.sha256((score_files / f"{system}_{split}.npz").read_bytes()).hexdigest()
        for system in systems
        for split in ("dev", "eval")
    }
    version = {(kind, c): spec_inputs(kind, c).version for kind, axis in axes for c in axis}
    expected = {}
    for system, calibrator, prior in itertools.product(systems, calibrators, priors):
        inputs = {  # the same for every seed: the seed is no input
            "dev file": file_digest[system, "dev"],
            "eval file": file_digest[system, "eval"],
            "calibrator code": version["calibrator", calibrator],
            "prior code": version["prior", prior],
            "setting znorm_ddof": "1",
            "setting ci": "null",
            "setting longitudinal": "null",
            "setting legal": "true",
            "lidframe code": f"lidframe {code_version()}",
        }
        digest = independent_digest(inputs.items())
        for seed in seeds:
            parts = ["cell", system, "-", "-", calibrator, prior, seed]
            expected[hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]] = (parts[1:], digest)
    cells = list(plan.cells)
    assert len(cells) == len(expected)
    got = {
        c.cell_id: ([c.system, c.attacker or "-", c.mechanism or "-", c.calibrator, c.prior, c.seed], c.inputs_digest)
        for c in cells
    }
    assert got == expected
    for cell in cells:  # the digest is that of the cell's own inputs
        assert cell.inputs_digest == independent_digest((k, v[1]) for k, v in cell.inputs.items())


@given(
    components=st.lists(st.text(), min_size=5, max_size=5),
    attacker_none=st.booleans(),
    mechanism_none=st.booleans(),
    seeds=st.lists(st.integers(0, 2**63), max_size=5),
    scenario=st.none() | st.text(),
)
def test_cell_ids_are_the_sha256_of_the_components_json(components, attacker_none, mechanism_none, seeds, scenario):
    """store.cell_ids writes the components' JSON once; the bytes hashed are json.dumps of the whole list."""
    system, attacker, mechanism, calibrator, prior = components
    attacker = None if attacker_none else attacker
    mechanism = None if mechanism_none else mechanism
    expected = []
    for seed in seeds:
        parts = ["cell", system, "-" if attacker is None else attacker, "-" if mechanism is None else mechanism]
        parts += [calibrator, prior, seed]
        parts += [] if scenario is None else [scenario]
        expected.append(hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32])
    assert store.cell_ids(system, attacker, mechanism, calibrator, prior, seeds, scenario) == expected
    for seed, key in zip(seeds, expected, strict=True):
        assert store.cell_id(system, attacker, mechanism, calibrator, prior, seed, scenario) == key


def test_the_planning_bar_moves_while_a_task_of_many_seeds_is_planned(score_files, monkeypatch):
    """One calibrator task of 3,500 cells: the bar is told of them in steps, before the last cell exists."""
    spec = load_grid_spec(
        write_spec(score_files, ["weak"], ["logistic"], ["uniform"], range(3500)), fit_calibrators=False
    )
    made = []  # cells built so far
    told = []  # (cells told to the bar, cells built by then)

    def counting_cell(**fields):
        made.append(fields["seed"])
        return Cell(**fields)

    @contextlib.contextmanager
    def captured_bar(total, desc, unit, *, enabled):
        assert (total, desc, enabled) == (3500, "planning cells", True)
        yield lambda n: told.append((n, len(made)))

    monkeypatch.setattr(plan_module, "Cell", counting_cell)
    monkeypatch.setattr(plan_module, "progress_bar", captured_bar)
    plan = plan_grid(spec, score_files / "out", progress=True)
    assert plan.n_cells == 3500 and sum(n for n, _ in told) == 3500
    assert told[0][1] < 3500  # told before the task was planned whole
    assert all(n <= plan_module.PROGRESS_STEP for n, _ in told)
    assert [built for _, built in told] == list(itertools.accumulate(n for n, _ in told))  # never ahead, never behind


def test_planning_hashes_the_inputs_once_per_calibrator_and_prior(score_files, monkeypatch):
    """A cell's inputs do not depend on its seed: 2 calibrators x 2 priors x 300 seeds hash 4 inputs records, not 1,200."""
    spec = load_grid_spec(
        write_spec(score_files, ["weak"], ["logistic", "identity"], PRIORS[:2], range(300)), fit_calibrators=False
    )
    hashed = []
    original = plan_module.inputs_digest
    monkeypatch.setattr(plan_module, "inputs_digest", lambda inputs: hashed.append(1) or original(inputs))
    plan = plan_grid(spec, score_files / "out")
    assert plan.n_cells == 1200
    assert len(hashed) == 4
