"""Statistics: resampling primitives the engine and the analyses share.

Bootstrap confidence intervals (percentile and BCa, trial or speaker units) and weighted
metric evaluation for resamples (:mod:`~lidframe.stats.bootstrap`).
"""
