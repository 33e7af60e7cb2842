"""The built-in recogniser: CMU PocketSphinx with the US-English model its wheel ships.

``pocketsphinx`` (5.x) carries an acoustic model, a language model and a pronouncing
dictionary (29 MB) inside its wheel, so it recognises speech with nothing downloaded: it
is a small 2010s HMM recogniser, far from Whisper, and it holds for voices close to real
speech (flite's and festival's voices built from recordings; espeak-ng's formant voices
defeat it).  Use it for a relative measure -- the same recogniser on plain and
anonymised speech -- or plug in your own (docs/utility.md).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from lidframe.errors import InputError

__all__ = ["PocketSphinx", "POCKETSPHINX_HINT"]

POCKETSPHINX_HINT = (
    "the pocketsphinx recogniser needs pocketsphinx: pip install -e '.[utility]' (or pip install pocketsphinx)"
)

#: This process's decoders, one per model (sample rate; hmm, lm, dictionary as absolute paths), each with the
#: lock that lets one utterance through at a time: loading one takes seconds, so every PocketSphinx of the same
#: model in a process -- the copies a worker process receives, one per share of utterances and per data dir --
#: decodes with the same one.
_DECODERS: dict[tuple[int, str | None, str | None, str | None], tuple[Any, threading.Lock]] = {}
_DECODERS_LOCK = threading.Lock()


class PocketSphinx:
    """PocketSphinx (US English, the wheel's model) as a lidframe recogniser.

    Parameters
    ----------
    hmm, lm, dictionary : str, optional
        Paths of another acoustic model folder, language model and dictionary (default:
        the US-English ones inside the installed wheel).

    Attributes
    ----------
    sample_rate : int
        16000: lidframe resamples other rates to it before :meth:`transcribe`.
    """

    sample_rate = 16000

    def __init__(self, *, hmm: str | None = None, lm: str | None = None, dictionary: str | None = None) -> None:
        self.hmm = hmm
        self.lm = lm
        self.dictionary = dictionary

    def describe(self) -> str:
        """Name and settings, for tables."""
        custom = [
            f"{key}={value}" for key, value in (("hmm", self.hmm), ("lm", self.lm), ("dict", self.dictionary)) if value
        ]
        return "pocketsphinx" + (f" ({', '.join(custom)})" if custom else " (en-us, the wheel's model)")

    def _decoder_once(self) -> tuple[Any, threading.Lock]:
        """This process's decoder of this model and its lock (:data:`_DECODERS`), loaded on first use."""
        hmm, lm, dictionary = (
            None if path is None else os.path.abspath(path) for path in (self.hmm, self.lm, self.dictionary)
        )
        paths = (hmm, lm, dictionary)
        key = (int(self.sample_rate), hmm, lm, dictionary)
        with _DECODERS_LOCK:
            if key not in _DECODERS:
                try:
                    from pocketsphinx import Decoder
                except ImportError:
                    raise InputError(POCKETSPHINX_HINT) from None
                options: dict[str, Any] = {"samprate": self.sample_rate, "loglevel": "FATAL"}
                for name, value in zip(("hmm", "lm", "dict"), paths):
                    if value:
                        options[name] = value
                _DECODERS[key] = (Decoder(**options), threading.Lock())
            return _DECODERS[key]

    def transcribe(self, waveform: np.ndarray, sample_rate: int) -> str:
        """The words PocketSphinx hears in *waveform*.

        Parameters
        ----------
        waveform : ndarray of float, shape (n,)
            Mono samples in [-1, 1] (clipped to it), at *sample_rate*.
        sample_rate : int
            Must be :attr:`sample_rate` (lidframe resamples before calling).

        Returns
        -------
        str
            The hypothesis ("" when nothing is recognised).
        """
        if sample_rate != self.sample_rate:
            raise InputError(f"pocketsphinx transcribes {self.sample_rate} Hz audio, got {sample_rate} Hz")
        pcm = (np.clip(np.asarray(waveform, dtype=np.float64), -1.0, 1.0) * 32767.0).round().astype("<i2")
        decoder, lock = self._decoder_once()
        with lock:  # one decoder, one utterance at a time
            # the front end keeps running estimates (cepstral mean, noise floor) from the utterances before:
            # reset, each utterance is heard as a decoder loaded for it alone hears it, whatever the order
            decoder.reinit_feat()
            decoder.start_utt()
            decoder.process_raw(pcm.tobytes(), full_utt=True)
            decoder.end_utt()
            hypothesis = decoder.hyp()
        return "" if hypothesis is None else str(hypothesis.hypstr)
