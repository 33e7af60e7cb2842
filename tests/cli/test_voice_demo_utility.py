"""The real-voice demo's utility column: which trials it measures, its cache, its table, and when it is left out.

The stage (:func:`lidframe.demo.voice.utility_column`) runs here on a demo folder laid
out by hand (a corpus ``eval_trials`` of generated voices under corpus speaker ids, and one
``eval_trials`` per anonymised system with its stamp), with a recogniser registered for the
test whose hypothesis is a function of the audio's length: the expected words are computed
here from the wav files, and the word error rates with jiwer.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from pathlib import Path

import pytest

from lidframe.audio.corpus import SENTENCES
from lidframe.demo.voice.plan import STAMP_FILE, UTILITY_STAMP_SUFFIX, VOICE_DEMO_SYSTEMS, _DemoRun
from lidframe.errors import InputError
from lidframe.registry import register, unregister
from tests.voices import write_voice

soundfile = pytest.importorskip(
    "soundfile", reason="the demo's voices are read with soundfile: pip install -e '.[audio]'"
)
HAVE_EXTRA = all(importlib.util.find_spec(name) for name in ("jiwer", "parselmouth"))
pytestmark = pytest.mark.skipif(
    not HAVE_EXTRA, reason="the utility extra (jiwer, praat-parselmouth) is not installed: pip install -e '.[utility]'"
)

#: The voices a WER holds for, written out here (docs/demo.md, lidframe.audio.corpus): English, from recordings.
ENGLISH_FROM_RECORDINGS = {
    "flite-kal16",
    "flite-awb",
    "flite-rms",
    "flite-slt",
    "festival-ked_diphone",
    "festival-kal_diphone",
    "festival-cmu_us_slt_arctic_hts",
}
#: Eval speakers of the hand-made demo folder: three recognisable voices among others.
SPEAKERS = ("espeak-en-us-m1", "festival-czech_dita", "festival-ked_diphone", "flite-rms", "flite-slt", "mb-us1")
WORDS = ["the", "harbour", "lights", "flickered", "as", "the", "last", "ferry", "pulled", "away"]


class LengthRecogniser:
    """A test recogniser: hears the first 1 + (samples mod 7) of :data:`WORDS` (a function of the audio alone)."""

    sample_rate = 16000
    calls = 0

    def __init__(self, *, shift: int = 0):
        self.shift = shift

    def describe(self):
        return f"length (shift {self.shift})"

    def transcribe(self, waveform, sample_rate):
        type(self).calls += 1
        return " ".join(WORDS[: 1 + (len(waveform) + self.shift) % 7])


def heard(path: Path, shift: int = 0) -> str:
    """What :class:`LengthRecogniser` hears in the wav file at *path*, from the file read here."""
    samples, rate = soundfile.read(str(path))
    assert rate == 16000
    return " ".join(WORDS[: 1 + (len(samples) + shift) % 7])


@pytest.fixture
def recogniser():
    register("recogniser", "length-test", LengthRecogniser)
    LengthRecogniser.calls = 0
    yield "length-test"
    unregister("recogniser", "length-test")


def write_table(folder: Path, name: str, rows: list[tuple[str, str]]) -> None:
    (folder / name).write_text("".join(f"{key} {value}\n" for key, value in rows), encoding="utf-8")


def demo_folder(out: Path, speakers=SPEAKERS, trials: int = 2) -> dict[str, Path]:
    """A demo folder as the stages before the utility column leave it; returns the systems' roots.

    ``corpus/eval_trials`` holds *trials* utterances per speaker (relative wav paths, as the
    corpus writes them); ``systems/<name>/eval_trials`` other audio under the same ids
    (absolute paths), with a stamp.  Lengths differ by utterance and system.
    """
    corpus = out / "corpus" / "eval_trials"
    corpus.mkdir(parents=True)
    rows = []
    for s, speaker in enumerate(speakers):
        (out / "corpus" / "wav" / speaker).mkdir(parents=True)
        for k in range(3, 3 + trials):
            utt = f"{speaker}-{k:03d}"
            name = f"{utt}-0123456789ab.wav"
            write_voice(out / "corpus" / "wav" / speaker / name, s, k, 0.4 + 0.013 * k + 0.007 * s)
            rows.append((utt, speaker, f"../wav/{speaker}/{name}", SENTENCES[(5 * s + k) % len(SENTENCES)]))
    rows.sort()
    write_table(corpus, "wav.scp", [(u, p) for u, _, p, _ in rows])
    write_table(corpus, "utt2spk", [(u, s) for u, s, _, _ in rows])
    write_table(corpus, "text", [(u, t) for u, _, _, t in rows])
    roots = {"plain": out / "corpus"}
    for index, (system, params) in enumerate(VOICE_DEMO_SYSTEMS.items()):
        if params is None:
            continue
        folder = out / "systems" / system / "eval_trials"
        (out / "systems" / system / "wav").mkdir(parents=True)
        folder.mkdir()
        paths = []
        for n, (utt, _, _, _) in enumerate(rows):
            path = out / "systems" / system / "wav" / f"{utt}.wav"
            write_voice(path, n % 5 + index, n, 0.45 + 0.011 * index + 0.003 * n)
            paths.append((utt, str(path.resolve())))
        write_table(folder, "wav.scp", paths)
        (folder / "utt2spk").write_text((corpus / "utt2spk").read_text())
        (folder / "text").write_text((corpus / "text").read_text())
        (folder / STAMP_FILE).write_text(f"{system} made once\n")
        roots[system] = out / "systems" / system
    return roots


def demo_run(out: Path, lines: list[str], *, seed: int = 0) -> _DemoRun:
    return _DemoRun(out, seed=seed, epochs=1, jobs=1, progress=False, log=lines.append)


def read_rows(path: Path) -> list[tuple[str, str]]:
    return [tuple(line.split(" ", 1)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def recognisable_trials(out: Path) -> list[str]:
    """The eval trials of the English voices built from recordings, from the corpus files, in their order."""
    speaker = dict(read_rows(out / "corpus" / "eval_trials" / "utt2spk"))
    return [
        utt
        for utt, _ in read_rows(out / "corpus" / "eval_trials" / "wav.scp")
        if speaker[utt] in ENGLISH_FROM_RECORDINGS
    ]


def normalised(text: str) -> str:
    """Lower case, punctuation out (the corpus sentences hold no apostrophes and no digits)."""
    return " ".join(re.sub(r"[^a-z ]", " ", text.lower()).split())


# ---------------------------------------------------------------- the trials measured
def test_each_systems_utility_dir_holds_exactly_the_eval_trials_of_the_recognisable_voices(tmp_path, recogniser):
    from lidframe.demo.voice import utility_column

    out = tmp_path / "demo-out"
    roots = demo_folder(out)
    results, note = utility_column(demo_run(out, []), roots, recogniser=recogniser, n_boot=100)
    expected = recognisable_trials(out)
    assert len(expected) == 6  # flite-rms, flite-slt, festival-ked_diphone: 2 trials each
    corpus = out / "corpus" / "eval_trials"
    corpus_text = dict(read_rows(corpus / "text"))
    corpus_spk = dict(read_rows(corpus / "utt2spk"))
    assert list(results) == list(VOICE_DEMO_SYSTEMS)
    for system, root in roots.items():
        folder = out / "utility" / system
        wav = read_rows(folder / "wav.scp")
        assert [utt for utt, _ in wav] == expected
        source = dict(read_rows(root / "eval_trials" / "wav.scp"))
        for utt, path in wav:
            assert not os.path.isabs(path)  # relative: the folder can move
            # the system's audio, not the plain one (unless the system is plain)
            assert os.path.samefile(folder / path, root / "eval_trials" / source[utt])
        assert read_rows(folder / "text") == [(utt, corpus_text[utt]) for utt in expected]
        assert read_rows(folder / "utt2spk") == [(utt, corpus_spk[utt]) for utt in expected]
        assert results[system].utterances == 6 and results[system].speakers == 3
    assert "flite-rms, flite-slt, festival-ked_diphone" in note and "length (shift 0)" in note


# ---------------------------------------------------------------- the numbers and the table
def test_the_records_are_jiwers_word_error_rates_and_the_table_prints_them(tmp_path, recogniser):
    import jiwer

    from lidframe.demo.voice import utility_column, utility_table
    from lidframe.utility import read_utility

    out = tmp_path / "demo-out"
    roots = demo_folder(out)
    results, note = utility_column(demo_run(out, []), roots, recogniser=recogniser, n_boot=100)
    expected = recognisable_trials(out)
    text = dict(read_rows(out / "corpus" / "eval_trials" / "text"))
    for system, root in roots.items():
        source = dict(read_rows(root / "eval_trials" / "wav.scp"))
        hypotheses = [heard(root / "eval_trials" / source[utt]) for utt in expected]
        want = jiwer.wer([normalised(text[utt]) for utt in expected], hypotheses)
        assert results[system].wer == pytest.approx(want, abs=1e-12), system
        assert (results[system].rho_f0 is None) == (system == "plain")
        record = read_utility(out / "utility" / f"{system}.json")  # the cache holds the record
        assert record.to_dict() == results[system].to_dict()
        assert record.bootstrap == {
            "n_boot": 100,
            "level": 0.95,
            "unit": "speaker",
            "method": "percentile",
            "seed": 0,
            "resample": "eval",
        }
    assert len({round(r.wer, 12) for r in results.values()}) > 1  # the systems' audio differs: so do their WERs
    table = utility_table(results, note)
    first, header, *lines = table.splitlines()
    assert first == note and header.split() == ["system", "WER", "%", "rho_F0", "utterances", "speakers"]
    assert len(lines) == len(VOICE_DEMO_SYSTEMS)
    for line, (system, result) in zip(lines, results.items()):
        cells = re.split(r"\s{2,}", line.strip())
        wer, rho = result.intervals["wer"], (result.intervals or {}).get("rho_f0")
        assert cells[0] == system
        assert cells[1] == f"{100 * result.wer:.1f} [{100 * wer.low:.1f}, {100 * wer.high:.1f}]"
        if system == "plain":
            assert cells[2] == "-"
        else:
            assert cells[2] == f"{result.rho_f0:.3f} [{rho.low:.3f}, {rho.high:.3f}]"
        assert cells[3:] == [str(result.utterances), str(result.speakers)] == ["6", "3"]


def test_the_documented_command_reproduces_a_demo_record(tmp_path, recogniser, capsys):
    """docs/demo.md: lidframe utility --data OUT/utility/pitch --reference OUT/utility/plain --bootstrap ... gives the same record."""
    from lidframe.cli import main
    from lidframe.demo.voice import utility_column

    out = tmp_path / "demo-out"
    roots = demo_folder(out)
    utility_column(demo_run(out, [], seed=3), roots, recogniser=recogniser, n_boot=200)
    again = tmp_path / "again.json"
    argv = [
        "utility",
        "--data",
        str(out / "utility" / "pitch"),
        "--reference",
        str(out / "utility" / "plain"),
        "--wav-paths",
        "data-dir",  # the demo's data dirs name their audio relative to themselves (the folder can move)
        "--no-reference-wer",  # the demo's record holds no plain WER per voice (docs/demo.md)
        "--recogniser",
        recogniser,
        "--bootstrap",
        "--bootstrap-method",
        "percentile",
        "--n-boot",
        "200",
        "--seed",
        "3",
        "--json",
        str(again),
    ]
    assert main(argv) == 0
    capsys.readouterr()
    assert json.loads(again.read_text()) == json.loads((out / "utility" / "pitch.json").read_text())


# ---------------------------------------------------------------- the cache
def _measured(lines: list[str]) -> set[str]:
    """Systems whose record this run made (a 'utility NAME: WER ...' line)."""
    return {line.split()[1].rstrip(":") for line in lines if re.match(r"utility \S+: WER ", line)}


def _reused(lines: list[str]) -> set[str]:
    return {line.split()[1].rstrip(":") for line in lines if re.match(r"utility \S+: reused ", line)}


def _change_text(out: Path, roots) -> None:
    """A new transcript for the first recognisable trial (the corpus's text, hence every subset's)."""
    path = out / "corpus" / "eval_trials" / "text"
    first = recognisable_trials(out)[0]
    path.write_text("".join(f"{u} {'a new sentence' if u == first else t}\n" for u, t in read_rows(path)))


def _restamp(system: str):
    def change(out: Path, roots) -> None:
        (roots[system] / "eval_trials" / STAMP_FILE).write_text(f"{system} made again\n")

    return change


def _interrupt(system: str):
    def change(out: Path, roots) -> None:  # a run stopped between removing the stamp and writing it again
        (out / "utility" / f"{system}{UTILITY_STAMP_SUFFIX}").unlink()

    return change


@pytest.mark.parametrize(
    ("change", "redone"),
    [
        (_change_text, set(VOICE_DEMO_SYSTEMS)),
        (_restamp("pitch"), {"pitch"}),
        # plain's stamp is the reference of every anonymised system: all of them
        (
            lambda out, roots: (out / "corpus" / "eval_trials" / "utt2spk").write_text(
                (out / "corpus" / "eval_trials" / "utt2spk").read_text() + "\n"
            ),
            set(VOICE_DEMO_SYSTEMS),
        ),
        (_interrupt("mcadams-spk"), {"mcadams-spk"}),
    ],
    ids=["text", "system-stamp", "reference-stamp", "interrupted"],
)
def test_a_rerun_reuses_every_record_and_a_changed_input_redoes_what_it_feeds(tmp_path, recogniser, change, redone):
    from lidframe.demo.voice import utility_column

    out = tmp_path / "demo-out"
    roots = demo_folder(out)
    cold: list[str] = []
    first, _ = utility_column(demo_run(out, cold), roots, recogniser=recogniser, n_boot=100)
    assert _measured(cold) == set(VOICE_DEMO_SYSTEMS) and not _reused(cold)
    calls = LengthRecogniser.calls
    assert calls == 6 * len(VOICE_DEMO_SYSTEMS)
    warm: list[str] = []
    again, _ = utility_column(demo_run(out, warm), roots, recogniser=recogniser, n_boot=100)
    assert _reused(warm) == set(VOICE_DEMO_SYSTEMS) and not _measured(warm)
    assert LengthRecogniser.calls == calls  # nothing recognised
    assert (
        f"utility pitch: reused {out / 'utility' / 'pitch.json'} (same audio, transcripts, recogniser and settings)"
        in warm
    )
    assert {k: r.to_dict() for k, r in again.items()} == {k: r.to_dict() for k, r in first.items()}
    change(out, roots)
    lines: list[str] = []
    redo, _ = utility_column(demo_run(out, lines), roots, recogniser=recogniser, n_boot=100)
    assert _measured(lines) == redone and _reused(lines) == set(VOICE_DEMO_SYSTEMS) - redone
    assert LengthRecogniser.calls == calls + 6 * len(redone)
    if change is _change_text:  # the new transcript is in the records
        assert all(r.rows[0].reference == "a new sentence" for r in redo.values())
        assert all(r.wer != first[k].wer for k, r in redo.items())


@pytest.mark.slow
@pytest.mark.parametrize(
    "settings",
    [{"n_boot": 101}, {"seed": 1}, {"recogniser": "length-test?shift=1"}],
    ids=["n-boot", "seed", "recogniser"],
)
def test_other_bootstrap_settings_or_recogniser_redo_every_record(tmp_path, recogniser, settings):
    from lidframe.demo.voice import utility_column

    out = tmp_path / "demo-out"
    roots = demo_folder(out)
    utility_column(demo_run(out, []), roots, recogniser=recogniser, n_boot=100)
    lines: list[str] = []
    options = {"recogniser": recogniser, "n_boot": 100, **{k: v for k, v in settings.items() if k != "seed"}}
    results, _ = utility_column(demo_run(out, lines, seed=settings.get("seed", 0)), roots, **options)
    assert _measured(lines) == set(VOICE_DEMO_SYSTEMS) and not _reused(lines)
    bootstrap = results["plain"].bootstrap
    assert (bootstrap["n_boot"], bootstrap["seed"]) == (settings.get("n_boot", 100), settings.get("seed", 0))


def test_a_changed_utility_code_redoes_every_record(tmp_path, recogniser, monkeypatch):
    import lidframe.demo.voice.utility as voice_demo

    out = tmp_path / "demo-out"
    roots = demo_folder(out)
    voice_demo.utility_column(demo_run(out, []), roots, recogniser=recogniser, n_boot=100)
    code = voice_demo._utility_code()
    assert code == voice_demo._utility_code()  # a digest of the sources, the same twice
    monkeypatch.setattr(voice_demo, "_utility_code", lambda: code + " edited")
    lines: list[str] = []
    voice_demo.utility_column(demo_run(out, lines), roots, recogniser=recogniser, n_boot=100)
    assert _measured(lines) == set(VOICE_DEMO_SYSTEMS)


def test_the_utility_code_digest_covers_the_intervals_code_and_the_numeric_libraries(monkeypatch):
    """The intervals come from lidframe.stats.bootstrap, the resampling and quantiles from NumPy/SciPy."""
    import importlib.metadata
    from pathlib import Path

    import lidframe.data.fileio as fileio
    import lidframe.demo.voice.utility as voice_demo
    import lidframe.stats.bootstrap as bootstrap_code

    code = voice_demo._utility_code()
    real_sha = fileio.file_sha256
    monkeypatch.setattr(
        fileio,
        "file_sha256",
        lambda path: "edited" if Path(path) == Path(bootstrap_code.__file__) else real_sha(path),
    )
    assert voice_demo._utility_code() != code
    monkeypatch.setattr(fileio, "file_sha256", real_sha)
    real_version = importlib.metadata.version
    for dist in ("numpy", "scipy"):
        monkeypatch.setattr(
            importlib.metadata, "version", lambda name, dist=dist: "0.0" if name == dist else real_version(name)
        )
        assert voice_demo._utility_code() != code, dist
    monkeypatch.setattr(importlib.metadata, "version", real_version)
    assert voice_demo._utility_code() == code


# ---------------------------------------------------------------- left out, one speaker, bad spec
def test_without_a_recognisable_eval_voice_the_column_is_left_out_in_one_line(tmp_path, recogniser):
    from lidframe.demo.voice import utility_column

    out = tmp_path / "demo-out"
    roots = demo_folder(out, speakers=("espeak-en-us-m1", "festival-czech_dita", "mb-us1"))
    lines: list[str] = []
    results, note = utility_column(demo_run(out, lines), roots, recogniser=recogniser, n_boot=100)
    assert results == {} and lines == [note] and "\n" not in note
    assert note.startswith("the utility column is left out: none of the 3 eval speakers is a voice a word error rate")
    assert "flite-rms" in note and not (out / "utility").exists() and LengthRecogniser.calls == 0


def test_with_one_recognisable_voice_the_records_have_no_interval_and_say_why(tmp_path, recogniser):
    from lidframe.demo.voice import utility_column, utility_table

    out = tmp_path / "demo-out"
    roots = demo_folder(out, speakers=("espeak-en-us-m1", "flite-awb"))
    results, note = utility_column(demo_run(out, []), roots, recogniser=recogniser, n_boot=100)
    assert all(r.intervals is None and r.bootstrap is None and r.speakers == 1 for r in results.values())
    assert note.endswith("(English, built from recordings: flite-awb); [no interval: one speaker]")
    assert "on the 2 eval trials of the voice a word error rate holds for (English" in note
    line = utility_table(results, note).splitlines()[2]
    assert re.split(r"\s{2,}", line.strip()) == ["plain", f"{100 * results['plain'].wer:.1f}", "-", "2", "1"]


@pytest.mark.parametrize(
    ("module", "hint"),
    [
        ("pocketsphinx", "lidframe.utility.pocketsphinx:POCKETSPHINX_HINT"),
        ("jiwer", "lidframe.utility.wer:JIWER_HINT"),
        ("parselmouth", "lidframe.utility.pitch:PARSELMOUTH_HINT"),
    ],
)
def test_without_the_utility_extra_the_demo_leaves_the_column_out_in_one_line(tmp_path, monkeypatch, module, hint):
    import importlib

    import lidframe.demo.voice.run as voice_demo

    module_name, _, name = hint.partition(":")
    message = getattr(importlib.import_module(module_name), name)
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    assert voice_demo.utility_unavailable() == message
    # another recogniser does not need pocketsphinx
    assert voice_demo.utility_unavailable("whisper?model=small") == (None if module == "pocketsphinx" else message)
    lines: list[str] = []

    class Stop(Exception):
        pass

    def corpus(run, **kwargs):
        raise Stop

    monkeypatch.setattr(voice_demo, "_synthesize_corpus", corpus)
    monkeypatch.setattr(voice_demo, "ge2e_unavailable", lambda: None)
    with pytest.raises(Stop):
        voice_demo.run_voice_demo(tmp_path / "out", log=lines.append)
    assert lines == [f"the utility column is left out: {message}"]  # said before any work, in one line


def test_a_recogniser_spec_that_names_none_is_refused_before_any_work(tmp_path, monkeypatch):
    import lidframe.demo.voice.run as voice_demo

    monkeypatch.setattr(voice_demo, "_synthesize_corpus", lambda run, **kwargs: pytest.fail("synthesized"))
    with pytest.raises(InputError, match="no-such-recogniser"):
        voice_demo.run_voice_demo(tmp_path / "out", recogniser="no-such-recogniser", log=lambda m: None)
