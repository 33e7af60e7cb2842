"""The real-voice demo: synthesized speakers, four anonymisers, the threat-model ladder of attackers.

:func:`run_voice_demo` runs the whole LID pipeline on audio:

1. synthesize a corpus with the installed engines (:mod:`lidframe.audio.corpus`; cached),
   most voices eval speakers (:data:`DEMO_SPLIT`), and outsiders: speakers enrolled nowhere
   with trials in dev and eval (:data:`DEMO_OUTSIDERS`);
2. make the systems of :data:`VOICE_DEMO_SYSTEMS`: ``plain`` (no anonymisation),
   ``mcadams`` (McAdams with alpha drawn per utterance in [0.5, 0.9]), ``pitch`` (pitch
   shift by a ratio drawn per utterance in [0.75, 1.35]) and ``mcadams-spk``,
   ``pitch-spk`` (the same, drawn once per speaker), applied to every split;
3. measure the utility column (:func:`utility_column`): the word error rate of a recogniser
   (:data:`RECOGNISER`, PocketSphinx) and ρ_F0 against ``plain``, for every system, on the
   eval trials of the voices a WER means something for
   (:func:`lidframe.audio.corpus.recognisable_voice`), with speaker-bootstrap intervals;
4. attack every anonymised system up the ladder (:mod:`lidframe.data.scenario`) with the
   pretrained GE2E encoder (:class:`~lidframe.attackers.Ge2e`, Resemblyzer's weights):
   ignorant (original enrolment, anonymised trials), lazy-informed (anonymised enrolment)
   and semi-informed (anonymised enrolment, the encoder's output layer adapted on the
   system's anonymised train speakers); the plain speech with the pretrained encoder is the
   reference;
5. beside it, a small ECAPA-TDNN trained here on each of ``mcadams`` and ``pitch``'s
   anonymised train speakers (a second semi-informed attacker, checkpointed and
   resumable), and a ``random`` attacker (seeded random embeddings on the plain speech),
   the zero-leakage floor;
6. score dev and eval (every trial against every enrolled speaker, each row's dev scored
   its rung's way), calibrate on dev with ``logistic``, and evaluate on eval with speaker-
   bootstrap intervals in the closed set (the outsider trials left out); evaluate each row
   again in the open set (:data:`OPEN_SET_PRIOR`), and run its calibrator sensitivity
   (:data:`SENSITIVITY_CALIBRATORS`);
7. print the comparison table, the ladder and the utility table, and write, like the simulated demo,
   ``summary.json`` (with each row's attacker, rung, sides and model), ``table.txt``,
   ``per_trial.csv``, ``report.html`` and ``lid_ccdf.png``.

Without resemblyzer's weights the GE2E rows are left out, saying why in one line; so is the
utility column without the utility extra (pocketsphinx, jiwer, parselmouth) or without any
recognisable voice among the eval speakers.

Everything is cached under the output folder, so a rerun only redoes what is missing, and
says which stages it reused -- each cache keyed by what made it, so that another seed,
sentence count or voice set never reuses a stale one: the corpus's wav files (named by
engine, voice, sentence and rate), the anonymised data dirs (a stamp with the digest of
their corpus data dir, the anonymiser's parameters and the seed), each system's utility
record ``utility/<system>.json`` (a stamp beside it with the digest of its data dir, the
system's and the reference's stamps, the recogniser, the utility code and the bootstrap settings), each attacker's
checkpoint ``attackers/<system>-<key>.ckpt`` and ``attackers/<system>-ge2e-<key>.ckpt`` (keyed by its train data dir, the seed, the
encoder and training settings, and the attackers' code and torch's version; training resumes where it stopped; a checkpoint with the epochs asked for is
reused) and the embeddings (keyed by the audio, the checkpoint's weights and the encoder's code,
:mod:`lidframe.attackers.cache`).  The anonymisers of all systems share one pool of
``jobs`` worker processes, the recogniser runs in ``jobs`` worker processes, and ``jobs`` speech engines run at once.  The scores are recomputed from the embeddings on every
run, so they never outlive a changed checkpoint or corpus.  Each stage is named as it starts; with
``progress`` tqdm bars show synthesis, training, embedding and scoring.

The stages live in their own modules: :mod:`~lidframe.demo.voice.plan` (the systems,
settings and rows), :mod:`~lidframe.demo.voice.corpus` (steps 1-2),
:mod:`~lidframe.demo.voice.utility` (step 3), :mod:`~lidframe.demo.voice.attackers`
(steps 4-5 and the scores of step 6), :mod:`~lidframe.demo.voice.run` (the whole, and the
evaluation of step 6) and :mod:`~lidframe.demo.voice.outputs` (step 7).
"""

from lidframe.demo.voice.attackers import ge2e_unavailable
from lidframe.demo.voice.outputs import demo_text, ladder_table
from lidframe.demo.voice.plan import (
    CALIBRATOR,
    DEMO_OUTSIDERS,
    DEMO_SPLIT,
    ECAPA_SYSTEMS,
    GE2E_ADAPTATION,
    N_BOOT,
    OPEN_SET_PRIOR,
    RECOGNISER,
    SENSITIVITY_CALIBRATORS,
    SMALL_ECAPA,
    TRAINING,
    UTILITY_METHOD,
    VOICE_DEMO_SYSTEMS,
    demo_rows,
    voice_demo_unavailable,
)
from lidframe.demo.voice.run import run_voice_demo
from lidframe.demo.voice.utility import utility_column, utility_table, utility_unavailable

__all__ = [
    "run_voice_demo",
    "voice_demo_unavailable",
    "VOICE_DEMO_SYSTEMS",
    "ECAPA_SYSTEMS",
    "SMALL_ECAPA",
    "TRAINING",
    "CALIBRATOR",
    "DEMO_SPLIT",
    "DEMO_OUTSIDERS",
    "OPEN_SET_PRIOR",
    "SENSITIVITY_CALIBRATORS",
    "GE2E_ADAPTATION",
    "N_BOOT",
    "demo_rows",
    "demo_text",
    "ladder_table",
    "ge2e_unavailable",
    "RECOGNISER",
    "UTILITY_METHOD",
    "utility_column",
    "utility_table",
    "utility_unavailable",
]
