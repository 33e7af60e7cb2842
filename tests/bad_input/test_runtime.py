"""Bad runtime requests: schedulers that never answer, resources the machine cannot hold, devices it lacks.

Each is refused with one line naming the option and what was expected, within the time the
message states, with nothing written and no thread left running.
"""

from __future__ import annotations

import importlib.util
import re
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.bad_input.conftest import assert_refused
from tests.bad_input.test_embeddings import embedding_fields, savez
from tests.servers import closed_port, listening_server

# --------------------------------------------------------------------------- dask schedulers
#: The connect timeout the scheduler tests run with (seconds), and the margin allowed over it.
TIMEOUT_S = 1
MARGIN_S = 5


@pytest.fixture()
def embedding_folders(tmp_path) -> tuple[Path, Path]:
    """``(data, out)``: *data* holds a dev and an eval embedding set (``dev.npz``, ``eval.npz``), *out* is empty."""
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    savez(data / "dev.npz", embedding_fields(0))
    savez(data / "eval.npz", embedding_fields(1))
    return data, out


@pytest.fixture()
def silent_server() -> Iterator[int]:
    """Port of a server that accepts connections and never replies."""
    with listening_server(None) as port:
        yield port


@pytest.fixture()
def http_server() -> Iterator[int]:
    """Port of a server that answers every connection with an HTTP error (not a dask scheduler)."""
    with listening_server(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n") as port:
        yield port


@pytest.mark.parametrize(
    ("server", "expect"),
    [
        ("closed", ["cannot reach the dask scheduler", "within 1 s"]),
        ("silent", ["cannot reach the dask scheduler", "within 1 s", "accepted the connection", "no reply"]),
        ("http", ["cannot reach the dask scheduler", "not a dask scheduler"]),
    ],
)
def test_a_scheduler_that_does_not_answer_is_refused_within_the_timeout(
    server, expect, embedding_folders, request, capsys, monkeypatch
):
    pytest.importorskip("distributed")
    from lidframe.core import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", TIMEOUT_S)
    port = closed_port() if server == "closed" else request.getfixturevalue(f"{server}_server")
    address = f"tcp://127.0.0.1:{port}"
    data, out = embedding_folders
    threads_before = set(threading.enumerate())
    started = time.monotonic()
    argv = ["evaluate", "--dev", data / "dev.npz", "--eval", data / "eval.npz", "--device", "cpu"]
    argv += ["--scheduler", address, "--json", out / "s.json"]
    assert_refused(argv, capsys, expect=[*expect, address], watch=[data, out])
    elapsed = time.monotonic() - started
    assert elapsed < TIMEOUT_S + MARGIN_S, f"refused after {elapsed:.1f} s, promised {TIMEOUT_S} s"
    left = [t for t in set(threading.enumerate()) - threads_before if t.is_alive() and t.name != "silent-scheduler"]
    assert not left, f"threads left running: {left}"


def test_connect_bounds_a_silent_scheduler_by_its_timeout(silent_server):
    pytest.importorskip("distributed")
    from lidframe.core.cluster import connect
    from lidframe.errors import InputError

    started = time.monotonic()
    with pytest.raises(InputError, match=r"within 0\.5 s"):
        connect(f"tcp://127.0.0.1:{silent_server}", timeout_s=0.5)
    assert time.monotonic() - started < 0.5 + MARGIN_S


@pytest.mark.parametrize("timeout_s", [0, -1, float("nan"), float("inf"), "10", True])
def test_connect_refuses_a_timeout_that_is_not_a_positive_number_of_seconds(timeout_s):
    pytest.importorskip("distributed")
    from lidframe.core.cluster import connect
    from lidframe.errors import InputError

    with pytest.raises(InputError, match="timeout_s"):
        connect("tcp://127.0.0.1:1", timeout_s=timeout_s)


def test_a_connection_that_outlives_the_deadline_is_refused_on_time(monkeypatch):
    """The Client is made under the same deadline: one that never finishes is refused at *timeout_s*."""
    distributed = pytest.importorskip("distributed")
    from lidframe.core import cluster
    from lidframe.errors import InputError

    release = threading.Event()

    class StuckClient:
        def __init__(self, *args, **kwargs):
            release.wait(30)

    async def answered(address, timeout_s):
        return None

    monkeypatch.setattr(cluster, "_scheduler_failure", answered)
    monkeypatch.setattr(distributed, "Client", StuckClient)
    started = time.monotonic()
    try:
        with pytest.raises(InputError, match=r"within 0\.5 s: it answered the handshake but the client connection"):
            cluster.connect("tcp://127.0.0.1:8786", timeout_s=0.5)
        assert time.monotonic() - started < 0.5 + MARGIN_S
    finally:
        release.set()


# --------------------------------------------------------------------------- bootstrap sizes
def test_a_bootstrap_too_large_to_hold_is_refused_before_anything_is_allocated(folders, capsys):
    data, out = folders
    argv = ["evaluate", "--dev", data / "dev.npz", "--eval", data / "eval.npz", "--bootstrap", "--n-boot", "100000000"]
    argv += ["--json", out / "s.json"]
    tracemalloc.start()
    started = time.monotonic()
    try:
        assert_refused(argv, capsys, expect=["--n-boot", "100000000", "at most 1000000"], watch=[data, out])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 5
    assert peak < 64 << 20, f"{peak / 2**20:.0f} MiB allocated before refusing"


# --------------------------------------------------------------------------- devices
def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


needs_cpu_only_torch = pytest.mark.skipif(
    _has_cuda() or importlib.util.find_spec("torch") is None, reason="needs PyTorch on a machine without CUDA"
)
#: What every refusal of a CUDA device on this machine says.
NO_CUDA = ["device 'cuda'", "CUDA is not available on this machine"]


@needs_cpu_only_torch
@pytest.mark.parametrize(
    "extra",
    [
        ["--no-binary-metrics"],  # the streaming engine
        [],  # a small set with exact binary metrics: every pair scored in full (float64, CPU)
    ],
    ids=["streamed", "dense"],
)
def test_cuda_on_a_machine_without_cuda_is_refused_by_evaluate(extra, embedding_folders, capsys):
    data, out = embedding_folders
    argv = ["evaluate", "--dev", data / "dev.npz", "--eval", data / "eval.npz", "--device", "cuda", *extra]
    assert_refused([*argv, "--json", out / "s.json"], capsys, expect=NO_CUDA, watch=[data, out])


@needs_cpu_only_torch
def test_cuda_on_a_machine_without_cuda_is_refused_by_score(tmp_path, capsys):
    pytest.importorskip("soundfile")
    from tests.bad_input.audio_dirs import score_argv, scoring_dirs

    enrol, trials = scoring_dirs(tmp_path / "data")
    out = tmp_path / "out"
    out.mkdir()
    small = "ecapa?channels=16,16,16,16,48&attention_channels=8&se_channels=8&lin_neurons=8"
    argv = score_argv(enrol, trials, out / "s.npz", "--device", "cuda", "--cache-dir", out / "cache", attacker=small)
    assert_refused(argv, capsys, expect=[*NO_CUDA, "built without CUDA"], watch=[tmp_path / "data", out])


@needs_cpu_only_torch
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_every_resolver_refuses_cuda_on_a_machine_without_it(device):
    """The streaming engine, the neural attackers and their training resolve --device through one helper."""
    from lidframe.attackers.neural import resolve_device as torch_device
    from lidframe.core.engine import Engine, resolve_device
    from lidframe.core.streaming import lid_from_embeddings
    from lidframe.errors import InputError

    expect = f"device '{device}': CUDA is not available on this machine"
    for resolve in (resolve_device, torch_device):
        with pytest.raises(InputError, match=expect):
            resolve(device)
    with pytest.raises(InputError, match=expect):
        lid_from_embeddings(
            np.eye(3), np.eye(3), [0, 1, 2], lambda z: z, np.log(np.full(3, 1 / 3)), engine=Engine(device=device)
        )
    assert resolve_device("auto") == "cpu" and str(torch_device("auto")) == "cpu"  # auto falls back silently


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "cuda:-1", "cpu:0:1"])
def test_a_device_that_is_not_one_is_refused(device):
    pytest.importorskip("torch")
    from lidframe.core.engine import resolve_device
    from lidframe.errors import InputError

    with pytest.raises(InputError, match=f"device '{re.escape(device)}'.*expected 'auto', 'cpu', 'cuda'"):
        resolve_device(device)
