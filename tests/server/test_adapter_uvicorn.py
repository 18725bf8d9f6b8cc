"""The private uvicorn hooks of :mod:`paysdk.server.adapters.uvicorn` against the installed uvicorn, through
real uvicorn servers (D530, D531): a failure names the hook and the version, so a uvicorn upgrade that
moves them is seen at once instead of silently losing the drop fault, the head timeout or the end of
event streams at shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import h11
import httpx
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from paysdk.server.adapters import uvicorn as adapter
from paysdk.server.connections import KEEP_ALIVE_TIMEOUT, HeadTimeoutProtocol, uvicorn_connection_options
from paysdk.testing._ready import ServedThread, serve_in_thread

VERSION = f"uvicorn {uvicorn.__version__}"

App = Callable[[Scope, Receive, Send], Any]


def _serve(app: App, **options: Any) -> contextlib.AbstractContextManager[ServedThread]:
    return serve_in_thread(app, log_level="critical", what="uvicorn", **options)


#: Plain uvicorn (its default h11 protocol) and the server's own protocol.
PROTOCOLS = {"uvicorn": {}, "paysdk": uvicorn_connection_options(KEEP_ALIVE_TIMEOUT)}


@pytest.fixture(params=list(PROTOCOLS))
def serve(request: pytest.FixtureRequest) -> Iterator[Callable[[App], tuple[uvicorn.Server, str]]]:
    with contextlib.ExitStack() as running:

        def start(app: App) -> tuple[uvicorn.Server, str]:
            served = running.enter_context(_serve(app, **PROTOCOLS[request.param]))
            return served.server, served.url

        yield start


def test_h11_protocol_has_what_head_timeout_protocol_extends() -> None:
    """``uvicorn.protocols.http.h11_impl.H11Protocol`` and the methods the server's protocol overrides."""
    protocol = adapter.H11Protocol
    assert protocol.__module__ == "uvicorn.protocols.http.h11_impl", f"{VERSION}: H11Protocol moved"
    for method in ("connection_made", "data_received", "on_response_complete", "connection_lost", "shutdown"):
        assert callable(getattr(protocol, method, None)), f"{VERSION}: H11Protocol.{method} is gone"
    assert issubclass(HeadTimeoutProtocol, protocol)


def test_the_request_cycle_is_behind_receive(serve: Callable[[App], tuple[uvicorn.Server, str]]) -> None:
    """uvicorn's ``receive`` is bound to its request cycle, which holds ``transport`` and ``keep_alive``;
    under the server's protocol the protocol holds ``conn``, ``transport`` and ``loop``."""
    seen: dict[str, Any] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        cycle = getattr(receive, "__self__", None)
        seen["cycle"] = type(cycle).__module__ + "." + type(cycle).__qualname__
        seen["found"] = adapter.request_cycle(receive) is cycle
        seen["transport"] = hasattr(getattr(cycle, "transport", None), "abort")
        seen["keep_alive"] = getattr(cycle, "keep_alive", None)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    _server, url = serve(app)
    assert httpx.get(url, timeout=60).status_code == 204
    where = f"{VERSION}: uvicorn's receive ({seen['cycle']})"
    assert seen["found"], f"{where} is not bound to a uvicorn.protocols.http request cycle"
    assert seen["transport"], f"{where}: the cycle's transport (with abort) is gone"
    assert seen["keep_alive"] is True, f"{where}: the cycle's keep_alive is {seen['keep_alive']!r}"


def test_the_server_protocol_parts() -> None:
    """``conn``, ``transport``, ``loop`` of a connected :class:`HeadTimeoutProtocol` (uvicorn sets them)."""
    seen: dict[str, Any] = {}
    original = HeadTimeoutProtocol.connection_made

    def spy(self: HeadTimeoutProtocol, transport: asyncio.Transport) -> None:
        original(self, transport)
        seen.update(conn=self.conn, transport=self.transport, loop=self.loop)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    HeadTimeoutProtocol.connection_made = spy  # type: ignore[method-assign]
    try:
        with _serve(app, **PROTOCOLS["paysdk"]) as served:
            assert httpx.get(served.url, timeout=60).status_code == 204
    finally:
        HeadTimeoutProtocol.connection_made = original  # type: ignore[method-assign]
    assert isinstance(seen.get("conn"), h11.Connection), (
        f"{VERSION}: H11Protocol.conn is {seen.get('conn')!r}"
    )
    assert seen["transport"] is not None, f"{VERSION}: H11Protocol.transport is not set"
    assert isinstance(seen["loop"], asyncio.AbstractEventLoop), (
        f"{VERSION}: H11Protocol.loop is {seen['loop']!r}"
    )


def test_abort_connection_drops_the_socket(serve: Callable[[App], tuple[uvicorn.Server, str]]) -> None:
    aborted: list[bool] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        adapter.remember_connection(scope, receive)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"100")]})
        await send({"type": "http.response.body", "body": b"partial", "more_body": True})
        aborted.append(adapter.abort_connection(scope))
        await asyncio.sleep(0.1)

    _server, url = serve(app)
    with pytest.raises(httpx.TransportError):
        httpx.get(url, timeout=60)
    assert aborted == [True], f"{VERSION}: abort_connection found no uvicorn transport to abort"


def test_abort_connection_is_false_without_uvicorn() -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    scope: Scope = {"type": "http"}
    assert adapter.abort_connection(scope) is False
    adapter.remember_connection(scope, receive)
    assert adapter.abort_connection(scope) is False
    assert adapter.shutdown_probe(scope)() is False


def test_shutdown_probe_sees_the_server_stop(serve: Callable[[App], tuple[uvicorn.Server, str]]) -> None:
    """A stream that polls the probe ends by itself when the server is asked to stop (else uvicorn would
    cancel it at its graceful timeout, long after this test's wait)."""
    streaming = threading.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        adapter.remember_connection(scope, receive)
        stopping = adapter.shutdown_probe(scope)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"started\n", "more_body": True})
        streaming.set()
        while not stopping():  # noqa: ASYNC110 - a flag uvicorn sets, polled as the server's streams do
            await asyncio.sleep(0.02)
        await send({"type": "http.response.body", "body": b"stopped\n"})

    server, url = serve(app)
    server.config.timeout_graceful_shutdown = 600
    body: list[bytes] = []

    def read() -> None:
        with httpx.stream("GET", url, timeout=600) as answer:
            body.extend(answer.iter_bytes())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert streaming.wait(30), "the stream did not start"
    server.should_exit = True
    reader.join(60)
    assert b"".join(body) == b"started\nstopped\n", (
        f"{VERSION}: the request cycle's keep_alive was not cleared at shutdown (H11Protocol.shutdown)"
    )


def test_the_server_protocol_keeps_the_cycle_behind_wrappers() -> None:
    """Under the server's protocol, uvicorn's ``receive`` is in the scope before any ASGI middleware, so
    a wrapper that replaces ``receive`` (a recording or tracing layer) does not hide the cycle
    (``H11Protocol.app``, wrapped by ``keep_connection_in_scope``)."""
    aborted: list[bool] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        adapter.remember_connection(scope, receive)  # what the server's middleware does: kept as it was
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"100")]})
        await send({"type": "http.response.body", "body": b"partial", "more_body": True})
        aborted.append(adapter.abort_connection(scope))
        await asyncio.sleep(0.1)

    async def wrapper(scope: Scope, receive: Receive, send: Send) -> None:
        async def wrapped_receive() -> Any:
            return await receive()

        await app(scope, wrapped_receive, send)

    with _serve(wrapper, **PROTOCOLS["paysdk"]) as served, pytest.raises(httpx.TransportError):
        httpx.get(served.url, timeout=60)
    assert aborted == [True], f"{VERSION}: H11Protocol.app is not what uvicorn runs each request with"


def test_a_request_to_the_server_leaves_no_reference_cycle(
    serve: Callable[[App], tuple[uvicorn.Server, str]], tmp_path: Path
) -> None:
    """Keeping uvicorn's ``receive`` in the scope must not make a reference cycle of every request (D769):
    with the collector off, the request cycle of a ``POST /transactions`` to the real server is freed once
    its connection closes (else about ten objects a request wait for the collector, whose collections were
    ~15% of the server's CPU under load)."""
    from paysdk.server import create_app

    app = create_app(f"sqlite:///{tmp_path / 'cycle.db'}", start_ticker=False)
    cycles: list[weakref.ref[Any]] = []

    async def watched(scope: Scope, receive: Receive, send: Send) -> None:
        owner = getattr(receive, "__self__", None)
        if scope["type"] == "http" and owner is not None:
            cycles.append(weakref.ref(owner))
        await app(scope, receive, send)

    _server, url = serve(watched)
    with httpx.Client(base_url=url, timeout=60, headers={"Connection": "close"}) as client:
        token = client.post("/_sandbox/clients", json={"slug": "cycle-store"}).json()["sandboxToken"]
        gc.collect()
        gc.disable()
        try:
            cycles.clear()
            answer = client.post(
                "/transactions",
                headers={"Authorization": token},
                json={"amount": 10.5, "userId": "+50255555555", "channel": "wa", "client": "cycle-store"},
            )
            assert answer.status_code == 200, answer.text
            assert len(cycles) == 1
            deadline = time.monotonic() + 60  # reached only when the cycle is kept: generous under load
            while cycles[0]() is not None and time.monotonic() < deadline:
                time.sleep(0.01)
            freed = cycles[0]() is None
        finally:
            gc.enable()
    assert freed, f"{VERSION}: the request cycle of a served request outlived it (a reference cycle)"
