"""The real-voice demo: synthesized speakers, two anonymisers, semi-informed attackers trained here.

:func:`run_voice_demo` runs the whole LID pipeline on audio:

1. synthesize a corpus with the installed engines (:mod:`lidframe.audio.corpus`; cached);
2. make three systems: ``plain`` (no anonymisation), ``mcadams`` (McAdams with alpha drawn
   per utterance in [0.5, 0.9]) and ``pitch`` (pitch shift by a ratio drawn per utterance in
   [0.75, 1.35]), applied to train, enrolment and trial speech alike (the "a-a" scenario);
3. per system, train a small ECAPA-TDNN on that system's *train* speakers (the
   semi-informed attacker: it learns what the anonymiser leaves), checkpointed and
   resumable;
4. score dev and eval (every trial against every enrolled speaker), calibrate on dev with
   ``logistic`` and ``isotonic``, and evaluate on eval; a ``random`` attacker (seeded
   random embeddings on the plain speech) gives the zero-leakage floor;
5. print the comparison table and write ``lid_ccdf.png``.

Everything is cached under the output folder, so a rerun only redoes what is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lidframe.cli.table import format_table
from lidframe.data.fileio import StrPath

__all__ = ["run_voice_demo", "VOICE_DEMO_SYSTEMS", "SMALL_ECAPA"]

#: name -> anonymise_data_dir keyword arguments (None: the plain speech).
VOICE_DEMO_SYSTEMS: dict[str, dict[str, Any] | None] = {
    "plain": None,
    "mcadams": {"method": "mcadams", "alpha_range": (0.5, 0.9), "per_utterance": True},
    "pitch": {"method": "pitch", "ratio_range": (0.75, 1.35), "per_utterance": True},
}
#: The demo attackers' encoder: a small ECAPA-TDNN that trains in seconds per epoch on a CPU.
SMALL_ECAPA = {"channels": (64, 64, 64, 64, 192), "attention_channels": 32, "se_channels": 32, "lin_neurons": 64}
_SPLITS = ("train", "dev_enrolls", "dev_trials", "eval_enrolls", "eval_trials")


def _scores(attacker, root: Path, split: str):
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker

    enrol = read_data_dir(root / f"{split}_enrolls")
    trials = read_data_dir(root / f"{split}_trials")
    return attacker.score(trials, group_by_speaker(enrol))


def run_voice_demo(
    out_dir: StrPath,
    *,
    seed: int = 0,
    epochs: int = 15,
    sentences: int = 8,
    voices: Sequence[str] | None = None,
    progress: bool = False,
    log: Callable[[str], object] = print,
) -> tuple[str, dict]:
    """Run the real-voice demo into *out_dir* (module docstring); return the table and per-row summaries."""
    from lidframe.attackers import EcapaTdnn, RandomAttacker
    from lidframe.attackers.training import train_attacker
    from lidframe.audio.anonymise import anonymise_data_dir
    from lidframe.audio.corpus import build_corpus
    from lidframe.core.evaluation import evaluate
    from lidframe.data.scoreset import ScoreSet

    out = Path(out_dir)
    corpus = build_corpus(out / "corpus", voices=voices, sentences=sentences, enrol=3, seed=seed, progress=progress)
    sizes = {k: len(v) for k, v in corpus["speakers"].items()}
    log(
        f"corpus: {corpus['utterances']} utterances, {sum(sizes.values())} voices "
        f"({', '.join(f'{n} {e}' for e, n in sorted(corpus['engines'].items()))}); speakers train {sizes['train']}, "
        f"dev {sizes['dev']}, eval {sizes['eval']}"
    )
    rows, summaries, lids = [], {}, {}
    for name, params in VOICE_DEMO_SYSTEMS.items():
        root = out / "corpus" if params is None else out / "systems" / name
        if params is not None:
            for split in _SPLITS:
                if not (root / split / "wav.scp").is_file():
                    anonymise_data_dir(out / "corpus" / split, root / split, seed=seed, **params)
        checkpoint = out / "attackers" / f"{name}.ckpt"
        history = train_attacker(
            EcapaTdnn(**SMALL_ECAPA, device="cpu"),
            root / "train",
            checkpoint,
            epochs=epochs,
            batch_size=16,
            seed=seed,
            progress=progress,
            log=lambda m: None,
        )
        seconds = [h["seconds"] for h in history]
        log(
            f"{name}: attacker trained {len(history)} epochs on the system's {sizes['train']} train speakers "
            f"(last loss {history[-1]['loss']:.3f}, {np.median(seconds):.1f} s per epoch)"
        )
        attacker = EcapaTdnn(**SMALL_ECAPA, device="cpu", checkpoint=checkpoint, cache_dir=out / "embedding-cache")
        scored = {}
        for split in ("dev", "eval"):
            path = out / "scores" / f"{name}_{split}.npz"
            if not path.is_file():
                path.parent.mkdir(parents=True, exist_ok=True)
                _scores(attacker, root, split).save(path)
            scored[split] = ScoreSet.load(path)
        for calibrator in ("logistic", "isotonic"):
            result = evaluate(scored["dev"], scored["eval"], calibrator=calibrator)
            key = f"{name}/{calibrator}"
            rows.append((key, result.summary))
            summaries[key] = result.to_dict()
            lids[key] = result.lid[~result.is_impostor]
    random = RandomAttacker(seed=seed)
    plain = out / "corpus"
    dev, ev = _scores(random, plain, "dev"), _scores(random, plain, "eval")
    result = evaluate(dev, ev, calibrator="logistic")
    rows.append(("random/logistic", result.summary))
    summaries["random/logistic"] = result.to_dict()
    lids["random/logistic"] = result.lid[~result.is_impostor]
    from lidframe.plotting import save_lid_ccdf

    save_lid_ccdf(
        lids, out / "lid_ccdf.png", log2_n=rows[0][1]["log2_n"], title="Real-voice demo: LID per system and calibrator"
    )
    return format_table(rows, name_header="system/calibrator"), summaries
