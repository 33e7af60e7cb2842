"""ECAPA-TDNN speaker encoder (Desplanques et al., 2020) in plain torch, SpeechBrain-compatible.

The module tree and parameter names follow SpeechBrain's ``ECAPA_TDNN`` (1.x), so an
``embedding_model.ckpt`` it trained loads with ``load_state_dict(..., strict=True)``:

======================  ==========================================================
``blocks.0``            TDNN block (conv, activation, batch norm) on the filterbanks
``blocks.1 .. n-2``     SE-Res2Net blocks (1x1 TDNN, Res2Net of dilated TDNNs, 1x1 TDNN,
                        squeeze-excitation, residual)
``mfa``                 multi-layer feature aggregation: TDNN over the concatenated
                        outputs of the SE-Res2Net blocks
``asp``, ``asp_bn``     attentive statistics pooling (with global context), batch norm
``fc``                  1x1 convolution to the embedding (``lin_neurons``)
======================  ==========================================================

Input (B, T, n_mels) mean-normalised filterbanks, output (B, 1, lin_neurons), as in
SpeechBrain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lidframe.errors import InputError

from ._torch import nn, torch
from .layers import BatchNorm1d, Conv1d, Lengths, masked_mean

__all__ = ["EcapaTdnnModel", "VOICEPRIVACY_ECAPA", "check_ecapa_config"]

#: The VoicePrivacy 2024 attacker's ECAPA-TDNN configuration (SpeechBrain hparams).
VOICEPRIVACY_ECAPA = {
    "input_size": 80,
    "channels": [512, 512, 512, 512, 1536],
    "kernel_sizes": [5, 3, 3, 3, 1],
    "dilations": [1, 2, 3, 4, 1],
    "attention_channels": 128,
    "lin_neurons": 192,
}


def check_ecapa_config(
    channels: Sequence[int],
    kernel_sizes: Sequence[int],
    dilations: Sequence[int],
    groups: Sequence[int],
    res2net_scale: int,
    *,
    input_size: int = 80,
    label: str = "ECAPA-TDNN",
) -> None:
    """Check that ECAPA-TDNN's lists fit together (each value already in its range); one InputError line if not.

    Block 0 is a TDNN block on the *input_size* features, blocks 1 .. n-2 SE-Res2Net
    blocks, block n-1 the aggregation (module docstring).  The rules: the four lists have
    the same length n >= 3; each (kernel size - 1) x dilation is even (a convolution that
    keeps the number of frames, which the residual connections add up); each SE-Res2Net
    block's channels divide by ``res2net_scale``; each block's input and output channels
    divide by its ``groups``.
    """
    lengths = {len(channels), len(kernel_sizes), len(dilations), len(groups)}
    if len(lengths) > 1 or len(channels) < 3:
        raise InputError(
            f"{label}: channels, kernel_sizes, dilations and groups must have the same length, at least 3 "
            f"(a first block, SE-Res2Net blocks, the aggregation), got {len(channels)}, {len(kernel_sizes)}, "
            f"{len(dilations)} and {len(groups)}"
        )
    for i, (kernel, dilation) in enumerate(zip(kernel_sizes, dilations)):
        if (kernel - 1) * dilation % 2:
            raise InputError(
                f"{label}: block {i} has kernel size {kernel} and dilation {dilation}; (kernel size - 1) x dilation "
                "must be even, so that the block keeps the number of frames"
            )
    for i in range(1, len(channels) - 1):
        if channels[i] % res2net_scale:
            raise InputError(f"{label}: channels[{i}] = {channels[i]} must divide by res2net_scale = {res2net_scale}")
    inputs = [input_size, *channels[:-2], channels[-2] * (len(channels) - 2)]
    for i, (n_in, n_out, n_groups) in enumerate(zip(inputs, channels, groups)):
        if n_in % n_groups or n_out % n_groups:
            raise InputError(
                f"{label}: block {i} has {n_in} input and {n_out} output channels, which must both divide by "
                f"groups[{i}] = {n_groups}"
            )


class TDNNBlock(nn.Module):
    """conv -> activation -> batch norm."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        dilation: int,
        activation: Callable[[], nn.Module] = nn.ReLU,
        groups: int = 1,
    ):
        super().__init__()
        self.conv = Conv1d(in_channels, out_channels, kernel_size, dilation=dilation, groups=groups)
        self.activation = activation()
        self.norm = BatchNorm1d(out_channels)

    def forward(self, x: torch.Tensor, lengths: Lengths | None = None) -> torch.Tensor:
        return self.norm(self.activation(self.conv(x, lengths)))


class Res2NetBlock(nn.Module):
    """Split channels into ``scale`` groups; group i > 0 is convolved after adding group i-1's output."""

    def __init__(self, in_channels: int, out_channels: int, scale: int = 8, kernel_size: int = 3, dilation: int = 1):
        super().__init__()
        if in_channels % scale or out_channels % scale:
            raise InputError(f"channels ({in_channels}, {out_channels}) must be divisible by res2net_scale={scale}")
        self.scale = scale
        self.blocks = nn.ModuleList(
            TDNNBlock(in_channels // scale, out_channels // scale, kernel_size, dilation) for _ in range(scale - 1)
        )

    def forward(self, x: torch.Tensor, lengths: Lengths | None = None) -> torch.Tensor:
        outputs: list[torch.Tensor] = []
        for i, part in enumerate(torch.chunk(x, self.scale, dim=1)):
            if i == 0:
                current = part
            elif i == 1:
                current = self.blocks[0](part, lengths)
            else:  # add the previous group's output
                current = self.blocks[i - 1](part + outputs[-1], lengths)
            outputs.append(current)
        return torch.cat(outputs, dim=1)


class SEBlock(nn.Module):
    """Squeeze-excitation: channel gates from the (masked) time average."""

    def __init__(self, in_channels: int, se_channels: int, out_channels: int):
        super().__init__()
        self.conv1 = Conv1d(in_channels, se_channels, 1)
        self.relu = nn.ReLU()
        self.conv2 = Conv1d(se_channels, out_channels, 1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x: torch.Tensor, lengths: Lengths | None = None) -> torch.Tensor:
        squeeze = x.mean(dim=2, keepdim=True) if lengths is None else masked_mean(x, lengths.mask(x.shape[-1]))
        gate = self.sigmoid(self.conv2(self.relu(self.conv1(squeeze))))
        return gate * x


class SERes2NetBlock(nn.Module):
    """TDNN 1x1 -> Res2Net -> TDNN 1x1 -> SE, plus a (projected) residual."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        res2net_scale: int = 8,
        se_channels: int = 128,
        kernel_size: int = 1,
        dilation: int = 1,
        activation: Callable[[], nn.Module] = nn.ReLU,
        groups: int = 1,
    ):
        super().__init__()
        self.out_channels = out_channels
        self.tdnn1 = TDNNBlock(in_channels, out_channels, 1, 1, activation, groups)
        self.res2net_block = Res2NetBlock(out_channels, out_channels, res2net_scale, kernel_size, dilation)
        self.tdnn2 = TDNNBlock(out_channels, out_channels, 1, 1, activation, groups)
        self.se_block = SEBlock(out_channels, se_channels, out_channels)
        self.shortcut = Conv1d(in_channels, out_channels, 1) if in_channels != out_channels else None

    def forward(self, x: torch.Tensor, lengths: Lengths | None = None) -> torch.Tensor:
        residual = x if self.shortcut is None else self.shortcut(x)
        x = self.tdnn1(x, lengths)
        x = self.res2net_block(x, lengths)
        x = self.tdnn2(x, lengths)
        x = self.se_block(x, lengths)
        return x + residual


class AttentiveStatisticsPooling(nn.Module):
    """Attention-weighted mean and standard deviation over time (with global context)."""

    def __init__(self, channels: int, attention_channels: int = 128, global_context: bool = True):
        super().__init__()
        self.eps = 1e-12
        self.global_context = global_context
        self.tdnn = TDNNBlock(channels * 3 if global_context else channels, attention_channels, 1, 1)
        self.tanh = nn.Tanh()
        self.conv = Conv1d(attention_channels, channels, 1)

    def _statistics(self, x: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean = (weights * x).sum(dim=2)
        std = torch.sqrt((weights * (x - mean.unsqueeze(2)).pow(2)).sum(dim=2).clamp(self.eps))
        return mean, std

    def forward(self, x: torch.Tensor, lengths: Lengths | None = None) -> torch.Tensor:
        n_frames = x.shape[-1]
        if lengths is None:
            lengths = Lengths.full(x.shape[0], n_frames, x.device)
        mask = lengths.mask(n_frames)
        if self.global_context:
            mean, std = self._statistics(x, mask / mask.sum(dim=2, keepdim=True))
            context = torch.cat(
                [x, mean.unsqueeze(2).expand(-1, -1, n_frames), std.unsqueeze(2).expand(-1, -1, n_frames)], dim=1
            )
        else:
            context = x
        scores = self.conv(self.tanh(self.tdnn(context, lengths)))
        scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=2)
        mean, std = self._statistics(x, weights)
        return torch.cat([mean, std], dim=1).unsqueeze(2)


class EcapaTdnnModel(nn.Module):
    """ECAPA-TDNN with SpeechBrain's constructor options and parameter names.

    Parameters
    ----------
    input_size : int
        Feature dimension (80 filterbanks).
    lin_neurons : int
        Embedding dimension.
    channels, kernel_sizes, dilations : list of int
        Per layer: first TDNN, SE-Res2Net blocks, MFA (SpeechBrain defaults
        [512, 512, 512, 512, 1536], [5, 3, 3, 3, 1], [1, 2, 3, 4, 1]).
    attention_channels, res2net_scale, se_channels : int
    global_context : bool
    groups : list of int
    activation : callable
        Activation class (ReLU), called without arguments for each layer.
    """

    def __init__(
        self,
        input_size: int = 80,
        lin_neurons: int = 192,
        channels: Sequence[int] = (512, 512, 512, 512, 1536),
        kernel_sizes: Sequence[int] = (5, 3, 3, 3, 1),
        dilations: Sequence[int] = (1, 2, 3, 4, 1),
        attention_channels: int = 128,
        res2net_scale: int = 8,
        se_channels: int = 128,
        global_context: bool = True,
        groups: Sequence[int] = (1, 1, 1, 1, 1),
        activation: Callable[[], nn.Module] = nn.ReLU,
    ):
        super().__init__()
        check_ecapa_config(channels, kernel_sizes, dilations, groups, res2net_scale, input_size=input_size)
        self.blocks = nn.ModuleList(
            [TDNNBlock(input_size, channels[0], kernel_sizes[0], dilations[0], activation, groups[0])]
        )
        for i in range(1, len(channels) - 1):
            self.blocks.append(
                SERes2NetBlock(
                    channels[i - 1],
                    channels[i],
                    res2net_scale,
                    se_channels,
                    kernel_sizes[i],
                    dilations[i],
                    activation,
                    groups[i],
                )
            )
        self.mfa = TDNNBlock(
            channels[-2] * (len(channels) - 2), channels[-1], kernel_sizes[-1], dilations[-1], activation, groups[-1]
        )
        self.asp = AttentiveStatisticsPooling(channels[-1], attention_channels, global_context)
        self.asp_bn = BatchNorm1d(channels[-1] * 2)
        self.fc = Conv1d(channels[-1] * 2, lin_neurons, 1)

    def forward(self, feats: torch.Tensor, lengths: Lengths | None = None) -> torch.Tensor:
        """(B, T, input_size) features -> (B, 1, lin_neurons) embeddings."""
        x = feats.transpose(1, 2)
        outputs = []
        for block in self.blocks:
            x = block(x, lengths)
            outputs.append(x)
        x = self.mfa(torch.cat(outputs[1:], dim=1), lengths)
        x = self.asp_bn(self.asp(x, lengths))
        return self.fc(x).transpose(1, 2)
