"""Audio: a synthesized multi-speaker corpus and signal-processing anonymisers.

Corpus synthesis with the speech engines on the machine (:mod:`~lidframe.audio.corpus`) and
McAdams, pitch-shift and resampling anonymisers over Kaldi data directories
(:mod:`~lidframe.audio.anonymise`).
"""
