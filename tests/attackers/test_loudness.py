"""Loudness normalisation before embedding (``loudness=-30``, as the VoicePrivacy toolkit does), issue 41.

The normalised audio is measured with pyloudnorm's own BS.1770 meter (independent of the
gain lidframe computes): speech-like audio, at any level from -45 to +5 dB, measures
-30 LUFS within 0.01 LU.  (The absolute gate at -70 LUFS is the one part of BS.1770 that
does not scale with the gain; these voices have no block near it.)
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe.errors import InputError
from tests.voices import voice, write_voice

pyloudnorm = pytest.importorskip("pyloudnorm", reason="loudness normalisation needs pyloudnorm")

RATE = 16000
TOLERANCE_LU = 0.01


@settings(max_examples=40, deadline=None)
@given(
    speaker=st.integers(0, 6),
    seconds=st.floats(0.4, 3.0),
    level_db=st.floats(-45.0, 5.0),
    target=st.sampled_from([-30.0, -23.0, -40.0]),
)
def test_normalised_audio_measures_the_target_loudness(speaker, seconds, level_db, target):
    from lidframe.attackers.loudness import normalise_loudness

    waveform = (voice(speaker, 1, seconds) * 10 ** (level_db / 20)).astype(np.float32)
    out = normalise_loudness(waveform, sample_rate=RATE, target_lufs=target, source="x.wav")
    measured = pyloudnorm.Meter(RATE).integrated_loudness(out.astype(np.float64))
    assert abs(measured - target) <= TOLERANCE_LU
    ratio = out / np.where(waveform == 0, 1, waveform)
    assert np.allclose(ratio[waveform != 0], ratio[waveform != 0][0], rtol=1e-5)  # one gain for the whole waveform
    assert out.dtype == np.float32 and out.shape == waveform.shape


def test_too_short_and_silent_audio_are_refused_in_one_line():
    from lidframe.attackers.loudness import normalise_loudness

    with pytest.raises(
        InputError, match=r"short\.wav: 0\.300 s of audio; loudness normalisation needs at least 0\.4 s"
    ):
        normalise_loudness(voice(0, 0, 0.3), sample_rate=RATE, target_lufs=-30, source="short.wav")
    with pytest.raises(InputError, match=r"quiet\.wav: silent \(every 400 ms block below the -70 LUFS gate\)"):
        normalise_loudness(np.zeros(RATE, np.float32), sample_rate=RATE, target_lufs=-30, source="quiet.wav")


@pytest.fixture(scope="module")
def small_ecapa():
    pytest.importorskip("torch")
    from lidframe.attackers import EcapaTdnn
    from tests.bad_input.audio_dirs import SMALL_ECAPA

    def make(**options):
        return EcapaTdnn(**SMALL_ECAPA, device="cpu", **options)

    return make


def test_the_attacker_reads_what_the_toolkits_procedure_makes_of_the_file(small_ecapa, tmp_path):
    """loudness=-30 reads (for embedding and training alike) what pyloudnorm.normalize.loudness, the VoicePrivacy
    toolkit's step, makes of the audio; without it the audio is read as it is."""
    import soundfile

    quiet = tmp_path / "quiet.wav"
    soundfile.write(quiet, voice(2, 0, 1.5) * 0.05, RATE, subtype="FLOAT")
    audio, _ = soundfile.read(quiet, dtype="float64")
    toolkit = pyloudnorm.normalize.loudness(audio, pyloudnorm.Meter(RATE).integrated_loudness(audio), -30.0)
    np.testing.assert_allclose(small_ecapa(loudness=-30).read_waveform(quiet), toolkit, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(small_ecapa().read_waveform(quiet), audio.astype(np.float32))


def test_the_spec_option_is_ranged_and_short_audio_is_refused_before_any_work(small_ecapa, tmp_path, capsys):
    from tests.bad_input.audio_dirs import ATTACKER, score_argv, scoring_dirs
    from tests.bad_input.conftest import assert_refused

    enrol, trials = scoring_dirs(tmp_path / "ok")
    out = tmp_path / "out"
    out.mkdir()
    assert_refused(
        score_argv(enrol, trials, out / "s.npz", attacker=ATTACKER + "&loudness=5"),
        capsys,
        expect=["loudness", "5"],
        watch=[tmp_path],
    )
    short = write_voice(tmp_path / "short.wav", 0, 3, 0.3)
    enrol, trials = scoring_dirs(tmp_path / "short", trial=short)
    assert_refused(
        score_argv(enrol, trials, out / "s.npz", attacker=ATTACKER + "&loudness=-30"),
        capsys,
        expect=[str(short), "needs at least 0.4 s"],
        watch=[tmp_path],
    )
    from lidframe.cli import main

    enrol, trials = scoring_dirs(tmp_path / "fine")
    assert main([str(a) for a in score_argv(enrol, trials, out / "s.npz", attacker=ATTACKER + "&loudness=-30")]) == 0
