"""The SDK's one reach into httpx's and httpcore's private attributes (D530): the network backend of
the connection pools of an httpx client, and the content of a response the SDK read itself.

Written against httpx 0.27 to 0.28.1 and httpcore 1.0.x (1.0.9) (``pyproject.toml``: ``httpx>=0.27,<0.29``,
``httpcore>=1.0,<1.1``). ``tests/sdk/test_adapter_httpcore.py`` fails, naming the hook and the installed
versions, when a private part used here is gone or changed.

Hooks (httpx has no public way to set a pool's network backend):

- ``httpx.Client._transport`` / ``httpx.AsyncClient._transport``: the client's default transport, and
  ``_mounts`` (pattern to transport): its proxy and mounted transports;
- ``httpx.HTTPTransport._pool`` / ``httpx.AsyncHTTPTransport._pool``: the transport's httpcore pool;
- ``httpcore.ConnectionPool._network_backend`` / ``httpcore.AsyncConnectionPool._network_backend``: the
  backend the pool opens its connections with (read when a connection is opened, so replacing it
  before the first request wraps every connection).

- ``httpx.Response._content``: what :meth:`httpx.Response.read` sets; :func:`keep_content` sets it on a
  response the SDK streamed and closed itself (with its size cap and deadline, D61), so ``.content``,
  ``.text`` and ``.json()`` work without building a new response (which parses every header again).

Every pool read is a ``getattr`` with a default: an httpx or httpcore that moved them yields no pools, and the
SDK falls back to checking the attempt deadline between chunks of the answer (:mod:`paysdk._transport`).
"""

from __future__ import annotations

from typing import Any

import httpx

__all__ = ["keep_content", "network_backend", "pools", "set_network_backend"]


def pools(client: httpx.Client | httpx.AsyncClient) -> list[Any]:
    """The httpcore connection pools of ``client``'s own transports (its default one and its mounts)."""
    transports = [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]
    found = (getattr(transport, "_pool", None) for transport in transports)
    return [pool for pool in found if pool is not None]


def network_backend(pool: Any) -> Any:
    """The network backend ``pool`` opens its connections with (``None`` if it has none)."""
    return getattr(pool, "_network_backend", None)


def set_network_backend(pool: Any, backend: Any) -> None:
    """Make ``pool`` open its next connections with ``backend``."""
    pool._network_backend = backend


def keep_content(response: httpx.Response, content: bytes) -> None:
    """Keep ``content`` (decoded) on a streamed and closed ``response`` as if it had been read whole."""
    response._content = content
