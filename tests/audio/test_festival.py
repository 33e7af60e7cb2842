"""The festival engine of the synthesized corpus (skipped where festival or its voices are missing)."""

import shutil
import subprocess
import types
from math import gcd
from pathlib import Path

import numpy as np
import pytest

from lidframe import InputError

soundfile = pytest.importorskip("soundfile")

import lidframe.audio.corpus as corpus  # noqa: E402

FESTIVAL = shutil.which("festival") is not None and shutil.which("text2wave") is not None
INSTALLED = {p.parent.parent.name for p in corpus._FESTIVAL_VOICE_ROOT.glob("*/*/festvox/*.scm")}
#: The festival voices checked on the 24 sentences and kept (docs/corpus.md), in order.
KEPT = [
    "ked_diphone",
    "czech_dita",
    "czech_krb",
    "czech_machac",
    "czech_ph",
    "suo_fi_lj_diphone",
    "hy_fi_mv_diphone",
    "upc_ca_ona_hts",
    "msu_ru_nsh_clunits",
]
#: Kept only where flite lacks the same speaker.
TWINS_OF_FLITE = {"kal_diphone", "cmu_us_slt_arctic_hts"}


def needs(*voices):
    """Skip unless festival, text2wave and every festival voice in *voices* are installed."""
    missing = [v for v in voices if v not in INSTALLED]
    what = "festival is" if not FESTIVAL else f"the festival voices {missing} are"
    return pytest.mark.skipif(
        not FESTIVAL or bool(missing),
        reason=f"{what} not installed (apt-get install festival festvox-...: docs/corpus.md)",
    )


def text2wave_16k(voice, text, tmp_path):
    """What a fresh ``text2wave`` call makes of *text*, as the corpus stores it: mono, 16 kHz, peak 0.9."""
    from scipy.signal import resample_poly

    source, raw = tmp_path / "sentence.txt", tmp_path / "text2wave.wav"
    source.write_text(text + "\n")
    subprocess.run(["text2wave", "-eval", f"(voice_{voice})", "-o", str(raw), str(source)], check=True)
    audio, rate = soundfile.read(str(raw), always_2d=True)
    audio = audio.mean(axis=1)
    if rate != 16000:
        g = gcd(rate, 16000)
        audio = resample_poly(audio, 16000 // g, rate // g)
    return 0.9 * audio / np.max(np.abs(audio))


@needs("ked_diphone")
def test_a_festival_voice_writes_16k_mono_pcm_of_what_text2wave_says(tmp_path):
    text = corpus.SENTENCES[0]  # 14 words
    voice = corpus.Voice("festival", "festival-ked_diphone", ("(voice_ked_diphone)",))
    corpus._synthesize(voice, text, tmp_path / "out.wav")
    info = soundfile.info(str(tmp_path / "out.wav"))
    assert (info.samplerate, info.channels, info.subtype, info.format) == (16000, 1, "PCM_16", "WAV")
    assert 14 / 6 < info.duration < 14 / 1.5  # between 1.5 and 6 words a second
    audio, _ = soundfile.read(str(tmp_path / "out.wav"))
    expected = text2wave_16k("ked_diphone", text, tmp_path)
    assert audio.shape == expected.shape
    np.testing.assert_allclose(audio, expected, rtol=0, atol=1.5 / 32768)  # within one step of 16-bit PCM


@pytest.mark.slow
@needs("ked_diphone", "czech_dita", "czech_krb")
def test_corpus_of_festival_voices_holds_what_one_text2wave_call_per_sentence_makes(tmp_path):
    # one festival process per voice synthesizes its sentences in a row: the Czech prosody
    # draws random numbers, so this checks that each sentence starts from a fresh state
    voices = ["festival-ked_diphone", "festival-czech_dita", "festival-czech_krb"]
    report = corpus.build_corpus(tmp_path / "c", voices=voices, sentences=3, enrol=1, jobs=2)
    assert report["engines"] == {"festival": 3} and report["synthesized"] == 9
    checked = 0
    for wav in sorted((tmp_path / "c" / "wav").glob("*/*.wav")):
        utt = wav.name.rsplit("-", 1)[0]
        text = next(
            line.split(" ", 1)[1].strip()
            for split in ("train", "dev_enrolls", "dev_trials", "eval_enrolls", "eval_trials")
            for line in (tmp_path / "c" / split / "text").read_text().splitlines()
            if line.split(" ", 1)[0] == utt
        )
        audio, rate = soundfile.read(str(wav))
        expected = text2wave_16k(wav.parent.name.removeprefix("festival-"), text, tmp_path)
        assert rate == 16000 and audio.shape == expected.shape
        np.testing.assert_allclose(audio, expected, rtol=0, atol=1.5 / 32768)
        checked += 1
    assert checked == 9
    assert corpus.build_corpus(tmp_path / "c", voices=voices, sentences=3, enrol=1)["synthesized"] == 0


@pytest.mark.skipif(not FESTIVAL, reason="festival is not installed (apt-get install festival)")
def test_a_festival_voice_that_makes_no_audio_is_refused_in_one_line_naming_it(tmp_path):
    voice = corpus.Voice("festival", "festival-nobody", ("(voice_nobody)",))
    with pytest.raises(InputError, match=r"festival failed for voice 'festival-nobody' on 1 of 1 sentences") as err:
        corpus._synthesize(voice, 'A "quoted" back\\slash.', tmp_path / "out.wav")
    assert "\n" not in str(err.value) and not (tmp_path / "out.wav").exists()


def fake_voice_folder(root: Path, names):
    for lang, name in names:
        (root / lang / name / "festvox").mkdir(parents=True)
        (root / lang / name / "festvox" / f"{name}.scm").write_text(";; a voice\n")


def test_available_voices_lists_festival_voices_from_its_voice_folder_only_where_festival_is(monkeypatch, tmp_path):
    fake_voice_folder(
        tmp_path,
        [
            ("czech", "czech_ph"),
            ("english", "kal_diphone"),
            ("english", "ked_diphone"),
            ("english", "don_diphone"),  # installed but never checked here: not used
            ("italian", "lp_diphone"),  # left out: fails on a sentence
            ("hindi", "hindi_NSK_diphone"),  # left out: no audio for English text
        ],
    )
    (tmp_path / "finnish" / "suopuhe.common").mkdir(parents=True)  # shared files, no voice
    monkeypatch.setattr(corpus, "_FESTIVAL_VOICE_ROOT", tmp_path)
    installed = {"festival"}
    monkeypatch.setattr(corpus.shutil, "which", lambda name: f"/usr/bin/{name}" if name in installed else None)
    voices = corpus.available_voices()
    assert [v.speaker for v in voices] == ["festival-ked_diphone", "festival-kal_diphone", "festival-czech_ph"]
    assert {v.engine for v in voices} == {"festival"}
    assert voices[2].args == ("(voice_czech_ph)",)
    installed.clear()  # festival itself missing: its voice folder is not enough
    assert corpus.available_voices() == []
    installed.add("festival")
    monkeypatch.setattr(corpus, "_FESTIVAL_VOICE_ROOT", tmp_path / "absent")  # no voices installed
    assert corpus.available_voices() == []


def test_festival_voices_of_a_flite_speaker_are_used_only_where_flite_lacks_that_speaker(monkeypatch, tmp_path):
    fake_voice_folder(tmp_path, [("english", "kal_diphone"), ("us", "cmu_us_slt_arctic_hts"), ("czech", "czech_ph")])
    monkeypatch.setattr(corpus, "_FESTIVAL_VOICE_ROOT", tmp_path)
    monkeypatch.setattr(
        corpus.shutil, "which", lambda name: f"/usr/bin/{name}" if name in {"festival", "flite"} else None
    )

    def fake_run(command, **kwargs):
        assert command == ["flite", "-lv"]
        return types.SimpleNamespace(stdout="Voices available: kal16 awb\n", returncode=0)

    monkeypatch.setattr(corpus.subprocess, "run", fake_run)
    ids = [v.speaker for v in corpus.available_voices()]
    # flite has kal16 (the kal diphones): festival's kal_diphone would be the same speaker twice
    assert ids == ["flite-kal16", "flite-awb", "festival-cmu_us_slt_arctic_hts", "festival-czech_ph"]


@pytest.mark.skipif(not FESTIVAL, reason="festival is not installed (apt-get install festival)")
def test_available_voices_here_are_distinct_and_festival_ones_are_installed_and_not_left_out():
    voices = corpus.available_voices()
    ids = [v.speaker for v in voices]
    assert len(ids) == len(set(ids))
    festival = [v.speaker.removeprefix("festival-") for v in voices if v.engine == "festival"]
    assert set(festival) <= INSTALLED and not set(festival) & set(corpus._FESTIVAL_LEFT_OUT)
    # the voices of docs/corpus.md's table, in its order, where installed
    assert [v for v in festival if v not in TWINS_OF_FLITE] == [v for v in KEPT if v in INSTALLED]
    engines = [v.engine for v in voices]
    assert engines[len(engines) - len(festival) :] == ["festival"] * len(festival)  # festival last


@pytest.mark.skipif(not FESTIVAL, reason="festival is not installed (apt-get install festival)")
def test_the_recipe_digest_of_a_festival_voice_carries_festivals_version():
    version = subprocess.run(["festival", "--version"], capture_output=True, text=True, check=False)
    versions = corpus._engine_versions()
    assert versions["festival"] == " ".join((version.stdout + version.stderr).split())
    voice = corpus.Voice("festival", "festival-ked_diphone", ("(voice_ked_diphone)",))
    espeak = corpus.Voice("espeak", "espeak-en-us-m1", ("-v", "en-us+m1"))
    text = corpus.SENTENCES[1]
    other = {**versions, "festival": "festival 9.9"}
    assert corpus._recipe_digest(voice, text, versions) != corpus._recipe_digest(voice, text, other)
    assert corpus._recipe_digest(espeak, text, versions) == corpus._recipe_digest(espeak, text, other)


@needs("ked_diphone")
def test_quotes_and_backslashes_reach_festival_as_text(tmp_path):
    text = 'She said "not the \\ key", and left.'
    voice = corpus.Voice("festival", "festival-ked_diphone", ("(voice_ked_diphone)",))
    corpus._synthesize(voice, text, tmp_path / "out.wav")
    audio, _ = soundfile.read(str(tmp_path / "out.wav"))
    expected = text2wave_16k("ked_diphone", text, tmp_path)
    assert audio.shape == expected.shape
    np.testing.assert_allclose(audio, expected, rtol=0, atol=1.5 / 32768)
