"""The attempt deadline at the socket: every read, write and connect of the SDK's own pool ends by it.

httpx's timeouts bound each socket operation, not an attempt: a peer that sends one byte a second (in
the headers or the body) never trips a 30 s read timeout. The client shells set the monotonic moment
an attempt must be over with :func:`attempt_deadline` (a context variable, so concurrent calls in
threads or tasks each have their own), and the network backend wrappers below clip the timeout of
every socket operation to the time left, raising httpcore's ``ReadTimeout``/``WriteTimeout``/
``ConnectTimeout`` (httpx maps them to its own) once it has passed.

:func:`install_deadlines` wraps the network backends of the connection pools of an httpx client the
SDK created itself (its default transport and any proxy mounts); a pool passed in as ``http_client``
or a ``transport`` is left alone, and there the deadline is checked between chunks of the answer only.
httpx has no public hook for a network backend, so this reads the pools' private attributes, with
``getattr`` so a future httpx degrades to the chunk checks instead of failing; the socket tests in
``tests/sdk/test_sdk_limits.py`` fail if it stops working.
"""

from __future__ import annotations

import contextlib
import ssl
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

__all__ = [
    "AsyncDeadlineBackend",
    "DeadlineBackend",
    "attempt_deadline",
    "clip_timeout",
    "install_deadlines",
]

#: The monotonic time by which the current attempt must be over (``None``: no deadline).
_DEADLINE: ContextVar[float | None] = ContextVar("paysdk_attempt_deadline", default=None)

_SocketOptions = Iterable[Any] | None


@contextlib.contextmanager
def attempt_deadline(at: float) -> Iterator[None]:
    """Within the block, socket operations of the SDK's pools end by ``at`` (``time.monotonic()``)."""
    token = _DEADLINE.set(at)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def clip_timeout(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` shortened to the time left before the attempt's deadline; ``error`` once it passed."""
    at = _DEADLINE.get()
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise error("the attempt's deadline passed")
    return left if timeout is None else min(timeout, left)


def install_deadlines(client: httpx.Client | httpx.AsyncClient) -> None:
    """Wrap the network backend of every connection pool of ``client`` (see the module docstring)."""
    transports = [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if isinstance(backend, httpcore.AsyncNetworkBackend) and not isinstance(
            backend, AsyncDeadlineBackend
        ):
            pool._network_backend = AsyncDeadlineBackend(backend)  # type: ignore[union-attr]
        elif isinstance(backend, httpcore.NetworkBackend) and not isinstance(backend, DeadlineBackend):
            pool._network_backend = DeadlineBackend(backend)  # type: ignore[union-attr]


# unasync: begin
class AsyncDeadlineStream(httpcore.AsyncNetworkStream):
    """A network stream whose every operation ends by the attempt's deadline."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return await self._inner.read(max_bytes, clip_timeout(timeout, httpcore.ReadTimeout))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._inner.write(buffer, clip_timeout(timeout, httpcore.WriteTimeout))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> AsyncDeadlineStream:
        clipped = clip_timeout(timeout, httpcore.ConnectTimeout)
        return AsyncDeadlineStream(await self._inner.start_tls(ssl_context, server_hostname, clipped))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class AsyncDeadlineBackend(httpcore.AsyncNetworkBackend):
    """A network backend whose connections end every operation by the attempt's deadline."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: _SocketOptions = None,
    ) -> AsyncDeadlineStream:
        clipped = clip_timeout(timeout, httpcore.ConnectTimeout)
        stream = await self._inner.connect_tcp(host, port, clipped, local_address, socket_options)
        return AsyncDeadlineStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109
        socket_options: _SocketOptions = None,
    ) -> AsyncDeadlineStream:
        clipped = clip_timeout(timeout, httpcore.ConnectTimeout)
        return AsyncDeadlineStream(await self._inner.connect_unix_socket(path, clipped, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every operation ends by the attempt's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, clip_timeout(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, clip_timeout(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> DeadlineStream:
        clipped = clip_timeout(timeout, httpcore.ConnectTimeout)
        return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, clipped))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """A network backend whose connections end every operation by the attempt's deadline."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: _SocketOptions = None,
    ) -> DeadlineStream:
        clipped = clip_timeout(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, clipped, local_address, socket_options)
        return DeadlineStream(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: _SocketOptions = None,
    ) -> DeadlineStream:
        clipped = clip_timeout(timeout, httpcore.ConnectTimeout)
        return DeadlineStream(self._inner.connect_unix_socket(path, clipped, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


# unasync: generated end
