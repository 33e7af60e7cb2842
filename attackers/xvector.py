"""``XVector``: the x-vector attacker (SpeechBrain checkpoints, cosine scoring)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from lidframe.registry.capabilities import range_checked
from lidframe.registry.ranges import Range

from .base import WIDTH, WIDTHS
from .neural import NeuralAttacker
from .xvector_model import XvectorModel, check_xvector_config

__all__ = ["XVector"]


class XVector(NeuralAttacker):
    """x-vector speaker encoder as an attacker.

    Model options mirror SpeechBrain's ``Xvector`` (``in_channels`` defaults to 80 here,
    the filterbank size of lidframe's front end, and the only one it takes).  Other
    options: see :class:`~lidframe.attackers.neural.NeuralAttacker`.  The options' ranges
    are ``option_ranges``: widths in [1, 8192], kernel sizes and dilations in [1, 64],
    ``tdnn_blocks`` in [1, 64] and at most the length of each list
    (:func:`~lidframe.attackers.xvector_model.check_xvector_config`).
    """

    name = "xvector"
    option_ranges: ClassVar[Mapping[str, Range]] = {
        **NeuralAttacker.option_ranges,
        "in_channels": Range(80, 80, integer=True),  # the front end's 80 filterbanks (:class:`~.frontend.Fbank`)
        "tdnn_blocks": Range(1, 64, integer=True),
        "tdnn_channels": WIDTHS,
        "tdnn_kernel_sizes": Range(1, 64, integer=True, sequence=True),
        "tdnn_dilations": Range(1, 64, integer=True, sequence=True),
        "lin_neurons": WIDTH,
    }

    @range_checked("attacker")
    def __init__(
        self,
        *,
        in_channels: int = 80,
        tdnn_blocks: int = 5,
        tdnn_channels: Sequence[int] = (512, 512, 512, 512, 1500),
        tdnn_kernel_sizes: Sequence[int] = (5, 3, 3, 1, 1),
        tdnn_dilations: Sequence[int] = (1, 2, 3, 1, 1),
        lin_neurons: int = 512,
        **options: Any,
    ):
        check_xvector_config(
            tdnn_blocks, tdnn_channels, tdnn_kernel_sizes, tdnn_dilations, label=f"attacker {self.name!r}"
        )
        super().__init__(**options)
        self.in_channels = in_channels
        self.tdnn_blocks = tdnn_blocks
        self.tdnn_channels = tuple(tdnn_channels)
        self.tdnn_kernel_sizes = tuple(tdnn_kernel_sizes)
        self.tdnn_dilations = tuple(tdnn_dilations)
        self.lin_neurons = lin_neurons

    def model_config(self) -> dict[str, Any]:
        """The :class:`XvectorModel` keyword arguments (JSON-ready: lists, not tuples)."""
        return {
            "in_channels": self.in_channels,
            "tdnn_blocks": self.tdnn_blocks,
            "tdnn_channels": list(self.tdnn_channels),
            "tdnn_kernel_sizes": list(self.tdnn_kernel_sizes),
            "tdnn_dilations": list(self.tdnn_dilations),
            "lin_neurons": self.lin_neurons,
        }

    def build_model(self) -> XvectorModel:
        """A fresh, untrained :class:`XvectorModel` of this configuration."""
        return XvectorModel(**self.model_config())
