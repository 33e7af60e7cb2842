"""torch for the neural attackers, or an import error that says what to install.

Every module of this folder that needs torch imports it from here
(``from ._torch import nn, torch``), so without torch ``import
lidframe.attackers.ecapa`` -- and with it the registry's ``ecapa`` and ``xvector``, and
the ``score``, ``train-attacker`` and ``grid`` commands -- fails with a
:class:`ModuleNotFoundError` (``name="torch"``) whose one-line message names the install
command (:data:`lidframe.attackers.TORCH_INSTALL_HINT`), not a bare ``No module named
'torch'``.  The rest of :mod:`lidframe.attackers` (``random``, ``precomputed``) does not
need torch.
"""

from __future__ import annotations

from . import TORCH_INSTALL_HINT

__all__ = ["nn", "torch"]

try:
    import torch
    from torch import nn
except ImportError as exc:
    raise ModuleNotFoundError(
        f"the neural attackers (ecapa, xvector, train-attacker) need torch, which is not installed: {TORCH_INSTALL_HINT}",
        name="torch",
    ) from exc
