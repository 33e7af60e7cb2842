"""``EcapaTdnn``: the ECAPA-TDNN attacker (SpeechBrain checkpoints, cosine scoring)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .ecapa_model import VOICEPRIVACY_ECAPA, EcapaTdnnModel
from .neural import NeuralAttacker

__all__ = ["EcapaTdnn"]


class EcapaTdnn(NeuralAttacker):
    """ECAPA-TDNN speaker encoder as an attacker.

    Model options mirror SpeechBrain's ``ECAPA_TDNN``; the defaults are the VoicePrivacy
    2024 attacker's configuration (``VOICEPRIVACY_ECAPA``: 80 filterbanks, channels
    [512, 512, 512, 512, 1536], kernels [5, 3, 3, 3, 1], dilations [1, 2, 3, 4, 1],
    attention 128, 192-d embeddings).  Every other option is that of
    :class:`~lidframe.attackers.neural.NeuralAttacker` (checkpoint, device, precision,
    batching, padding, cache, enrolment).

    Examples
    --------
    >>> attacker = EcapaTdnn(checkpoint="embedding_model.ckpt", device="auto")  # doctest: +SKIP
    >>> scores = attacker.score(trials, enrolment)  # doctest: +SKIP
    """

    name = "ecapa"

    def __init__(
        self,
        *,
        input_size: int = 80,
        channels: Sequence[int] = (512, 512, 512, 512, 1536),
        kernel_sizes: Sequence[int] = (5, 3, 3, 3, 1),
        dilations: Sequence[int] = (1, 2, 3, 4, 1),
        attention_channels: int = 128,
        lin_neurons: int = 192,
        res2net_scale: int = 8,
        se_channels: int = 128,
        global_context: bool = True,
        groups: Sequence[int] = (1, 1, 1, 1, 1),
        **options: Any,
    ):
        super().__init__(**options)
        self.input_size = input_size
        self.channels = tuple(channels)
        self.kernel_sizes = tuple(kernel_sizes)
        self.dilations = tuple(dilations)
        self.attention_channels = attention_channels
        self.lin_neurons = lin_neurons
        self.res2net_scale = res2net_scale
        self.se_channels = se_channels
        self.global_context = global_context
        self.groups = tuple(groups)

    @classmethod
    def voiceprivacy(cls, **options: Any) -> EcapaTdnn:
        """The VoicePrivacy 2024 attacker's ECAPA-TDNN configuration (options override it)."""
        return cls(**{**VOICEPRIVACY_ECAPA, **options})

    def model_config(self) -> dict[str, Any]:
        """The :class:`EcapaTdnnModel` keyword arguments (JSON-ready: lists, not tuples)."""
        return {
            "input_size": self.input_size,
            "channels": list(self.channels),
            "kernel_sizes": list(self.kernel_sizes),
            "dilations": list(self.dilations),
            "attention_channels": self.attention_channels,
            "lin_neurons": self.lin_neurons,
            "res2net_scale": self.res2net_scale,
            "se_channels": self.se_channels,
            "global_context": self.global_context,
            "groups": list(self.groups),
        }

    def build_model(self) -> EcapaTdnnModel:
        """A fresh, untrained :class:`EcapaTdnnModel` of this configuration."""
        return EcapaTdnnModel(**self.model_config())
