"""Analyses: questions asked of many evaluations.

Calibrator sensitivity (:mod:`~lidframe.analyses.sensitivity`), LID against the number of
enrolled speakers (:mod:`~lidframe.analyses.nsweep`), the k-utterance longitudinal attacker
(:mod:`~lidframe.analyses.longitudinal`) and paired comparisons of systems
(:mod:`~lidframe.analyses.compare`).
"""
