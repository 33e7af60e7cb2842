"""Metrics: numbers computed from LLRs, LIDs and ranks, with no fitting and no I/O.

PAV, EER and Cllr (:mod:`~lidframe.metrics.detection`), ZEBRA (:mod:`~lidframe.metrics.zebra`),
linkability (:mod:`~lidframe.metrics.linkability`), identification ranks and multiclass Cllr
(:mod:`~lidframe.metrics.identification`), LID aggregates (:mod:`~lidframe.metrics.aggregates`)
and the binary view of a score set in one pass (:mod:`~lidframe.metrics.binary_view`).
"""
