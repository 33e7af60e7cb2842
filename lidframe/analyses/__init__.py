"""Analyses: questions asked of many evaluations.

Calibrator sensitivity (:mod:`~lidframe.analyses.sensitivity`), LID against the number of
enrolled speakers (:mod:`~lidframe.analyses.nsweep`), the k-utterance longitudinal attacker
(:mod:`~lidframe.analyses.longitudinal`), paired comparisons of systems
(:mod:`~lidframe.analyses.compare`) and the disclosure per enrolled speaker
(:mod:`~lidframe.analyses.per_speaker`, re-exported here and at the top level; each
speaker's EER from :mod:`~lidframe.analyses.speaker_eer`).  Each
returns a frozen ``...Result`` record whose ``rows`` are typed row records
(:class:`~lidframe.data.records.RowRecord`: ``row.alid``, or ``row["alid"]``).
"""

from lidframe.analyses.per_speaker import PerSpeakerResult, per_speaker

__all__ = ["per_speaker", "PerSpeakerResult"]
