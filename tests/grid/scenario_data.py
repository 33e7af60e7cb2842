"""Data dirs and a tiny model attacker for the threat-model ladder (the scenarios axis, ``lidframe score --scenario``).

:class:`Adaptable` is an attacker with a "model": a ``checkpoint`` text file holding one
number, how much of the anonymiser's shift the model has learnt to remove (0 without a
checkpoint: its default weights, trained on clear speech).  Its embeddings come from the
utterance ids and speakers (it never reads audio): an original utterance carries its
speaker's voice, an anonymised one (``-anon-`` in its id) half of it plus the
anonymiser's common target voice.  So the three scenarios score differently, and each
number can be recomputed without the grid.

:func:`ladder_system` writes one system's dev and eval splits: anonymised enrolment,
original enrolment of the same speakers, and anonymised trials.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lidframe.attackers.base import EmbeddingAttacker
from lidframe.data.utterance import Utterance

__all__ = ["Adaptable", "ladder_system", "write_dir", "registered_adaptable"]


def _vector(text: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dim)


class Adaptable(EmbeddingAttacker):
    """A model attacker whose checkpoint (a text file, one number) says how well it undoes the anonymiser."""

    name = "adaptable"
    reads_audio = False

    def __init__(self, *, checkpoint: str | None = None, dim: int = 8, enrolment: str = "mean_of_normalised"):
        super().__init__(enrolment=enrolment)
        self.checkpoint = checkpoint
        self.dim = dim

    @classmethod
    def input_files(cls, params: dict) -> list[Path]:
        """The checkpoint, when given."""
        return [Path(params["checkpoint"])] if params.get("checkpoint") else []

    def adaptation(self) -> float:
        """The number in the checkpoint; 0 for the default weights."""
        return float(Path(self.checkpoint).read_text()) if self.checkpoint else 0.0

    def embed(self, utterances: Sequence[Utterance]) -> np.ndarray:
        """(n, dim) embeddings: voice (anonymised: half the speaker's plus the target's), minus what the model undoes."""
        undo = self.adaptation()
        target = _vector("anonymiser target", self.dim)
        rows = []
        for utt in utterances:
            voice = _vector(utt.speaker, self.dim)
            if "-anon-" in utt.utt_id:
                voice = 0.5 * voice + (1.0 - undo) * target
            rows.append(voice + 0.8 * _vector(utt.utt_id, self.dim))
        return np.array(rows)


def write_dir(folder: Path, utts: Sequence[tuple[str, str]]) -> Path:
    """A Kaldi data dir of ``(utt_id, speaker)`` whose ``wav.scp`` names no real audio (the attackers here read none)."""
    folder.mkdir(parents=True)
    (folder / "wav.scp").write_text("".join(f"{u} {u}.wav\n" for u, _ in utts))
    (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
    return folder


def ladder_system(root: Path, name: str = "anon", *, speakers: int = 6) -> dict[str, dict[str, Path]]:
    """dev and eval of one anonymised system under *root*: ``{split: {"enrol", "original_enrol", "trials"}}``."""
    dirs: dict[str, dict[str, Path]] = {}
    for split in ("dev", "eval"):
        spk = [f"{split}spk{s}" for s in range(speakers)]
        dirs[split] = {
            "enrol": write_dir(
                root / f"{name}_{split}_enrol", [(f"{s}-anon-enrol-{k}", s) for s in spk for k in range(2)]
            ),
            "original_enrol": write_dir(
                root / f"{split}_enrol_original", [(f"{s}-orig-enrol-{k}", s) for s in spk for k in range(2)]
            ),
            "trials": write_dir(
                root / f"{name}_{split}_trials", [(f"{s}-anon-trial-{k}", s) for s in spk for k in range(3)]
            ),
        }
    return dirs


def registered_adaptable():
    """Context: :class:`Adaptable` registered as the attacker ``adaptable`` (unregistered after)."""
    import contextlib

    from lidframe import registry

    @contextlib.contextmanager
    def context():
        registry.register("attacker", "adaptable", Adaptable)
        try:
            yield
        finally:
            registry.unregister("attacker", "adaptable")

    return context()
