"""``lidframe utility`` on voices its recogniser cannot read; its progress bar and workers by default (issue 41).

Each voice's WER is recomputed here with jiwer's own alignment of the normalised words
(summed per speaker), not with lidframe's word counts.
"""

from __future__ import annotations

import os
import sys

import pytest

from lidframe.cli import main
from lidframe.registry import register, unregister
from tests.utility.test_utility import SPEAKER_TEXTS, EchoRecogniser, speakers_dir

jiwer = pytest.importorskip("jiwer", reason="the utility extra (jiwer) is not installed")


@pytest.fixture()
def echo():
    register("recogniser", "echo-test", EchoRecogniser)
    yield "echo-test"
    unregister("recogniser", "echo-test")


def _by_hand(texts_by_speaker, said: str) -> dict[str, float]:
    """Each speaker's errors over its reference words, jiwer aligning each utterance's words."""
    wers = {}
    for s, texts in enumerate(texts_by_speaker):
        errors = words = 0
        for text in texts:
            out = jiwer.process_words(text, said)
            errors += out.substitutions + out.deletions + out.insertions
            words += len(text.split())
        wers[f"s{s}"] = errors / words
    return wers


def test_voice_wers_are_each_speakers_errors_over_its_words(tmp_path):
    from lidframe.utility import UNREADABLE_WER, unreadable_voices, utility, voice_wers

    data = speakers_dir(tmp_path, SPEAKER_TEXTS)
    result = utility(data, recogniser=EchoRecogniser(), jobs=1)
    expected = _by_hand(SPEAKER_TEXTS, "the cat sat")
    assert voice_wers(result) == pytest.approx(expected, rel=1e-12)
    assert unreadable_voices(result) == pytest.approx({s: w for s, w in expected.items() if w > UNREADABLE_WER})
    assert list(unreadable_voices(result)) == sorted(unreadable_voices(result), key=lambda s: -expected[s])


def test_the_cli_warns_naming_the_voices_it_cannot_read(tmp_path, capsys, echo):
    data = speakers_dir(tmp_path, SPEAKER_TEXTS)
    assert main(["utility", "--data", str(data), "--recogniser", echo, "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    expected = _by_hand(SPEAKER_TEXTS, "the cat sat")
    high = {s for s, w in expected.items() if w > 0.5}
    assert high and len(high) < len(expected)  # the case is not degenerate
    (warning,) = [line for line in err.splitlines() if line.startswith("lidframe: warning:")]
    assert f"on {len(high)} of {len(expected)} voices" in warning and "if this is the plain speech" in warning
    for speaker, wer in expected.items():
        assert (f"{speaker} {100 * wer:.0f} %" in warning) == (speaker in high)
    # every voice read: no warning
    readable = speakers_dir(tmp_path / "readable", [["the cat sat"], ["the cat sat", "the cat sat"]])
    assert main(["utility", "--data", str(readable), "--recogniser", echo, "--jobs", "1"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_jobs_default_to_the_cores_and_progress_to_a_terminal(tmp_path, capsys, monkeypatch, echo):
    from lidframe.cli.main import build_parser

    args = build_parser().parse_args(["utility", "--data", "d"])
    assert args.jobs is None and args.progress is None  # chosen at run time: the CPU count, a terminal
    import lidframe.utility as package

    seen = {}
    real = package.utility

    def spy(*a, **k):
        seen["jobs"] = k["jobs"]
        return real(*a, **{**k, "jobs": 1})

    monkeypatch.setattr(package, "utility", spy)
    data = speakers_dir(tmp_path, SPEAKER_TEXTS)
    argv = ["utility", "--data", str(data), "--recogniser", echo]
    assert main(argv) == 0
    assert seen["jobs"] == (os.cpu_count() or 1)
    assert "recognising" not in capsys.readouterr().err  # not a terminal: no bar
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(argv) == 0
    assert "recognising" in capsys.readouterr().err  # a terminal: the bar
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main([*argv, "--no-progress"]) == 0
    assert "recognising" not in capsys.readouterr().err


class LoudnessRecogniser:
    """A fake recogniser that reads a loud voice ("the cat sat") and hears nothing in a quiet one."""

    sample_rate = 16000

    def describe(self):
        return "loudness"

    def transcribe(self, waveform, sample_rate):
        return "the cat sat" if float(abs(waveform).max()) > 0.05 else ""


def _quiet_copy(data, root, quiet_speakers: set[str]):
    """A reference data dir of *data*'s utterances (same ids), the audio of *quiet_speakers* at 1 % of its level."""
    import soundfile

    from tests.bad_input.audio_dirs import write_data_dir

    root.mkdir(parents=True)
    speaker_of = dict(line.split() for line in (data / "utt2spk").read_text().splitlines())
    entries = []
    for line in (data / "wav.scp").read_text().splitlines():
        utt, path = line.split(maxsplit=1)
        audio, rate = soundfile.read(path)
        scale = 0.01 if speaker_of[utt] in quiet_speakers else 1.0
        soundfile.write(root / f"{utt}.wav", audio * scale, rate)
        entries.append((utt, speaker_of[utt], root / f"{utt}.wav"))
    folder = write_data_dir(root / "data", entries)
    (folder / "text").write_text((data / "text").read_text())  # the same words: the swapped case reads it
    return folder


def test_the_warning_is_about_the_plain_references_wer_per_voice(tmp_path, capsys):
    """Issue 41: the anonymised speech is read well here; the plain reference of s1 is not, and the warning names s1."""
    texts = [["the cat sat", "the cat sat"], ["the cat sat"], ["the cat sat"]]
    data = speakers_dir(tmp_path / "anon", texts)
    reference = _quiet_copy(data, tmp_path / "plain", {"s1"})
    register("recogniser", "loudness-test", LoudnessRecogniser)
    try:
        argv = ["utility", "--data", str(data), "--reference", str(reference), "--recogniser", "loudness-test"]
        assert main([*argv, "--jobs", "1"]) == 0
    finally:
        unregister("recogniser", "loudness-test")
    out, err = capsys.readouterr()
    (warning,) = [line for line in err.splitlines() if line.startswith("lidframe: warning:")]
    # by hand: s1's one plain utterance heard as nothing, 3 deletions of 3 words; s0 and s2 read
    assert "on 1 of 3 voices of the plain reference" in warning and "s1 100 %" in warning
    assert "s0" not in warning and "s2" not in warning and "WER 0.0 %" in out
    from lidframe.utility import utility, voice_wers
    from lidframe.utility.voices import lost_voices_line, unreadable_warning

    result = utility(data, reference, recogniser=LoudnessRecogniser(), plain_wer=True)
    assert voice_wers(result, plain=True) == {"s0": 0.0, "s1": 1.0, "s2": 0.0} and voice_wers(result)["s1"] == 0.0
    assert [row.plain_errors for row in result.rows] == [0, 0, 3, 0] and lost_voices_line(result) is None
    # the other way round: read plain, lost anonymised -- what anonymisation costs, said as such, and no warning
    swapped = utility(reference, data, recogniser=LoudnessRecogniser(), plain_wer=True)
    assert unreadable_warning(swapped) is None
    assert "anonymisation loses 1 of 3 voices" in lost_voices_line(swapped) and "s1 100 %" in lost_voices_line(swapped)
    # without the plain reference recognised, the data dir's WER decides, and the warning says what it cannot tell
    fixed = utility(reference, data, recogniser=LoudnessRecogniser())
    assert "recognise the plain --reference too" in unreadable_warning(fixed)
