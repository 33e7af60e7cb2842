"""Core: from scores to LID bits.

Row z-norm (:mod:`~lidframe.core.znorm`), priors (:mod:`~lidframe.core.priors`), the tiled
dense engine (:mod:`~lidframe.core.lid`), the streaming embedding engine
(:mod:`~lidframe.core.streaming`) with its fused Triton kernel (:mod:`~lidframe.core.triton_lid`),
and :func:`lidframe.evaluate` with its ``Result`` (:mod:`~lidframe.core.evaluation`).
"""
