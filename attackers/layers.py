"""Building blocks of the TDNN speaker encoders, named as SpeechBrain names them.

SpeechBrain wraps ``torch.nn.Conv1d`` / ``BatchNorm1d`` / ``Linear`` in modules whose
inner layer is an attribute (``.conv``, ``.norm``, ``.w``), so a checkpoint's keys read
``blocks.0.conv.conv.weight``.  These wrappers reproduce that tree so SpeechBrain
``embedding_model.ckpt`` files load with ``strict=True``; the computations are written
here from the published architecture.

Sequence lengths
----------------
Every layer takes the batch as (B, C, T) plus a :class:`Lengths` record that says how
many frames of each row are real.  Two padding modes:

``"exact"`` (lidframe's default)
    a 'same' convolution reflects each utterance at *its own* last valid frame, as it
    would if the utterance were alone, so a padded utterance gets the embedding it gets
    on its own (to float rounding), whatever it is batched with.
``"speechbrain"``
    reflect-pads the padded tensor as a whole (the convolution sees the zero padding
    near the end of shorter utterances) and builds masks from relative lengths in
    floating point, exactly as SpeechBrain 1.1 does; only for reproducing its batched
    output.
"""

from __future__ import annotations

import attrs

from ._torch import nn, torch

__all__ = ["Lengths", "Conv1d", "BatchNorm1d", "Linear", "masked_mean"]

PADDING_MODES = ("exact", "speechbrain")


@attrs.frozen(eq=False)
class Lengths:
    """Valid frames per row of a padded (B, C, T) batch.

    Attributes
    ----------
    frames : torch.Tensor (B,) int64
        Number of valid frames of each row.
    relative : torch.Tensor (B,) float32
        frames / T as SpeechBrain passes it (used by ``mode="speechbrain"``).
    mode : {"exact", "speechbrain"}
    """

    frames: torch.Tensor
    relative: torch.Tensor
    mode: str = "exact"

    @classmethod
    def full(cls, batch: int, n_frames: int, device: torch.device | str | None = None, mode: str = "exact") -> Lengths:
        """Lengths of a batch without padding: every row has all *n_frames* frames."""
        frames = torch.full((batch,), n_frames, dtype=torch.long, device=device)
        return cls(frames, torch.ones(batch, device=device), mode)

    def mask(self, n_frames: int) -> torch.Tensor:
        """(B, 1, T) float mask of valid frames."""
        steps = torch.arange(n_frames, device=self.frames.device)
        if self.mode == "speechbrain":  # float comparison against relative * T, as SpeechBrain does
            limit = self.relative.to(torch.float32) * n_frames
            mask = steps.to(torch.float32)[None, :] < limit[:, None]
        else:
            mask = steps[None, :] < self.frames[:, None]
        return mask.unsqueeze(1).to(torch.float32)


def _reflect_index(n_frames: int, pad: int, frames: torch.Tensor) -> torch.Tensor:
    """(B, T + 2 pad) source frames: each row reflected at 0 and at its own last valid frame."""
    t = torch.arange(-pad, n_frames + pad, device=frames.device)[None, :]
    last = (frames - 1)[:, None]
    index = torch.where(t < 0, -t, t)
    index = torch.where(index > last, 2 * last - index, index)
    return index.clamp(0, n_frames - 1)


class Conv1d(nn.Module):
    """1-D convolution with SpeechBrain's 'same' reflect padding; parameters under ``.conv``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, dilation: int = 1, groups: int = 1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, dilation=dilation, groups=groups)

    def forward(self, x: torch.Tensor, lengths: Lengths | None = None) -> torch.Tensor:
        pad = self.dilation * (self.kernel_size - 1) // 2
        if pad == 0:
            return self.conv(x)
        if lengths is None or lengths.mode == "speechbrain":
            return self.conv(nn.functional.pad(x, (pad, pad), mode="reflect"))
        index = _reflect_index(x.shape[-1], pad, lengths.frames)
        rows = torch.arange(x.shape[0], device=x.device)[:, None]
        padded = x.transpose(1, 2)[rows, index].transpose(1, 2)  # (B, C, T + 2 pad)
        return self.conv(padded)


class BatchNorm1d(nn.Module):
    """Batch normalisation over channels of (B, C, T); parameters under ``.norm``."""

    def __init__(self, channels: int):
        super().__init__()
        self.norm = nn.BatchNorm1d(channels, eps=1e-5, momentum=0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


class Linear(nn.Module):
    """Fully connected layer; parameters under ``.w``."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.w = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w(x)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over time of (B, C, T) under a (B, 1, T) mask -> (B, C, 1)."""
    return (x * mask).sum(dim=2, keepdim=True) / mask.sum(dim=2, keepdim=True)
