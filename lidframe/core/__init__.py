"""Core: from scores to LID bits.

Row z-norm and z-norm-then-calibrate (:mod:`~lidframe.core.znorm`), priors
(:mod:`~lidframe.core.priors`), the engine settings record ``Engine``
(:mod:`~lidframe.core.engine`), the tiled dense engine (:mod:`~lidframe.core.lid`), the
streaming embedding engine (:mod:`~lidframe.core.streaming`) with its fused Triton kernel
(:mod:`~lidframe.core.triton_lid`), and :func:`lidframe.evaluate` /
:func:`lidframe.evaluate_fitted` with their ``Result`` (:mod:`~lidframe.core.evaluation`).
"""
