"""What the real-voice demo runs: its systems, attackers and settings, its rows, and the record of one run.

:data:`VOICE_DEMO_SYSTEMS` and the attackers' settings (:data:`SMALL_ECAPA`,
:data:`GE2E_ADAPTATION`, ...) are what :func:`lidframe.demo.voice.run.run_voice_demo`
runs; :func:`demo_rows` its rows in table order; :class:`_DemoRun` the settings every
stage reads.  The stamps that key the demo's caches by their inputs (:func:`_digest`,
:func:`_read_stamp`) live here too, as every stage keys its cache so.
:func:`voice_demo_unavailable` says why the demo cannot run here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.analyses.sensitivity import DEFAULT_CALIBRATORS
from lidframe.data.digests import DigestCache
from lidframe.demo.simulated import DEMO_OPEN_SET_PRIOR

if TYPE_CHECKING:
    from lidframe.data.kaldi import WavPaths
    from lidframe.report.sections.ladder_model import LadderEntry

__all__ = [
    "VOICE_DEMO_SYSTEMS",
    "ECAPA_SYSTEMS",
    "SMALL_ECAPA",
    "TRAINING",
    "GE2E_ADAPTATION",
    "STRONGER_RUNG",
    "FUSED_ATTACKERS",
    "ASNORM_TOP_K",
    "CALIBRATOR",
    "DEMO_SPLIT",
    "DEMO_OUTSIDERS",
    "OPEN_SET_PRIOR",
    "SENSITIVITY_CALIBRATORS",
    "N_BOOT",
    "RECOGNISER",
    "UTILITY_METHOD",
    "UTILITY_STAMP_SUFFIX",
    "STAMP_FILE",
    "DEMO_WAV_PATHS",
    "demo_rows",
    "stronger_rows",
    "voice_demo_unavailable",
]

#: name -> anonymise_data_dir keyword arguments (None: the plain speech).  The parameter is
#: drawn per utterance (``mcadams``, ``pitch``: a speaker's recordings do not share it) or
#: per speaker (``-spk``: every recording of a speaker gets the same one, the consistency
#: that a lazy-informed attacker's anonymised enrolment exploits).
VOICE_DEMO_SYSTEMS: dict[str, dict[str, Any] | None] = {
    "plain": None,
    "mcadams": {"method": "mcadams", "alpha_range": (0.5, 0.9), "per_utterance": True},
    "pitch": {"method": "pitch", "ratio_range": (0.75, 1.35), "per_utterance": True},
    "mcadams-spk": {"method": "mcadams", "alpha_range": (0.5, 0.9), "per_utterance": False},
    "pitch-spk": {"method": "pitch", "ratio_range": (0.75, 1.35), "per_utterance": False},
}
#: The systems that also get the small ECAPA-TDNN trained here (a second semi-informed attacker, beside GE2E's).
ECAPA_SYSTEMS = ("mcadams", "pitch")
#: How the demo's data dirs name their audio, and how the demo reads them: relative to the data dir
#: (:data:`lidframe.data.kaldi.WAV_PATHS`), so that the output folder can move and its stamps stay the same.
DEMO_WAV_PATHS: WavPaths = "data-dir"
#: The demo attackers' encoder: a small ECAPA-TDNN that trains in seconds per epoch on a CPU.
SMALL_ECAPA = {"channels": (64, 64, 64, 64, 192), "attention_channels": 32, "se_channels": 32, "lin_neurons": 64}
#: train_attacker's settings for the demo's ECAPA attackers (beside epochs and seed).
TRAINING: dict[str, Any] = {"batch_size": 16}
#: How the semi-informed GE2E attacker is adapted: the pretrained encoder's output layer trained on a system's
#: anonymised train speakers (:func:`lidframe.attackers.training.train_output_layer`).
GE2E_ADAPTATION: dict[str, Any] = {"epochs": 200, "lr": 1e-3}
#: The rung of the demo's stronger attackers (:func:`stronger_rows`): where GE2E (adapted) and the small ECAPA
#: both attack, so that their fusion and GE2E with AS-norm stand beside the single attackers of the same rung.
STRONGER_RUNG = "semi-informed"
#: The attackers whose :data:`STRONGER_RUNG` rows are fused into a system's ``SYSTEM/fusion/semi-informed`` row.
FUSED_ATTACKERS = ("ge2e", "ecapa")
#: K of the ``SYSTEM/ge2e-asnorm/semi-informed`` rows' AS-norm, whose cohort is the system's anonymised train
#: speakers (14 with the default corpus): the statistics of the 10 most similar, so that each side still drops the
#: 4 least like it (the adaptive part) while its standard deviation rests on 10 scores; fewer where fewer.
ASNORM_TOP_K = 10
#: The calibrator of every row (fitted on dev).
CALIBRATOR = "logistic"
#: Shares of the voices for train, dev and eval: most of them eval, so that N is near the paper's 29-40.
DEMO_SPLIT = (0.3, 0.2, 0.5)
#: Outsider speakers of dev and of eval (:func:`lidframe.audio.corpus.outsider_voices`: espeak-ng voices enrolled
#: nowhere, 5 trials each): 30 of the 150 eval trials, the share π_∅ = 0.2 of :data:`OPEN_SET_PRIOR`; the dev
#: set's add their pairs to the open-set calibration, as :func:`lidframe.evaluate` fits it.  The closed-set rows
#: leave them out, so their numbers are those of the corpus without them.
DEMO_OUTSIDERS = (3, 6)
#: The prior of the open-set evaluation beside each row's closed-set one (the simulated demo's).
OPEN_SET_PRIOR = DEMO_OPEN_SET_PRIOR
#: The calibrators of each row's sensitivity analysis (``lidframe sensitivity``'s default: identity is left out,
#: as an attacker's cosine scores are not log likelihood ratios).
SENSITIVITY_CALIBRATORS = DEFAULT_CALIBRATORS
#: Resamples of the speaker bootstrap behind every headline interval.
N_BOOT = 1000
_SPLITS = ("train", "dev_enrolls", "dev_trials", "eval_enrolls", "eval_trials")
#: The recogniser of the utility column (a registry spec, :mod:`lidframe.utility`): PocketSphinx, US English.
RECOGNISER = "pocketsphinx"
#: The utility column's interval type: percentile, as BCa's jackknife has one point per speaker and the
#: default corpus has three recognisable eval speakers (resamples of speakers, the run's n_boot and seed).
UTILITY_METHOD = "percentile"
#: What follows ``utility/<system>`` in the name of the stamp beside each utility record
#: (:func:`~lidframe.demo.voice.utility.utility_column`).
UTILITY_STAMP_SUFFIX = ".inputs.sha256"


_GE2E_MODEL = "GE2E pretrained on real speech (Resemblyzer's weights)"
_GE2E_ADAPTED = "GE2E with its output layer adapted on the system's anonymised train speakers"
_ECAPA_MODEL = "small ECAPA-TDNN trained here on the system's train speakers"
_FUSION_MODEL = "linear logistic fusion of the adapted GE2E and the small ECAPA-TDNN (weights fitted on dev)"
_ASNORM_MODEL = _GE2E_ADAPTED + ", scores AS-normed against the system's anonymised train speakers"


def demo_rows(*, ge2e: bool = True) -> list[LadderEntry]:
    """The rows of the real-voice demo in table order; without *ge2e*, the ECAPA and random rows.

    Each row is a :class:`lidframe.report.LadderEntry`: its label ``system/attacker/scenario``
    (``system/attacker`` on the plain speech, ``random``), the system, the attacker
    (``ge2e`` pretrained, ``ecapa`` the small ECAPA-TDNN trained here, ``random``), the rung
    (None on the plain speech), the enrolment and trial sides, and the model in words.
    """
    from lidframe.data.scenario import ANONYMISED, ORIGINAL, SCENARIOS
    from lidframe.report.sections.ladder_model import LadderEntry

    rows = []
    for system, params in VOICE_DEMO_SYSTEMS.items():
        if params is None:
            if ge2e:
                rows.append(LadderEntry(f"{system}/ge2e", system, "ge2e", None, ORIGINAL, ORIGINAL, _GE2E_MODEL))
            if system in ECAPA_SYSTEMS:
                rows.append(LadderEntry(f"{system}/ecapa", system, "ecapa", None, ORIGINAL, ORIGINAL, _ECAPA_MODEL))
            continue
        if ge2e:
            for rung in SCENARIOS.values():
                model = _GE2E_ADAPTED if rung.adapted_model else _GE2E_MODEL
                rows.append(
                    LadderEntry(
                        f"{system}/ge2e/{rung.name}", system, "ge2e", rung.name, rung.enrolment, ANONYMISED, model
                    )
                )
        if system in ECAPA_SYSTEMS:
            rung = SCENARIOS["semi-informed"]
            rows.append(
                LadderEntry(
                    f"{system}/ecapa/{rung.name}", system, "ecapa", rung.name, ANONYMISED, ANONYMISED, _ECAPA_MODEL
                )
            )
        if ge2e:
            rows.extend(stronger_rows(system))
    rows.append(
        LadderEntry("random", "random", "random", None, ORIGINAL, ORIGINAL, "seeded random embeddings (the floor)")
    )
    return rows


def stronger_rows(system: str) -> list[LadderEntry]:
    """The stronger attackers' rows of anonymised *system* (GE2E's rows given), on :data:`STRONGER_RUNG`.

    ``SYSTEM/ge2e-asnorm/semi-informed`` (the adapted GE2E, its scores AS-normed against
    the system's anonymised train speakers, K = :data:`ASNORM_TOP_K`), then, for a system
    of :data:`ECAPA_SYSTEMS`, ``SYSTEM/fusion/semi-informed`` (the fusion of the
    :data:`FUSED_ATTACKERS`' rows of that rung).
    """
    from lidframe.data.scenario import ANONYMISED, SCENARIOS
    from lidframe.report.sections.ladder_model import LadderEntry

    rung = SCENARIOS[STRONGER_RUNG]
    made = [("ge2e-asnorm", _ASNORM_MODEL)] + ([("fusion", _FUSION_MODEL)] if system in ECAPA_SYSTEMS else [])
    return [
        LadderEntry(f"{system}/{attacker}/{rung.name}", system, attacker, rung.name, ANONYMISED, ANONYMISED, model)
        for attacker, model in made
    ]


@attrs.frozen
class _DemoRun:
    """The settings every stage of one demo run reads (:func:`~lidframe.demo.voice.run.run_voice_demo`'s parameters)."""

    out: Path
    seed: int
    epochs: int
    jobs: int
    progress: bool
    log: Callable[[str], object]
    #: The attackers behind the scores, with their settings and checkpoints, for the report's provenance.
    attackers: list = attrs.field(factory=list)
    #: The digests of the files the score files' provenance names, each file hashed once per run.
    digests: DigestCache = attrs.field(factory=DigestCache)


def _digest(*parts: str | bytes) -> str:
    """SHA-256 (hex) of *parts*, each length-prefixed so that no two sequences collide."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


#: The file in each data dir of the demo naming its inputs' digest
#: (see :func:`~lidframe.demo.voice.corpus._anonymise_systems`).
STAMP_FILE = "lidframe-demo-inputs.sha256"


def _source_digest(folder: Path) -> str:
    """What a data dir of the demo holds: its wav.scp and utt2spk (the corpus's wav names carry their recipe)."""
    return _digest(*((folder / name).read_bytes() for name in ("wav.scp", "utt2spk")))


def _read_stamp(folder: Path) -> str:
    """The inputs digest of a demo data dir: its stamp for an anonymised one, its contents for the corpus's."""
    stamp = folder / STAMP_FILE
    return stamp.read_text().strip() if stamp.is_file() else _source_digest(folder)


def voice_demo_unavailable() -> str | None:
    """Why the real-voice demo cannot run here, in a few words; None where it can.

    It needs a speech engine (:func:`lidframe.audio.corpus.available_voices`), soundfile
    and torch (checked by importing the ECAPA-TDNN attacker, which imports torch through
    :mod:`lidframe.attackers._torch`).
    """
    from lidframe.audio.corpus import INSTALL_HINT, available_voices

    if not available_voices():
        return f"no speech engine here ({INSTALL_HINT})"
    try:
        import soundfile  # noqa: F401
    except ImportError:
        return "soundfile is not installed, and the real-voice demo reads and writes audio with it (pip install -e '.[audio]')"
    try:
        import lidframe.attackers.ecapa  # noqa: F401 - imports torch
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        from lidframe.attackers import TORCH_INSTALL_HINT

        return f"torch is not installed, and the real-voice demo trains its attackers with it ({TORCH_INSTALL_HINT})"
    return None
