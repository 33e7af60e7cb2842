"""``EcapaTdnn``: the ECAPA-TDNN attacker (SpeechBrain checkpoints, cosine scoring)."""

from __future__ import annotations

from lidframe.attackers.ecapa_model import VOICEPRIVACY_ECAPA, EcapaTdnnModel
from lidframe.attackers.neural import NeuralAttacker

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
        input_size=80,
        channels=(512, 512, 512, 512, 1536),
        kernel_sizes=(5, 3, 3, 3, 1),
        dilations=(1, 2, 3, 4, 1),
        attention_channels=128,
        lin_neurons=192,
        res2net_scale=8,
        se_channels=128,
        global_context=True,
        groups=(1, 1, 1, 1, 1),
        **options,
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
    def voiceprivacy(cls, **options) -> EcapaTdnn:
        """The VoicePrivacy 2024 attacker's ECAPA-TDNN configuration (options override it)."""
        return cls(**{**VOICEPRIVACY_ECAPA, **options})

    def model_config(self) -> dict:
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

    def build_model(self):
        return EcapaTdnnModel(**self.model_config())
