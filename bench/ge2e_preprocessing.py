"""How far ``ge2e`` on a file is from Resemblyzer on the same file (its own preprocessing), per engine.

lidframe reads a file (``scipy.signal.resample_poly`` to 16 kHz) and raises its volume;
Resemblyzer's ``preprocess_wav(path)`` resamples with librosa (soxr), raises the volume
and trims every silence longer than about 0.2 s (WebRTC VAD).  For each synthesized
utterance this prints the cosine of

* ``file``: lidframe's embedding of the file against ``embed_utterance(preprocess_wav(path))``;
* ``trim``: lidframe's against Resemblyzer's of lidframe's 16 kHz waveform through
  ``preprocess_wav`` (the trimming alone: the same resampling on both sides);

and the minimum, median and mean per engine and sample rate.  Needs torch, soundfile,
resemblyzer (``pip install -e '.[pretrained]'``) and the engines on PATH (espeak-ng, flite)::

    python bench/ge2e_preprocessing.py [--utterances-per-voice 6]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import warnings
from pathlib import Path

import numpy as np

TEXTS = (
    "The harbour lights flickered as the last ferry pulled away from the pier.",
    "Seven curious otters were seen juggling pebbles near the old mill.",
    "Please call Stella and ask her to bring these things with her from the store.",
    "A rainbow is a division of white light into many beautiful colours.",
    "Yes, I think so.",
    "When the sunlight strikes raindrops in the air, they act as a prism and form a rainbow.",
    "Nobody expected the quiet librarian to win the chess tournament.",
    "We will meet at noon, after the market closes.",
)
ESPEAK_VOICES = ("en-us+m3", "en-gb+f2", "en-us+f4", "en-gb-scotland+m1", "en+m7", "en-us+klatt2")
FLITE_VOICES = ("kal16", "slt", "awb", "rms")


def synthesize(folder: Path, per_voice: int) -> dict[str, Path]:
    """utterance id -> WAV written by espeak-ng (22,050 Hz) or flite (16 kHz), for the engines installed."""
    commands = {}
    if shutil.which("espeak-ng"):
        for name in ESPEAK_VOICES:
            commands[f"espeak-ng/{name}"] = lambda text, out, name=name: ["espeak-ng", "-v", name, "-w", out, text]
    if shutil.which("flite"):
        for name in FLITE_VOICES:
            commands[f"flite/{name}"] = lambda text, out, name=name: ["flite", "-voice", name, "-t", text, "-o", out]
    files = {}
    for voice, command in commands.items():
        for k, text in enumerate(TEXTS[:per_voice]):
            out = folder / f"{voice.replace('/', '-')}-{k}.wav"
            done = subprocess.run(command(text, str(out)), capture_output=True, check=False)
            if done.returncode == 0 and out.is_file():
                files[f"{voice}/{k}"] = out
    return files


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utterances-per-voice", type=int, default=6)
    args = parser.parse_args()
    import soundfile

    from lidframe.attackers.audio import read_audio
    from lidframe.attackers.ge2e import Ge2e

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pkg_resources / librosa deprecations
        from resemblyzer import VoiceEncoder, preprocess_wav

        attacker, reference = Ge2e(device="cpu"), VoiceEncoder(device="cpu", verbose=False)
        rows: dict[str, list[tuple[float, float]]] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for utt, path in synthesize(Path(tmp), args.utterances_per_voice).items():
                rate = soundfile.info(str(path)).samplerate
                wave = read_audio(path)
                mine = attacker.embed_audio([attacker.prepare_audio(wave)])[0]
                from_file = reference.embed_utterance(preprocess_wav(path))
                trimmed = reference.embed_utterance(preprocess_wav(wave, source_sr=16000))
                pair = (cosine(mine, from_file), cosine(mine, trimmed))
                print(f"{utt:32s} {rate:6d} Hz  file {pair[0]:.4f}  trim {pair[1]:.4f}")
                rows.setdefault(f"{utt.split('/')[0]} at {rate} Hz", []).append(pair)
    for group, pairs in rows.items():
        for i, name in enumerate(("file", "trim")):
            values = [p[i] for p in pairs]
            print(
                f"{group:24s} {name}: n {len(values)}  min {min(values):.4f}  "
                f"median {statistics.median(values):.4f}  mean {statistics.fmean(values):.4f}"
            )


if __name__ == "__main__":
    main()
