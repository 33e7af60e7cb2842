"""RandomAttacker: embeddings that carry no speaker information (the zero-leakage baseline)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from lidframe.data.utterance import Utterance, check_utterances
from lidframe.errors import InputError
from lidframe.registry.capabilities import range_checked
from lidframe.registry.ranges import Range

from .base import SCORING_RANGES, SEED, WIDTH, EmbeddingAttacker

__all__ = ["RandomAttacker"]


class RandomAttacker(EmbeddingAttacker):
    """Seeded random embeddings, independent of the speaker.

    Each utterance's embedding is drawn from N(0, I_dim) with a generator seeded by
    ``seed`` and the utterance id (SHA-256), so it does not depend on batch order or
    on which other utterances are embedded.  Scores are cosines, so LID should be ~0:
    use it to check a pipeline's floor.

    Parameters
    ----------
    dim : int
        Embedding dimension, in [1, 8192] (192, as ECAPA-TDNN's, by default).
    seed : int
        Seed, in [0, 2**64 - 1]; the same seed gives the same embeddings.
    enrolment : {"mean_of_normalised", "mean"}
        Enrolment aggregation (see :class:`EmbeddingAttacker`).
    **scoring
        The scoring options of :class:`EmbeddingAttacker` (``backend``, ``plda_train``,
        ``plda_dim``, ``score_norm``, ``cohort``, ``cohort_top_k``).
    """

    name = "random"
    #: Embeddings come from the utterance id: the audio files are never read.
    reads_audio = False
    option_ranges: ClassVar[Mapping[str, Range]] = {**SCORING_RANGES, "dim": WIDTH, "seed": SEED}

    @range_checked("attacker")
    def __init__(self, *, dim: int = 192, seed: int = 0, enrolment: str = "mean_of_normalised", **scoring: Any):
        super().__init__(enrolment=enrolment, **scoring)
        self.dim = dim
        self.seed = seed

    def embed(self, utterances: Sequence[Utterance]) -> np.ndarray:
        """(n, dim) float64 random embeddings, one per utterance (by utterance id)."""
        utterances = check_utterances(utterances, "utterances")
        if not isinstance(self.dim, int) or self.dim < 1:
            raise InputError(f"RandomAttacker dim must be a positive integer, got {self.dim!r}")
        out = np.empty((len(utterances), self.dim))
        for row, utt in enumerate(utterances):
            digest = hashlib.sha256(f"{self.seed}\0{utt.utt_id}".encode()).digest()
            out[row] = np.random.default_rng(int.from_bytes(digest[:16], "little")).standard_normal(self.dim)
        return out
