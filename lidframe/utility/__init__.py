"""Utility beside privacy: what anonymisation costs the speech (word error rate, ρ_F0).

:func:`utility` measures a Kaldi data dir with a recogniser (the fourth component kind,
``"recogniser"``, on the registry of attackers, calibrators and priors; built-in:
``pocketsphinx``) and, given the original data dir, the F0 correlation ρ_F0.
docs/utility.md is the guide.
"""

from lidframe.utility.evaluate import Utility, UtteranceUtility, utility
from lidframe.utility.reading import read_utility
from lidframe.utility.text import NORMALISATION, normalise_transcript
from lidframe.utility.voices import UNREADABLE_WER, unreadable_voices, voice_wers
from lidframe.utility.wer import WordErrors, word_errors

__all__ = [
    "utility",
    "read_utility",
    "Utility",
    "UtteranceUtility",
    "WordErrors",
    "word_errors",
    "normalise_transcript",
    "NORMALISATION",
    "voice_wers",
    "unreadable_voices",
    "UNREADABLE_WER",
]
