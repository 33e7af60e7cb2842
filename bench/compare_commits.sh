#!/usr/bin/env bash
# Run a benchmark at two (or more) commits, alternately, on this machine: code or machine?
#
#   bench/compare_commits.sh [--bench core|stream|harness] [--rounds R] [--size S] [--repeats K] \
#       [--threads N] [--out DIR] [COMMIT ...]
#
# Each commit is extracted with `git archive COMMIT | tar -x` into DIR/<commit> (default
# DIR: /tmp/lidframe-compare; nothing in this checkout is touched, no checkout is made),
# with the links lidframe/calibrators -> ../calibrators and lidframe/attackers ->
# ../attackers that the editable install maps (pyproject's package-dir), and run with
# PYTHONPATH=DIR/<commit>, so that `import lidframe` is that commit's (checked before the
# first run).  Then, R rounds, each running every commit once, in an order reversed from
# round to round:
#
#   --bench core     each commit's own bench/core_cpu.py --size S --repeats K (default): the
#                    ratio naive / lidframe that bench/RESULTS.md recorded, by the script of
#                    that commit
#   --bench stream   each commit's own bench/stream_cpu.py --size S --repeats K --threads N
#   --bench harness  one small script, the same for every commit (below): the naive dense
#                    script, lidframe.evaluate (binary metrics off, the fit included, as the
#                    old core_cpu.py timed it), the tiled engine alone (lid_from_scores, with
#                    the commit's AffineMap where it has one, in its default threads) and one
#                    np.exp pass over the T x N LLRs, alternately in one process; prints
#                    naive / evaluate, naive / engine and engine / floor
#
# Default commits: da13f6d (the code of the 2026-11-30 core_cpu.py rows; the commit that
# recorded them) and 4d4b82e (the 2026-12-01 quiet re-measurement).  For stream_cpu.py:
# 29d8b9a (2026-11-30) and 4d4b82e (2026-12-01).  A name `worktree` runs this checkout as it
# is (uncommitted changes included).  Every run's output goes to DIR/logs/; the summary at
# the end lists each run's ratio lines.  Before each run the load average is printed: the
# runs mean something only on a quiet machine.
#
# --threads N sets OMP_NUM_THREADS=N for every run (the engines since 308e53c follow it;
# older ones ran one thread); left out, nothing is set.
#
# Smoke test (seconds, the times mean nothing): bench/compare_commits.sh --size 512 --repeats 1 --rounds 1
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
BENCH=core
ROUNDS=3
SIZE=""
REPEATS=""
THREADS=""
OUT=/tmp/lidframe-compare
COMMITS=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --bench) BENCH="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --repeats) REPEATS="$2"; shift 2 ;;
        --threads) THREADS="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "compare_commits.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) COMMITS+=("$1"); shift ;;
    esac
done
case "$BENCH" in
    core) SIZE="${SIZE:-8192}"; REPEATS="${REPEATS:-5}"; DEFAULT=(da13f6d 4d4b82e) ;;
    stream) SIZE="${SIZE:-16384}"; REPEATS="${REPEATS:-3}"; DEFAULT=(29d8b9a 4d4b82e) ;;
    harness) SIZE="${SIZE:-8192}"; REPEATS="${REPEATS:-5}"; DEFAULT=(da13f6d 4d4b82e) ;;
    *) echo "compare_commits.sh: --bench must be core, stream or harness, got $BENCH" >&2; exit 2 ;;
esac
[[ ${#COMMITS[@]} -gt 0 ]] || COMMITS=("${DEFAULT[@]}")
mkdir -p "$OUT/logs"

# the harness: the same for every commit (its API: lidframe.ScoreSet, lidframe.evaluate)
HARNESS="$OUT/harness.py"
cat > "$HARNESS" <<'PY'
import gc, inspect, os, statistics, sys, time
import numpy as np
from scipy.special import log_softmax
import lidframe
from lidframe import ScoreSet, evaluate
try:  # the tiled engine: lidframe.core.lid since 2026-12-01, lidframe.lid before
    from lidframe.core.lid import lid_from_scores
except ImportError:
    from lidframe.lid import lid_from_scores
try:  # the affine map record, where the commit has one (its engine may have a path for it)
    from lidframe.calibrators.maps import AffineMap
except ImportError:
    AffineMap = None

size, repeats = int(sys.argv[1]), int(sys.argv[2])
def scoreset(rng, t, n, prefix):
    ids = np.array([f"{prefix}{j}" for j in range(n)]); true = np.arange(t) % n
    s = rng.standard_normal((t, n)); s[np.arange(t), true] += 2.0
    return ScoreSet(s, ids, ids[true])
rng = np.random.default_rng(0)
dev, ev = scoreset(rng, 512, 256, "d"), scoreset(rng, size, size, "e")
s = ev.scores
slope, intercept = 2.0, -1.0
llr = slope * (s - s.mean(axis=1, keepdims=True)) / s.std(axis=1, ddof=1, keepdims=True)
buffer = np.empty_like(llr)
log_prior = np.full(size, -np.log(size))
affine = AffineMap(slope, intercept) if AffineMap is not None else (lambda z: z * slope + intercept)
options = {}
if "threads" in inspect.signature(lid_from_scores).parameters:  # tiles in threads since 308e53c
    from lidframe.runtime.workers import default_threads
    options["threads"] = default_threads()
def naive():
    z = (s - s.mean(axis=1, keepdims=True)) / s.std(axis=1, ddof=1, keepdims=True)
    return log_softmax(slope * z + intercept, axis=1)
sides = {
    "naive dense": naive,
    "lidframe.evaluate": lambda: evaluate(dev, ev, binary_metrics=False),
    "tiled engine": lambda: lid_from_scores(s, ev.true_index, affine, log_prior, **options),
    "floor: one exp pass": lambda: np.exp(llr, out=buffer),
}
times = {k: [] for k in sides}
for _ in range(repeats):
    for name, f in sides.items():
        gc.collect(); t0 = time.perf_counter(); f(); times[name].append(time.perf_counter() - t0)
print(f"harness: lidframe from {os.path.dirname(lidframe.__file__)}, T = N = {size}, {repeats} runs each, "
      f"alternately; the tiled engine with {type(affine).__name__} and {options or 'one thread'}; "
      "lidframe.evaluate includes the calibrator's fit on a 512 x 256 dev set")
for name, runs in times.items():
    print(f"{name:22s} min {min(runs):7.3f} s  median {statistics.median(runs):7.3f} s  runs " + ", ".join(f"{t:.3f}" for t in runs))
for label, pick in (("min", min), ("median", statistics.median)):
    a, e, t, f = (pick(times[k]) for k in sides)
    print(f"RATIO harness {label}: naive/evaluate = {a / e:.2f}; naive/engine = {a / t:.2f}; engine/floor = {t / f:.2f}")
PY

tree_of() {  # the folder a commit runs from
    if [[ "$1" == worktree ]]; then echo "$ROOT"; else echo "$OUT/$1"; fi
}

for commit in "${COMMITS[@]}"; do
    [[ "$commit" == worktree ]] && continue
    tree="$(tree_of "$commit")"
    if [[ ! -d "$tree" ]]; then
        git -C "$ROOT" rev-parse --verify --quiet "$commit^{commit}" > /dev/null \
            || { echo "compare_commits.sh: $commit is not a commit of $ROOT" >&2; exit 2; }
        mkdir -p "$tree.partial"
        git -C "$ROOT" archive "$commit" | tar -x -C "$tree.partial"
        for wing in calibrators attackers; do
            if [[ -d "$tree.partial/$wing" && ! -e "$tree.partial/lidframe/$wing" ]]; then
                ln -s "../$wing" "$tree.partial/lidframe/$wing"
            fi
        done
        mv "$tree.partial" "$tree"
    fi
done
for commit in "${COMMITS[@]}"; do
    tree="$(tree_of "$commit")"
    found="$(cd "$tree" && PYTHONPATH="$tree" "$PYTHON" -c \
        'import lidframe, lidframe.calibrators as c; print(lidframe.__file__, c.__file__)')"
    for path in $found; do
        [[ "$path" == "$tree"/* || "$commit" == worktree ]] \
            || { echo "compare_commits.sh: $commit imports $path, not its own tree $tree" >&2; exit 1; }
    done
    echo "$commit: lidframe from $tree ($(git -C "$ROOT" log -1 --format='%h %ad' --date=short "${commit/worktree/HEAD}"))"
done

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs;" \
    "AVX-512: $(grep -q avx512f /proc/cpuinfo && echo yes || echo no); python: $PYTHON"
[[ -n "$THREADS" ]] && export OMP_NUM_THREADS="$THREADS" && echo "OMP_NUM_THREADS=$THREADS for every run"

run_one() {  # commit round
    local commit="$1" round="$2" tree log
    tree="$(tree_of "$commit")"
    log="$OUT/logs/$BENCH-$commit-round$round.log"
    echo "== round $round, $commit, $BENCH (load average: $(cut -d' ' -f1-3 /proc/loadavg))" | tee "$log"
    case "$BENCH" in
        core) args=(bench/core_cpu.py --size "$SIZE" --repeats "$REPEATS") ;;
        stream) args=(bench/stream_cpu.py --size "$SIZE" --repeats "$REPEATS" --threads "${THREADS:-2}") ;;
        harness) args=("$HARNESS" "$SIZE" "$REPEATS") ;;
    esac
    (cd "$tree" && PYTHONPATH="$tree" "$PYTHON" "${args[@]}") 2>&1 | tee -a "$log"
}

for ((round = 1; round <= ROUNDS; round++)); do
    order=("${COMMITS[@]}")
    if ((round % 2 == 0)); then
        order=()
        for ((k = ${#COMMITS[@]} - 1; k >= 0; k--)); do order+=("${COMMITS[k]}"); done
    fi
    for commit in "${order[@]}"; do run_one "$commit" "$round"; done
done

echo
echo "== summary ($BENCH, T = N = $SIZE, $REPEATS runs per side, $ROUNDS rounds; logs in $OUT/logs)"
for commit in "${COMMITS[@]}"; do
    for ((round = 1; round <= ROUNDS; round++)); do
        grep -iE "ratio|^(numpy|torch|anchor)" "$OUT/logs/$BENCH-$commit-round$round.log" \
            | sed "s/^/$commit round $round: /" || true
    done
done
