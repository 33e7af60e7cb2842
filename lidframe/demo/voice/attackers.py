"""The real-voice demo's attackers: trained or adapted here (checkpoints cached), then scoring dev and eval.

:func:`_score_attackers` runs the attackers' stage: a small ECAPA-TDNN trained on each of
:data:`~lidframe.demo.voice.plan.ECAPA_SYSTEMS` (:func:`_train_system_attacker`), the
pretrained GE2E encoder up the threat-model ladder with its output layer adapted for the
semi-informed rung (:func:`_score_ge2e`, :func:`_adapt_ge2e`), and the seeded random
attacker, the floor (:func:`_score_random`).  Every score file is written anew on each run
(the embedding cache is the reuse), with its provenance, as ``lidframe score`` writes it
(:func:`~lidframe.demo.voice.provenance.split_provenance`); each attacker is recorded in
``run.attackers`` for the report's provenance.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from lidframe.demo.voice.plan import (
    DEMO_WAV_PATHS,
    ECAPA_SYSTEMS,
    GE2E_ADAPTATION,
    SMALL_ECAPA,
    TRAINING,
    VOICE_DEMO_SYSTEMS,
    _DemoRun,
    _digest,
    _read_stamp,
)

__all__ = ["ge2e_unavailable"]


def ge2e_unavailable() -> str | None:
    """Why the demo's GE2E rows cannot run here (resemblyzer's weights missing), in one line; None where they can."""
    from lidframe.errors import InputError

    try:
        from lidframe.attackers.ge2e import resemblyzer_weights

        resemblyzer_weights()
    except InputError as exc:
        return str(exc)
    return None


def _score_attackers(
    run: _DemoRun, roots: Mapping[str, Path], *, ge2e: bool, n_train: int
) -> dict[str, dict[str, Path]]:
    """Train the small ECAPA-TDNNs, then score dev and eval with every attacker; ``row label -> split -> score file``.

    The ECAPA rows of :data:`~lidframe.demo.voice.plan.ECAPA_SYSTEMS`, the GE2E rows (where
    *ge2e*: :func:`_score_ge2e`, with the AS-norm rows), the fused rows
    (:func:`~lidframe.demo.voice.stronger._score_fusions`) and the random attacker on the
    plain speech, in that order; *n_train* is the number of train speakers (for the log).
    """
    from lidframe.attackers.neural import attackers_code_digest
    from lidframe.demo.voice.stronger import _score_fusions
    from lidframe.report import AttackerSettings

    training_code = attackers_code_digest()  # the attackers' source and torch's version: part of every checkpoint key
    scored: dict[str, dict[str, Path]] = {}
    for name in ECAPA_SYSTEMS:
        checkpoint = _train_system_attacker(run, name, roots[name], training_code=training_code, n_train=n_train)
        scored.update(_score_ecapa(run, name, roots[name], checkpoint))
        run.attackers.append(
            AttackerSettings.of(
                f"{name}/ecapa",
                {"model": "small ECAPA-TDNN", **SMALL_ECAPA, "epochs": run.epochs, **TRAINING, "seed": run.seed},
                files={"checkpoint": checkpoint},
            )
        )
    if ge2e:
        scored.update(_score_ge2e(run, roots, training_code=training_code, n_train=n_train))
        scored.update(_score_fusions(run, scored))
    run.log("[scores random] the random attacker (seeded random embeddings) on the plain speech")
    scored["random"] = _score_random(run)
    run.attackers.append(AttackerSettings.of("random", {"embeddings": "seeded random", "seed": run.seed}))
    return scored


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
        wav_paths=DEMO_WAV_PATHS,
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


def _epochs(n: int) -> str:
    return f"{n} epoch" if n == 1 else f"{n} epochs"


def _score_both_splits(
    run: _DemoRun, attacker, label: str, enrol_root: Path, trial_root: Path, spec: tuple[str, dict]
) -> dict[str, Path]:
    """Score dev and eval trials of *trial_root* against the speakers of *enrol_root*; ``split -> score file``.

    Always rescored: the embedding cache is the reuse (and the scores never outlive a
    changed checkpoint or corpus).  Each file holds its provenance, *spec* naming the
    attacker (a registry name and its parameters).
    """
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker
    from lidframe.demo.voice.provenance import split_provenance

    scored = {}
    for split in ("dev", "eval"):
        path = run.out / "scores" / f"{label.replace('/', '_')}_{split}.npz"
        path.parent.mkdir(exist_ok=True)
        enrol_dir, trial_dir = enrol_root / f"{split}_enrolls", trial_root / f"{split}_trials"
        enrol = read_data_dir(enrol_dir, wav_paths=DEMO_WAV_PATHS)
        trials = read_data_dir(trial_dir, wav_paths=DEMO_WAV_PATHS)
        scores = attacker.score(trials, group_by_speaker(enrol))
        dirs = [("enrol", enrol_dir, enrol), ("trials", trial_dir, trials)]
        scores.save(path, provenance=split_provenance(label, *spec, attacker, dirs, digests=run.digests))
        scored[split] = path
    return scored


def _score_ecapa(run: _DemoRun, name: str, root: Path, checkpoint: Path) -> dict[str, dict[str, Path]]:
    """Score system *name*'s dev and eval trials with its small ECAPA-TDNN; ``row label -> split -> score file``."""
    from lidframe.attackers import EcapaTdnn

    attacker = EcapaTdnn(
        **SMALL_ECAPA, device="cpu", checkpoint=checkpoint, cache_dir=run.out / "embedding-cache", progress=run.progress
    )
    label = f"{name}/ecapa" if VOICE_DEMO_SYSTEMS[name] is None else f"{name}/ecapa/semi-informed"
    run.log(f"[scores {label}] scoring dev and eval trials against every enrolled speaker")
    spec = ("ecapa", {**SMALL_ECAPA, "device": "cpu", "checkpoint": checkpoint})
    scored = {label: _score_both_splits(run, attacker, label, root, root, spec)}
    if attacker.model_calls == 0:
        run.log(
            f"scores {label}: reused every embedding from {run.out / 'embedding-cache'} (same audio, same checkpoint)"
        )
    return scored


def _score_ge2e(
    run: _DemoRun, roots: Mapping[str, Path], *, training_code: str, n_train: int
) -> dict[str, dict[str, Path]]:
    """The GE2E rows: the pretrained encoder up the ladder for every system, adapted for the semi-informed rung.

    ``row label -> split -> score file``.  The ignorant rung enrols the plain speech
    (``corpus/``) and scores the system's anonymised trials; the lazy-informed rung enrols
    the system's anonymised speech; the semi-informed rung does the same with the encoder
    with its output layer adapted on the system's anonymised train speakers (:func:`_adapt_ge2e`),
    and again with AS-norm (:func:`~lidframe.demo.voice.stronger._score_ge2e_asnorm`).
    """
    from lidframe.attackers.ge2e import Ge2e, resemblyzer_weights
    from lidframe.demo.voice.stronger import _score_ge2e_asnorm
    from lidframe.report import AttackerSettings

    cache = run.out / "embedding-cache"
    pretrained = Ge2e(device="cpu", cache_dir=cache, progress=run.progress)
    run.attackers.append(
        AttackerSettings.of(
            "ge2e",
            {"model": "pretrained GE2E (Resemblyzer's weights)", "device": "cpu"},
            files={"weights": resemblyzer_weights()},
        )
    )
    plain, spec = roots["plain"], ("ge2e", {"device": "cpu"})
    run.log(
        f"[scores ge2e] the pretrained GE2E encoder: {sum(1 for p in VOICE_DEMO_SYSTEMS.values() if p)} systems x 2 rungs"
    )
    scored: dict[str, dict[str, Path]] = {}
    for name, root in roots.items():
        if VOICE_DEMO_SYSTEMS[name] is None:
            scored[f"{name}/ge2e"] = _score_both_splits(run, pretrained, f"{name}/ge2e", root, root, spec)
            continue
        for rung, enrol_root in (("ignorant", plain), ("lazy-informed", root)):
            label = f"{name}/ge2e/{rung}"
            scored[label] = _score_both_splits(run, pretrained, label, enrol_root, root, spec)
    for name, root in roots.items():
        if VOICE_DEMO_SYSTEMS[name] is None:
            continue
        checkpoint = _adapt_ge2e(run, name, root, training_code=training_code, n_train=n_train)
        adapted = Ge2e(device="cpu", checkpoint=checkpoint, cache_dir=cache, progress=run.progress)
        run.attackers.append(
            AttackerSettings.of(
                f"{name}/ge2e semi-informed",
                {"adapted": "output layer", **GE2E_ADAPTATION, "seed": run.seed},
                files={"checkpoint": checkpoint},
            )
        )
        label = f"{name}/ge2e/semi-informed"
        run.log(f"[scores {label}] scoring with the adapted encoder")
        adapted_spec = ("ge2e", {"device": "cpu", "checkpoint": checkpoint})
        scored[label] = _score_both_splits(run, adapted, label, root, root, adapted_spec)
        scored.update(_score_ge2e_asnorm(run, name, root, checkpoint))
    return scored


def _adapt_ge2e(run: _DemoRun, name: str, root: Path, *, training_code: str, n_train: int) -> Path:
    """Adapt (or reuse) the pretrained GE2E's output layer on system *name*'s anonymised train speakers; its checkpoint.

    :func:`~lidframe.attackers.training.train_output_layer`: the LSTM keeps Resemblyzer's
    weights, the output layer learns the anonymised train speakers (seconds on the CPU,
    where fine-tuning the whole LSTM takes minutes per epoch).  Keyed like the ECAPA
    checkpoints (seed, settings, the attackers' code and torch, the train data dir's
    stamp) and by the pretrained weights' digest; a checkpoint of the same key is reused.
    """
    from lidframe.attackers.ge2e import Ge2e, resemblyzer_weights
    from lidframe.attackers.training import train_output_layer
    from lidframe.data.fileio import file_sha256

    weights = resemblyzer_weights()
    key = _digest(
        json.dumps([run.seed, GE2E_ADAPTATION]), training_code, _read_stamp(root / "train"), file_sha256(weights)
    )
    checkpoint = run.out / "attackers" / f"{name}-ge2e-{key[:12]}.ckpt"
    if checkpoint.is_file():
        run.log(f"attacker {name}/ge2e: reused checkpoint {checkpoint}")
        return checkpoint
    run.log(
        f"[attacker {name}/ge2e] adapting the pretrained GE2E's output layer on the {n_train} anonymised train speakers"
    )
    train_output_layer(
        Ge2e(device="cpu"),
        root / "train",
        checkpoint,
        init=weights,
        device="cpu",
        seed=run.seed,
        log=run.log,
        wav_paths=DEMO_WAV_PATHS,
        **GE2E_ADAPTATION,
    )
    return checkpoint


def _score_random(run: _DemoRun) -> dict[str, Path]:
    """Score the plain speech's dev and eval trials with the seeded random attacker; ``split -> score file``."""
    from lidframe.attackers import RandomAttacker

    corpus = run.out / "corpus"
    spec = ("random", {"seed": run.seed})
    return _score_both_splits(run, RandomAttacker(seed=run.seed), "random", corpus, corpus, spec)
