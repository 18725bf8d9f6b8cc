"""End-to-end fixtures: a merchant's callback receiver built on ``paysdk.callbacks``, and Chromium
(``browser``: one per test module; ``page``: a fresh browser context per test)."""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from paysdk.callbacks import CallbackReceiver, CallbackResult, MemoryDedupStore
from paysdk.contracts.callbacks import CallbackPayload

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
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
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

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/callbacks"

    def _process(self, payload: CallbackPayload) -> None:
        with self._lock:
            self.processed.append(payload)

    def wait_for(self, count: int, timeout: float = 15.0) -> list[CallbackPayload]:
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
