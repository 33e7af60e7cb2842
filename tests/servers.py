"""Local TCP peers for the scheduler tests: a port nothing listens on, and a server that accepts and says little.

Shared by tests/bad_input (``evaluate --scheduler``, ``grid --backend dask``) and
tests/core (:func:`lidframe.core.cluster.connect`).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def listening_server(reply: bytes | None) -> Iterator[int]:
    """A local server that accepts every connection and sends *reply* (``None``: nothing) and then nothing more.

    Yields its port; the connections are held open until the block ends.
    """
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.05)  # so that the thread sees *stop* soon after the block
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)
            if reply is not None:
                conn.sendall(reply)

    thread = threading.Thread(target=accept, daemon=True, name="silent-scheduler")
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
        for conn in held:
            conn.close()
