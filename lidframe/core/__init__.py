"""Core: from scores to LID bits.

Row z-norm and z-norm-then-calibrate (:mod:`~lidframe.core.znorm`), priors
(:mod:`~lidframe.core.priors`), the engine settings record ``Engine``
(:mod:`~lidframe.core.engine`), the tiled dense engine (:mod:`~lidframe.core.lid`), the
streaming embedding engine (:mod:`~lidframe.core.streaming`) with its fused Triton kernel
(:mod:`~lidframe.core.triton_lid`), its dask cluster runner (:mod:`~lidframe.core.cluster`)
and its dev-side pooling (:mod:`~lidframe.core.dev_pairs`), the one dispatch over these
engines (:mod:`~lidframe.core.dispatch`), and :func:`lidframe.evaluate` /
:func:`lidframe.evaluate_fitted` with their ``Result`` (:mod:`~lidframe.core.evaluation`)
and its typed ``Summary`` (:mod:`~lidframe.core.summary`), with the records an evaluation's
numbers are read against: the CMC curve and its chance levels (:mod:`~lidframe.core.cmc`)
and the open set's membership attack at low FPRs (:mod:`~lidframe.core.membership`).
Two-covariance PLDA with LDA, the model of the embedding attackers' PLDA scoring back end,
is :mod:`~lidframe.core.plda`.
"""
