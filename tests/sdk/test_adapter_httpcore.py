"""The private httpx/httpcore hooks of :mod:`paysdk._adapters.httpcore` against the installed libraries
(D530): a failure names the hook and the versions, so an httpx or httpcore upgrade that moves them is seen
at once instead of silently losing the attempt deadline at the socket (D61)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpcore
import httpx
import pytest

from paysdk._adapters.httpcore import keep_content, network_backend, pools, set_network_backend
from paysdk._transport import AsyncDeadlineBackend, DeadlineBackend, install_deadlines

VERSIONS = f"httpx {httpx.__version__}, httpcore {httpcore.__version__}"


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_private_attributes_exist_with_their_shape() -> None:
    """``_transport``/``_mounts`` on the clients, ``_pool`` on their transports, ``_network_backend`` on
    the pools, holding what the adapter expects."""
    proxy = "http://127.0.0.1:9"
    for client_type, pool_type, backend_type in (
        (httpx.Client, httpcore.ConnectionPool, httpcore.NetworkBackend),
        (httpx.AsyncClient, httpcore.AsyncConnectionPool, httpcore.AsyncNetworkBackend),
    ):
        client = client_type(proxy=proxy)
        name = client_type.__name__
        assert hasattr(client, "_transport"), f"{VERSIONS}: httpx.{name}._transport is gone"
        mounts = getattr(client, "_mounts", None)
        assert isinstance(mounts, dict), f"{VERSIONS}: httpx.{name}._mounts is no mapping: {mounts!r}"
        assert mounts, f"{VERSIONS}: httpx.{name}._mounts holds no proxy transport"
        found = pools(client)
        # the default transport's pool and the proxy's
        assert len(found) == 1 + len(mounts), f"{VERSIONS}: httpx transports' _pool not found: {found!r}"
        for pool in found:
            assert isinstance(pool, pool_type), f"{VERSIONS}: httpx transport _pool is a {type(pool)!r}"
            backend = network_backend(pool)
            assert isinstance(backend, backend_type), (
                f"{VERSIONS}: httpcore.{type(pool).__name__}._network_backend is {backend!r}"
            )


def test_a_replaced_backend_opens_the_connections(url: str) -> None:
    """What :func:`set_network_backend` sets is what the pool connects with (sync)."""
    opened: list[str] = []

    class Recording(DeadlineBackend):
        def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
            opened.append(host)
            return super().connect_tcp(host, port, *args, **kwargs)

    with httpx.Client() as client:
        (pool,) = pools(client)
        set_network_backend(pool, Recording(network_backend(pool)))
        assert client.get(url).text == "hello"
    assert opened == ["127.0.0.1"], (
        f"{VERSIONS}: httpcore.ConnectionPool._network_backend set but not used to connect"
    )


def test_a_replaced_async_backend_opens_the_connections(url: str) -> None:
    """What :func:`set_network_backend` sets is what the pool connects with (async)."""
    opened: list[str] = []

    class Recording(AsyncDeadlineBackend):
        async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
            opened.append(host)
            return await super().connect_tcp(host, port, *args, **kwargs)

    async def main() -> str:
        async with httpx.AsyncClient() as client:
            (pool,) = pools(client)
            set_network_backend(pool, Recording(network_backend(pool)))
            return (await client.get(url)).text

    assert asyncio.run(main()) == "hello"
    assert opened == ["127.0.0.1"], (
        f"{VERSIONS}: httpcore.AsyncConnectionPool._network_backend set but not used to connect"
    )


def test_install_deadlines_wraps_every_pool() -> None:
    for client in (httpx.Client(proxy="http://127.0.0.1:9"), httpx.AsyncClient(proxy="http://127.0.0.1:9")):
        install_deadlines(client)
        install_deadlines(client)  # once only
        for pool in pools(client):
            backend = network_backend(pool)
            assert isinstance(backend, DeadlineBackend | AsyncDeadlineBackend), f"{VERSIONS}: {backend!r}"
            assert not isinstance(backend._inner, DeadlineBackend | AsyncDeadlineBackend)


def test_kept_content_is_the_responses_content() -> None:
    """``httpx.Response._content`` is what ``.content``, ``.text`` and ``.json()`` read after a stream."""
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=iter([b'{"ignored": 1}'])))
    with httpx.Client(transport=transport) as client, client.stream("GET", "http://sdk.test/") as answer:
        for _chunk in answer.iter_raw():
            pass
    keep_content(answer, b'{"id": "x"}')
    where = f"{VERSIONS}: httpx.Response._content"
    assert answer.content == b'{"id": "x"}', f"{where} is not what .content reads"
    assert answer.json() == {"id": "x"}, f"{where} is not what .json() reads"
    assert answer.read() == b'{"id": "x"}', f"{where} is not what .read() returns once set"
