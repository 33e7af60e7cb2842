"""Metrics: numbers computed from LLRs, LIDs and ranks, with no fitting and no I/O.

PAV, EER and Cllr (:mod:`~lidframe.metrics.detection`), ZEBRA (:mod:`~lidframe.metrics.zebra`),
linkability (:mod:`~lidframe.metrics.linkability`), identification ranks, the CMC with its
chance levels and multiclass Cllr (:mod:`~lidframe.metrics.identification`), each enrolled
speaker's EER (:mod:`~lidframe.metrics.speaker_eer`), membership detection at low FPRs
(:mod:`~lidframe.metrics.membership`), LID aggregates (:mod:`~lidframe.metrics.aggregates`)
and the binary view of a score set in one pass (:mod:`~lidframe.metrics.binary_view`).
"""
