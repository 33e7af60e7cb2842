"""``EcapaTdnn``: the ECAPA-TDNN attacker (SpeechBrain checkpoints, cosine scoring)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from lidframe.registry.capabilities import range_checked
from lidframe.registry.ranges import Range

from .base import WIDTH, WIDTHS
from .ecapa_model import VOICEPRIVACY_ECAPA, EcapaTdnnModel, check_ecapa_config
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

    The options' ranges are ``option_ranges``: ``input_size`` is 80 (the front end's
    filterbanks), widths in [1, 8192], kernel sizes and dilations in [1, 64],
    ``res2net_scale`` in [1, 64]; and the lists must fit together
    (:func:`~lidframe.attackers.ecapa_model.check_ecapa_config`).

    Examples
    --------
    >>> attacker = EcapaTdnn(checkpoint="embedding_model.ckpt", device="auto")  # doctest: +SKIP
    >>> scores = attacker.score(trials, enrolment)  # doctest: +SKIP
    """

    name = "ecapa"
    option_ranges: ClassVar[Mapping[str, Range]] = {
        **NeuralAttacker.option_ranges,
        "input_size": Range(80, 80, integer=True),  # the front end's 80 filterbanks (:class:`~.frontend.Fbank`)
        "channels": WIDTHS,
        "kernel_sizes": Range(1, 64, integer=True, sequence=True),
        "dilations": Range(1, 64, integer=True, sequence=True),
        "attention_channels": WIDTH,
        "lin_neurons": WIDTH,
        "res2net_scale": Range(1, 64, integer=True),
        "se_channels": WIDTH,
        "groups": WIDTHS,
    }

    @range_checked("attacker")
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
        check_ecapa_config(channels, kernel_sizes, dilations, groups, res2net_scale, label=f"attacker {self.name!r}")
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
