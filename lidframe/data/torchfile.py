"""The one reader of ``torch.save`` files: ``torch.load(weights_only=True)`` on a handle of the one opener.

Weights-only loading unpickles tensors, containers of them and plain values only: a file
that pickles anything else (a whole ``nn.Module``, a numpy array, a callable such as
``os.system`` in a ``__reduce__``) is refused by torch's restricted unpickler before any
of it runs, and the refusal is one :class:`~lidframe.errors.InputError` line naming the
file and the global it tried to load -- torch's advice to load the file unsafely is
not passed on.  The file is opened by :func:`lidframe.data.fileio.open_input` (a FIFO is
named, never waited on; a device never read), with a size cap where the caller gives
one.  The neural attackers' checkpoints and the VoicePrivacy speaker-vector caches
(:mod:`lidframe.data.voiceprivacy`) are read here.

torch is optional for lidframe: it is imported when a file is read, and its absence is
one line saying what to install.
"""

from __future__ import annotations

import os
import pickle
import re
import warnings
from pathlib import Path
from typing import Any

from lidframe.data.fileio import StrPath, open_input
from lidframe.errors import InputError

__all__ = ["load_weights_only"]

_BLOCKED_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")


def load_weights_only(
    path: StrPath,
    *,
    what: str,
    saved_as: str,
    advice: str,
    map_location: Any = "cpu",
    max_bytes: int | None = None,
) -> Any:
    """``torch.load(handle, weights_only=True)`` of *path*, each failure one :class:`InputError` line naming it.

    Parameters
    ----------
    path : str or os.PathLike
        A ``torch.save`` file.
    what : str
        What the file is, for the messages (``"checkpoint"``, ``"speaker-vector file"``).
    saved_as : str
        How such a file is written, for the messages (``"torch.save(model.state_dict())"``).
    advice : str
        What to do with a file that pickles code (``"save model.state_dict()"``).
    map_location
        Passed to :func:`torch.load`.
    max_bytes : int, optional
        The largest file taken (bytes); None: any size.

    Returns
    -------
    object
        What the file holds (tensors, containers of them, plain values).

    Raises
    ------
    InputError
        torch is not installed; the file is missing, a folder, a FIFO or a device (never
        waited on or read), larger than *max_bytes*, empty, not a torch file, corrupt, or
        not weights-only (it pickles a global other than torch's tensor types).
    """
    path = Path(path)
    try:
        import torch
    except ImportError:
        raise InputError(
            f"{path}: reading a {what} needs PyTorch, which is not installed (pip install torch; on a CPU-only "
            "machine: pip install torch --index-url https://download.pytorch.org/whl/cpu)"
        ) from None
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected a {what} file ({saved_as})")
    if not os.path.lexists(path):
        raise InputError(f"{path}: no such {what} file")
    with open_input(path, f"a {what} file ({saved_as})", max_bytes=max_bytes) as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            raise InputError(f"{path}: empty file (0 bytes); expected a {what} ({saved_as})")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch warns about the pickle protocol of files it then refuses
                return torch.load(handle, map_location=map_location, weights_only=True)
        except pickle.UnpicklingError as exc:
            blocked = _BLOCKED_GLOBAL.search(str(exc))
            if blocked:
                raise InputError(
                    f"{path}: refused: the {what} pickles {blocked.group(1)}, not only tensors; lidframe loads "
                    f"weights only (torch.load(weights_only=True)) and never runs pickled code: {advice}"
                ) from None
            raise InputError(
                f"{path}: not a weights-only torch {what} ({saved_as}), or a corrupt one: "
                "it does not unpickle as weights"
            ) from None
        # torch.load raises what its zip reader, unpickler or storage code raises (RuntimeError, EOFError,
        # OSError, zipfile's, ...): whichever it is, the user gets one line naming the file
        except Exception as exc:  # noqa: BLE001 -- corrupt zip, truncated file, unreadable, ...: one clear line
            text = " ".join(str(exc).split())
            first = text.split(". ")[0] if text else type(exc).__name__
            raise InputError(f"{path}: not a torch {what}, or a corrupt one ({first})") from None
