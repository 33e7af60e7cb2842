"""ρ_F0: closed forms on synthetic contours and on harmonic signals with a known F0 track."""

import importlib.util
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe.utility.pitch import MIN_COMMON_VOICED, f0_contour, rho_f0

RATE = 16000


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(5, 200), st.floats(0.1, 10.0), st.floats(-500, 500), st.floats(0.0, 0.6))
def test_rho_is_pearson_over_frames_voiced_in_both(seed, frames, scale, offset, unvoiced_share):
    rng = np.random.default_rng(seed)
    a = rng.uniform(80, 300, frames)
    b = np.abs(scale * a + offset) + rng.uniform(0, 5, frames)  # positive: voiced
    a[rng.random(frames) < unvoiced_share] = 0.0
    b[rng.random(frames) < unvoiced_share] = 0.0
    both = (a > 0) & (b > 0)
    rho, note = rho_f0(a, b)
    if both.sum() < MIN_COMMON_VOICED or np.ptp(a[both]) == 0 or np.ptp(b[both]) == 0:
        assert math.isnan(rho) and note
    else:
        assert note is None
        assert rho == pytest.approx(np.corrcoef(a[both], b[both])[0, 1], abs=1e-12)
        # a contour against itself, and against itself times a constant ratio: exactly 1
        assert rho_f0(a, a)[0] == pytest.approx(1.0, abs=1e-12)
        assert rho_f0(a, 1.3 * a)[0] == pytest.approx(1.0, abs=1e-12)


def test_rho_of_sinusoidal_contours_is_the_cosine_of_their_phase_difference():
    # over whole periods, corr(sin t, sin(t + phi)) = cos phi
    t = np.arange(400) / 100.0  # 4 s of 10 ms frames: 8 periods of 2 Hz
    for phi in (0.0, 0.5, math.pi / 2, 2.0, math.pi):
        a = 150 + 30 * np.sin(2 * np.pi * 2 * t)
        b = 220 + 10 * np.sin(2 * np.pi * 2 * t + phi)
        assert rho_f0(a, b)[0] == pytest.approx(math.cos(phi), abs=1e-9)


def harmonic(f0_track, rate=RATE):
    """A harmonic signal (8 partials) following the F0 track (Hz per sample)."""
    phase = 2 * np.pi * np.cumsum(f0_track) / rate
    return 0.3 * sum(np.sin(k * phase) / k for k in range(1, 9))


needs_parselmouth = pytest.mark.skipif(
    importlib.util.find_spec("parselmouth") is None, reason="the utility extra (praat-parselmouth) is not installed"
)


@needs_parselmouth
def test_the_tracker_follows_a_known_f0_track():
    t = np.arange(2 * RATE) / RATE
    track = 140 + 25 * np.sin(2 * np.pi * 1.5 * t)
    contour = f0_contour(harmonic(track), RATE)
    frame_times = 0.01 * np.arange(contour.size) + (t[-1] - 0.01 * (contour.size - 1)) / 2  # Praat centres its frames
    voiced = contour > 0
    assert voiced.mean() > 0.9
    want = np.interp(frame_times[voiced], t, track)
    assert np.median(np.abs(contour[voiced] - want)) < 2.0  # Hz


@needs_parselmouth
def test_rho_of_real_signals_self_shifted_and_unrelated():
    t = np.arange(3 * RATE) / RATE
    track = 130 + 30 * np.sin(2 * np.pi * 0.8 * t)
    x = harmonic(track)
    original = f0_contour(x, RATE)
    assert rho_f0(original, original)[0] == 1.0
    shifted = f0_contour(harmonic(1.25 * track), RATE)  # the contour's shape survives a constant ratio
    assert rho_f0(original, shifted)[0] > 0.98
    rng = np.random.default_rng(0)
    steps = np.repeat(rng.uniform(100, 200, 30), t.size // 30 + 1)[: t.size]  # an unrelated stepped contour
    unrelated = f0_contour(harmonic(steps), RATE)
    assert abs(rho_f0(original, unrelated)[0]) < 0.3


@needs_parselmouth
def test_too_short_or_unvoiced_gives_no_rho_with_the_reason():
    assert f0_contour(np.zeros(100), RATE).size == 0
    rho, note = rho_f0(np.zeros(0), np.zeros(0))
    assert math.isnan(rho) and "0 frames voiced in both" in note
    rho, note = rho_f0(np.full(10, 120.0), np.linspace(100, 200, 10))
    assert math.isnan(rho) and "constant" in note
