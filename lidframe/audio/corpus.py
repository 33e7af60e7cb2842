"""A synthesized multi-speaker corpus as VoicePrivacy-style Kaldi data directories.

Model weights and speech corpora cannot be downloaded here, so lidframe synthesizes
speech with the engines installed on the machine.  Each *voice* is one speaker:

* MBROLA diphone voices through espeak-ng (``mb-us1``, ``mb-us2``, ``mb-us3``,
  ``mb-en1`` and every accented ``mb-XX-en`` voice whose MBROLA database is installed):
  real recorded diphones, the most distinct speakers;
* espeak-ng's English accents (``en-us``, ``en-gb``, ``en-gb-scotland``, ...) with its
  voice variants (``+m3``, ``+f2``, ...) and a fixed pitch and speed per speaker;
* flite voices (``kal16``, ``awb``, ``rms``, ``slt``);
* festival voices (``festival-<voice>``, from Debian's ``festvox-*`` packages): the
  English ``ked_diphone``, the Czech ``czech_dita``, ``czech_krb``, ``czech_machac``,
  ``czech_ph``, the Finnish ``suo_fi_lj_diphone`` and ``hy_fi_mv_diphone``, the Catalan
  ``upc_ca_ona_hts`` and the Russian ``msu_ru_nsh_clunits``, each reading the English
  sentences with its own phone set and text rules (still one distinct recorded speaker).
  ``kal_diphone`` and ``cmu_us_slt_arctic_hts`` are the speakers of flite's ``kal16`` and
  ``slt`` and are used only where flite does not offer them; the Italian, Hindi, Marathi
  and Telugu voices are left out (:data:`_FESTIVAL_LEFT_OUT` says why).

A recogniser's word error rate means something only on the English voices built from
recordings (:data:`RECOGNISABLE_VOICES`, :func:`recognisable_voice`): the utility column of
the real-voice demo is measured on them alone.

:func:`build_corpus` synthesizes K sentences per voice, converts them to 16 kHz mono
16-bit WAV, splits the speakers into train / dev / eval (and dev/eval utterances into
enrolment and trials), and writes data directories with ``wav.scp``, ``utt2spk``,
``spk2utt`` and ``text``.  A wav file's name carries a digest of what made it (engine and
its version, voice arguments, sentence, sample rate, this module's code), so a rerun
reuses only files made the way it would make them -- another seed or sentence count picks other sentences, hence other
files, never a stale one.  The engines run as subprocesses with argument lists (no
shell), ``jobs`` of them at a time; festival runs once per voice for all of that voice's
missing utterances (its start-up, ~0.4 s, is most of the cost of one utterance), each
utterance synthesized from the same random state as a fresh ``text2wave`` call, so a
batch writes exactly what ``text2wave -eval '(voice_<name>)'`` writes for each sentence.

Install the engines with :data:`INSTALL_HINT`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from lidframe.audio.corpus_plan import CorpusPlan, plan_corpus, write_data_dir
from lidframe.data.fileio import StrPath
from lidframe.data.kaldi import WavPaths
from lidframe.errors import InputError

__all__ = [
    "Voice",
    "available_voices",
    "outsider_voices",
    "build_corpus",
    "recognisable_voice",
    "RECOGNISABLE_VOICES",
    "SENTENCES",
    "INSTALL_HINT",
]

INSTALL_HINT = (
    "apt-get install espeak-ng flite festival festvox-kdlpc16k festvox-czech-dita festvox-czech-krb "
    "festvox-czech-machac festvox-czech-ph festvox-suopuhe-lj festvox-suopuhe-mv festvox-ca-ona-hts festvox-ru "
    "(and for MBROLA voices, with Debian contrib/non-free enabled: "
    "apt-get install mbrola mbrola-us1 mbrola-us2 mbrola-us3 mbrola-en1)"
)

#: Sentences written for lidframe (varied length, phonetic content and prosody).
SENTENCES = (
    "The harbour lights flickered as the last ferry pulled away from the pier.",
    "Please remember to water the tomatoes before you leave on Thursday.",
    "Seven curious otters were seen juggling pebbles near the old mill.",
    "Could you tell me whether the museum opens earlier on public holidays?",
    "A sudden gust of wind scattered the papers across the empty courtyard.",
    "Her grandfather built that wooden boat with nothing but a saw and patience.",
    "Most of the valley was covered in fog until nearly midday.",
    "The committee will publish its findings in the spring edition of the journal.",
    "We measured the temperature every hour, even through the night.",
    "Bright yellow kites danced above the beach while the tide went out.",
    "If the train is late again, I will take the bicycle instead.",
    "The violinist paused, tuned a single string, and began once more.",
    "Nobody expected the quiet librarian to win the chess tournament.",
    "Fresh bread smells wonderful, especially on a cold and rainy morning.",
    "The engineers checked every bolt on the bridge before it reopened.",
    "Which of these three roads leads to the lighthouse on the northern cape?",
    "Thick clouds gathered over the hills, promising a long evening of rain.",
    "My neighbour keeps bees, and every summer she gives us a jar of honey.",
    "The recipe calls for two eggs, a cup of flour and a pinch of salt.",
    "Astronomers announced the discovery of a faint companion to the bright star.",
    "The children laughed when the puppy tried to catch its own tail.",
    "After the storm, the river rose higher than anyone could remember.",
    "Turn left at the bakery, then walk straight on until you reach the square.",
    "The old clock in the hallway chimes twice every quarter of an hour.",
)

#: Sample rate of the corpus's wav files (Hz).
SAMPLE_RATE = 16000
_ESPEAK_ACCENTS = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-gb-x-gbclan", "en-gb-x-gbcwmd", "en-029")
_ESPEAK_VARIANTS = (("m1", 45, 165), ("f2", 60, 175), ("m3", 35, 150), ("f4", 70, 160), ("m7", 50, 180))
#: espeak-ng voices that speak only as outsiders (:func:`outsider_voices`): (accent, variant, pitch, speed), every
#: variant one that :data:`_ESPEAK_VARIANTS` does not use, so no outsider is also a split speaker's voice.
_ESPEAK_OUTSIDERS = (
    ("en-us", "m2", 40, 170),
    ("en-gb", "f3", 65, 150),
    ("en-gb-scotland", "m4", 55, 160),
    ("en-gb-x-rp", "f1", 75, 170),
    ("en-gb-x-gbclan", "m5", 45, 155),
    ("en-gb-x-gbcwmd", "f5", 68, 165),
    ("en-029", "m6", 50, 175),
    ("en-us", "f3", 72, 158),
    ("en-gb", "m2", 38, 168),
)
_MBROLA_ENGLISH = ("us1", "us2", "us3", "en1")
_FLITE_VOICES = ("kal16", "awb", "rms", "slt")
#: festival's voice folder (its ``voice-path``): ``<lang>/<voice>/festvox/<voice>.scm``.
_FESTIVAL_VOICE_ROOT = Path("/usr/share/festival/voices")
#: festival voices used, in this order, each with the flite voice of the same recorded
#: speaker (then it is used only where that flite voice is not available).  Each was
#: checked on the 24 SENTENCES: speech of 3.4-7.6 s per sentence, no failure.
_FESTIVAL_VOICES: tuple[tuple[str, str | None], ...] = (
    ("ked_diphone", None),  # festvox-kdlpc16k, US English male
    ("kal_diphone", "flite-kal16"),  # festvox-kallpc16k: the diphones flite's kal16 is made of
    ("cmu_us_slt_arctic_hts", "flite-slt"),  # festvox-us-slt-hts: CMU ARCTIC slt, as flite's slt
    ("czech_dita", None),  # festvox-czech-dita, adult female
    ("czech_krb", None),  # festvox-czech-krb, child male
    ("czech_machac", None),  # festvox-czech-machac, adult male
    ("czech_ph", None),  # festvox-czech-ph, male
    ("suo_fi_lj_diphone", None),  # festvox-suopuhe-lj, Finnish female
    ("hy_fi_mv_diphone", None),  # festvox-suopuhe-mv, Finnish male
    ("upc_ca_ona_hts", None),  # festvox-ca-ona-hts, Catalan female
    ("msu_ru_nsh_clunits", None),  # festvox-ru, Russian male
)
#: The voices a word error rate means something for (:func:`recognisable_voice`): the English voices built
#: from one real speaker's recordings, flite's and festival's.  Measured with PocketSphinx (US English, the
#: demo's recogniser) on the real-voice demo's eval trials: flite-rms 9 % WER, flite-slt 26 %,
#: festival-ked_diphone 31 % -- while the Czech, Russian and Catalan festival voices reading the English
#: sentences come out at 108-146 % and espeak-ng's formant voices at 79-111 % (2026-12-03, docs/demo.md).  On those a WER measures the
#: recogniser's ear for the voice, not what an anonymiser costs the speech.  (The MBROLA voices are recorded
#: diphones too, but were not measured: they are left out until they are.)
RECOGNISABLE_VOICES: tuple[str, ...] = (
    "flite-kal16",
    "flite-awb",
    "flite-rms",
    "flite-slt",
    "festival-ked_diphone",
    "festival-kal_diphone",
    "festival-cmu_us_slt_arctic_hts",
)
#: Installed festival voices that are not used, and why (checked on the 24 SENTENCES).
_FESTIVAL_LEFT_OUT = {
    "lp_diphone": "festvox-italp16k: the Italian intonation fails (SIOD ERROR in Int_Targets, no audio, exit "
    "status 0) on '... on the northern cape?'",
    "pc_diphone": "festvox-itapc16k: as lp_diphone",
    "hindi_NSK_diphone": "festvox-hi-nsk: its text rules read Devanagari only; English text gives no audio",
    "marathi_NSK_diphone": "festvox-mr-nsk: as hindi_NSK_diphone (and the same speaker, NSK)",
    "telugu_NSK_diphone": "festvox-te-nsk: its text rules read Telugu script only; English text gives no audio",
}
#: Scheme run before each utterance of a festival batch: the random state of a fresh
#: process (the Czech prosody draws from ``rand``), so a batch equals one call per utterance.
_FESTIVAL_RESET = "(srand 1) (if (symbol-bound? 'czech-rand-range) (set! czech-rand-range nil))"


@attrs.frozen
class Voice:
    """One synthetic speaker: the engine, the id used as speaker id, and the engine arguments.

    For festival, ``args`` holds the Scheme expression that selects the voice, ``(voice_<name>)``.
    """

    engine: str
    speaker: str
    args: tuple[str, ...]


def recognisable_voice(speaker_id: str) -> bool:
    """Whether a word error rate means something on *speaker_id*'s speech: one of :data:`RECOGNISABLE_VOICES`.

    Parameters
    ----------
    speaker_id : str
        A corpus speaker id (:attr:`Voice.speaker`, e.g. ``"flite-rms"``).

    Returns
    -------
    bool
        True for the English voices built from one real speaker's recordings (flite's
        ``kal16``, ``awb``, ``rms``, ``slt``; festival's ``ked_diphone``, ``kal_diphone``,
        ``cmu_us_slt_arctic_hts``), on which a recogniser of English hears the words;
        False for espeak-ng's formant voices, the festival voices of other languages and
        any id not of this corpus.
    """
    return speaker_id in RECOGNISABLE_VOICES


def _mbrola_dirs() -> set[str]:
    found: set[str] = set()
    for root in (Path("/usr/share/mbrola"), Path("/usr/local/share/mbrola")):
        if root.is_dir():
            found |= {p.name for p in root.iterdir() if p.is_dir()}
    return found


def _festival_installed() -> set[str]:
    """Names of the festival voices installed (folders ``<lang>/<voice>/festvox/<voice>.scm``), no process run."""
    root = _FESTIVAL_VOICE_ROOT
    if not root.is_dir():
        return set()
    return {p.parent.parent.name for p in root.glob("*/*/festvox/*.scm") if p.stem == p.parent.parent.name}


def available_voices() -> list[Voice]:
    """Voices of the engines installed here, in a fixed order (MBROLA, espeak-ng, flite, festival)."""
    voices: list[Voice] = []
    espeak = shutil.which("espeak-ng")
    if espeak:
        voices += _mbrola_voices(espeak)
        voices += _espeak_voices()
    if shutil.which("flite"):
        voices += _flite_voices()
    if shutil.which("festival"):
        voices += _festival_voices({v.speaker for v in voices})
    return voices


def outsider_voices() -> list[Voice]:
    """Voices kept out of :func:`available_voices` to speak as outsiders: speakers enrolled nowhere.

    espeak-ng voices (:data:`_ESPEAK_OUTSIDERS`, variants no split speaker uses), in a
    fixed order; none where espeak-ng is not installed.  :func:`build_corpus` gives each
    chosen one trial utterances only.
    """
    if not shutil.which("espeak-ng"):
        return []
    return [
        Voice("espeak", f"espeak-{accent}-{variant}", ("-v", f"{accent}+{variant}", "-p", str(pitch), "-s", str(speed)))
        for accent, variant, pitch, speed in _ESPEAK_OUTSIDERS
    ]


def _mbrola_voices(espeak: str) -> list[Voice]:
    """The MBROLA voices espeak-ng can drive here: the English ones, then those espeak-ng lists as ``mb/mb-*-en``."""
    voices = []
    mbrola = _mbrola_dirs() if shutil.which("mbrola") else set()
    for name in _MBROLA_ENGLISH:
        if name in mbrola:
            voices.append(Voice("mbrola", f"mb-{name}", ("-v", f"mb-{name}")))
    listing = subprocess.run([espeak, "--voices=mb"], capture_output=True, text=True, check=False).stdout
    for line in listing.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 5 and fields[4].endswith("-en") and fields[4].startswith("mb/mb-"):
            base = fields[4][len("mb/mb-") : -len("-en")]
            if base in mbrola:
                voices.append(Voice("mbrola", f"mb-{base}-en", ("-v", f"mb-{base}-en")))
    return voices


def _espeak_voices() -> list[Voice]:
    """espeak-ng's formant voices: every accent of :data:`_ESPEAK_ACCENTS` in every variant, pitch and speed."""
    return [
        Voice("espeak", f"espeak-{accent}-{variant}", ("-v", f"{accent}+{variant}", "-p", str(pitch), "-s", str(speed)))
        for accent in _ESPEAK_ACCENTS
        for variant, pitch, speed in _ESPEAK_VARIANTS
    ]


def _flite_voices() -> list[Voice]:
    """The voices of :data:`_FLITE_VOICES` that ``flite -lv`` lists."""
    listing = subprocess.run(["flite", "-lv"], capture_output=True, text=True, check=False).stdout
    return [Voice("flite", f"flite-{name}", ("-voice", name)) for name in _FLITE_VOICES if name in listing.split()]


def _festival_voices(have: set[str]) -> list[Voice]:
    """The festival voices of :data:`_FESTIVAL_VOICES` installed here, but none whose twin is among *have*."""
    installed = _festival_installed()
    return [
        Voice("festival", f"festival-{name}", (f"(voice_{name})",))
        for name, twin in _FESTIVAL_VOICES
        if name in installed and twin not in have
    ]


def _synthesize(voice: Voice, text: str, path: Path, sample_rate: int = SAMPLE_RATE) -> None:
    """Synthesize *text* with *voice* into a 16 kHz mono 16-bit WAV at *path* (atomically)."""
    if voice.engine == "festival":
        _synthesize_festival(voice, [(text, path)], sample_rate)
        return
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.wav"
        if voice.engine in ("espeak", "mbrola"):
            command = ["espeak-ng", *voice.args, "-w", str(raw), text]
        else:
            command = ["flite", *voice.args, "-t", text, "-o", str(raw)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not raw.is_file() or raw.stat().st_size < 100:
            raise InputError(f"{voice.engine} failed for voice {voice.speaker!r}: {done.stderr.strip()[:200]}")
        _write_wav(raw, path, sample_rate)


def _scheme_string(text: str) -> str:
    """*text* as a Scheme string literal (backslashes and double quotes escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _synthesize_festival(voice: Voice, items: Sequence[tuple[str, Path]], sample_rate: int = SAMPLE_RATE) -> None:
    """Synthesize each ``(text, wav path)`` of *items* with the festival *voice*, in one festival process.

    Each utterance starts from a fresh process's random state (``_FESTIVAL_RESET``), so
    its audio does not depend on the batch it is in, and is synthesized only while the
    voice is *voice* (festival keeps its default voice when selecting one fails).  The
    utterances festival made are written even when another fails; then the first failure
    is raised.
    """
    name = voice.speaker.removeprefix("festival-")
    with tempfile.TemporaryDirectory() as tmp:
        raws = [Path(tmp) / f"raw{k}.wav" for k in range(len(items))]
        lines = [*voice.args]
        for (text, _), raw in zip(items, raws, strict=True):
            synth = f"(utt.synth (Utterance Text {_scheme_string(text)}))"
            save = f"(utt.save.wave {synth} {_scheme_string(str(raw))} 'riff)"
            lines.append(f"(if (equal? current-voice '{name}) (begin {_FESTIVAL_RESET} {save}))")
        done = subprocess.run(
            ["festival", "--pipe"], input="\n".join(lines) + "\n", capture_output=True, text=True, check=False
        )
        failed = []
        for (text, path), raw in zip(items, raws, strict=True):
            if raw.is_file() and raw.stat().st_size >= 100:
                _write_wav(raw, path, sample_rate)
            else:
                failed.append(text)
    if failed:
        # festival warns on every diphone it substitutes ("UniSyn: ..."): report the rest
        errors = " ".join(line for line in done.stderr.splitlines() if not line.startswith("UniSyn"))
        raise InputError(
            f"festival failed for voice {voice.speaker!r} on {len(failed)} of {len(items)} sentences "
            f"(first: {failed[0]!r}): {errors.strip()[:200]}"
        )


def _write_wav(raw: Path, path: Path, sample_rate: int) -> None:
    """The engine's wav *raw* as a mono 16-bit WAV at *sample_rate* Hz, peak 0.9, at *path* (atomically)."""
    import soundfile
    from scipy.signal import resample_poly

    from lidframe.data.fileio import atomic_path

    audio, rate = soundfile.read(str(raw), dtype="float32", always_2d=True)
    audio = audio.mean(axis=1)
    if rate != sample_rate:
        from math import gcd

        g = gcd(int(rate), sample_rate)
        audio = resample_poly(audio, sample_rate // g, int(rate) // g)
    peak = float(np.max(np.abs(audio))) or 1.0
    audio = (0.9 * audio / peak).astype(np.float32)
    with atomic_path(path, suffix=".wav") as tmp_path:
        soundfile.write(str(tmp_path), audio, sample_rate, subtype="PCM_16", format="WAV")


def _engine_versions() -> dict[str, str]:
    """``engine -> version text`` of the installed engines (what ``--version`` prints; MBROLA runs through espeak-ng)."""
    commands = {
        "espeak": ["espeak-ng", "--version"],
        "flite": ["flite", "--version"],
        "festival": ["festival", "--version"],
    }
    versions = {}
    for engine, command in commands.items():
        if shutil.which(command[0]):
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            versions[engine] = " ".join((done.stdout + done.stderr).split())
    versions["mbrola"] = versions.get("espeak", "")
    return versions


def _recipe_digest(voice: Voice, text: str, versions: dict[str, str], sample_rate: int = SAMPLE_RATE) -> str:
    """12 hex digits of SHA-256 over what makes an utterance's audio.

    The engine, its version, the voice's arguments, the sentence, the sample rate, and this
    module's source (which converts, resamples and peak-normalises the engine's output).
    """
    from lidframe.data.fileio import file_sha256

    recipe = json.dumps(
        [voice.engine, versions.get(voice.engine, ""), list(voice.args), text, sample_rate, file_sha256(__file__)]
    )
    return hashlib.sha256(recipe.encode()).hexdigest()[:12]


def build_corpus(
    out_dir: StrPath,
    *,
    voices: Sequence[str] | None = None,
    sentences: int = 8,
    enrol: int = 3,
    split: tuple[float, float, float] = (0.5, 0.25, 0.25),
    seed: int = 0,
    jobs: int = 1,
    progress: bool = False,
    wav_paths: WavPaths = "cwd",
    outsiders: tuple[int, int] = (0, 0),
) -> dict[str, Any]:
    """Synthesize the corpus and write its data directories.

    Parameters
    ----------
    out_dir : str or os.PathLike
        Output folder: ``wav/<speaker>/<utt>-<recipe digest>.wav`` and the data dirs ``train``,
        ``dev_enrolls``, ``dev_trials``, ``eval_enrolls``, ``eval_trials``.
    voices : list of str, optional
        Speaker ids of :func:`available_voices` to use (default: all available).
    sentences : int
        Sentences per voice (K <= len(SENTENCES)); in dev/eval the first ``enrol`` are
        enrolment, the rest trials.
    enrol : int
        Enrolment utterances per dev/eval speaker (1 <= enrol < sentences).
    split : (float, float, float)
        Shares of the speakers for train, dev and eval (each split gets at least 2
        speakers when there are 6 or more).
    seed : int
        Seed of the speaker split and of the sentence choice per speaker.
    jobs : int
        Engine processes run at once.
    progress : bool
        Show a tqdm progress bar over the utterances to synthesize.
    wav_paths : {"cwd", "data-dir"}
        How ``wav.scp`` names the audio (:func:`lidframe.data.kaldi.wav_location`): by absolute
        path, or relative to the data dir for ``"data-dir"`` (``../wav/...``: the corpus can move).
    outsiders : (int, int)
        Outsider speakers of dev and of eval, voices of :func:`outsider_voices`: trials only
        (:func:`lidframe.audio.corpus_plan.plan_corpus`; the split is that of ``(0, 0)``).

    Returns
    -------
    dict
        ``{"speakers": {split: [ids]}, "outsiders": {"dev": [ids], "eval": [ids]}, "engines": {engine: count},
        "versions": {engine: version text}, "utterances": n, "synthesized": m}``: m of the n wav files (the
        outsiders' too) were synthesized by this call, the others were already there (a rerun reuses them).

    Raises
    ------
    InputError
        No engine installed (the message gives the apt line), an unknown voice, too few
        speakers or sentences, more outsiders than :func:`outsider_voices`, *jobs* not a positive integer.
    """
    chosen, extra = _checked_voices(voices, sentences=sentences, enrol=enrol, jobs=jobs, outsiders=outsiders)
    versions, out = _engine_versions(), Path(out_dir)
    plan = plan_corpus(
        CorpusPlan(out, lambda voice, text: _recipe_digest(voice, text, versions), enrol),
        chosen,
        extra,
        n_dev_outsiders=outsiders[0],
        texts=SENTENCES,
        sentences=sentences,
        split=split,
        rng=np.random.default_rng(seed),
    )
    listed = plan.listed(wav_paths)  # every location checked before anything is synthesized
    synthesized = _synthesize_missing(plan.work, jobs=jobs, progress=progress)
    for name, utterances in listed.items():
        write_data_dir(out / name, utterances)
    return {
        "speakers": plan.speakers,
        "outsiders": plan.outsiders,
        "engines": plan.engines,
        "versions": versions,
        "utterances": len(plan.work),
        "synthesized": synthesized,
    }


def _checked_voices(
    voices: Sequence[str] | None, *, sentences: int, enrol: int, jobs: int, outsiders: tuple[int, int]
) -> tuple[list[Voice], list[Voice]]:
    """The voices of :func:`build_corpus`'s split and its outsiders, its arguments checked first."""
    from lidframe.runtime.workers import check_jobs

    check_jobs(jobs, what="engine processes")
    chosen = _choose_voices(voices)
    if not 1 <= sentences <= len(SENTENCES) or not 1 <= enrol < sentences:
        raise InputError(f"need 1 <= enrol < sentences <= {len(SENTENCES)}, got enrol={enrol}, sentences={sentences}")
    if len(chosen) < 3:
        raise InputError(f"a corpus needs at least 3 voices (train, dev, eval), got {len(chosen)}")
    return chosen, _outsiders(outsiders)


def _outsiders(counts: tuple[int, int]) -> list[Voice]:
    """The first ``dev + eval`` voices of :func:`outsider_voices` for *counts* (dev, eval); more are refused."""
    n_dev, n_eval = counts
    if min(n_dev, n_eval) < 0:
        raise InputError(f"outsiders must be two non-negative counts (dev, eval), got {counts}")
    available = outsider_voices() if n_dev + n_eval else []
    if n_dev + n_eval > len(available):
        raise InputError(
            f"{n_dev + n_eval} outsider speakers asked for, {len(available)} outsider voices here "
            "(espeak-ng voices; apt-get install espeak-ng)"
        )
    return available[: n_dev + n_eval]


def _choose_voices(voices: Sequence[str] | None) -> list[Voice]:
    """The voices named by *voices* (default: every available one); no engine, or an unknown voice, is refused."""
    available = {v.speaker: v for v in available_voices()}
    if not available:
        raise InputError(f"no speech engine found (espeak-ng, mbrola, flite, festival); install them: {INSTALL_HINT}")
    if voices is None:
        return list(available.values())
    unknown = [v for v in voices if v not in available]
    if unknown:
        raise InputError(f"voices not available here: {unknown[:5]}; available: {sorted(available)[:12]} ...")
    return [available[v] for v in voices]


def _synthesize_missing(work: list[tuple[Voice, str, Path]], *, jobs: int, progress: bool) -> int:
    """Synthesize each wav of *work* not already there, *jobs* engines at once; how many were made.

    One task per utterance, except festival: one task (one process) per voice.
    """
    missing = [(voice, text, wav) for voice, text, wav in work if not wav.is_file()]
    for _, _, wav in missing:
        wav.parent.mkdir(parents=True, exist_ok=True)
    batches: dict[Voice, list[tuple[str, Path]]] = {}
    for voice, text, wav in missing:
        if voice.engine == "festival":
            batches.setdefault(voice, []).append((text, wav))
    # the festival batches (seconds each) first, so that the short calls fill in around them
    tasks: list[tuple[Voice, list[tuple[str, Path]]]] = list(batches.items())
    tasks += [(voice, [(text, wav)]) for voice, text, wav in missing if voice.engine != "festival"]

    def run(task: tuple[Voice, list[tuple[str, Path]]]) -> int:
        voice, items = task
        if voice.engine == "festival":
            _synthesize_festival(voice, items)
        else:
            _synthesize(voice, *items[0])
        return len(items)

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(work), initial=len(work) - len(missing), desc="synthesizing", unit="utt")
    try:
        # each engine call is a subprocess: threads keep `jobs` of them running at once
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for made in pool.map(run, tasks):
                if bar is not None:
                    bar.update(made)
    finally:
        if bar is not None:
            bar.close()
    return len(missing)
