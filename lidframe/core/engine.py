"""Engine settings: the :class:`Engine` record and the device and precision vocabulary.

One record says where and how the LID engines run (device, precision of the products,
streaming kernel, tile size, CPU threads, progress bar); :func:`lidframe.evaluate`,
:func:`lidframe.evaluate_fitted` and :func:`lidframe.core.streaming.lid_from_embeddings`
take it, and the command line builds it from its flags, so the defaults live here once.
Importing this module does not import torch; :func:`resolve_device` does, when asked for
``"auto"`` or a CUDA device.  :func:`resolve_device` is the one place where a device
request (``--device``, ``device=``) becomes a device, for the engines and the neural
attackers alike: ``"auto"`` falls back to the CPU silently, an explicit CUDA device that
this machine lacks is refused.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from lidframe.errors import InputError

__all__ = [
    "Engine",
    "DEVICE_NAMES",
    "KERNELS",
    "PRECISIONS",
    "check_engine",
    "resolve_device",
    "resolve_precision",
]

#: What a device is named (:func:`resolve_device`).
DEVICE_NAMES = "'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'"
_DEVICE = re.compile(r"(cpu|cuda|mps)(?::(\d+))?")
#: Streaming paths: ``auto`` picks one (see :func:`lidframe.core.streaming.lid_from_embeddings`).
KERNELS = ("auto", "numpy", "torch", "triton")
#: Canonical precisions of the products.
PRECISIONS = ("float64", "float32", "bfloat16")
_PRECISION_ALIASES = {"fp64": "float64", "fp32": "float32", "bf16": "bfloat16", "double": "float64", "float": "float32"}


def resolve_precision(precision: str, device: str = "cpu") -> str:
    """Canonical precision name (``float64``, ``float32`` or ``bfloat16``; fp64/fp32/bf16 accepted).

    ``"auto"`` is float64 on the CPU and bfloat16 on CUDA (*device* already resolved).
    """
    if precision == "auto":
        return "bfloat16" if str(device).startswith("cuda") else "float64"
    name = _PRECISION_ALIASES.get(str(precision).lower(), str(precision).lower())
    if name not in PRECISIONS:
        raise InputError(
            f"precision must be one of float64, float32, bfloat16 (or fp64, fp32, bf16), got {precision!r}"
        )
    return name


def _canonical_precision(precision: str) -> str:
    return "auto" if precision == "auto" else resolve_precision(precision)


def _check_device(_engine: object, _attribute: object, device: Any) -> None:
    if not isinstance(device, str) or not device:
        raise InputError(f"device must be a string such as {DEVICE_NAMES}, got {device!r}")


def _check_kernel(_engine: object, _attribute: object, kernel: Any) -> None:
    if kernel not in KERNELS:
        raise InputError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")


def _check_tile_rows(_engine: object, _attribute: object, tile_rows: Any) -> None:
    if tile_rows is not None and (isinstance(tile_rows, bool) or not isinstance(tile_rows, int) or tile_rows < 1):
        raise InputError(f"tile_rows must be a positive integer, got {tile_rows!r}")


def _check_threads(_engine: object, _attribute: object, threads: Any) -> None:
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise InputError(f"threads must be a positive integer, got {threads!r}")


def _check_progress(_engine: object, _attribute: object, progress: Any) -> None:
    if not isinstance(progress, bool):
        raise InputError(f"progress must be True or False, got {progress!r}")


@attrs.frozen(kw_only=True)
class Engine:
    """Settings of the LID engines: where and how the (T, N) work runs (one record, one set of defaults).

    Used by :func:`lidframe.evaluate` / :func:`lidframe.evaluate_fitted` and
    :func:`~lidframe.core.streaming.lid_from_embeddings`.  Only ``tile_rows`` concerns the dense score-matrix
    engine (:func:`lidframe.core.lid.lid_from_scores`); the other fields apply to the
    streaming engine of an eval embedding set.

    Attributes
    ----------
    device : str, default "auto"
        ``"auto"`` (CUDA when PyTorch sees one, else the CPU), ``"cpu"``, ``"cuda"``,
        ``"cuda:1"``, ...
    precision : {"auto", "float64", "float32", "bfloat16"}, default "auto"
        Precision of the products (``fp64``, ``fp32``, ``bf16`` accepted and stored under
        the canonical name); ``"auto"`` is float64 on the CPU and bfloat16 on CUDA.
    kernel : {"auto", "numpy", "torch", "triton"}, default "auto"
        The streaming path (:data:`KERNELS`; see :func:`~lidframe.core.streaming.lid_from_embeddings`).
    tile_rows : int or None, default None
        Trials per tile (None: about 16 MiB tiles on the CPU, about 4 GiB on CUDA).
    threads : int or None, default None
        CPU threads the tiles run in, in the dense engine and the streaming engine's numpy
        path (None: :func:`lidframe.runtime.workers.default_threads`, every core this
        process may use unless ``OMP_NUM_THREADS`` says fewer).  The numbers do not depend
        on it.  ``--threads`` on the command line.
    progress : bool, default False
        Show a progress bar over tiles (tqdm).

    Raises
    ------
    InputError
        On construction, for a value outside the above.

    Examples
    --------
    >>> Engine(device="cpu", precision="fp32")
    Engine(device='cpu', precision='float32', kernel='auto', tile_rows=None, threads=None, progress=False)
    """

    device: str = attrs.field(default="auto", validator=_check_device)
    precision: str = attrs.field(default="auto", converter=_canonical_precision)
    kernel: str = attrs.field(default="auto", validator=_check_kernel)
    tile_rows: int | None = attrs.field(default=None, validator=_check_tile_rows)
    threads: int | None = attrs.field(default=None, validator=_check_threads)
    progress: bool = attrs.field(default=False, validator=_check_progress)

    def to_dict(self) -> dict:
        """The settings as a JSON-able dict."""
        return attrs.asdict(self)

    def cpu_threads(self) -> int:
        """The CPU threads to use: :attr:`threads`, or :func:`~lidframe.runtime.workers.default_threads`."""
        from lidframe.runtime.workers import default_threads

        return default_threads() if self.threads is None else self.threads


def check_engine(engine: object) -> Engine:
    """*engine*, or ``Engine()`` for None: what the functions that take ``engine=`` run with.

    Raises
    ------
    InputError
        If *engine* is neither None nor an :class:`Engine`.
    """
    if engine is None:
        return Engine()
    if not isinstance(engine, Engine):
        raise InputError(f"engine must be None or a record of type Engine, got {type(engine).__name__}")
    return engine


def torch_available() -> bool:
    """Whether PyTorch can be imported (it is imported to find out)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_device(device: str, *, check: bool = True) -> str:
    """The device to run on: the one place where a ``--device`` (or ``device=``) is resolved.

    ``"auto"`` is ``"cuda"`` when PyTorch sees a GPU, else ``"cpu"`` (silently: a request
    for whatever there is).  An explicit ``"cuda"``, ``"cuda:N"`` or ``"mps"`` is a request
    for that device: refused, not run on the CPU, where this machine has none.

    Parameters
    ----------
    device : str
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    check : bool, default True
        Check that this machine has the device (False: the name only, e.g. to report a
        clash with other settings first; the caller checks it before running).

    Returns
    -------
    str
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.

    Raises
    ------
    InputError
        Not a device name; a device other than the CPU without PyTorch installed; or
        (*check*) a CUDA device that this machine does not have (PyTorch built without
        CUDA, no GPU visible, or fewer GPUs than ``N + 1``), or MPS where there is none.
    """
    if not isinstance(device, str) or not device:
        raise InputError(f"device must be a string such as {DEVICE_NAMES}, got {device!r}")
    if device == "auto":
        if torch_available():
            import torch

            return "cuda" if torch.cuda.is_available() else "cpu"
        return "cpu"
    match = _DEVICE.fullmatch(device)
    if match is None or (match.group(1) != "cuda" and match.group(2) is not None):
        raise InputError(f"device {device!r}: expected {DEVICE_NAMES}")
    if device == "cpu":
        return device
    if not torch_available():
        raise InputError(f"device {device!r} needs PyTorch (pip install torch); only 'cpu' works without it")
    if check:
        _check_available(device, match.group(1), None if match.group(2) is None else int(match.group(2)))
    return device


def _check_available(device: str, kind: str, index: int | None) -> None:
    """An InputError saying why this machine has no *device* (a CUDA or MPS device), if it has none."""
    import torch

    if kind == "mps":
        backend = getattr(torch.backends, "mps", None)
        if backend is None or not backend.is_available():
            raise InputError(f"device {device!r}: MPS (Apple GPU) is not available on this machine")
        return
    if not torch.cuda.is_available():
        why = (
            f"torch {torch.__version__} is built without CUDA"
            if torch.version.cuda is None
            else f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU"
        )
        raise InputError(
            f"device {device!r}: CUDA is not available on this machine ({why}); device 'auto' or 'cpu' runs on the CPU"
        )
    count = torch.cuda.device_count()
    if index is not None and index >= count:
        raise InputError(
            f"device {device!r}: this machine has {count} CUDA device{'s' if count != 1 else ''} "
            f"(cuda:0{f' to cuda:{count - 1}' if count > 1 else ''})"
        )
