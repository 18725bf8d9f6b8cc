"""End-to-end fixtures: a merchant's callback receiver built on ``paysdk.callbacks``, Chromium
(``browser``: one per test module; ``page``: a fresh browser context per test), and the SDK against the
real server in both client kinds (``kind``: ``async-asgi`` in process, ``sync-socket`` over uvicorn;
``make(**options)`` builds a client of that kind; ``call`` awaits what needs awaiting)."""

from __future__ import annotations

import inspect
import secrets
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, sync_playwright

import paysdk
from openapi_conformance import checked_server_recorder as server_recorder
from paysdk.callbacks import CallbackReceiver, CallbackResult, MemoryDedupStore
from paysdk.contracts.callbacks import CallbackPayload

__all__ = ["server_recorder"]  # every public exchange of a test checked against /openapi.json (D133)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class MerchantReceiver:
    """A merchant backend's callback endpoint: verifies the static header, deduplicates, processes once."""

    def __init__(self, header_name: str, header_value: str) -> None:
        self.header_value = header_value
        self.receiver = CallbackReceiver(header_name, [header_value], store=MemoryDedupStore())
        self.processed: list[CallbackPayload] = []
        self.results: list[CallbackResult] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                result = outer.receiver.handle(dict(self.headers.items()), body, outer._process)
                with outer._lock:
                    outer.results.append(result)
                self.send_response(result.status_code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # port 0: the system picks it
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/callbacks"

    def _process(self, payload: CallbackPayload) -> None:
        with self._lock:
            self.processed.append(payload)

    def wait_for(self, count: int, timeout: float = 60.0) -> list[CallbackPayload]:
        deadline = time.monotonic() + timeout
        while len(self.processed) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} processed callbacks, got {len(self.processed)}")
            time.sleep(0.02)
        return list(self.processed)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def merchant_receiver() -> Iterator[MerchantReceiver]:
    """A running :class:`MerchantReceiver` with a fresh secret header value."""
    receiver = MerchantReceiver("X-Callback-Token", secrets.token_hex(16))
    try:
        yield receiver
    finally:
        receiver.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), "Chromium is missing: run `make services` (apt-get install chromium)"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    try:
        yield context.new_page()
    finally:
        context.close()


T = TypeVar("T")
AnyClient = paysdk.Client | paysdk.AsyncClient


async def call(value: T | Any) -> Any:
    """Await an async client's result; pass a sync client's result through."""
    return await value if inspect.isawaitable(value) else value


@pytest.fixture(params=["async-asgi", "sync-socket"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def environment(kind: str, db_url: str, request: pytest.FixtureRequest) -> paysdk.Environment:
    if kind == "async-asgi":
        return paysdk.Environment.local("http://testserver")
    return paysdk.Environment.local(request.getfixturevalue("live_server"))


class Maker:
    def __init__(self, kind: str, request: pytest.FixtureRequest, environment: paysdk.Environment) -> None:
        self.kind, self.request, self.environment = kind, request, environment
        self.made: list[AnyClient] = []

    def __call__(self, **options: Any) -> Any:
        client: AnyClient
        if self.kind == "async-asgi":
            app: FastAPI = self.request.getfixturevalue("app")
            client = paysdk.AsyncClient(
                environment=self.environment, transport=httpx.ASGITransport(app=app), **options
            )
        else:
            client = paysdk.Client(environment=self.environment, **options)
        self.made.append(client)
        return client


@pytest.fixture
async def make(
    kind: str, request: pytest.FixtureRequest, environment: paysdk.Environment
) -> AsyncIterator[Maker]:
    maker = Maker(kind, request, environment)
    yield maker
    for client in maker.made:
        if isinstance(client, paysdk.AsyncClient):
            await client.aclose()
        else:
            client.close()
