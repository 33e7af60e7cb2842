"""Data dirs with real audio files and a cheap attacker that reads them, for the provenance tests (issue 41).

:func:`write_audio_dir` writes a Kaldi data dir of short tones (soundfile), a ``wav.scp``
of relative paths, ``utt2spk`` and ``spk2utt``.  :class:`AudioBytes` is an attacker that
reads each audio file (its embedding comes from the file's bytes), with an optional
``checkpoint`` text file whose SHA-256 is its ``weights_sha256``: every digest its score
file's provenance records can be recomputed here with :mod:`hashlib`.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from lidframe.attackers.base import EmbeddingAttacker
from lidframe.data.utterance import Utterance

__all__ = ["AudioBytes", "registered_audio_bytes", "write_audio_dir", "sha256_of"]


def sha256_of(path: Path) -> str:
    """The SHA-256 of the file's bytes, computed here."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def write_audio_dir(folder: Path, prefix: str, *, speakers: int = 4, per_speaker: int = 2, seed: int = 0) -> Path:
    """A data dir of ``speakers`` x ``per_speaker`` tones of 0.1 s at 16 kHz (each file different)."""
    import soundfile

    folder.mkdir(parents=True)
    (folder / "wav").mkdir()
    rng = np.random.default_rng(seed)
    wav, utt2spk, spk2utt = [], [], []
    for s in range(speakers):
        speaker = f"spk{s}"
        utts = [f"{speaker}-{prefix}{k}" for k in range(per_speaker)]
        for utt in utts:
            tone = 0.3 * np.sin(2 * np.pi * rng.uniform(100, 400) * np.arange(1600) / 16000)
            soundfile.write(folder / "wav" / f"{utt}.wav", tone.astype(np.float32), 16000)
            wav.append(f"{utt} {(folder / 'wav' / f'{utt}.wav').resolve()}\n")  # Kaldi: absolute or cwd-relative
            utt2spk.append(f"{utt} {speaker}\n")
        spk2utt.append(f"{speaker} {' '.join(utts)}\n")
    (folder / "wav.scp").write_text("".join(wav))
    (folder / "utt2spk").write_text("".join(utt2spk))
    (folder / "spk2utt").write_text("".join(spk2utt))
    return folder


class AudioBytes(EmbeddingAttacker):
    """An attacker that reads each utterance's audio file: its embedding is drawn from the file's SHA-256."""

    name = "audio-bytes"
    reads_audio = True

    def __init__(self, *, checkpoint: str | None = None, dim: int = 4, enrolment: str = "mean_of_normalised"):
        super().__init__(enrolment=enrolment)
        self.checkpoint = checkpoint
        self.dim = dim
        self.weights_sha256: str | None = None

    @classmethod
    def input_files(cls, params: dict) -> list[Path]:
        """The checkpoint, when given."""
        return [Path(params["checkpoint"])] if params.get("checkpoint") else []

    def embed(self, utterances: Sequence[Utterance]) -> np.ndarray:
        if self.checkpoint is not None:
            self.weights_sha256 = sha256_of(Path(self.checkpoint))
        rows = []
        for utt in utterances:
            seed = int.from_bytes(hashlib.sha256(Path(str(utt.path)).read_bytes()).digest()[:8], "little")
            rows.append(np.random.default_rng(seed).standard_normal(self.dim))
        return np.array(rows)


@contextlib.contextmanager
def registered_audio_bytes() -> Iterator[None]:
    """:class:`AudioBytes` registered as the attacker ``audio-bytes`` (unregistered after)."""
    from lidframe import registry

    registry.register("attacker", "audio-bytes", AudioBytes)
    try:
        yield
    finally:
        registry.unregister("attacker", "audio-bytes")
