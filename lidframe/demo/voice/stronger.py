"""The real-voice demo's stronger attackers: GE2E and ECAPA fused, and GE2E with AS-norm, beside the single attackers.

On :data:`~lidframe.demo.voice.plan.STRONGER_RUNG` (semi-informed) each anonymised system
gets (rows: :func:`~lidframe.demo.voice.plan.stronger_rows`):

``SYSTEM/fusion/semi-informed`` (:func:`_score_fusions`)
    The semi-informed GE2E and ECAPA rows' score files fused as ``lidframe fuse`` fuses
    them (:func:`lidframe.report.score_files.fuse_score_files`: row z-scores, class-balanced
    logistic weights fitted on dev, applied to dev and eval), written with the fusion's
    provenance (its inputs with their digests and provenance, and the weights).  No
    embedding is computed: seconds.
``SYSTEM/ge2e-asnorm/semi-informed`` (:func:`_score_ge2e_asnorm`)
    The adapted GE2E's scores AS-normed (:mod:`lidframe.core.cohort`) against a cohort of
    the system's anonymised *train* speakers -- never a dev or eval speaker (the attacker
    refuses a cohort that holds one) -- with K = min(:data:`~lidframe.demo.voice.plan.ASNORM_TOP_K`,
    cohort size).  The cohort is an embedding set (:func:`_train_cohort`) of the train
    utterances embedded by the same encoder; the embedding cache holds the dev and eval
    embeddings already, so the row costs one pass of the encoder over the train speech.

:func:`stronger_comparison` says per system whether each stronger row beats the best
single attacker: ALID with intervals, and the paired difference of the two rows' ALIDs on
the same eval trials (:func:`lidframe.analyses.compare.paired_comparison`);
:func:`stronger_table` prints it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lidframe.demo.voice.plan import ASNORM_TOP_K, FUSED_ATTACKERS, STRONGER_RUNG, VOICE_DEMO_SYSTEMS, _DemoRun

if TYPE_CHECKING:
    from lidframe.attackers import EmbeddingAttacker
    from lidframe.core.result import Result
    from lidframe.report.sections.ladder_model import LadderEntry

__all__ = ["stronger_comparison", "stronger_table"]

#: The stronger attackers (the middle part of their rows' labels), as the table shows them.
STRONGER_ATTACKERS = ("fusion", "ge2e-asnorm")


def _score_fusions(run: _DemoRun, scored: Mapping[str, Mapping[str, Path]]) -> dict[str, dict[str, Path]]:
    """Each system's :data:`~lidframe.demo.voice.plan.FUSED_ATTACKERS` rows of the rung fused; ``label -> split -> file``.

    A system fuses where *scored* holds every fused attacker's row of the rung (without
    GE2E, none does).  The weights are fitted on the dev files and applied to both splits
    (:func:`~lidframe.report.score_files.fuse_score_files`, the path of ``lidframe fuse``);
    each split's file holds the fusion's provenance.
    """
    from lidframe.report import AttackerSettings
    from lidframe.report.score_files import fuse_score_files
    from lidframe.report.sections.provenance_model import command_line

    fused_rows: dict[str, dict[str, Path]] = {}
    for system in VOICE_DEMO_SYSTEMS:
        inputs = [scored.get(f"{system}/{attacker}/{STRONGER_RUNG}") for attacker in FUSED_ATTACKERS]
        if any(paths is None for paths in inputs):
            continue
        label = f"{system}/fusion/{STRONGER_RUNG}"
        fusion, fused, provenance = fuse_score_files(
            [paths["dev"] for paths in inputs if paths is not None],
            [paths["eval"] for paths in inputs if paths is not None],
            command=command_line(),
        )
        flat = {split: int(np.count_nonzero(np.ptp(s.scores, axis=1) == 0)) for split, s in fused.items()}
        if any(flat.values()):  # a corpus of very few enrolled speakers: the row left out, and said
            where = ", ".join(f"{n} {split} trials" for split, n in flat.items() if n)
            run.log(f"scores {label}: left out: {where} whose fused scores are all equal (the row z-norm is undefined)")
            continue
        fused_rows[label] = {}
        for split, scores in fused.items():
            path = run.out / "scores" / f"{label.replace('/', '_')}_{split}.npz"
            scores.save(path, provenance=provenance)
            fused_rows[label][split] = path
        weights = {f"weight {a}": float(w) for a, w in zip(FUSED_ATTACKERS, fusion.weights, strict=True)}
        run.log(
            f"scores {label}: fused {' and '.join(FUSED_ATTACKERS)} on {fusion.n_mated} mated and "
            f"{fusion.n_non_mated} non-mated dev pairs (" + ", ".join(f"{k} {v:.3g}" for k, v in weights.items()) + ")"
        )
        run.attackers.append(
            AttackerSettings.of(label, {"fused": f"{', '.join(FUSED_ATTACKERS)} {STRONGER_RUNG}", **weights})
        )
    return fused_rows


def _score_ge2e_asnorm(run: _DemoRun, name: str, root: Path, checkpoint: Path) -> dict[str, dict[str, Path]]:
    """System *name*'s adapted GE2E (*checkpoint*) with AS-norm against its train speakers; ``label -> split -> file``."""
    from lidframe.attackers.ge2e import Ge2e

    make = functools.partial(
        Ge2e, device="cpu", checkpoint=checkpoint, cache_dir=run.out / "embedding-cache", progress=run.progress
    )
    spec = ("ge2e", {"device": "cpu", "checkpoint": checkpoint})
    return _score_with_train_cohort(run, f"{name}/ge2e-asnorm/{STRONGER_RUNG}", make, spec, root)


def _score_with_train_cohort(
    run: _DemoRun,
    label: str,
    make: Callable[..., EmbeddingAttacker],
    spec: tuple[str, dict[str, Any]],
    root: Path,
) -> dict[str, dict[str, Path]]:
    """Row *label*: the attacker ``make()`` makes, AS-normed against ``root/train``'s speakers, scoring *root*'s splits.

    The cohort is :func:`_train_cohort` of ``make()``; K is the smaller of
    :data:`~lidframe.demo.voice.plan.ASNORM_TOP_K` and the cohort's size.  ``make(score_norm=,
    cohort=, cohort_top_k=)`` is the scoring attacker, and *spec* (the attacker's registry
    name and parameters) gains those three for the score files' provenance, which so names
    the cohort file with its digest.
    """
    from lidframe.demo.voice.attackers import _score_both_splits

    cohort, n_speakers = _train_cohort(run, label, make(), root / "train")
    top_k = min(ASNORM_TOP_K, n_speakers)
    options = {"score_norm": "asnorm", "cohort": cohort, "cohort_top_k": top_k}
    run.log(f"[scores {label}] AS-norm against the {n_speakers} anonymised train speakers (top {top_k})")
    attacker = make(**options)
    return {label: _score_both_splits(run, attacker, label, root, root, (spec[0], {**spec[1], **options}))}


def _train_cohort(run: _DemoRun, label: str, attacker: EmbeddingAttacker, train: Path) -> tuple[Path, int]:
    """The cohort of row *label*: the speakers of data dir *train* embedded by *attacker*, as an embedding set.

    Its enrolled speakers are the train speakers' profiles (enrolled as the attacker enrols
    a speaker), its trials their utterances; written to ``cohorts/`` in the output folder
    anew on each run (the embedding cache is the reuse).  Returns the file and the number
    of speakers.
    """
    import numpy as np

    from lidframe.data.embedset import EmbeddingSet
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker
    from lidframe.demo.voice.plan import DEMO_WAV_PATHS

    utterances = read_data_dir(train, wav_paths=DEMO_WAV_PATHS)
    speakers, profiles = attacker.enrol(group_by_speaker(utterances))
    cohort = EmbeddingSet(
        np.asarray(attacker.embed(utterances), dtype=np.float64),
        profiles,
        speakers,
        [u.speaker for u in utterances],
        [u.utt_id for u in utterances],
    )
    path = run.out / "cohorts" / f"{label.replace('/', '_')}.npz"
    path.parent.mkdir(exist_ok=True)
    cohort.save(path)
    return path, len(speakers)


def _alid(result: Result) -> dict[str, float]:
    """A row's ALID with its speaker-bootstrap interval (NaN bounds where none), bits."""
    interval = (result.summary.intervals or {}).get("alid")
    nan = float("nan")
    low, high = (nan, nan) if interval is None else (float(interval.low), float(interval.high))
    return {"alid": float(result.summary.alid), "low": low, "high": high}


def _enrolled_lid(result: Result) -> dict[str, tuple[float, str]]:
    """Trial id -> (LID bits, speaker) of a row's enrolled eval trials."""
    keep = ~result.is_outsider
    return {
        str(t): (float(v), str(s))
        for t, v, s in zip(result.trial_ids[keep], result.lid[keep], result.trial_speakers[keep], strict=True)
    }


def _paired(stronger: Result, single: Result, bootstrap: Any) -> dict[str, Any]:
    """ALID(stronger) - ALID(single) on their common enrolled eval trials, paired by speaker; and the judgement."""
    from lidframe.analyses.compare import paired_comparison

    a, b = _enrolled_lid(stronger), _enrolled_lid(single)
    common = [t for t in a if t in b]
    row = paired_comparison(
        [a[t][0] for t in common], [b[t][0] for t in common], speakers=[a[t][1] for t in common], bootstrap=bootstrap
    )["alid"]
    beats = "yes" if row["low"] > 0 else "no, below" if row["high"] < 0 else "not clearly"
    return {
        "diff": row["diff"],
        "diff_low": row["low"],
        "diff_high": row["high"],
        "p_value": row["p_value"],
        "beats": beats,
    }


def stronger_comparison(
    rows: Sequence[LadderEntry], results: Mapping[str, Result], *, n_boot: int, seed: int
) -> dict[str, dict[str, Any]]:
    """Per anonymised system, whether each stronger attacker beats the best single attacker, by ALID.

    Parameters
    ----------
    rows : sequence of LadderEntry
        The demo's rows (:func:`~lidframe.demo.voice.plan.demo_rows`): each one's system and attacker.
    results : mapping
        Row label -> Result.
    n_boot, seed : int
        Resamples (of speakers) and seed of the paired bootstrap.

    Returns
    -------
    dict
        System -> ``{"best_single": {"label", "alid", "low", "high"}, ATTACKER: {"label",
        "alid", "low", "high", "diff", "diff_low", "diff_high", "p_value", "beats"}}`` for
        each stronger attacker of :data:`STRONGER_ATTACKERS` the system has: the best single
        attacker is its row of largest ALID among the others (every rung); ``diff`` is
        ALID(stronger) - ALID(best single) on their common enrolled eval trials, with a
        paired percentile interval and permutation p-value
        (:func:`~lidframe.analyses.compare.paired_comparison`, resampling speakers);
        ``beats`` is ``"yes"`` where that interval lies above 0, ``"no, below"`` where below,
        else ``"not clearly"``.  Systems without a stronger row are left out.
    """
    from lidframe.stats.bootstrap import Bootstrap

    bootstrap = Bootstrap(n_boot=n_boot, method="percentile", unit="speaker", seed=seed)
    comparison: dict[str, dict[str, Any]] = {}
    for system in dict.fromkeys(row.system for row in rows):
        own = [row for row in rows if row.system == system and row.label in results]
        stronger = {row.attacker: row.label for row in own if row.attacker in STRONGER_ATTACKERS}
        singles = [row.label for row in own if row.attacker not in STRONGER_ATTACKERS]
        if not stronger or not singles:
            continue
        best = max(singles, key=lambda label: results[label].summary.alid)
        entry: dict[str, Any] = {"best_single": {"label": best, **_alid(results[best])}}
        for attacker, label in stronger.items():
            entry[attacker] = {
                "label": label,
                **_alid(results[label]),
                **_paired(results[label], results[best], bootstrap),
            }
        comparison[system] = entry
    return comparison


def stronger_table(comparison: Mapping[str, Mapping[str, Any]]) -> str:
    """:func:`stronger_comparison` as text: one line per system and stronger attacker."""
    from lidframe.report.text import text_table

    def shown(value: float, low: float, high: float, signed: bool = False) -> str:
        text = f"{value:+.2f}" if signed else f"{value:.2f}"
        return (
            text if low != low else f"{text} [{low:+.2f}, {high:+.2f}]" if signed else f"{text} [{low:.2f}, {high:.2f}]"
        )

    header = ["system", "best single attacker", "its ALID", "stronger attacker", "ALID", "difference", "p", "beats it"]
    body = []
    for system, entry in comparison.items():
        best = entry["best_single"]
        for attacker in STRONGER_ATTACKERS:
            if attacker not in entry:
                continue
            row = entry[attacker]
            body.append(
                [
                    system,
                    best["label"].partition("/")[2],
                    shown(best["alid"], best["low"], best["high"]),
                    row["label"].partition("/")[2],
                    shown(row["alid"], row["low"], row["high"]),
                    shown(row["diff"], row["diff_low"], row["diff_high"], signed=True),
                    f"{row['p_value']:.3f}",
                    row["beats"],
                ]
            )
    return (
        "Stronger attackers against the best single attacker of each system: ALID [95 % speaker-bootstrap interval], "
        "bits; difference on the same eval trials [95 % paired interval]\n" + text_table(header, body)
    )
