"""utility() and `lidframe utility` end to end: pocketsphinx on flite speech, a plugin recogniser, bad input."""

import importlib.util
import json
import math
import shutil
import subprocess

import numpy as np
import pytest

from lidframe import InputError
from lidframe.cli import main
from lidframe.registry import register, unregister
from lidframe.testing import ConformanceError, check_recogniser
from lidframe.utility import utility
from tests.bad_input.audio_dirs import write_data_dir
from tests.voices import write_voice

soundfile = pytest.importorskip(
    "soundfile", reason="utility reads and writes audio with soundfile: pip install -e '.[utility]'"
)
SENTENCES = [
    "please remember to water the tomatoes before you leave on thursday",
    "the engineers checked every bolt on the bridge before it reopened",
    "she walked to the station and bought a ticket for the morning train",
]
HAVE_UTILITY = all(importlib.util.find_spec(name) for name in ("pocketsphinx", "jiwer", "parselmouth"))
needs_utility = pytest.mark.skipif(
    not HAVE_UTILITY, reason="the utility extra is not installed: pip install -e '.[utility]'"
)
needs_flite = pytest.mark.skipif(shutil.which("flite") is None, reason="flite is not installed (apt-get install flite)")


class EchoRecogniser:
    """A test plugin: 'recognises' a fixed sentence (a stand-in for Whisper, a cloud API ...)."""

    sample_rate = 8000

    def __init__(self, *, words: str = "the cat sat"):
        self.words = words
        self.rates_seen = []

    def describe(self):
        return f"echo ({self.words})"

    def transcribe(self, waveform, sample_rate):
        self.rates_seen.append(sample_rate)
        return self.words


def flite_dir(root, sentences=SENTENCES, voice="slt"):
    """A Kaldi data dir of flite speech with its text."""
    wav = root / "wav"
    wav.mkdir(parents=True, exist_ok=True)
    entries = []
    for index, sentence in enumerate(sentences):
        path = wav / f"u{index}.wav"
        subprocess.run(["flite", "-voice", voice, "-t", sentence, "-o", str(path)], check=True, capture_output=True)
        entries.append((f"u{index}", "spk", path))
    folder = write_data_dir(root / "data", entries)
    (folder / "text").write_text("".join(f"u{i} {s.upper()}.\n" for i, s in enumerate(sentences)))
    return folder


def tone_dir(root, texts, rate=16000):
    wav = root / "wav"
    wav.mkdir(parents=True, exist_ok=True)
    entries = [(f"u{i}", "spk", write_voice(wav / f"u{i}.wav", 0, i, 0.6, rate=rate)) for i in range(len(texts))]
    folder = write_data_dir(root / "data", entries)
    if texts:
        (folder / "text").write_text("".join(f"u{i} {text}\n" for i, text in enumerate(texts)))
    return folder


@pytest.mark.slow
@needs_utility
@needs_flite
def test_pocketsphinx_recognises_plain_flite_speech_and_passes_its_conformance_check(tmp_path):
    data = flite_dir(tmp_path)
    result = utility(data)
    assert result.utterances == 3 and result.reference_words == sum(len(s.split()) for s in SENTENCES)
    assert result.wer <= 0.25, [(row.reference, row.hypothesis) for row in result.rows]
    # the corpus WER is the errors summed over the reference words summed, from the rows
    errors = sum(row.substitutions + row.deletions + row.insertions for row in result.rows)
    assert result.wer == errors / sum(row.reference_words for row in result.rows)
    assert result.rows[0].reference == SENTENCES[0]  # upper case and the full stop normalised away
    from lidframe.utility.pocketsphinx import PocketSphinx

    speech, rate = soundfile.read(str(data.parent / "wav" / "u0.wav"), dtype="float64")
    assert rate == 16000
    check_recogniser(PocketSphinx(), speech=speech, words=SENTENCES[0])


@needs_utility
@needs_flite
def test_rho_f0_of_plain_against_itself_is_one_and_the_cli_writes_rows(tmp_path, capsys):
    data = flite_dir(tmp_path, SENTENCES[:1])
    out_csv, out_json = tmp_path / "rows.csv", tmp_path / "utility.json"
    code = main(
        [
            "utility",
            "--data",
            str(data),
            "--reference",
            str(data),
            "--per-utterance",
            str(out_csv),
            "--json",
            str(out_json),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "WER" in printed and "rho_F0 1.000" in printed
    saved = json.loads(out_json.read_text())
    assert saved["rho_f0"] == 1.0 and saved["rows"][0]["utt_id"] == "u0"
    assert out_csv.read_text().splitlines()[0].startswith("utt_id,reference,hypothesis,substitutions")


def test_a_plugin_recogniser_through_the_registry_gets_audio_resampled_to_its_rate(tmp_path):
    pytest.importorskip("jiwer", reason="the utility extra (jiwer) is not installed")
    check_recogniser(EchoRecogniser())
    data = tone_dir(tmp_path, ["The cat sat.", "A dog ran"], rate=22050)
    register("recogniser", "echo-test", EchoRecogniser)
    try:
        result = utility(data, recogniser="echo-test?words=the cat sat")
    finally:
        unregister("recogniser", "echo-test")
    assert result.recogniser == "echo (the cat sat)" and result.resampled == 2
    assert [row.substitutions + row.deletions + row.insertions for row in result.rows] == [0, 3]
    assert result.wer == 3 / 6
    model = EchoRecogniser()
    utility(data, recogniser=model)
    assert model.rates_seen == [8000, 8000]


def test_a_recogniser_that_breaks_the_contract_fails_the_conformance_check():
    class Mute:
        def transcribe(self, waveform, sample_rate):
            return None

    with pytest.raises(ConformanceError, match="returned NoneType, expected str"):
        check_recogniser(Mute())


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("no text", "no text file; utility needs the reference transcripts"),
        ("punctuation only", "line 2: the transcript of 'u1' has no words after normalisation"),
        ("missing transcript", "no transcript of utterance 'u1'"),
        ("missing wav", "u1.wav"),
    ],
)
def test_bad_input_is_one_clean_line_and_exit_2(tmp_path, capsys, case, message):
    texts = {"no text": [], "punctuation only": ["fine words", "?!..."]}.get(case, ["fine words", "more words"])
    data = tone_dir(tmp_path, texts or ["x", "y"])
    if case == "no text":
        (data / "text").unlink()
    if case == "missing transcript":
        (data / "text").write_text("u0 fine words\n")
    if case == "missing wav":
        (tmp_path / "wav" / "u1.wav").unlink()
    code = main(["utility", "--data", str(data), "--recogniser", "pocketsphinx"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_reference_without_the_utterance_is_refused(tmp_path):
    data = tone_dir(tmp_path / "a", ["one", "two"])
    reference = tone_dir(tmp_path / "b", ["one"])
    (reference / "wav.scp").write_text((reference / "wav.scp").read_text().splitlines()[0] + "\n")
    (reference / "utt2spk").write_text("u0 spk\n")
    with pytest.raises(InputError, match="no utterance 'u1'"):
        utility(data, reference, recogniser=EchoRecogniser())


def test_rho_f0_is_nan_for_unvoiced_audio_and_stated(tmp_path):
    pytest.importorskip("parselmouth", reason="the utility extra (praat-parselmouth) is not installed")
    pytest.importorskip("jiwer", reason="the utility extra (jiwer) is not installed")
    data = tone_dir(tmp_path, ["one"])
    soundfile.write(str(tmp_path / "wav" / "u0.wav"), np.zeros(8000), 16000, subtype="PCM_16")
    result = utility(data, data, recogniser=EchoRecogniser())
    assert math.isnan(result.rows[0].rho_f0) and "voiced in both" in result.rows[0].rho_f0_note
    assert math.isnan(result.rho_f0) and result.rho_f0_utterances == 0


def speakers_dir(root, texts_by_speaker, rate=16000):
    """A data dir of tones, several utterances per speaker, with its text."""
    wav = root / "wav"
    wav.mkdir(parents=True, exist_ok=True)
    entries, lines = [], []
    for s, texts in enumerate(texts_by_speaker):
        for k, text in enumerate(texts):
            utt = f"s{s}-u{k}"
            entries.append((utt, f"s{s}", write_voice(wav / f"{utt}.wav", s, k, 0.6, rate=rate)))
            lines.append(f"{utt} {text}\n")
    folder = write_data_dir(root / "data", entries)
    (folder / "text").write_text("".join(lines))
    return folder


SPEAKER_TEXTS = [["the cat sat", "a dog"], ["the cat", "the cat sat on the mat"], ["cat sat the"], ["the cat sat"]]


def test_wer_intervals_resample_speakers_and_jobs_change_nothing(tmp_path):
    pytest.importorskip("jiwer", reason="the utility extra (jiwer) is not installed")
    from lidframe.stats.bootstrap import Bootstrap

    data = speakers_dir(tmp_path, SPEAKER_TEXTS)
    boot = Bootstrap(n_boot=300, method="percentile", seed=3)
    one = utility(data, recogniser=EchoRecogniser(), bootstrap=boot)
    two = utility(data, recogniser=EchoRecogniser(), bootstrap=boot, jobs=2)
    assert one.to_dict() == two.to_dict()
    from lidframe.runtime.workers import process_pool

    with process_pool(2) as pool:  # one pool shared by two calls, as the demo shares it across systems
        shared = [utility(data, recogniser=EchoRecogniser(), bootstrap=boot, jobs=2, executor=pool) for _ in range(2)]
    assert shared[0].to_dict() == shared[1].to_dict() == one.to_dict()
    assert (
        one.speakers == 4 and one.bootstrap == boot.held_fixed().to_dict()
    )  # no calibrator: the speech only (issue 41)
    # the interval by hand: speakers drawn with one multinomial call, each resample's errors over its words
    errors = {}
    for row in one.rows:
        spk = row.utt_id.split("-")[0]
        e, w = errors.get(spk, (0, 0))
        errors[spk] = (e + row.substitutions + row.deletions + row.insertions, w + row.reference_words)
    e = np.array([errors[s][0] for s in sorted(errors)], dtype=float)
    w = np.array([errors[s][1] for s in sorted(errors)], dtype=float)
    counts = np.random.default_rng(3).multinomial(4, [0.25] * 4, size=300)
    low, high = np.quantile((counts @ e) / (counts @ w), [0.025, 0.975])
    interval = one.intervals["wer"]
    assert interval.estimate == one.wer == e.sum() / w.sum()
    assert (interval.low, interval.high) == pytest.approx((low, high), rel=1e-12)
    assert "rho_f0" not in one.intervals  # no reference, no rho_F0


def test_a_bootstrap_that_cannot_resample_is_refused_before_any_utterance_is_recognised(tmp_path):
    from lidframe.stats.bootstrap import Bootstrap

    data = speakers_dir(tmp_path, [["the cat sat", "a dog", "the mat"]])  # one speaker: nothing to resample
    heard = EchoRecogniser()
    with pytest.raises(
        InputError, match=r"^utility intervals: bootstrap over speakers needs at least two of them, got 1$"
    ):
        utility(data, recogniser=heard, bootstrap=Bootstrap(n_boot=100))
    with pytest.raises(InputError, match=r"^utility intervals: bootstrap must be a Bootstrap record, got dict$"):
        utility(data, recogniser=heard, bootstrap={"n_boot": 100})
    assert heard.rates_seen == []  # refused before the recogniser heard anything
    # resampling the three utterances instead is fine
    assert utility(data, recogniser=heard, bootstrap=Bootstrap(n_boot=100, unit="trial")).intervals["wer"]


def test_the_json_reads_back_as_the_record(tmp_path, capsys):
    pytest.importorskip("jiwer", reason="the utility extra (jiwer) is not installed")
    from lidframe.stats.bootstrap import Bootstrap
    from lidframe.utility import read_utility

    data = speakers_dir(tmp_path, SPEAKER_TEXTS)
    result = utility(data, recogniser=EchoRecogniser(), bootstrap=Bootstrap(n_boot=100))
    path = tmp_path / "u.json"
    path.write_text(json.dumps(result.to_dict()))
    again = read_utility(path)
    assert again.to_dict() == result.to_dict()
    assert again.intervals["wer"] == result.intervals["wer"]
    record = result.to_dict()
    del record["wer"]
    path.write_text(json.dumps(record))
    with pytest.raises(InputError, match=r"u\.json: no key 'wer'"):
        read_utility(path)
    record = result.to_dict() | {"utterances": "many"}
    path.write_text(json.dumps(record))
    with pytest.raises(InputError, match=r"key 'utterances' must be an integer"):
        read_utility(path)
    path.write_text("{not json")
    with pytest.raises(InputError, match=r"u\.json: not JSON \(line 1, column 2: .*\); expected a utility file"):
        read_utility(path)
    with pytest.raises(InputError, match="no such file"):
        read_utility(tmp_path / "absent.json")


class _Unpicklable(EchoRecogniser):
    def __init__(self):
        super().__init__()
        self.lock = __import__("threading").Lock()


def test_a_recogniser_that_cannot_go_to_workers_is_refused_for_jobs_above_one(tmp_path):
    pytest.importorskip("jiwer", reason="the utility extra (jiwer) is not installed")
    data = speakers_dir(tmp_path, SPEAKER_TEXTS)
    with pytest.raises(InputError, match=r"cannot be sent to worker processes .*use jobs=1"):
        utility(data, recogniser=_Unpicklable(), jobs=2)
    assert utility(data, recogniser=_Unpicklable(), jobs=1).utterances == 6


def test_the_cli_prints_intervals_with_bootstrap(tmp_path, capsys):
    pytest.importorskip("jiwer", reason="the utility extra (jiwer) is not installed")
    data = speakers_dir(tmp_path, SPEAKER_TEXTS)
    register("recogniser", "echo-test", EchoRecogniser)
    try:
        code = main(["utility", "--data", str(data), "--recogniser", "echo-test", "--bootstrap", "--n-boot", "200"])
        assert code == 0
        out = capsys.readouterr().out
        assert "of 4 speakers" in out and "% [" in out and "bootstrap, 200 resamples of speakers" in out
        code = main(["utility", "--data", str(data), "--recogniser", "echo-test", "--jobs", "0"])
        err = capsys.readouterr().err
        assert code == 2 and "--jobs" in err and len(err.strip().splitlines()) == 1
    finally:
        unregister("recogniser", "echo-test")


@pytest.mark.slow  # about 35 s: five decoders loaded, anonymised speech decoded twice
@needs_utility
@needs_flite
def test_pocketsphinx_hears_each_utterance_as_a_fresh_decoder_does_whatever_came_before(tmp_path):
    """A decoder carries its front end's running estimates from one utterance to the next, so a reused one
    heard an utterance differently after other audio (on anonymised speech: some of these five hypotheses), and the
    WER depended on the order and on how utterances were shared among --jobs workers.  Each utterance must be
    heard as a decoder loaded for it alone hears it (pocketsphinx's own Decoder, one per utterance)."""
    from pocketsphinx import Decoder

    from lidframe.audio.anonymise import mcadams, pitch_shift
    from lidframe.utility.pocketsphinx import PocketSphinx

    data = flite_dir(tmp_path, SENTENCES[:2])
    plain = [soundfile.read(str(data.parent / "wav" / f"u{i}.wav"), dtype="float64")[0] for i in range(2)]
    speech = [plain[0], *(mcadams(x, 0.6) for x in plain), *(pitch_shift(x, 0.8) for x in plain)]

    def alone(waveform):
        decoder = Decoder(samprate=16000, loglevel="FATAL")
        decoder.start_utt()
        decoder.process_raw((np.clip(waveform, -1, 1) * 32767).round().astype("<i2").tobytes(), full_utt=True)
        decoder.end_utt()
        hypothesis = decoder.hyp()
        return "" if hypothesis is None else hypothesis.hypstr

    expected = [alone(x) for x in speech]
    assert [PocketSphinx().transcribe(x, 16000) for x in speech] == expected
