"""x-vector speaker encoder (Snyder et al., 2018) in plain torch, SpeechBrain-compatible.

Parameter names follow SpeechBrain's ``Xvector``: ``blocks`` is a flat list of
(conv, activation, batch norm) triples for the TDNN layers, then statistics pooling,
then a linear layer (``blocks.16.w`` for the default 5 TDNN layers), so SpeechBrain
checkpoints load with ``strict=True``.

Statistics pooling returns the mean and the unbiased standard deviation (+ 1e-5) over
the valid frames.  SpeechBrain additionally adds a small random offset (between 1e-5 and
9e-5) to the pooled mean even in eval mode; lidframe leaves it out, so its x-vectors are
deterministic and differ from SpeechBrain's by at most that noise passed through the
final linear layer (about 1e-4 on the fixture models).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lidframe.errors import InputError

from ._torch import nn, torch
from .layers import BatchNorm1d, Conv1d, Lengths, Linear

__all__ = ["XvectorModel", "check_xvector_config"]


def check_xvector_config(
    tdnn_blocks: int,
    tdnn_channels: Sequence[int],
    tdnn_kernel_sizes: Sequence[int],
    tdnn_dilations: Sequence[int],
    *,
    label: str = "x-vector",
) -> None:
    """Check that each TDNN list has an entry for each of the *tdnn_blocks* layers (its first ones are used); one InputError line if not."""
    for name, values in (
        ("tdnn_channels", tdnn_channels),
        ("tdnn_kernel_sizes", tdnn_kernel_sizes),
        ("tdnn_dilations", tdnn_dilations),
    ):
        if len(values) < tdnn_blocks:
            raise InputError(
                f"{label}: {name} has {len(values)} entries, fewer than tdnn_blocks = {tdnn_blocks}; "
                "give one per TDNN layer"
            )


class StatisticsPooling(nn.Module):
    """Mean and unbiased standard deviation over valid frames of (B, C, T) -> (B, 2C)."""

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, lengths: Lengths | None = None) -> torch.Tensor:
        if lengths is None:
            return torch.cat([x.mean(dim=2), x.std(dim=2) + self.eps], dim=1)
        means, stds = [], []
        n_frames = x.shape[-1]
        for row in range(x.shape[0]):
            if lengths.mode == "speechbrain":
                valid = int(torch.round(lengths.relative[row] * n_frames))
            else:
                valid = int(lengths.frames[row])
            part = x[row, :, :valid]
            means.append(part.mean(dim=1))
            stds.append(part.std(dim=1))
        return torch.cat([torch.stack(means), torch.stack(stds) + self.eps], dim=1)


class XvectorModel(nn.Module):
    """x-vector TDNN with SpeechBrain's constructor options and parameter names.

    Parameters
    ----------
    in_channels : int
        Feature dimension (SpeechBrain's default 40; 80 for 80 filterbanks).
    tdnn_blocks : int
    tdnn_channels, tdnn_kernel_sizes, tdnn_dilations : list of int
    lin_neurons : int
        Embedding dimension.
    activation : callable
        Activation class (LeakyReLU), called without arguments for each layer.
    """

    def __init__(
        self,
        in_channels: int = 40,
        tdnn_blocks: int = 5,
        tdnn_channels: Sequence[int] = (512, 512, 512, 512, 1500),
        tdnn_kernel_sizes: Sequence[int] = (5, 3, 3, 1, 1),
        tdnn_dilations: Sequence[int] = (1, 2, 3, 1, 1),
        lin_neurons: int = 512,
        activation: Callable[[], nn.Module] = nn.LeakyReLU,
    ):
        super().__init__()
        check_xvector_config(tdnn_blocks, tdnn_channels, tdnn_kernel_sizes, tdnn_dilations)
        self.blocks = nn.ModuleList()
        channels = in_channels
        for i in range(tdnn_blocks):
            self.blocks.extend(
                [
                    Conv1d(channels, tdnn_channels[i], tdnn_kernel_sizes[i], dilation=tdnn_dilations[i]),
                    activation(),
                    BatchNorm1d(tdnn_channels[i]),
                ]
            )
            channels = tdnn_channels[i]
        self.blocks.append(StatisticsPooling())
        self.blocks.append(Linear(channels * 2, lin_neurons))

    def forward(self, feats: torch.Tensor, lengths: Lengths | None = None) -> torch.Tensor:
        """(B, T, in_channels) features -> (B, 1, lin_neurons) embeddings."""
        x = feats.transpose(1, 2)
        for layer in self.blocks:
            if isinstance(layer, (Conv1d, StatisticsPooling)):
                x = layer(x, lengths)
            else:
                x = layer(x)
        return x.unsqueeze(1)
