"""The real-voice demo: synthesized speakers, four anonymisers, the threat-model ladder of attackers.

:func:`run_voice_demo` runs the whole LID pipeline on audio:

1. synthesize a corpus with the installed engines (:mod:`lidframe.audio.corpus`; cached),
   most voices eval speakers (:data:`DEMO_SPLIT`);
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
   bootstrap intervals;
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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from lidframe.data.fileio import StrPath, check_output_dir
from lidframe.report.text import format_table

if TYPE_CHECKING:
    from lidframe.core.evaluation import Result
    from lidframe.report.model import LadderEntry
    from lidframe.utility import Utility

__all__ = [
    "run_voice_demo",
    "VOICE_DEMO_SYSTEMS",
    "SMALL_ECAPA",
    "CALIBRATOR",
    "DEMO_SPLIT",
    "GE2E_ADAPTATION",
    "demo_rows",
    "RECOGNISER",
    "UTILITY_METHOD",
    "utility_column",
    "utility_table",
    "utility_unavailable",
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
#: The demo attackers' encoder: a small ECAPA-TDNN that trains in seconds per epoch on a CPU.
SMALL_ECAPA = {"channels": (64, 64, 64, 64, 192), "attention_channels": 32, "se_channels": 32, "lin_neurons": 64}
#: train_attacker's settings for the demo's ECAPA attackers (beside epochs and seed).
TRAINING: dict[str, Any] = {"batch_size": 16}
#: How the semi-informed GE2E attacker is adapted: the pretrained encoder's output layer trained on a system's
#: anonymised train speakers (:func:`lidframe.attackers.training.train_output_layer`).
GE2E_ADAPTATION: dict[str, Any] = {"epochs": 200, "lr": 1e-3}
#: The calibrator of every row (fitted on dev).
CALIBRATOR = "logistic"
#: Shares of the voices for train, dev and eval: most of them eval, so that N is near the paper's 29-40.
DEMO_SPLIT = (0.3, 0.2, 0.5)
#: Resamples of the speaker bootstrap behind every headline interval.
N_BOOT = 1000
_SPLITS = ("train", "dev_enrolls", "dev_trials", "eval_enrolls", "eval_trials")
#: The recogniser of the utility column (a registry spec, :mod:`lidframe.utility`): PocketSphinx, US English.
RECOGNISER = "pocketsphinx"
#: The utility column's interval type: percentile, as BCa's jackknife has one point per speaker and the
#: default corpus has three recognisable eval speakers (resamples of speakers, the run's n_boot and seed).
UTILITY_METHOD = "percentile"
#: What follows ``utility/<system>`` in the name of the stamp beside each utility record (:func:`utility_column`).
UTILITY_STAMP_SUFFIX = ".inputs.sha256"


_GE2E_MODEL = "GE2E pretrained on real speech (Resemblyzer's weights)"
_GE2E_ADAPTED = "GE2E with its output layer adapted on the system's anonymised train speakers"
_ECAPA_MODEL = "small ECAPA-TDNN trained here on the system's train speakers"


def demo_rows(*, ge2e: bool = True) -> list[LadderEntry]:
    """The rows of the real-voice demo in table order; without *ge2e*, the ECAPA and random rows.

    Each row is a :class:`lidframe.report.LadderEntry`: its label ``system/attacker/scenario``
    (``system/attacker`` on the plain speech, ``random``), the system, the attacker
    (``ge2e`` pretrained, ``ecapa`` the small ECAPA-TDNN trained here, ``random``), the rung
    (None on the plain speech), the enrolment and trial sides, and the model in words.
    """
    from lidframe.data.scenario import ANONYMISED, ORIGINAL, SCENARIOS
    from lidframe.report.model import LadderEntry

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
    rows.append(
        LadderEntry("random", "random", "random", None, ORIGINAL, ORIGINAL, "seeded random embeddings (the floor)")
    )
    return rows


def _epochs(n: int) -> str:
    return f"{n} epoch" if n == 1 else f"{n} epochs"


def _scores(attacker, enrol_root: Path, trial_root: Path, split: str):
    """*attacker*'s score set of ``trial_root/<split>_trials`` against the speakers of ``enrol_root/<split>_enrolls``."""
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker

    enrol = read_data_dir(enrol_root / f"{split}_enrolls")
    trials = read_data_dir(trial_root / f"{split}_trials")
    return attacker.score(trials, group_by_speaker(enrol))


def _digest(*parts: str | bytes) -> str:
    """SHA-256 (hex) of *parts*, each length-prefixed so that no two sequences collide."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


#: The file in each data dir of the demo naming its inputs' digest (see :func:`_anonymise_systems`).
STAMP_FILE = "lidframe-demo-inputs.sha256"


def _source_digest(folder: Path) -> str:
    """What a data dir of the demo holds: its wav.scp and utt2spk (the corpus's wav names carry their recipe)."""
    return _digest(*((folder / name).read_bytes() for name in ("wav.scp", "utt2spk")))


def _read_stamp(folder: Path) -> str:
    """The inputs digest of a demo data dir: its stamp for an anonymised one, its contents for the corpus's."""
    stamp = folder / STAMP_FILE
    return stamp.read_text().strip() if stamp.is_file() else _source_digest(folder)


def _anonymise_systems(
    out: Path, roots: dict[str, Path], *, seed: int, jobs: int, progress: bool, log: Callable[[str], object]
) -> None:
    """Make (or reuse) every anonymised data dir of the systems, all systems over one pool of *jobs* processes.

    A data dir is reused only when its stamp names the same inputs: the corpus data dir it
    was made from (its wav.scp and utt2spk, whose wav names carry their recipe), the
    anonymiser's parameters and the seed, and the anonymiser's code (the digest of
    :mod:`lidframe.audio.anonymise`'s source, NumPy's and SciPy's versions).  The stamp is removed before a data dir is
    (re)made and written after, so an interrupted run leaves none to trust.
    """
    import scipy

    import lidframe.audio.anonymise as anonymiser
    from lidframe.audio.anonymise import anonymise_data_dirs
    from lidframe.data.fileio import file_sha256

    # the anonymiser's own code and the SciPy it filters with: a changed anonymiser redoes the dirs
    code = json.dumps([file_sha256(anonymiser.__file__), np.__version__, scipy.__version__])
    tasks = []
    for name, params in VOICE_DEMO_SYSTEMS.items():
        if params is None:
            continue
        redo = []
        for split in _SPLITS:
            source, target = out / "corpus" / split, roots[name] / split
            expected = _digest(json.dumps([params, seed], sort_keys=True), code, _source_digest(source))
            stamp = target / STAMP_FILE
            if (target / "wav.scp").is_file() and stamp.is_file() and stamp.read_text().strip() == expected:
                continue
            stamp.unlink(missing_ok=True)
            redo.append(split)
            tasks.append((source, target, {"seed": seed, **params}, expected))
        if not redo:
            log(f"system {name}: reused its {len(_SPLITS)} anonymised data dirs from {roots[name]}")
    if not tasks:
        return
    systems = sorted({str(target.parent.name) for _, target, _, _ in tasks})
    workers = min(jobs, len(tasks))
    log(
        f"[systems] anonymising {len(tasks)} data dirs of {', '.join(systems)} "
        f"({_plural(workers, 'process', 'processes')})"
    )
    anonymise_data_dirs([task[:3] for task in tasks], jobs=workers, progress=progress)
    for _, target, _, expected in tasks:
        (target / STAMP_FILE).write_text(expected + "\n")
    log(f"systems: anonymised {len(tasks)} data dirs")


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


@attrs.frozen
class _DemoRun:
    """The settings every stage of one demo run reads (the parameters of :func:`run_voice_demo`)."""

    out: Path
    seed: int
    epochs: int
    jobs: int
    progress: bool
    log: Callable[[str], object]
    #: The attackers behind the scores, with their settings and checkpoints, for the report's provenance.
    attackers: list = attrs.field(factory=list)


def ge2e_unavailable() -> str | None:
    """Why the demo's GE2E rows cannot run here (resemblyzer's weights missing), in one line; None where they can."""
    from lidframe.errors import InputError

    try:
        from lidframe.attackers.ge2e import resemblyzer_weights

        resemblyzer_weights()
    except InputError as exc:
        return str(exc)
    return None


def utility_unavailable(recogniser: str = RECOGNISER) -> str | None:
    """Why the demo's utility column cannot be measured here (the utility extra missing), in one line; None where it can.

    The word error rate needs jiwer, ρ_F0 Praat's pitch tracker (``parselmouth``), and
    the built-in recogniser ``pocketsphinx`` (checked when *recogniser* names it).
    """
    import importlib

    from lidframe.utility.pitch import PARSELMOUTH_HINT
    from lidframe.utility.pocketsphinx import POCKETSPHINX_HINT
    from lidframe.utility.wer import JIWER_HINT

    needs = [("jiwer", JIWER_HINT), ("parselmouth", PARSELMOUTH_HINT)]
    if recogniser.partition("?")[0] == "pocketsphinx":
        needs.insert(0, ("pocketsphinx", POCKETSPHINX_HINT))
    for module, hint in needs:
        try:
            importlib.import_module(module)
        except ImportError:
            return hint
    return None


def _utility_subsets(out: Path, roots: Mapping[str, Path], voices: Sequence[str]) -> dict[str, Path]:
    """Write ``out/utility/<system>/`` for every system: its eval trials of *voices*; ``system -> data dir``.

    Each data dir holds ``wav.scp`` (the system's audio of those trials, paths relative to
    the data dir, so the folder can move), ``utt2spk``, ``spk2utt`` and ``text`` (the
    corpus's transcripts), in the corpus's order.  A file is rewritten only when its
    contents change.
    """
    import os

    from lidframe.data.fileio import atomic_write
    from lidframe.data.kaldi import read_data_dir
    from lidframe.errors import InputError, quote
    from lidframe.utility.evaluate import read_transcripts

    corpus = out / "corpus" / "eval_trials"
    chosen = set(voices)
    kept = [utt for utt in read_data_dir(corpus) if utt.speaker in chosen]
    transcripts = read_transcripts(corpus)
    by_speaker: dict[str, list[str]] = {}
    for utt in kept:
        if utt.utt_id not in transcripts:
            raise InputError(f"{corpus / 'text'}: no transcript of utterance {quote(utt.utt_id)} (it is in wav.scp)")
        by_speaker.setdefault(utt.speaker, []).append(utt.utt_id)
    tables = {
        "utt2spk": "".join(f"{utt.utt_id} {utt.speaker}\n" for utt in kept),
        "spk2utt": "".join(f"{speaker} {' '.join(utts)}\n" for speaker, utts in sorted(by_speaker.items())),
        "text": "".join(f"{utt.utt_id} {transcripts[utt.utt_id][1]}\n" for utt in kept),
    }
    subsets = {}
    for name in VOICE_DEMO_SYSTEMS:
        folder = out / "utility" / name
        folder.mkdir(parents=True, exist_ok=True)
        source = roots[name] / "eval_trials"
        audio = {utt.utt_id: str(utt.path) for utt in read_data_dir(source)}
        for utt in kept:
            if utt.utt_id not in audio:
                raise InputError(f"{source / 'wav.scp'}: no utterance {quote(utt.utt_id)} (it is in {corpus})")
        here = os.path.abspath(folder)
        wav = "".join(f"{utt.utt_id} {os.path.relpath(os.path.abspath(audio[utt.utt_id]), here)}\n" for utt in kept)
        for file, text in {"wav.scp": wav, **tables}.items():
            target = folder / file
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                with atomic_write(target, encoding="utf-8") as handle:
                    handle.write(text)
        subsets[name] = folder
    return subsets


def _utility_code() -> str:
    """What the utility numbers are computed with: :mod:`lidframe.utility`'s sources, the audio reader's and the
    intervals' (:mod:`lidframe.stats.bootstrap`), and the versions of pocketsphinx, Praat's binding, jiwer, NumPy
    and SciPy (resampling, quantiles)."""
    import importlib.metadata

    import lidframe.attackers.audio as audio_reader
    import lidframe.stats.bootstrap as bootstrap_code
    import lidframe.utility as package
    from lidframe.data.fileio import file_sha256

    versions = []
    for dist in ("pocketsphinx", "praat-parselmouth", "jiwer", "numpy", "scipy"):
        try:
            versions.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{dist} not installed")
    sources = sorted(Path(package.__file__).parent.glob("*.py"))
    return _digest(
        *(f"{path.name} {file_sha256(path)}" for path in sources),
        f"audio reader {file_sha256(audio_reader.__file__)}",
        f"intervals {file_sha256(bootstrap_code.__file__)}",
        *versions,
    )


def _table_digest(folder: Path) -> str:
    """What a utility data dir holds: its wav.scp, text and utt2spk."""
    return _digest(*((folder / name).read_bytes() for name in ("wav.scp", "text", "utt2spk")))


def utility_column(
    run: _DemoRun, roots: Mapping[str, Path], *, recogniser: str = RECOGNISER, n_boot: int = N_BOOT
) -> tuple[dict[str, Utility], str]:
    """Measure (or reuse) the utility of every system: WER and ρ_F0 on the eval trials of the recognisable voices.

    For each system of :data:`VOICE_DEMO_SYSTEMS` (``plain`` included) a data dir
    ``utility/<system>/`` holds the eval trials of the voices of
    :func:`lidframe.audio.corpus.recognisable_voice` (:func:`_utility_subsets`), and
    :func:`lidframe.utility.utility` measures it against ``utility/plain/`` (ρ_F0; none for
    ``plain`` itself) in ``run.jobs`` worker processes, with intervals over
    speakers (``Bootstrap(n_boot, unit="speaker", seed=run.seed, method=UTILITY_METHOD)``).
    Each record is cached as ``utility/<system>.json`` with a stamp beside it
    (``<system>.inputs.sha256``) naming the digest of its inputs: the data dir's wav.scp,
    text and utt2spk, the system's eval data dir's stamp (:func:`_read_stamp`), the
    reference's, the recogniser's description, the utility code and its libraries'
    versions (:func:`_utility_code`), and the bootstrap settings.  The stamp is removed
    before a record is (re)made and written after, so an interrupted run leaves none to
    trust; a record whose stamp matches is reused, and the log says so.

    Parameters
    ----------
    run : _DemoRun
        The demo run (output folder, seed, jobs, progress, log).
    roots : mapping of str to path
        System -> its root (``corpus/`` for plain, ``systems/<name>/``), each with ``eval_trials``.
    recogniser : str
        Registry spec of the recogniser (default :data:`RECOGNISER`).
    n_boot : int
        Bootstrap resamples of the intervals.

    Returns
    -------
    results : dict of str to Utility
        System -> its utility record, in :data:`VOICE_DEMO_SYSTEMS` order; empty when no
        eval speaker is a recognisable voice (then nothing is measured).
    note : str
        The sentence that heads the utility table (the voice set and the recogniser), or
        why the column is left out (also logged).
    """
    from lidframe.audio.corpus import RECOGNISABLE_VOICES, recognisable_voice
    from lidframe.data.fileio import write_json
    from lidframe.data.kaldi import read_data_dir
    from lidframe.errors import InputError
    from lidframe.runtime.workers import process_pool
    from lidframe.stats.bootstrap import Bootstrap
    from lidframe.utility import read_utility, utility
    from lidframe.utility.evaluate import resolve_recogniser

    speakers = {utt.speaker for utt in read_data_dir(run.out / "corpus" / "eval_trials")}
    voices = sorted((speaker for speaker in speakers if recognisable_voice(speaker)), key=RECOGNISABLE_VOICES.index)
    if not voices:
        note = (
            f"the utility column is left out: none of the {len(speakers)} eval speakers is a voice a word error "
            f"rate means something for (the English voices built from recordings: {', '.join(RECOGNISABLE_VOICES)})"
        )
        run.log(note)
        return {}, note
    model = resolve_recogniser(recogniser)
    describe = getattr(model, "describe", None)
    described = str(describe()) if callable(describe) else type(model).__name__
    # the intervals resample speakers: with one recognisable voice there is nothing to resample
    bootstrap = (
        Bootstrap(n_boot=n_boot, unit="speaker", seed=run.seed, method=UTILITY_METHOD) if len(voices) > 1 else None
    )
    subsets = _utility_subsets(run.out, roots, voices)
    n_utt = len(read_data_dir(subsets["plain"]))
    run.log(
        f"[utility] WER of {described} and rho_F0 against plain: {len(subsets)} systems x {n_utt} eval trials of "
        f"{len(voices)} voices ({', '.join(voices)})"
    )
    code = _utility_code()
    settings = json.dumps(None if bootstrap is None else bootstrap.to_dict(), sort_keys=True)
    plain = subsets["plain"]
    results: dict[str, Utility] = {}
    # one pool of run.jobs workers for every system, made when the first record is (re)made: its processes
    # start once and each loads the recogniser's model once
    pools = contextlib.ExitStack()
    pool = None
    with pools:
        for name, params in VOICE_DEMO_SYSTEMS.items():
            data = subsets[name]
            reference = None if params is None else plain
            inputs = [str(data), _table_digest(data), _read_stamp(roots[name] / "eval_trials")]
            if reference is None:
                inputs.append("no reference")
            else:
                inputs += [str(reference), _table_digest(reference), _read_stamp(roots["plain"] / "eval_trials")]
            expected = _digest(*inputs, described, code, settings)
            path = run.out / "utility" / f"{name}.json"
            stamp = path.with_name(name + UTILITY_STAMP_SUFFIX)
            if path.is_file() and stamp.is_file() and stamp.read_text().strip() == expected:
                try:
                    results[name] = read_utility(path)
                except InputError:
                    pass  # a record that does not read back is made again
                else:
                    run.log(f"utility {name}: reused {path} (same audio, transcripts, recogniser and settings)")
                    continue
            stamp.unlink(missing_ok=True)
            bar = None
            if run.progress:
                from tqdm import tqdm

                bar = tqdm(desc=f"recognising {name}", unit="utt")

            def progress(done: int, total: int, bar: Any = bar) -> None:
                if bar is not None:
                    bar.total = total
                    bar.update(done - bar.n)

            if pool is None and run.jobs > 1:
                pool = pools.enter_context(process_pool(run.jobs))
            try:
                result = utility(
                    data,
                    reference,
                    recogniser=model,
                    bootstrap=bootstrap,
                    jobs=run.jobs,
                    executor=pool,
                    progress=progress,
                )
            finally:
                if bar is not None:
                    bar.close()
            write_json(path, result.to_dict())
            stamp.write_text(expected + "\n")
            results[name] = result
            value, _, interval = _percent(result.wer, (result.intervals or {}).get("wer")).partition(" ")
            wer = f"{value} %" + (f" {interval}" if interval else "")
            run.log(f"utility {name}: WER {wer} on {result.utterances} utterances of {result.speakers} speakers")
    if bootstrap is None:
        intervals = "no interval: one speaker"
    else:
        level = f"{bootstrap.level:.0%}".replace("%", " %")
        intervals = f"{level} speaker-bootstrap interval, {bootstrap.n_boot} resamples, {bootstrap.method}"
    voice_set = ("voice" if len(voices) == 1 else f"{len(voices)} voices") + " a word error rate holds for"
    note = (
        f"Utility: WER of {described} and rho_F0 against plain, on the {n_utt} eval trials of the {voice_set} "
        f"(English, built from recordings: {', '.join(voices)}); [{intervals}]"
    )
    return results, note


def _number(value: float | None, digits: int, scale: float = 1.0) -> str:
    return "-" if value is None or math.isnan(value) else f"{scale * value:.{digits}f}"


def _percent(value: float, interval: Any) -> str:
    """*value* (a fraction) in percent with one decimal, and its interval ``[low, high]`` when there is one."""
    text = _number(value, 1, 100.0)
    if interval is not None:
        text += f" [{_number(interval.low, 1, 100.0)}, {_number(interval.high, 1, 100.0)}]"
    return text


def utility_table(results: Mapping[str, Utility], note: str) -> str:
    """The utility table as text: *note*, then per system WER % [interval], ρ_F0 [interval], utterances, speakers.

    ρ_F0 is against ``plain`` (``-`` for ``plain`` itself); the intervals are the records'
    own (``Utility.intervals``), left out where a record has none.
    """
    from lidframe.report.text import text_table

    body = []
    for name, result in results.items():
        intervals = result.intervals or {}
        rho = "-"
        if result.rho_f0 is not None:
            rho = _number(result.rho_f0, 3)
            interval = intervals.get("rho_f0")
            if interval is not None:
                rho += f" [{_number(interval.low, 3)}, {_number(interval.high, 3)}]"
        body.append(
            [name, _percent(result.wer, intervals.get("wer")), rho, str(result.utterances), str(result.speakers)]
        )
    return note + "\n" + text_table(["system", "WER %", "rho_F0", "utterances", "speakers"], body)


def run_voice_demo(
    out_dir: StrPath,
    *,
    seed: int = 0,
    epochs: int = 15,
    sentences: int = 8,
    voices: Sequence[str] | None = None,
    jobs: int = 1,
    n_boot: int = N_BOOT,
    recogniser: str = RECOGNISER,
    progress: bool = False,
    log: Callable[[str], object] = print,
) -> tuple[str, dict]:
    """Run the real-voice demo into *out_dir* (module docstring); return the table and per-row summaries.

    Parameters
    ----------
    out_dir : path
        Output and cache folder (checked before any work; made when missing).
    seed : int
        Seed of the corpus split, the anonymisers, the training, the random attacker and the bootstrap.
    epochs : int
        Training epochs of each small ECAPA-TDNN (a rerun with more continues the checkpoint).
    sentences : int
        Sentences per voice.
    voices : sequence of str, optional
        Speaker ids of :func:`lidframe.audio.corpus.available_voices` (default: all).
    jobs : int
        Speech engines run at once, and worker processes of the anonymisers (the
        training uses torch's threads).
    n_boot : int
        Resamples of the speaker bootstrap behind each row's intervals (and the utility column's).
    recogniser : str
        Registry spec of the utility column's recogniser (default :data:`RECOGNISER`).
    progress : bool
        tqdm bars for synthesis, training (one per epoch), embedding and scoring.
    log : callable
        Receives each stage's lines (its name as it starts, what it did or reused).

    Returns
    -------
    table : str
        The comparison table, the ladder and the utility table (also in ``table.txt``).
    summaries : dict
        Row label (:func:`demo_rows`) -> ``Result.to_dict()`` (also in ``summary.json``).
    """
    from lidframe.core.evaluation import evaluate
    from lidframe.stats.bootstrap import Bootstrap

    out = check_output_dir(out_dir, "--out")
    out.mkdir(exist_ok=True)
    run = _DemoRun(out, seed=seed, epochs=epochs, jobs=jobs, progress=progress, log=log)
    no_ge2e = ge2e_unavailable()
    if no_ge2e is not None:
        log(f"the pretrained GE2E rows are left out: {no_ge2e}")
    rows = demo_rows(ge2e=no_ge2e is None)
    no_utility = utility_unavailable(recogniser)
    if no_utility is not None:
        log(f"the utility column is left out: {no_utility}")
    else:
        from lidframe.utility.evaluate import resolve_recogniser

        resolve_recogniser(recogniser)  # a spec that names no recogniser is refused before any work
    corpus = _synthesize_corpus(run, sentences=sentences, voices=voices)
    n_train = len(corpus["speakers"]["train"])
    from lidframe.attackers.neural import attackers_code_digest

    training_code = attackers_code_digest()  # the attackers' source and torch's version: part of every checkpoint key
    roots = {
        name: out / "corpus" if params is None else out / "systems" / name
        for name, params in VOICE_DEMO_SYSTEMS.items()
    }
    _anonymise_systems(out, roots, seed=seed, jobs=jobs, progress=progress, log=log)
    if no_utility is None:
        utilities, utility_note = utility_column(run, roots, recogniser=recogniser, n_boot=n_boot)
    else:
        utilities, utility_note = {}, f"the utility column is left out: {no_utility}"
    scored: dict[str, dict[str, Path]] = {}
    from lidframe.report import AttackerSettings

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
    if no_ge2e is None:
        scored.update(_score_ge2e(run, roots, training_code=training_code, n_train=n_train))
    log("[scores random] the random attacker (seeded random embeddings) on the plain speech")
    scored["random"] = _score_random(run)
    run.attackers.append(AttackerSettings.of("random", {"embeddings": "seeded random", "seed": run.seed}))
    bootstrap = Bootstrap(n_boot=n_boot, unit="speaker", seed=seed)
    run.log(f"[evaluate] {len(rows)} rows: {CALIBRATOR} calibration on dev, LID on eval, {n_boot} speaker resamples")
    results: dict[str, Result] = {
        row.label: evaluate(
            scored[row.label]["dev"], scored[row.label]["eval"], calibrator=CALIBRATOR, bootstrap=bootstrap
        )
        for row in rows
    }
    inputs = {f"{label} {split}": path for label, paths in scored.items() for split, path in paths.items()}
    inputs.update({f"utility {name}": out / "utility" / f"{name}.json" for name in utilities})
    table = format_table(
        [(row.label, results[row.label].summary) for row in rows], name_header="system/attacker/scenario"
    )
    text = table + "\n\n" + ladder_table(rows, results) + "\n\n"
    text += utility_table(utilities, utility_note) if utilities else utility_note
    _write_outputs(
        run,
        rows,
        results,
        table=text,
        corpus=corpus,
        sentences=sentences,
        inputs=inputs,
        n_boot=n_boot,
        utilities=utilities,
        utility_note=utility_note,
    )
    return text, {label: r.to_dict() for label, r in results.items()}


def ladder_table(rows: Sequence[LadderEntry], results: Mapping[str, Result]) -> str:
    """The threat-model ladder as text: per anonymised system, ALID [interval] and LIDmax of the GE2E rungs.

    Columns: the system, then per rung of :data:`lidframe.data.scenario.SCENARIOS` its
    ALID with the speaker-bootstrap interval and its LIDmax; the plain speech's GE2E ALID
    is the first line (nothing anonymised), the small ECAPA's semi-informed ALID the last column.
    """
    from lidframe.data.scenario import SCENARIOS
    from lidframe.report.text import text_table

    def alid(label: str) -> str:
        result = results.get(label)
        if result is None:
            return "-"
        summary = result.summary
        interval = (summary.intervals or {}).get("alid")
        text = f"{summary.alid:.2f}"
        if interval is not None:
            text += f" [{interval.low:.2f}, {interval.high:.2f}]"
        return f"{text} / {summary.lid_max:.2f}"

    header = ["system", *SCENARIOS, "ecapa semi-informed"]
    body = []
    for system in dict.fromkeys(row.system for row in rows if row.system != "random"):
        if VOICE_DEMO_SYSTEMS[system] is None:
            body.append([f"{system} (nothing anonymised)", alid(f"{system}/ge2e"), "", "", alid(f"{system}/ecapa")])
            continue
        cells = [alid(f"{system}/ge2e/{rung}") for rung in SCENARIOS]
        body.append([system, *cells, alid(f"{system}/ecapa/semi-informed")])
    return "ALID [95 % speaker-bootstrap interval] / LIDmax, bits, by rung of the ladder\n" + text_table(header, body)


def _synthesize_corpus(run: _DemoRun, *, sentences: int, voices: Sequence[str] | None) -> dict[str, Any]:
    """Synthesize (or reuse) the corpus under ``out/corpus`` and say what was made; :func:`build_corpus`'s report."""
    from lidframe.audio.corpus import build_corpus

    folder = run.out / "corpus"
    run.log(f"[corpus] synthesizing speech into {folder}")
    corpus = build_corpus(
        folder,
        voices=voices,
        sentences=sentences,
        enrol=3,
        split=DEMO_SPLIT,
        seed=run.seed,
        jobs=run.jobs,
        progress=run.progress,
    )
    sizes = {k: len(v) for k, v in corpus["speakers"].items()}
    n_utt, made = corpus["utterances"], corpus["synthesized"]
    if made == 0:
        what = f"reused {n_utt} utterances from {folder}"
    elif made == n_utt:
        what = f"synthesized {n_utt} utterances"
    else:
        what = f"synthesized {made} utterances, reused {n_utt - made} from {folder}"
    run.log(
        f"corpus: {what}, {sum(sizes.values())} voices "
        f"({', '.join(f'{n} {e}' for e, n in sorted(corpus['engines'].items()))}); speakers train {sizes['train']}, "
        f"dev {sizes['dev']}, eval {sizes['eval']}"
    )
    return corpus


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


def _score_both_splits(run: _DemoRun, attacker, label: str, enrol_root: Path, trial_root: Path) -> dict[str, Path]:
    """Score dev and eval trials of *trial_root* against the speakers of *enrol_root*; ``split -> score file``.

    Always rescored: the embedding cache is the reuse (and the scores never outlive a
    changed checkpoint or corpus).
    """
    scored = {}
    for split in ("dev", "eval"):
        path = run.out / "scores" / f"{label.replace('/', '_')}_{split}.npz"
        path.parent.mkdir(exist_ok=True)
        _scores(attacker, enrol_root, trial_root, split).save(path)
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
    scored = {label: _score_both_splits(run, attacker, label, root, root)}
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
    with its output layer adapted on the system's anonymised train speakers (:func:`_adapt_ge2e`).
    """
    from lidframe.attackers.ge2e import Ge2e, resemblyzer_weights
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
    plain = roots["plain"]
    run.log(
        f"[scores ge2e] the pretrained GE2E encoder: {sum(1 for p in VOICE_DEMO_SYSTEMS.values() if p)} systems x 2 rungs"
    )
    scored: dict[str, dict[str, Path]] = {}
    for name, root in roots.items():
        if VOICE_DEMO_SYSTEMS[name] is None:
            scored[f"{name}/ge2e"] = _score_both_splits(run, pretrained, f"{name}/ge2e", root, root)
            continue
        scored[f"{name}/ge2e/ignorant"] = _score_both_splits(run, pretrained, f"{name}/ge2e/ignorant", plain, root)
        scored[f"{name}/ge2e/lazy-informed"] = _score_both_splits(
            run, pretrained, f"{name}/ge2e/lazy-informed", root, root
        )
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
        scored[label] = _score_both_splits(run, adapted, label, root, root)
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
        **GE2E_ADAPTATION,
    )
    return checkpoint


def _score_random(run: _DemoRun) -> dict[str, Path]:
    """Score the plain speech's dev and eval trials with the seeded random attacker; ``split -> score file``."""
    from lidframe.attackers import RandomAttacker

    corpus = run.out / "corpus"
    return _score_both_splits(run, RandomAttacker(seed=run.seed), "random", corpus, corpus)


def _write_outputs(
    run: _DemoRun,
    rows: Sequence[LadderEntry],
    results: dict[str, Result],
    *,
    table: str,
    corpus: dict[str, Any],
    sentences: int,
    inputs: Mapping[str, StrPath],
    n_boot: int,
    utilities: Mapping[str, Utility],
    utility_note: str,
) -> None:
    """Write ``summary.json``, ``table.txt``, ``per_trial.csv``, ``report.html`` and ``lid_ccdf.png`` into the folder.

    *table* is the printed text (the comparison table, the ladder, the utility table);
    *utilities* the utility column (system -> record; empty when left out, and then
    *utility_note* says why, among the report's notes).
    """
    from lidframe.cli.simulated_demo import write_demo_outputs
    from lidframe.data.scenario import SCENARIOS

    sizes = {k: len(v) for k, v in corpus["speakers"].items()}
    systems = {row.label: row.system for row in rows}
    run.log(f"[report] writing summary.json, table.txt, per_trial.csv, report.html and lid_ccdf.png to {run.out}")
    write_demo_outputs(
        run.out,
        results,
        table=table,
        record={
            "seed": run.seed,
            "epochs": run.epochs,
            "sentences": sentences,
            "calibrator": CALIBRATOR,
            "bootstrap": {"n_boot": n_boot, "unit": "speaker", "level": 0.95},
            "corpus": {k: corpus[k] for k in ("speakers", "engines", "utterances")},
            "scenarios": {name: attrs.asdict(rung) for name, rung in SCENARIOS.items()},
            "rows": {row.label: attrs.asdict(row) for row in rows},
        },
        inputs=inputs,
        title="lidframe demo: real synthesized voices, the threat-model ladder",
        notes=[
            f"{corpus['utterances']} synthesized utterances of {sum(sizes.values())} voices (train {sizes['train']}, "
            f"dev {sizes['dev']}, eval {sizes['eval']}); systems {', '.join(VOICE_DEMO_SYSTEMS)} (-spk: the anonymiser's "
            "parameter drawn once per speaker, else once per utterance). Each anonymised system is attacked up the "
            "ladder: ignorant (o-a: original enrolment, pretrained GE2E), lazy-informed (a-a: anonymised enrolment, "
            "pretrained GE2E), semi-informed (a-a, GE2E with its output layer adapted on the system's anonymised train "
            "speakers); a small "
            f"ECAPA-TDNN trained {run.epochs} epochs per system here is a second semi-informed attacker; {CALIBRATOR} "
            f"calibration on dev, LID on eval, {n_boot} speaker-bootstrap resamples; a random attacker is the floor. "
            "See docs/demo.md.",
            *(rung.describe() for rung in SCENARIOS.values()),
            *([] if utilities else [utility_note]),
        ],
        settings={
            "seed": run.seed,
            "epochs (small ECAPA)": run.epochs,
            "GE2E adaptation": "output layer, " + ", ".join(f"{k} {v}" for k, v in GE2E_ADAPTATION.items()),
            "sentences per voice": sentences,
            "small ECAPA": ", ".join(f"{k}={v}" for k, v in SMALL_ECAPA.items()),
            "calibrator": CALIBRATOR,
            "prior": "uniform",
            "bootstrap": f"{n_boot} resamples of speakers, 95 %",
            **({"utility": utility_note} if utilities else {}),
        },
        systems=systems,
        ladder=list(rows),
        log=run.log,
        attackers=run.attackers,
        engines={engine: corpus["versions"].get(engine, "") for engine in corpus["engines"]},
        # the report places a system's utility beside its rows: a system without rows (plain without GE2E) is
        # left out of the report and summary.json, not of the printed table
        utility={name: u for name, u in utilities.items() if name in systems.values()} or None,
        utility_note=utility_note if utilities else None,
    )
    from lidframe.report.lid_figures import save_lid_ccdf

    first = next(iter(results.values()))
    save_lid_ccdf(
        {label: r.lid[~r.is_outsider] for label, r in results.items()},
        run.out / "lid_ccdf.png",
        log2_n=first.summary["log2_n"],
        title="Real-voice demo: LID per system, attacker and rung",
        groups=systems,
        variants={row.label: row.label.partition("/")[2] or row.label for row in rows},
    )
