"""Statistics: resampling primitives the engine and the analyses share.

The bootstrap settings record ``Bootstrap`` and bootstrap confidence intervals (percentile
and BCa, trial or speaker units; :mod:`~lidframe.stats.bootstrap`), the metrics evaluated
for blocks of resamples given as trial weights (:mod:`~lidframe.stats.weighted`); the Clopper-Pearson interval of a proportion from few
trials, a speaker's PDR (:mod:`~lidframe.stats.proportion`).  Paired comparisons of
systems, which use them, are an analysis (:mod:`lidframe.analyses.compare`).
"""
