"""Benchmark: the cost of sweeping 5 calibrators x 3 priors versus one grid cell.

One data-dir system (generated audio: 12 speakers, 2 enrolment + 4 trial utterances each,
dev and eval) scored by the ECAPA-TDNN attacker in the VoicePrivacy configuration
(random weights).  The anchor is a 1-cell grid (logistic, uniform) measured in the same
run; the sweep is 5 calibrators x 3 priors = 15 cells.  Both start from an empty output
folder, so both pay for scoring the audio once; the planner shares the score sets over
all cells and each calibrator fit over its priors.  Prints the ratio sweep / one cell.

    python bench/grid_overhead.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lidframe.grid.runner import run_grid
from tests.voices import write_voice

ATTACKER = "ecapa?device=cpu"
SPEC = """
[grid]
calibrators = {calibrators}
priors = {priors}
attackers = ["{attacker}"]

[systems.generated]
dev = {{ enrol = "dev_enrolls", trials = ["dev_trials"] }}
eval = {{ enrol = "eval_enrolls", trials = ["eval_trials"] }}
"""


def make_data(folder: Path):
    wavs = folder / "wav"
    wavs.mkdir(parents=True)
    for split, offset in (("dev", 0), ("eval", 20)):
        for kind, per, length in (("enrolls", 2, 3.0), ("trials", 4, 2.0)):
            d = folder / f"{split}_{kind}"
            d.mkdir()
            lines, spk = [], []
            for s in range(12):
                for k in range(per):
                    utt = f"{split}{kind[0]}{s}_{k}"
                    path = write_voice(wavs / f"{utt}.wav", s + offset, k + (10 if kind == "trials" else 0), length)
                    lines.append(f"{utt} {path}\n")
                    spk.append(f"{utt} {split}spk{s}\n")
            (d / "wav.scp").write_text("".join(lines))
            (d / "utt2spk").write_text("".join(spk))


def timed_grid(folder: Path, calibrators, priors) -> float:
    spec = folder / "spec.toml"
    spec.write_text(SPEC.format(calibrators=calibrators, priors=priors, attacker=ATTACKER))
    out = folder / "out"
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    run = run_grid(spec, out)
    elapsed = time.perf_counter() - start
    assert run.error == 0, run.counts()
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    make_data(folder)
    one_cal, one_prior = '["logistic"]', '["uniform"]'
    cals = '["logistic", "isotonic", "beta", "gaussian", "temperature"]'
    priors = '["uniform", "watchlist?ids=evalspk0,evalspk1&weight=5", "watchlist?ids=evalspk2&weight=20"]'
    one, sweep = [], []
    for _ in range(args.repeats):
        one.append(timed_grid(folder, one_cal, one_prior))
        sweep.append(timed_grid(folder, cals, priors))
    m_one, m_sweep = statistics.median(one), statistics.median(sweep)
    print("grid of 1 data-dir system (48 trials x 12 enrolled per split), ECAPA-TDNN C=512 on the CPU")
    print(f"1 cell (logistic, uniform)      median {m_one:6.2f} s  (runs {', '.join(f'{t:.2f}' for t in one)})")
    print(f"15 cells (5 calibrators x 3 priors) median {m_sweep:6.2f} s  (runs {', '.join(f'{t:.2f}' for t in sweep)})")
    print(f"RATIO sweep / one cell = {m_sweep / m_one:.2f}")


if __name__ == "__main__":
    main()
