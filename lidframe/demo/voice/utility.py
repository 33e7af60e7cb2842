"""The real-voice demo's utility column: what each anonymiser costs the speech (word error rate, ρ_F0), cached.

:func:`utility_column` measures (or reuses) every system's :class:`~lidframe.utility.Utility`
on the eval trials of the voices a word error rate means something for, each record keyed
by the digest of its inputs; :func:`utility_table` prints them;
:func:`utility_unavailable` says why the column cannot be measured here.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lidframe.demo.voice.plan import (
    DEMO_WAV_PATHS,
    N_BOOT,
    RECOGNISER,
    UTILITY_METHOD,
    UTILITY_STAMP_SUFFIX,
    VOICE_DEMO_SYSTEMS,
    _DemoRun,
    _digest,
    _read_stamp,
)

if TYPE_CHECKING:
    from lidframe.stats.bootstrap import Bootstrap
    from lidframe.utility import Utility

__all__ = ["utility_column", "utility_table", "utility_unavailable"]


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
    from lidframe.data.fileio import atomic_write
    from lidframe.data.kaldi import read_data_dir, wav_location
    from lidframe.errors import InputError, quote
    from lidframe.utility.evaluate import read_transcripts

    corpus = out / "corpus" / "eval_trials"
    chosen = set(voices)
    kept = [utt for utt in read_data_dir(corpus, wav_paths=DEMO_WAV_PATHS) if utt.speaker in chosen]
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
        audio = {utt.utt_id: str(utt.path) for utt in read_data_dir(source, wav_paths=DEMO_WAV_PATHS)}
        for utt in kept:
            if utt.utt_id not in audio:
                raise InputError(f"{source / 'wav.scp'}: no utterance {quote(utt.utt_id)} (it is in {corpus})")
        wav = "".join(f"{utt.utt_id} {wav_location(audio[utt.utt_id], folder, DEMO_WAV_PATHS)}\n" for utt in kept)
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

    For each system of :data:`~lidframe.demo.voice.plan.VOICE_DEMO_SYSTEMS` (``plain`` included) a data dir
    ``utility/<system>/`` holds the eval trials of the voices of
    :func:`lidframe.audio.corpus.recognisable_voice` (:func:`_utility_subsets`), and
    :func:`lidframe.utility.utility` measures it against ``utility/plain/`` (ρ_F0; none for
    ``plain`` itself) in ``run.jobs`` worker processes, with intervals over
    speakers (``Bootstrap(n_boot, unit="speaker", seed=run.seed, method=UTILITY_METHOD)``).
    Each record is cached as ``utility/<system>.json`` with a stamp beside it
    (``<system>.inputs.sha256``) naming the digest of its inputs: the data dir's wav.scp,
    text and utt2spk, the system's eval data dir's stamp (:func:`~lidframe.demo.voice.plan._read_stamp`), the
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
        Registry spec of the recogniser (default :data:`~lidframe.demo.voice.plan.RECOGNISER`).
    n_boot : int
        Bootstrap resamples of the intervals.

    Returns
    -------
    results : dict of str to Utility
        System -> its utility record, in :data:`~lidframe.demo.voice.plan.VOICE_DEMO_SYSTEMS` order; empty when no
        eval speaker is a recognisable voice (then nothing is measured).
    note : str
        The sentence that heads the utility table (the voice set and the recogniser), or
        why the column is left out (also logged).
    """
    from lidframe.audio.corpus import RECOGNISABLE_VOICES
    from lidframe.data.kaldi import read_data_dir
    from lidframe.registry import describe_component
    from lidframe.stats.bootstrap import Bootstrap
    from lidframe.utility.evaluate import resolve_recogniser

    speakers, voices = _eval_voices(run.out)
    if not voices:
        note = (
            f"the utility column is left out: none of the {len(speakers)} eval speakers is a voice a word error "
            f"rate means something for (the English voices built from recordings: {', '.join(RECOGNISABLE_VOICES)})"
        )
        run.log(note)
        return {}, note
    model = resolve_recogniser(recogniser)
    described = str(describe_component(model))
    # the intervals resample speakers: with one recognisable voice there is nothing to resample
    bootstrap = (
        Bootstrap(n_boot=n_boot, unit="speaker", seed=run.seed, method=UTILITY_METHOD) if len(voices) > 1 else None
    )
    subsets = _utility_subsets(run.out, roots, voices)
    n_utt = len(read_data_dir(subsets["plain"], wav_paths=DEMO_WAV_PATHS))
    run.log(
        f"[utility] WER of {described} and rho_F0 against plain: {len(subsets)} systems x {n_utt} eval trials of "
        f"{len(voices)} voices ({', '.join(voices)})"
    )
    results = _measure_systems(run, roots, subsets, model=model, described=described, bootstrap=bootstrap)
    return results, _utility_note(described, n_utt, voices, bootstrap)


def _eval_voices(out: Path) -> tuple[set[str], list[str]]:
    """The corpus's eval speakers, and those of them a word error rate means something for, in their list's order."""
    from lidframe.audio.corpus import RECOGNISABLE_VOICES, recognisable_voice
    from lidframe.data.kaldi import read_data_dir

    speakers = {utt.speaker for utt in read_data_dir(out / "corpus" / "eval_trials", wav_paths=DEMO_WAV_PATHS)}
    voices = sorted((speaker for speaker in speakers if recognisable_voice(speaker)), key=RECOGNISABLE_VOICES.index)
    return speakers, voices


def _measure_systems(
    run: _DemoRun,
    roots: Mapping[str, Path],
    subsets: Mapping[str, Path],
    *,
    model: Any,
    described: str,
    bootstrap: Bootstrap | None,
) -> dict[str, Utility]:
    """Each system's utility record, reused where its stamp matches, else measured.

    In :data:`~lidframe.demo.voice.plan.VOICE_DEMO_SYSTEMS` order.

    The stamp names the digest of the record's inputs (:func:`_record_inputs`, the
    recogniser *described*, :func:`_utility_code` and the bootstrap settings); it is
    removed before a record is (re)made and written after it.
    """
    from lidframe.data.fileio import write_json
    from lidframe.runtime.workers import process_pool

    code = _utility_code()
    settings = json.dumps(None if bootstrap is None else bootstrap.to_dict(), sort_keys=True)
    results: dict[str, Utility] = {}
    # one pool of run.jobs workers for every system, made when the first record is (re)made: its processes
    # start once and each loads the recogniser's model once
    pool: Executor | None = None
    with contextlib.ExitStack() as pools:
        for name, params in VOICE_DEMO_SYSTEMS.items():
            data = subsets[name]
            reference = None if params is None else subsets["plain"]
            expected = _digest(*_record_inputs(roots, name, data, reference), described, code, settings)
            path = run.out / "utility" / f"{name}.json"
            stamp = path.with_name(name + UTILITY_STAMP_SUFFIX)
            reused = _reusable_record(path, stamp, expected)
            if reused is not None:
                results[name] = reused
                run.log(f"utility {name}: reused {path} (same audio, transcripts, recogniser and settings)")
                continue
            stamp.unlink(missing_ok=True)
            if pool is None and run.jobs > 1:
                pool = pools.enter_context(process_pool(run.jobs))
            result = _measure(run, name, data, reference, model=model, bootstrap=bootstrap, executor=pool)
            write_json(path, result.to_dict())
            stamp.write_text(expected + "\n")
            results[name] = result
            run.log(_measured_line(name, result))
    return results


def _record_inputs(roots: Mapping[str, Path], name: str, data: Path, reference: Path | None) -> list[str]:
    """What a system's utility record is made of: its data dir (path, tables, eval stamp), and its reference's."""
    inputs = [str(data), _table_digest(data), _read_stamp(roots[name] / "eval_trials")]
    if reference is None:
        inputs.append("no reference")
    else:
        inputs += [str(reference), _table_digest(reference), _read_stamp(roots["plain"] / "eval_trials")]
    return inputs


def _reusable_record(path: Path, stamp: Path, expected: str) -> Utility | None:
    """The record at *path* where its *stamp* names the *expected* inputs and it reads back; else None."""
    from lidframe.errors import InputError
    from lidframe.utility import read_utility

    if not (path.is_file() and stamp.is_file() and stamp.read_text().strip() == expected):
        return None
    try:
        return read_utility(path)
    except InputError:
        return None  # a record that does not read back is made again


def _measure(
    run: _DemoRun,
    name: str,
    data: Path,
    reference: Path | None,
    *,
    model: Any,
    bootstrap: Bootstrap | None,
    executor: Executor | None,
) -> Utility:
    """System *name*'s utility (:func:`lidframe.utility.utility`) in ``run.jobs`` workers; a tqdm bar if asked."""
    from lidframe.utility import utility

    bar = None
    if run.progress:
        from tqdm import tqdm

        bar = tqdm(desc=f"recognising {name}", unit="utt")

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    try:
        return utility(
            data,
            reference,
            recogniser=model,
            bootstrap=bootstrap,
            jobs=run.jobs,
            executor=executor,
            progress=progress,
            wav_paths=DEMO_WAV_PATHS,
        )
    finally:
        if bar is not None:
            bar.close()


def _measured_line(name: str, result: Utility) -> str:
    """The log line of a record just measured: its WER in percent with its interval, utterances and speakers."""
    value, _, interval = _percent(result.wer, (result.intervals or {}).get("wer")).partition(" ")
    wer = f"{value} %" + (f" {interval}" if interval else "")
    return f"utility {name}: WER {wer} on {result.utterances} utterances of {result.speakers} speakers"


def _utility_note(described: str, n_utt: int, voices: Sequence[str], bootstrap: Bootstrap | None) -> str:
    """The sentence that heads the utility table: the recogniser, the voice set and the intervals."""
    if bootstrap is None:
        intervals = "no interval: one speaker"
    else:
        level = f"{bootstrap.level:.0%}".replace("%", " %")
        intervals = f"{level} speaker-bootstrap interval, {bootstrap.n_boot} resamples, {bootstrap.method}"
    voice_set = ("voice" if len(voices) == 1 else f"{len(voices)} voices") + " a word error rate holds for"
    return (
        f"Utility: WER of {described} and rho_F0 against plain, on the {n_utt} eval trials of the {voice_set} "
        f"(English, built from recordings: {', '.join(voices)}); [{intervals}]"
    )


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
