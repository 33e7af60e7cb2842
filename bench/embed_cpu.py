"""Benchmark: CPU embedding throughput of the ECAPA-TDNN attacker (C = 512, VoicePrivacy config).

Random-initialised weights (speed does not depend on their values); 40 generated
utterances of 3-10 s.  Measures utterances/s and x real time (seconds of audio per second)
for single-utterance calls (the anchor, measured in the same run) and for length-sorted
batches with exact padding, and prints their ratio.

    python bench/embed_cpu.py [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lidframe.attackers import EcapaTdnn, Utterance
from lidframe.attackers.frontend import read_audio
from tests.voices import write_voice


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--utterances", type=int, default=40)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    folder = Path(tempfile.mkdtemp())
    seconds = rng.uniform(3, 10, args.utterances)
    utts = [
        Utterance(f"u{i}", f"s{i % 8}", str(write_voice(folder / f"u{i}.wav", i % 8, i, s)))
        for i, s in enumerate(seconds)
    ]
    total = float(seconds.sum())
    attacker = EcapaTdnn.voiceprivacy(channels=(512, 512, 512, 512, 1536), device="cpu", batch_size=16)  # C = 512
    audio = [read_audio(u.path) for u in utts]
    attacker.embed(utts[:2])  # build the model, warm up
    print(f"ECAPA-TDNN C=512 (VoicePrivacy config), {len(utts)} utterances, {total:.0f} s of audio (3-10 s each)")
    print(
        f"machine: {platform.machine()} python {platform.python_version()} torch {torch.__version__}, {args.threads} threads"
    )
    single, batched = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for a in audio:
            attacker.embed_audio([a])
        single.append(time.perf_counter() - start)
        start = time.perf_counter()
        attacker.embed_audio(audio)
        batched.append(time.perf_counter() - start)
    for name, times in (("single utterance", single), ("batched (exact padding)", batched)):
        med = statistics.median(times)
        print(
            f"{name:26s} median {med:7.2f} s  {len(utts) / med:6.2f} utt/s  {total / med:6.1f} x real time  "
            f"(runs {', '.join(f'{t:.2f}' for t in times)})"
        )
    print(f"RATIO single / batched = {statistics.median(single) / statistics.median(batched):.2f}")


if __name__ == "__main__":
    main()
