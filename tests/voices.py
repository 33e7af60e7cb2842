"""Generated speech-like audio for tests: each 'speaker' is a glottal-pulse train with its
own pitch, passed through its own resonances; utterances vary in length, pitch contour
and noise.  Written as 16 kHz 16-bit WAV (or at another rate) with soundfile."""

import numpy as np
from scipy.signal import lfilter


def voice(speaker: int, utterance: int, seconds: float, rate: int = 16000) -> np.ndarray:
    rng = np.random.default_rng(1000 * speaker + utterance)
    n = int(seconds * rate)
    t = np.arange(n) / rate
    f0 = 90 + 25 * speaker + 8 * np.sin(2 * np.pi * (0.5 + 0.2 * utterance) * t)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    source = sum(np.sin(k * phase) / k for k in range(1, 30))
    out = np.zeros(n)
    for formant in (500 + 70 * speaker, 1500 + 110 * speaker, 2500 + 90 * speaker):
        # two-pole resonator
        r, theta = 0.97, 2 * np.pi * formant / rate
        out += lfilter([1.0], [1.0, -2 * r * np.cos(theta), r * r], source)
    out = out / np.max(np.abs(out)) * 0.5 + 0.01 * rng.standard_normal(n)
    return out.astype(np.float32)


def write_voice(path, speaker: int, utterance: int, seconds: float, rate: int = 16000, channels: int = 1):
    import soundfile

    audio = voice(speaker, utterance, seconds, rate)
    if channels > 1:
        audio = np.stack([audio] * channels, axis=1)
    soundfile.write(str(path), audio, rate, subtype="PCM_16")
    return path


def close_voice(speaker: int, utterance: int, seconds: float, rate: int = 16000) -> np.ndarray:
    """A harder set: speakers differ by a little (pitch +10 Hz, formants +40 Hz per speaker)
    while every utterance jitters its own pitch and formants, so a random encoder confuses them."""
    rng = np.random.default_rng(7919 * speaker + utterance)
    n = int(seconds * rate)
    t = np.arange(n) / rate
    f0 = 120 + 10 * speaker + rng.normal(0, 4) + 10 * np.sin(2 * np.pi * rng.uniform(0.3, 1.0) * t)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    source = sum(np.sin(k * phase) / k for k in range(1, 30))
    out = np.zeros(n)
    for base in (500, 1500, 2500):
        formant = base + 40 * speaker + rng.normal(0, 20)
        r, theta = 0.97, 2 * np.pi * formant / rate
        out += lfilter([1.0], [1.0, -2 * r * np.cos(theta), r * r], source)
    out = out / np.max(np.abs(out)) * 0.5 + 0.02 * rng.standard_normal(n)
    return out.astype(np.float32)


def write_close_voice(path, speaker: int, utterance: int, seconds: float, rate: int = 16000):
    import soundfile

    soundfile.write(str(path), close_voice(speaker, utterance, seconds, rate), rate, subtype="PCM_16")
    return path
