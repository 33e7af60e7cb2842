"""Benchmark: planning a grid, per cell, at 1,000, 10,000 and 100,000 cells.

Four score-file systems x 5 calibrators x 5 priors x S seeds (S = 10, 100, 1,000), the
spec read once (``fit_calibrators=False``) and planned with ``plan_grid`` (an in-memory
digest cache: the eight score files are hashed in every run, as on a grid's first run).
Issue 39 asks for under 0.2 ms per cell.

The anchor, measured in the same run on the same cells: the planner's per-cell work
before issue 39 -- each cell's inputs merged into a dict of its own and hashed
(``inputs_digest``), its id's JSON written whole and hashed (``json.dumps`` of the
components) and its record built -- which planning now does once per (task, prior)
(the inputs) or in part (the id's JSON).  Medians of ``--repeats`` interleaved runs;
prints ms per cell and RATIO anchor / plan at each size.

    python bench/grid_planning.py [--repeats 5] [--sizes 1000,10000,100000] [--quick]

``--quick`` (1,000 and 10,000 cells, 2 runs) checks the script in seconds; its times mean nothing.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.provenance import header
from lidframe.data.simulate import simulate_system
from lidframe.grid.inputs import inputs_digest
from lidframe.grid.plan import plan_grid
from lidframe.grid.records import Cell, GridPlan
from lidframe.grid.spec.loading import load_grid_spec
from lidframe.grid.spec.records import GridSpec

SYSTEMS = ("a", "b", "c", "d")
CALIBRATORS = ("logistic", "isotonic", "identity", "temperature", "beta")
PRIORS = (
    "uniform",
    "uniform?outside=0.1",
    "uniform?outside=0.2",
    "uniform?outside=auto",
    "watchlist?ids=eval-spk000&weight=4",
)


def write_scores(folder: Path) -> None:
    """The dev and eval score files of every system (small: planning never opens them)."""
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=12, trials_per_speaker=10)
    for system in SYSTEMS:
        dev.save(folder / f"{system}_dev.npz")
        ev.save(folder / f"{system}_eval.npz")


def spec_of(folder: Path, n_cells: int) -> GridSpec:
    """The spec of *n_cells* cells (systems x calibrators x priors x seeds), read and checked."""
    n_seeds = n_cells // (len(SYSTEMS) * len(CALIBRATORS) * len(PRIORS))
    lines = [
        "[grid]",
        f"calibrators = {json.dumps(list(CALIBRATORS))}",
        f"priors = {json.dumps(list(PRIORS))}",
        f"seeds = {json.dumps(list(range(n_seeds)))}",
    ]
    for system in SYSTEMS:
        lines += [f"[systems.{system}]", f'dev = "{system}_dev.npz"', f'eval = "{system}_eval.npz"']
    path = folder / f"grid_{n_cells}.toml"
    path.write_text("\n".join(lines) + "\n")
    spec = load_grid_spec(path, fit_calibrators=False)
    assert spec.n_cells() == n_seeds * len(SYSTEMS) * len(CALIBRATORS) * len(PRIORS)
    return spec


def per_cell_recipe(plan: GridPlan) -> int:
    """The anchor: each cell's inputs merged, hashed, its id's JSON written whole and hashed, its record built."""
    n = 0
    for cell in plan.cells:
        inputs = dict(cell.inputs)  # a dict of its own, as each cell had
        components = ["cell", cell.system, "-", "-", cell.calibrator, cell.prior, cell.seed]
        Cell(
            cell_id=hashlib.sha256(json.dumps(components).encode()).hexdigest()[:32],
            system=cell.system,
            attacker=None,
            mechanism=None,
            calibrator=cell.calibrator,
            prior=cell.prior,
            seed=cell.seed,
            inputs=inputs,
            inputs_digest=inputs_digest(inputs),
        )
        n += 1
    return n


def timed(function) -> tuple[float, object]:
    gc.collect()
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", default="1000,10000,100000", help="cells per grid, comma-separated")
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 cells, 2 runs: checks the script")
    args = parser.parse_args()
    sizes = [1000, 10000] if args.quick else [int(s) for s in args.sizes.split(",")]
    repeats = 2 if args.quick else args.repeats
    print(header("grid planning per cell: plan_grid vs the per-cell recipe before issue 39 (anchor)"))
    print(f"{len(SYSTEMS)} score-file systems x {len(CALIBRATORS)} calibrators x {len(PRIORS)} priors x seeds")
    print(f"{'cells':>8s} {'plan ms/cell':>13s} {'anchor ms/cell':>15s} {'RATIO anchor/plan':>18s}  plan runs (s)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_scores(folder)
        for size in sizes:
            spec = spec_of(folder, size)
            plans, anchors = [], []
            for _ in range(repeats):  # interleaved: a slow spell of the host hits both
                seconds, plan = timed(lambda spec=spec: plan_grid(spec, folder / "out"))
                plans.append(seconds)
                anchors.append(timed(lambda plan=plan: per_cell_recipe(plan))[0])
            n = spec.n_cells()
            m_plan, m_anchor = statistics.median(plans), statistics.median(anchors)
            runs = ", ".join(f"{t:.3f}" for t in plans)
            print(f"{n:8d} {m_plan / n * 1e3:13.4f} {m_anchor / n * 1e3:15.4f} {m_anchor / m_plan:18.2f}  {runs}")


if __name__ == "__main__":
    main()
