"""What the plugin's server and inbox cost a suite (issue 21 item 7, D401-D402), and the in-process
server's environment (issue 21 item 9, D403).

* socket mode: every accepted connection has ``TCP_NODELAY`` (otherwise each answer's body waits ~40 ms
  for the client's delayed ACK); a client made by the server shares one SSL context and keeps the SDK's
  attempt deadlines.
* ``CallbackInbox.down()`` returns without waiting for a poll interval; inboxes start no thread of their
  own (one accepting thread serves them all, D490).
* in process, a small request crosses to the portal's thread once (D490).
* a reset deletes only from the tables that hold rows (D491).
* in process, ``SandboxServer.environment`` says what to use instead of failing later on a DNS lookup of
  ``testserver``; in socket mode a plain ``paysdk.Client`` built from it reaches the server.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
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


def _inbox_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "paysdk-inbox"]


def test_inboxes_share_one_accepting_thread_and_stop_one_by_one() -> None:
    """Starting an inbox starts no thread (the former inbox started and joined one each, ~0.3-1.9 ms
    of a test's setup); each still receives its own deliveries, and one stopped refuses connections
    while the others go on."""
    with CallbackInbox() as first, CallbackInbox() as second, CallbackInbox() as third:
        inboxes = (first, second, third)
        assert len({inbox.port for inbox in inboxes}) == 3
        assert len(_inbox_threads()) == 1
        for inbox in inboxes:
            answer = httpx.post(
                inbox.url, content=b"[1]", headers={inbox.header_name: inbox.header_value}, timeout=60
            )
            assert answer.status_code == 400  # reached this inbox: its header, a body it refuses
            assert len(inbox.deliveries) == 1
        second.down()
        with pytest.raises(httpx.ConnectError):
            httpx.post(second.url, content=b"[1]", timeout=60)
        refused = httpx.post(third.url, content=b"[1]", timeout=60)
        assert refused.status_code == 401  # no header: refused by it
        assert [len(inbox.deliveries) for inbox in inboxes] == [1, 1, 2]
        second.up()
        assert httpx.post(second.url, content=b"[1]", timeout=60).status_code == 401
    assert len(_inbox_threads()) <= 1


def test_a_small_request_crosses_to_the_portal_once(inprocess_server: SandboxServer) -> None:
    """Start, status, headers and a body the app has already sent come back in one crossing, and a body
    read to its end needs none to close (the former transport crossed five times per request)."""
    portal = inprocess_server._portal
    assert portal is not None
    crossings: list[Any] = []
    submit = portal.submit

    def counted(coroutine: Any) -> Any:
        crossings.append(coroutine)
        return submit(coroutine)

    with inprocess_server.client() as client:
        client.sandbox.health()  # the client's first request (its pool) out of the count
        portal.submit = counted  # type: ignore[method-assign]
        try:
            assert client.sandbox.health().status
            assert len(crossings) == 1, crossings
        finally:
            del portal.submit


def test_a_reset_deletes_only_from_the_tables_holding_rows(inprocess_server: SandboxServer) -> None:
    """An empty table's DELETE rewrote its root page and each index's all the same: ~100 WAL frames
    per reset of a database holding one merchant, of 44 tables."""
    inprocess_server.reset()
    database = inprocess_server.app.state.paysdk.db
    kept = database._reset_connection
    assert kept is not None
    statements: list[str] = []
    kept.connection.driver_connection.set_trace_callback(statements.append)
    try:
        merchant = inprocess_server.create_merchant()
        inprocess_server.reset()
    finally:
        kept.connection.driver_connection.set_trace_callback(None)
    deleted = sorted(
        sql.removeprefix("DELETE FROM ").strip('"') for sql in statements if sql.startswith("DELETE")
    )
    assert deleted == ["clients", "wallet_client_keys"], deleted
    with pytest.raises(paysdk.NotFoundError):
        inprocess_server.seeded_merchant(merchant.slug)
