"""lidframe.core.cluster.connect: what is left behind when a scheduler answers the probe and then stalls.

The refusals themselves (closed, silent, not a scheduler: one line within the timeout) are in
tests/bad_input/test_runtime.py.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from lidframe.errors import InputError
from tests.servers import listening_server

distributed = pytest.importorskip("distributed")


def test_a_client_that_completes_after_connect_gave_up_on_it_is_closed(monkeypatch):
    """A server answers the probe's handshake, then stalls the Client's own connection: connect refuses
    at its deadline; the Client, which cannot be interrupted, is closed when (if ever) it completes."""
    from lidframe.core import cluster

    release = threading.Event()
    closed = threading.Event()

    class LateClient:
        def __init__(self, *args, **kwargs):
            release.wait(30)

        def close(self):
            closed.set()

    async def answered(address, timeout_s):
        return None

    monkeypatch.setattr(cluster, "_scheduler_failure", answered)
    monkeypatch.setattr(distributed, "Client", LateClient)
    try:
        with pytest.raises(InputError, match="it answered the handshake but the client connection did not complete"):
            cluster.connect("tcp://127.0.0.1:8786", timeout_s=0.3)
    finally:
        release.set()  # the stalled connection completes after all
    assert closed.wait(5), "the Client connect gave up on was left open"
    deadline = time.monotonic() + 5
    while any(t.name == "lidframe-connect" and t.is_alive() for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the connect thread is still running"
        time.sleep(0.01)


def test_a_client_made_in_time_is_returned_open(monkeypatch):
    from lidframe.core import cluster

    closed = threading.Event()

    class QuickClient:
        def __init__(self, *args, **kwargs):
            pass

        def close(self):
            closed.set()

    async def answered(address, timeout_s):
        return None

    monkeypatch.setattr(cluster, "_scheduler_failure", answered)
    monkeypatch.setattr(distributed, "Client", QuickClient)
    client, opened_here = cluster.connect("tcp://127.0.0.1:8786", timeout_s=2)
    assert isinstance(client, QuickClient) and opened_here and not closed.is_set()


def test_what_answers_in_place_of_a_scheduler_is_cut_as_every_echoed_value_is(monkeypatch):
    """Whatever a server that is not a scheduler makes distributed say is cut as every echoed value is
    (lidframe.errors.shorten), not at a length of its own."""
    import distributed.comm

    from lidframe.core import cluster
    from lidframe.errors import SHOWN_CHARS

    async def garbled(address, timeout=None, **kwargs):
        raise ValueError("y" * 5000)

    monkeypatch.setattr(distributed.comm, "connect", garbled)
    with socket.socket() as server:  # accepts the probe's TCP connection (the backlog), says nothing
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        why = asyncio.run(cluster._scheduler_failure(f"tcp://127.0.0.1:{port}", 2.0))
    assert why is not None and "not a dask scheduler" in why
    assert "y" * SHOWN_CHARS + "... (+" in why and f"(+{5000 - SHOWN_CHARS} more characters)" in why
    assert "y" * (SHOWN_CHARS + 1) not in why


@pytest.fixture()
def silent_server():
    """Port of a local server that accepts connections and never sends a byte."""
    with listening_server(None) as port:
        yield port


def test_a_tls_address_without_tls_settings_says_what_it_needs(silent_server):
    from lidframe.core import cluster

    with pytest.raises(InputError, match=r"tls:// address needs the client's TLS settings"):
        cluster.connect(f"tls://127.0.0.1:{silent_server}", timeout_s=2)


def test_a_tls_address_is_probed_with_the_clients_tls_settings(silent_server, monkeypatch):
    """With TLS configured, the probe connects as the Client would (its ssl context passed on): a silent
    server is then refused as silent, not as 'not a scheduler' (the TLS connector's TypeError without it)."""
    import ssl

    from distributed.security import Security

    from lidframe.core import cluster

    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    args = {"ssl_context": context, "require_encryption": True, "extra_conn_args": {}}
    monkeypatch.setattr(Security, "get_connection_args", lambda self, role: args)
    with pytest.raises(InputError, match="accepted the connection but sent no reply"):
        cluster.connect(f"tls://127.0.0.1:{silent_server}", timeout_s=1)
