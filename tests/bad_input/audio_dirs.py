"""Builders shared by the audio, checkpoint and cache families: small data dirs of generated voices.

Every case scores with :data:`ATTACKER`, an ECAPA-TDNN small enough (8-d embeddings) to
embed a half-second utterance in milliseconds on a CPU; without a checkpoint its weights
are the seeded random initialisation, which is all a refusal needs.
"""

from __future__ import annotations

from pathlib import Path

from tests.voices import write_voice

#: The encoder options of ATTACKER (for building matching or mismatching checkpoints).
SMALL_ECAPA = {"channels": (16, 16, 16, 16, 48), "attention_channels": 8, "se_channels": 8, "lin_neurons": 8}
ATTACKER = "ecapa?channels=16,16,16,16,48&attention_channels=8&se_channels=8&lin_neurons=8&device=cpu"


def write_data_dir(folder: Path, entries: list[tuple[str, str, object]]) -> Path:
    """A Kaldi data dir at *folder*: ``wav.scp`` and ``utt2spk`` of ``(utt, speaker, path)`` entries."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "wav.scp").write_text("".join(f"{utt} {path}\n" for utt, _, path in entries))
    (folder / "utt2spk").write_text("".join(f"{utt} {speaker}\n" for utt, speaker, _ in entries))
    return folder


def scoring_dirs(root: Path, *, trial: object | None = None, speakers: int = 2) -> tuple[Path, Path]:
    """Enrolment and trial data dirs under *root* (one 0.5 s utterance per speaker each).

    *trial*, when given, replaces the first trial's audio path (the broken input).
    Returns ``(enrol_dir, trials_dir)``.
    """
    wavs = root / "wav"
    wavs.mkdir(parents=True, exist_ok=True)
    enrol = [(f"e{s}", f"spk{s}", write_voice(wavs / f"e{s}.wav", s, 0, 0.5)) for s in range(speakers)]
    trials = [(f"t{s}", f"spk{s}", write_voice(wavs / f"t{s}.wav", s, 1, 0.5)) for s in range(speakers)]
    if trial is not None:
        trials[0] = (trials[0][0], trials[0][1], trial)
    return write_data_dir(root / "enrol", enrol), write_data_dir(root / "trials", trials)


def score_argv(enrol: Path, trials: Path, out: Path, *extra: object, attacker: str = ATTACKER) -> list[object]:
    """``lidframe score`` arguments for the two data dirs."""
    return ["score", "--attacker", attacker, "--enrol", enrol, "--trials", trials, "--out", out, *extra]
