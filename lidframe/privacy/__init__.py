"""Privacy: the Gaussian speaker mechanism, its Gaussian-DP theory, and the certificate audit.

:mod:`~lidframe.privacy.mechanism` holds the mechanism and the GDP bounds;
:mod:`~lidframe.privacy.audit` measures what LID still sees under it (``lidframe dp-audit``).
"""
