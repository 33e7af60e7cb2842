"""Benchmark: the open-set streaming LID pass against the closed-set one (anchor), from embeddings.

An eval embedding set of T trials against N enrolled speakers, a share of them (default
20 %) *outsider trials* whose speaker is not enrolled; d = 192 (ECAPA-TDNN), seeded.
Calibrators fitted on a small dev set with outsider trials (``fit_calibrator(...,
outsider_pairs=True)``): logistic (an affine map, folded into the products) and
isotonic (a non-affine map, applied to every tile).  The same fitted calibrator serves
the closed and the open runs, so only the pass differs.

``lid_from_embeddings`` is timed three ways, interleaved run by run (closed enrolled,
closed all, open, closed enrolled, ...), medians of ``--repeats`` runs:

closed, enrolled rows
    ``open_set=False`` on the T_c enrolled trials only: what the closed set runs
    (outsider trials are skipped, they have no LID there).  The per-call anchor.
closed, all rows
    ``open_set=False`` on all T trials, each outsider trial given a stand-in enrolled
    column (same T x N products, logsumexp and rank count; its LID is not used).  The
    per-row anchor: the same work as the open pass but the open-set statistics.
open, all rows
    ``open_set=True`` on all T trials (outsider trials get their log evidence and top
    posterior; their closed LID is NaN).

Printed ratios: open / closed-enrolled per call (includes the T / T_c more rows the open
set scores), open / closed-all (per row, the fair measure of what the open-set
statistics cost) and the per-row ratio from the enrolled anchor, (open / T) / (closed /
T_c).  Then the whole ``evaluate_fitted(..., binary_metrics=False)`` with
``Uniform(outside=0.2)`` against ``"uniform"`` on the same eval set (closed: enrolled
rows only) and on the eval set with outsider trials relabelled as enrolled speakers
(closed, all rows).  Paths: numpy float64 and float32, torch float32 on the CPU if torch
is installed.

    python bench/openset_streaming.py [--size 16384] [--trials T] [--enrolled N] [--dim 192]
                                      [--outsider-share 0.2] [--repeats 5] [--threads 2]
                                      [--paths numpy-float64,numpy-float32,torch-float32]
                                      [--calibrators logistic,isotonic] [--no-evaluate | --no-streaming]
                                      [--quick]

``--quick`` (T = N = 1024, 2 runs) checks the script in seconds; its times mean nothing.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.provenance import header
from lidframe import Uniform
from lidframe.core.engine import Engine, torch_available
from lidframe.core.evaluation import evaluate_fitted, fit_calibrator
from lidframe.core.streaming import lid_from_embeddings
from lidframe.data.embedset import EmbeddingSet

PATHS = ("numpy-float64", "numpy-float32", "torch-float32")
CALIBRATORS = ("logistic", "isotonic")
VARIANTS = ("closed, enrolled rows", "closed, all rows", "open, all rows")


def embedding_set(rng, n_trials, n_enrolled, dim, outsider_share, prefix, noise=3.0) -> EmbeddingSet:
    """Gaussian speaker profiles; a trial is its speaker's profile plus noise; *outsider_share* of trials by non-enrolled speakers."""
    n_outsider_speakers = max(1, n_enrolled // 4)
    profiles = rng.normal(size=(n_enrolled + n_outsider_speakers, dim))
    n_outsider_trials = round(outsider_share * n_trials)
    speaker = rng.integers(0, n_enrolled, n_trials)
    outsider_rows = rng.choice(n_trials, n_outsider_trials, replace=False)
    speaker[outsider_rows] = n_enrolled + rng.integers(0, n_outsider_speakers, n_outsider_trials)
    trial = profiles[speaker] + noise * rng.normal(size=(n_trials, dim))
    ids = np.array([f"{prefix}{j}" for j in range(n_enrolled)] + [f"{prefix}o{k}" for k in range(n_outsider_speakers)])
    return EmbeddingSet(trial, profiles[:n_enrolled], ids[:n_enrolled], ids[speaker])


def relabelled(ev: EmbeddingSet, rng) -> EmbeddingSet:
    """*ev* with every outsider trial given a random enrolled speaker (same vectors): a closed set of all T rows."""
    speakers = ev.trial_speakers.copy()
    outsider = ev.is_outsider
    speakers[outsider] = ev.enrolled[rng.integers(0, ev.n_enrolled, int(outsider.sum()))]
    return EmbeddingSet(ev.trial_vectors, ev.enrol_vectors, ev.enrolled, speakers, ev.trial_ids)


def engine_of(path: str) -> Engine:
    kernel, precision = path.split("-")
    return Engine(device="cpu", kernel=kernel, precision=precision)


def interleaved(functions: dict, repeats: int) -> tuple[dict, dict]:
    """Run each function once per round, in order, for *repeats* rounds: ({name: times}, {name: last output})."""
    times: dict = {name: [] for name in functions}
    outputs: dict = {}
    for _ in range(repeats):
        for name, function in functions.items():
            gc.collect()
            start = time.perf_counter()
            outputs[name] = function()
            times[name].append(time.perf_counter() - start)
    return times, outputs


def ratio_line(label, times, n_rows, n_closed) -> str:
    closed_enrolled, closed_all, open_all = (statistics.median(times[v]) for v in VARIANTS)
    per_call = open_all / closed_enrolled
    per_row_all = open_all / closed_all
    per_row_enrolled = (open_all / n_rows) / (closed_enrolled / n_closed)
    return (
        f"{label:32s} {closed_enrolled:8.3f} s {closed_all:8.3f} s {open_all:8.3f} s "
        f"{per_call:9.3f} {per_row_all:9.3f} {per_row_enrolled:9.3f}"
    )


def paired(times) -> str:
    """Median over rounds of each round's open / closed ratios (neighbours in time: robust to slow drifts in load)."""
    closed_enrolled, closed_all, open_all = (np.asarray(times[v]) for v in VARIANTS)
    return (
        f"paired medians open/cTc {np.median(open_all / closed_enrolled):.3f}, "
        f"open/cT {np.median(open_all / closed_all):.3f}"
    )


def runs_text(times) -> str:
    return "; ".join(f"{v}: " + ", ".join(f"{t:.3f}" for t in times[v]) for v in VARIANTS)


def table_header(first: str) -> str:
    return (
        f"{first:32s} {'closed Tc':>10s} {'closed T':>10s} {'open T':>10s} "
        f"{'open/cTc':>9s} {'open/cT':>9s} {'row/cTc':>9s}\n"
        f"{'':32s} {'(anchor)':>10s} {'(anchor)':>10s} {'':>10s} {'per call':>9s} {'per row':>9s} {'per row':>9s}"
    )


def bench_streaming(ev, fitted_by_name, paths, args, log_prior):
    """lid_from_embeddings: closed (enrolled rows), closed (all rows), open (all rows), interleaved."""
    trial = ev.trial_vectors
    enrol = ev.enrol_vectors
    true_index = ev.true_index
    enrolled_rows = np.flatnonzero(true_index >= 0)
    trial_closed, true_closed = trial[enrolled_rows], true_index[enrolled_rows]
    stand_in = np.where(true_index >= 0, true_index, np.random.default_rng(1).integers(0, ev.n_enrolled, ev.n_trials))
    n_rows, n_closed = ev.n_trials, enrolled_rows.size
    print(f"\nlid_from_embeddings, medians of {args.repeats} interleaved runs (T = {n_rows}, T_c = {n_closed})")
    print(table_header("path, calibrator"))
    lines, all_runs = [], []
    for path in paths:
        engine = engine_of(path)
        for name, fitted in fitted_by_name.items():

            def call(vectors, index, open_set, fitted=fitted, engine=engine):
                return lid_from_embeddings(vectors, enrol, index, fitted, log_prior, engine=engine, open_set=open_set)

            functions = {
                VARIANTS[0]: lambda call=call: call(trial_closed, true_closed, False),
                VARIANTS[1]: lambda call=call: call(trial, stand_in, False),
                VARIANTS[2]: lambda call=call: call(trial, true_index, True),
            }
            times, outputs = interleaved(functions, args.repeats)
            # the open pass's closed-set LIDs of enrolled trials are the closed pass's
            diff = np.abs(outputs[VARIANTS[2]].lid_bits[enrolled_rows] - outputs[VARIANTS[0]].lid_bits).max()
            line = ratio_line(f"{path}, {name}", times, n_rows, n_closed)
            print(line, flush=True)
            lines.append(line)
            all_runs.append(
                f"  {path}, {name}: max |open - closed| LID of enrolled trials {diff:.1e} bit; {paired(times)}; "
                f"runs {runs_text(times)}"
            )
    print("\n".join(all_runs))


def bench_evaluate(ev, ev_relabelled, fitted_by_name, paths, args):
    """evaluate_fitted(binary_metrics=False): "uniform" vs Uniform(outside=...), interleaved."""
    open_prior = Uniform(outside=args.outsider_share)
    n_rows, n_closed = ev.n_trials, ev.n_trials - ev.n_outsider_trials
    print(f"\nevaluate_fitted(binary_metrics=False), medians of {args.repeats} interleaved runs")
    print(f"closed: prior 'uniform'; open: Uniform(outside={args.outsider_share}); closed T: outsiders relabelled")
    print(table_header("path, calibrator"))
    all_runs = []
    for path in paths:
        engine = engine_of(path)
        for name, fitted in fitted_by_name.items():

            def run(data, prior, fitted=fitted, engine=engine):
                return evaluate_fitted(data, fitted, prior=prior, binary_metrics=False, engine=engine).summary

            functions = {
                VARIANTS[0]: lambda run=run: run(ev, "uniform"),
                VARIANTS[1]: lambda run=run: run(ev_relabelled, "uniform"),
                VARIANTS[2]: lambda run=run: run(ev, open_prior),
            }
            times, outputs = interleaved(functions, args.repeats)
            print(ratio_line(f"{path}, {name}", times, n_rows, n_closed), flush=True)
            view = outputs[VARIANTS[2]].open_set
            all_runs.append(
                f"  {path}, {name}: ALID closed {outputs[VARIANTS[0]].alid:.4f}, open {outputs[VARIANTS[2]].alid:.4f} "
                f"(enrolled {view.enrolled.alid:.4f}, outsider {view.outsider.alid:.4f}), misattribution "
                f"{view.misattribution_rate:.4f}; {paired(times)}; runs {runs_text(times)}"
            )
    print("\n".join(all_runs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=16384, help="T = N (default 16384)")
    parser.add_argument("--trials", type=int, default=None, help="T (default --size)")
    parser.add_argument("--enrolled", type=int, default=None, help="N (default --size)")
    parser.add_argument("--dim", type=int, default=192)
    parser.add_argument("--outsider-share", type=float, default=0.2, help="share of outsider trials, and pi_0")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated subset of {','.join(PATHS)}")
    parser.add_argument("--calibrators", default=",".join(CALIBRATORS))
    parser.add_argument("--no-evaluate", action="store_true", help="time lid_from_embeddings only")
    parser.add_argument("--no-streaming", action="store_true", help="time evaluate_fitted only")
    parser.add_argument("--quick", action="store_true", help="T = N = 1024, 2 runs: a check, not a measurement")
    args = parser.parse_args()
    if args.quick:
        args.size, args.repeats = 1024, 2
    n_trials = args.trials or args.size
    n_enrolled = args.enrolled or args.size
    paths = [p for p in args.paths.split(",") if p]
    unknown = sorted(set(paths) - set(PATHS))
    if unknown:
        parser.error(f"unknown paths {unknown}; choose from {PATHS}")
    torch_version = "not installed"
    if torch_available():
        import torch

        torch.set_num_threads(args.threads)
        torch_version = f"{torch.__version__} on {args.threads} threads"
    else:
        paths = [p for p in paths if not p.startswith("torch")]
    rng = np.random.default_rng(0)
    dev = embedding_set(rng, 2048, 512, args.dim, args.outsider_share, "d").to_scoreset()
    fitted_by_name = {
        name: fit_calibrator(dev, name, outsider_pairs=True) for name in args.calibrators.split(",") if name
    }
    ev = embedding_set(rng, n_trials, n_enrolled, args.dim, args.outsider_share, "e")
    ev_relabelled = relabelled(ev, np.random.default_rng(2))
    log_prior = np.full(n_enrolled, -np.log(n_enrolled))
    print(header(f"open-set streaming benchmark: open vs closed pass, d = {args.dim}"))
    print(
        f"torch {torch_version}; T = {n_trials}, N = {n_enrolled}, {ev.n_outsider_trials} outsider trials "
        f"({ev.n_outsider_trials / n_trials:.1%}); dev 2048 x 512 with outsider trials; calibrators "
        + ", ".join(fitted.describe() for fitted in fitted_by_name.values())
    )
    if not args.no_streaming:
        bench_streaming(ev, fitted_by_name, paths, args, log_prior)
    if not args.no_evaluate:
        bench_evaluate(ev, ev_relabelled, fitted_by_name, paths, args)


if __name__ == "__main__":
    main()
