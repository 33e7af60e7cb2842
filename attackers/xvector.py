"""``XVector``: the x-vector attacker (SpeechBrain checkpoints, cosine scoring)."""

from __future__ import annotations

from lidframe.attackers.neural import NeuralAttacker
from lidframe.attackers.xvector_model import XvectorModel

__all__ = ["XVector"]


class XVector(NeuralAttacker):
    """x-vector speaker encoder as an attacker.

    Model options mirror SpeechBrain's ``Xvector`` (``in_channels`` defaults to 80 here,
    the filterbank size of lidframe's front end).  Other options: see
    :class:`~lidframe.attackers.neural.NeuralAttacker`.
    """

    name = "xvector"

    def __init__(
        self,
        *,
        in_channels=80,
        tdnn_blocks=5,
        tdnn_channels=(512, 512, 512, 512, 1500),
        tdnn_kernel_sizes=(5, 3, 3, 1, 1),
        tdnn_dilations=(1, 2, 3, 1, 1),
        lin_neurons=512,
        **options,
    ):
        super().__init__(**options)
        self.in_channels = in_channels
        self.tdnn_blocks = tdnn_blocks
        self.tdnn_channels = tuple(tdnn_channels)
        self.tdnn_kernel_sizes = tuple(tdnn_kernel_sizes)
        self.tdnn_dilations = tuple(tdnn_dilations)
        self.lin_neurons = lin_neurons

    def model_config(self) -> dict:
        return {
            "in_channels": self.in_channels,
            "tdnn_blocks": self.tdnn_blocks,
            "tdnn_channels": list(self.tdnn_channels),
            "tdnn_kernel_sizes": list(self.tdnn_kernel_sizes),
            "tdnn_dilations": list(self.tdnn_dilations),
            "lin_neurons": self.lin_neurons,
        }

    def build_model(self):
        return XvectorModel(**self.model_config())
