"""Fixtures of the SDK tests: both clients behind one harness, fake sleep, no network."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

import paysdk

from .support import TOKEN, keyed_environment


@dataclass
class Harness:
    """One client (sync or async) plus a recorder of the sleeps it asked for."""

    kind: str
    client: Any
    sleeps: list[float] = field(default_factory=list)

    def call(self, fn: Callable[[Any], Any]) -> Any:
        """Run ``fn(client)``; for the async client the coroutine is awaited on a fresh loop."""
        result = fn(self.client)
        if inspect.iscoroutine(result):
            return asyncio.run(result)
        return result

    def close(self) -> None:
        if self.kind == "async":
            asyncio.run(self.client.aclose())
        else:
            self.client.close()


HarnessFactory = Callable[..., Harness]


@pytest.fixture(params=["sync", "async"])
def make_harness(request: pytest.FixtureRequest) -> Iterator[HarnessFactory]:
    """A factory of harnesses for the parametrized client kind.

    ``handler`` (a MockTransport handler) is optional: without it the default transport is used, which
    respx can intercept.
    """
    kind: str = request.param
    made: list[Harness] = []

    def factory(
        handler: Callable[[httpx.Request], httpx.Response] | None = None,
        *,
        environment: paysdk.Environment | None = None,
        token: str | None = TOKEN,
        **options: Any,
    ) -> Harness:
        transport = httpx.MockTransport(handler) if handler is not None else None
        env = environment or keyed_environment()
        harness = Harness(kind=kind, client=None)
        if kind == "async":
            harness.client = paysdk.AsyncClient(token, env, transport=transport, **options)

            async def fake_async_sleep(delay: float) -> None:
                harness.sleeps.append(delay)

            harness.client._sleep = fake_async_sleep
        else:
            harness.client = paysdk.Client(token, env, transport=transport, **options)
            harness.client._sleep = harness.sleeps.append
        harness.client._random = lambda: 0.0  # no jitter: delays are predictable
        made.append(harness)
        return harness

    yield factory
    for harness in made:
        harness.close()
