"""An attacker that opens each utterance's audio, for tests of where audio paths lead (data dirs that move).

Its embedding is the speaker's voice plus noise drawn from the file's bytes: a file read from
the wrong place fails (missing) or changes the scores (other bytes).  Registered as
``listening`` inside :func:`registered`.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence

import numpy as np

from lidframe.attackers.base import EmbeddingAttacker
from lidframe.data.utterance import Utterance


def voice_vector(text: str) -> np.ndarray:
    """A 6-dimensional standard normal vector seeded by *text* (SHA-256)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(6)


class Listening(EmbeddingAttacker):
    """An attacker that opens each utterance's audio: the speaker's voice plus ``noise`` times a vector of the file's bytes."""

    name = "listening"
    reads_audio = True
    noise = 1.0

    def embed(self, utterances: Sequence[Utterance]) -> np.ndarray:
        rows = []
        for utt in utterances:
            with open(str(utt.path), "rb") as handle:  # a missing file fails, as for a real attacker
                content = handle.read()
            rows.append(voice_vector(utt.speaker) + self.noise * voice_vector(content.decode()))
        return np.array(rows)


@contextlib.contextmanager
def registered(attacker: type[Listening] = Listening) -> Iterator[None]:
    """*attacker* registered as ``listening`` for the block."""
    from lidframe import registry

    registry.register("attacker", "listening", attacker)
    try:
        yield
    finally:
        registry.unregister("attacker", "listening")
