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
