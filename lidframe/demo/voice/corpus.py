"""The real-voice demo's speech: the synthesized corpus and the anonymised systems made from it (both cached).

:func:`_synthesize_corpus` makes (or reuses) ``out/corpus`` with the installed speech
engines (:func:`lidframe.audio.corpus.build_corpus`); :func:`_anonymise_systems` makes
(or reuses) each anonymised system's data dirs under ``out/systems/<name>``, every system
over one pool of worker processes, each data dir stamped with the digest of its inputs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lidframe.demo.voice.plan import (
    _SPLITS,
    DEMO_OUTSIDERS,
    DEMO_SPLIT,
    DEMO_WAV_PATHS,
    STAMP_FILE,
    VOICE_DEMO_SYSTEMS,
    _DemoRun,
    _digest,
    _source_digest,
)

__all__: list[str] = []


def _system_roots(out: Path) -> dict[str, Path]:
    """System -> the root of its data dirs: ``out/corpus`` for the plain speech, else ``out/systems/<name>``."""
    return {
        name: out / "corpus" if params is None else out / "systems" / name
        for name, params in VOICE_DEMO_SYSTEMS.items()
    }


def _synthesize_corpus(run: _DemoRun, *, sentences: int, voices: Sequence[str] | None) -> dict[str, Any]:
    """Synthesize (or reuse) the corpus under ``out/corpus`` and say what was made.

    With :data:`~lidframe.demo.voice.plan.DEMO_OUTSIDERS` outsider speakers where their
    voices are installed (:func:`lidframe.audio.corpus.outsider_voices`); where not, says
    in one line that the open set is left out.  Returns
    :func:`lidframe.audio.corpus.build_corpus`'s report.
    """
    from lidframe.audio.corpus import build_corpus, outsider_voices

    folder = run.out / "corpus"
    run.log(f"[corpus] synthesizing speech into {folder}")
    outsiders = DEMO_OUTSIDERS if len(outsider_voices()) >= sum(DEMO_OUTSIDERS) else (0, 0)
    if outsiders == (0, 0):
        run.log("the open set is left out: its outsider speakers are espeak-ng voices (apt-get install espeak-ng)")
    corpus = build_corpus(
        folder,
        voices=voices,
        sentences=sentences,
        enrol=3,
        split=DEMO_SPLIT,
        seed=run.seed,
        jobs=run.jobs,
        progress=run.progress,
        wav_paths=DEMO_WAV_PATHS,
        outsiders=outsiders,
    )
    sizes = {k: len(v) for k, v in corpus["speakers"].items()}
    n_out = {k: len(v) for k, v in corpus["outsiders"].items()}
    n_utt, made = corpus["utterances"], corpus["synthesized"]
    if made == 0:
        what = f"reused {n_utt} utterances from {folder}"
    elif made == n_utt:
        what = f"synthesized {n_utt} utterances"
    else:
        what = f"synthesized {made} utterances, reused {n_utt - made} from {folder}"
    run.log(
        f"corpus: {what}, {sum(sizes.values()) + sum(n_out.values())} voices "
        f"({', '.join(f'{n} {e}' for e, n in sorted(corpus['engines'].items()))}); speakers train {sizes['train']}, "
        f"dev {sizes['dev']}, eval {sizes['eval']}; outsiders (trials only, enrolled nowhere) dev {n_out['dev']}, "
        f"eval {n_out['eval']}"
    )
    return corpus


def _anonymise_systems(
    out: Path, roots: dict[str, Path], *, seed: int, jobs: int, progress: bool, log: Callable[[str], object]
) -> None:
    """Make (or reuse) every anonymised data dir of the systems, all systems over one pool of *jobs* processes.

    A data dir is reused only when its stamp names the same inputs: the corpus data dir it
    was made from (its wav.scp and utt2spk, whose wav names carry their recipe), the
    anonymiser's parameters and the seed, and the anonymiser's code (the digest of
    :mod:`lidframe.audio.anonymise`'s source, NumPy's and SciPy's versions).  The stamp is removed before a data dir is
    (re)made and written after, so an interrupted run leaves none to trust.
    """
    import scipy

    import lidframe.audio.anonymise as anonymiser
    from lidframe.audio.anonymise import anonymise_data_dirs
    from lidframe.data.fileio import file_sha256

    # the anonymiser's own code and the SciPy it filters with: a changed anonymiser redoes the dirs
    code = json.dumps([file_sha256(anonymiser.__file__), np.__version__, scipy.__version__])
    tasks = []
    for name, params in VOICE_DEMO_SYSTEMS.items():
        if params is None:
            continue
        redo = []
        for split in _SPLITS:
            source, target = out / "corpus" / split, roots[name] / split
            expected = _digest(json.dumps([params, seed], sort_keys=True), code, _source_digest(source))
            stamp = target / STAMP_FILE
            if (target / "wav.scp").is_file() and stamp.is_file() and stamp.read_text().strip() == expected:
                continue
            stamp.unlink(missing_ok=True)
            redo.append(split)
            tasks.append((source, target, {"seed": seed, "wav_paths": DEMO_WAV_PATHS, **params}, expected))
        if not redo:
            log(f"system {name}: reused its {len(_SPLITS)} anonymised data dirs from {roots[name]}")
    if not tasks:
        return
    systems = sorted({str(target.parent.name) for _, target, _, _ in tasks})
    workers = min(jobs, len(tasks))
    log(
        f"[systems] anonymising {len(tasks)} data dirs of {', '.join(systems)} "
        f"({_plural(workers, 'process', 'processes')})"
    )
    anonymise_data_dirs([task[:3] for task in tasks], jobs=workers, progress=progress)
    for _, target, _, expected in tasks:
        (target / STAMP_FILE).write_text(expected + "\n")
    log(f"systems: anonymised {len(tasks)} data dirs")


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
