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
5. print the comparison table and write, like the simulated demo, ``summary.json``,
   ``table.txt``, ``per_trial.csv``, ``report.html`` and ``lid_ccdf.png``.

Everything is cached under the output folder, so a rerun only redoes what is missing, and
says which stages it reused -- each cache keyed by what made it, so that another seed,
sentence count or voice set never reuses a stale one: the corpus's wav files (named by
engine, voice, sentence and rate), the anonymised data dirs (a stamp with the digest of
their corpus data dir, the anonymiser's parameters and the seed), each attacker's
checkpoint ``attackers/<system>-<key>.ckpt`` (keyed by its train data dir, the seed, the
encoder and training settings, and the attackers' code and torch's version; training resumes where it stopped; a checkpoint with the epochs asked for is
reused) and the embeddings (keyed by the audio and the checkpoint's weights,
:mod:`lidframe.attackers.cache`).  The anonymisers of both systems share one pool of
``jobs`` worker processes, and ``jobs`` speech engines run at once.  The scores are recomputed from the embeddings on every
run, so they never outlive a changed checkpoint or corpus.  Each stage is named as it starts; with
``progress`` tqdm bars show synthesis, training, embedding and scoring.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from lidframe.cli.table import format_table
from lidframe.data.fileio import StrPath, check_output_dir

if TYPE_CHECKING:
    from lidframe.core.evaluation import Result

__all__ = ["run_voice_demo", "VOICE_DEMO_SYSTEMS", "SMALL_ECAPA", "CALIBRATORS"]

#: name -> anonymise_data_dir keyword arguments (None: the plain speech).
VOICE_DEMO_SYSTEMS: dict[str, dict[str, Any] | None] = {
    "plain": None,
    "mcadams": {"method": "mcadams", "alpha_range": (0.5, 0.9), "per_utterance": True},
    "pitch": {"method": "pitch", "ratio_range": (0.75, 1.35), "per_utterance": True},
}
#: The demo attackers' encoder: a small ECAPA-TDNN that trains in seconds per epoch on a CPU.
SMALL_ECAPA = {"channels": (64, 64, 64, 64, 192), "attention_channels": 32, "se_channels": 32, "lin_neurons": 64}
#: train_attacker's settings for the demo's attackers (beside epochs and seed).
TRAINING: dict[str, Any] = {"batch_size": 16}
#: The calibrators each trained attacker's scores are evaluated with (the random floor: the first).
CALIBRATORS = ("logistic", "isotonic")
_SPLITS = ("train", "dev_enrolls", "dev_trials", "eval_enrolls", "eval_trials")


def _epochs(n: int) -> str:
    return f"{n} epoch" if n == 1 else f"{n} epochs"


def _scores(attacker, root: Path, split: str):
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker

    enrol = read_data_dir(root / f"{split}_enrolls")
    trials = read_data_dir(root / f"{split}_trials")
    return attacker.score(trials, group_by_speaker(enrol))


def _digest(*parts: str | bytes) -> str:
    """SHA-256 (hex) of *parts*, each length-prefixed so that no two sequences collide."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


#: The file in each data dir of the demo naming its inputs' digest (see :func:`_anonymise_systems`).
STAMP_FILE = "lidframe-demo-inputs.sha256"


def _source_digest(folder: Path) -> str:
    """What a data dir of the demo holds: its wav.scp and utt2spk (the corpus's wav names carry their recipe)."""
    return _digest(*((folder / name).read_bytes() for name in ("wav.scp", "utt2spk")))


def _read_stamp(folder: Path) -> str:
    """The inputs digest of a demo data dir: its stamp for an anonymised one, its contents for the corpus's."""
    stamp = folder / STAMP_FILE
    return stamp.read_text().strip() if stamp.is_file() else _source_digest(folder)


def _training_code() -> str:
    """Digest of what trains and runs an attacker: the attackers' source files and torch's version."""
    import importlib.util

    import torch

    from lidframe._version import tree_digest

    spec = importlib.util.find_spec("lidframe.attackers")
    assert spec is not None and spec.submodule_search_locations is not None
    return _digest(tree_digest(Path(p) for p in spec.submodule_search_locations), torch.__version__)


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
            tasks.append((source, target, {"seed": seed, **params}, expected))
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


@attrs.frozen
class _DemoRun:
    """The settings every stage of one demo run reads (the parameters of :func:`run_voice_demo`)."""

    out: Path
    seed: int
    epochs: int
    jobs: int
    progress: bool
    log: Callable[[str], object]


def run_voice_demo(
    out_dir: StrPath,
    *,
    seed: int = 0,
    epochs: int = 15,
    sentences: int = 8,
    voices: Sequence[str] | None = None,
    jobs: int = 1,
    progress: bool = False,
    log: Callable[[str], object] = print,
) -> tuple[str, dict]:
    """Run the real-voice demo into *out_dir* (module docstring); return the table and per-row summaries.

    Parameters
    ----------
    out_dir : path
        Output and cache folder (checked before any work; made when missing).
    seed : int
        Seed of the corpus split, the anonymisers, the training and the random attacker.
    epochs : int
        Training epochs per attacker (a rerun with more continues the checkpoint).
    sentences : int
        Sentences per voice.
    voices : sequence of str, optional
        Speaker ids of :func:`lidframe.audio.corpus.available_voices` (default: all).
    jobs : int
        Speech engines run at once, and worker processes of the anonymisers (the
        training uses torch's threads).
    progress : bool
        tqdm bars for synthesis, training (one per epoch), embedding and scoring.
    log : callable
        Receives each stage's lines (its name as it starts, what it did or reused).

    Returns
    -------
    table : str
        The comparison table (also in ``table.txt``).
    summaries : dict
        ``"<system>/<calibrator>"`` -> ``Result.to_dict()`` (also in ``summary.json``).
    """
    from lidframe.core.evaluation import evaluate

    out = check_output_dir(out_dir, "--out")
    out.mkdir(exist_ok=True)
    run = _DemoRun(out, seed=seed, epochs=epochs, jobs=jobs, progress=progress, log=log)
    corpus = _synthesize_corpus(run, sentences=sentences, voices=voices)
    n_train = len(corpus["speakers"]["train"])
    results: dict[str, Result] = {}
    inputs: dict[str, StrPath] = {}
    training_code = _training_code()
    roots = {
        name: out / "corpus" if params is None else out / "systems" / name
        for name, params in VOICE_DEMO_SYSTEMS.items()
    }
    _anonymise_systems(out, roots, seed=seed, jobs=jobs, progress=progress, log=log)
    for name, root in roots.items():
        checkpoint = _train_system_attacker(run, name, root, training_code=training_code, n_train=n_train)
        scored = _score_system(run, name, root, checkpoint)
        inputs.update({f"{name} {split}": path for split, path in scored.items()})
        for calibrator in CALIBRATORS:
            results[f"{name}/{calibrator}"] = evaluate(scored["dev"], scored["eval"], calibrator=calibrator)
    log("[scores random] the random attacker (seeded random embeddings) on the plain speech")
    random_sets = _score_random(run)
    inputs.update({f"random {split}": path for split, path in random_sets.items()})
    results[f"random/{CALIBRATORS[0]}"] = evaluate(random_sets["dev"], random_sets["eval"], calibrator=CALIBRATORS[0])
    table = format_table([(label, r.summary) for label, r in results.items()], name_header="system/calibrator")
    _write_outputs(run, results, table=table, corpus=corpus, sentences=sentences, inputs=inputs)
    return table, {label: r.to_dict() for label, r in results.items()}


def _synthesize_corpus(run: _DemoRun, *, sentences: int, voices: Sequence[str] | None) -> dict[str, Any]:
    """Synthesize (or reuse) the corpus under ``out/corpus`` and say what was made; :func:`build_corpus`'s report."""
    from lidframe.audio.corpus import build_corpus

    folder = run.out / "corpus"
    run.log(f"[corpus] synthesizing speech into {folder}")
    corpus = build_corpus(
        folder, voices=voices, sentences=sentences, enrol=3, seed=run.seed, jobs=run.jobs, progress=run.progress
    )
    sizes = {k: len(v) for k, v in corpus["speakers"].items()}
    n_utt, made = corpus["utterances"], corpus["synthesized"]
    if made == 0:
        what = f"reused {n_utt} utterances from {folder}"
    elif made == n_utt:
        what = f"synthesized {n_utt} utterances"
    else:
        what = f"synthesized {made} utterances, reused {n_utt - made} from {folder}"
    run.log(
        f"corpus: {what}, {sum(sizes.values())} voices "
        f"({', '.join(f'{n} {e}' for e, n in sorted(corpus['engines'].items()))}); speakers train {sizes['train']}, "
        f"dev {sizes['dev']}, eval {sizes['eval']}"
    )
    return corpus


def _train_system_attacker(run: _DemoRun, name: str, root: Path, *, training_code: str, n_train: int) -> Path:
    """Train (resume, or reuse) system *name*'s attacker on ``root/train``; say what was done; its checkpoint.

    The checkpoint is keyed by what it is trained on and how: another corpus, seed or
    encoder trains another checkpoint instead of resuming (or reusing) a stale one.
    """
    from lidframe.attackers import EcapaTdnn
    from lidframe.attackers.training import train_attacker

    key = _digest(json.dumps([run.seed, SMALL_ECAPA, TRAINING]), training_code, _read_stamp(root / "train"))
    checkpoint = run.out / "attackers" / f"{name}-{key[:12]}.ckpt"
    run.log(f"[attacker {name}] training a small ECAPA-TDNN on the system's {n_train} train speakers")
    trained_now: list[str] = []  # train_attacker logs one "epoch k/n: ..." line per epoch it trains
    history = train_attacker(
        EcapaTdnn(**SMALL_ECAPA, device="cpu"),
        root / "train",
        checkpoint,
        epochs=run.epochs,
        **TRAINING,
        seed=run.seed,
        progress=run.progress,
        log=lambda m: trained_now.append(m) if m.startswith("epoch ") else None,
    )
    earlier = len(history) - len(trained_now)
    last = f"last loss {history[-1]['loss']:.3f}"
    if not trained_now:
        run.log(f"attacker {name}: reused checkpoint {checkpoint} (trained {_epochs(len(history))} earlier; {last})")
    else:
        seconds = sorted(h["seconds"] for h in history[earlier:])
        resumed = f" after the {earlier} of an earlier run" if earlier else ""
        run.log(
            f"attacker {name}: trained {_epochs(len(trained_now))}{resumed} ({last}, "
            f"{seconds[len(seconds) // 2]:.1f} s per epoch)"
        )
    return checkpoint


def _score_system(run: _DemoRun, name: str, root: Path, checkpoint: Path) -> dict[str, Path]:
    """Score system *name*'s dev and eval trials with its trained attacker; ``split -> score file``.

    Always rescored: the embedding cache is the reuse (and the scores never outlive a
    changed checkpoint or corpus).
    """
    from lidframe.attackers import EcapaTdnn

    attacker = EcapaTdnn(
        **SMALL_ECAPA, device="cpu", checkpoint=checkpoint, cache_dir=run.out / "embedding-cache", progress=run.progress
    )
    run.log(f"[scores {name}] scoring dev and eval trials against every enrolled speaker")
    scored = {}
    for split in ("dev", "eval"):
        path = run.out / "scores" / f"{name}_{split}.npz"
        path.parent.mkdir(exist_ok=True)
        _scores(attacker, root, split).save(path)
        scored[split] = path
    if attacker.model_calls == 0:
        run.log(
            f"scores {name}: reused every embedding from {run.out / 'embedding-cache'} (same audio, same checkpoint)"
        )
    return scored


def _score_random(run: _DemoRun) -> dict[str, Path]:
    """Score the plain speech's dev and eval trials with the seeded random attacker; ``split -> score file``."""
    from lidframe.attackers import RandomAttacker

    random = RandomAttacker(seed=run.seed)
    scored = {}
    for split in ("dev", "eval"):
        path = run.out / "scores" / f"random_{split}.npz"
        _scores(random, run.out / "corpus", split).save(path)
        scored[split] = path
    return scored


def _write_outputs(
    run: _DemoRun,
    results: dict[str, Result],
    *,
    table: str,
    corpus: dict[str, Any],
    sentences: int,
    inputs: dict[str, StrPath],
) -> None:
    """Write ``summary.json``, ``table.txt``, ``per_trial.csv``, ``report.html`` and ``lid_ccdf.png`` into the folder."""
    from lidframe.cli.simulated_demo import write_demo_outputs

    sizes = {k: len(v) for k, v in corpus["speakers"].items()}
    systems = {label: label.split("/")[0] for label in results}
    run.log(f"[report] writing summary.json, table.txt, per_trial.csv, report.html and lid_ccdf.png to {run.out}")
    write_demo_outputs(
        run.out,
        results,
        table=table,
        record={
            "seed": run.seed,
            "epochs": run.epochs,
            "sentences": sentences,
            "corpus": {k: corpus[k] for k in ("speakers", "engines", "utterances")},
        },
        inputs=inputs,
        title="lidframe demo: real synthesized voices",
        notes=[
            f"{corpus['utterances']} synthesized utterances of {sum(sizes.values())} voices; systems plain, mcadams "
            f"and pitch (the a-a scenario); a small ECAPA-TDNN trained {run.epochs} epochs per system on its "
            "anonymised train speakers; calibrated on dev, evaluated on eval; a random attacker is the floor. "
            "See docs/demo.md."
        ],
        settings={
            "command": "lidframe demo",
            "seed": run.seed,
            "epochs": run.epochs,
            "sentences per voice": sentences,
            "attacker": f"EcapaTdnn({', '.join(f'{k}={v}' for k, v in SMALL_ECAPA.items())})",
            "calibrators": ", ".join(CALIBRATORS),
            "prior": "uniform",
        },
        systems=systems,
        log=run.log,
    )
    from lidframe.report.lid_figures import save_lid_ccdf

    first = next(iter(results.values()))
    save_lid_ccdf(
        {label: r.lid[~r.is_outsider] for label, r in results.items()},
        run.out / "lid_ccdf.png",
        log2_n=first.summary["log2_n"],
        title="Real-voice demo: LID per system and calibrator",
        groups=systems,
        variants={label: label.split("/")[1] for label in results},
    )
