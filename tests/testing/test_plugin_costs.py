"""What the plugin's server and inbox cost a suite (issue 21 item 7, D401-D402), and the in-process
server's environment (issue 21 item 9, D403).

* socket mode: every accepted connection has ``TCP_NODELAY`` (otherwise each answer's body waits ~40 ms
  for the client's delayed ACK); a client made by the server shares one SSL context and keeps the SDK's
  attempt deadlines.
* ``CallbackInbox.down()`` returns without waiting for a poll interval.
* in process, ``SandboxServer.environment`` says what to use instead of failing later on a DNS lookup of
  ``testserver``; in socket mode a plain ``paysdk.Client`` built from it reaches the server.
"""

from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Iterator

import pytest

import paysdk
from paysdk._transport import DeadlineBackend
from paysdk.testing import CallbackInbox, InProcessServerError, SandboxServer


@pytest.fixture(scope="module")
def socket_server() -> Iterator[SandboxServer]:
    with SandboxServer("socket") as server:
        yield server


@pytest.fixture(scope="module")
def inprocess_server() -> Iterator[SandboxServer]:
    with SandboxServer("inprocess") as server:
        yield server


def test_socket_mode_accepted_connections_have_tcp_nodelay(socket_server: SandboxServer) -> None:
    merchant = socket_server.create_merchant()
    with socket_server.client(merchant.sandbox_token) as client:
        client.sandbox.health()
        connections = list(socket_server._uvicorn.server_state.connections)
        options = [
            protocol.transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            for protocol in connections
        ]
    assert len(options) >= 2  # the control client's connection and this client's
    assert all(options), options


def test_socket_mode_clients_share_one_ssl_context_and_keep_attempt_deadlines(
    socket_server: SandboxServer,
) -> None:
    with socket_server.client() as first, socket_server.client() as second:
        pools = [client._http._transport._pool for client in (first, second)]  # type: ignore[attr-defined]
        assert pools[0]._ssl_context is pools[1]._ssl_context
        assert all(isinstance(pool._network_backend, DeadlineBackend) for pool in pools)
        assert first.sandbox.health().status == second.sandbox.health().status


def test_the_inbox_stops_without_waiting_for_a_poll() -> None:
    spent = []
    for _ in range(9):
        inbox = CallbackInbox()
        started = time.perf_counter()
        inbox.down()
        spent.append(time.perf_counter() - started)
    # The former serve_forever(poll_interval=0.05) took 25 ms on average to notice shutdown().
    assert statistics.median(spent) < 0.01, spent


def test_in_process_environment_says_which_fixture_or_mode_to_use(inprocess_server: SandboxServer) -> None:
    with pytest.raises(InProcessServerError) as raised:
        paysdk.Client("a" * 64, inprocess_server.environment)
    message = str(raised.value)
    assert "runs in process and has no network address" in message
    assert "paysdk_server.client(token" in message
    assert "paysdk_client" in message
    assert "--paysdk-server=socket" in message
    with inprocess_server.client() as client:  # what it points to works
        assert client.sandbox.health().status


def test_socket_mode_environment_serves_a_plain_client(socket_server: SandboxServer) -> None:
    with paysdk.Client(environment=socket_server.environment) as client:
        assert client.sandbox.health().status
