"""Statistics: resampling primitives the engine and the analyses share.

The bootstrap settings record ``Bootstrap``, bootstrap confidence intervals (percentile and
BCa, trial or speaker units) and weighted metric evaluation for resamples
(:mod:`~lidframe.stats.bootstrap`); the Clopper-Pearson interval of a proportion from few
trials, a speaker's PDR (:mod:`~lidframe.stats.proportion`).  Paired comparisons of
systems, which use them, are an analysis (:mod:`lidframe.analyses.compare`).
"""
