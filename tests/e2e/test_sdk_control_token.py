"""The SDK sends the control token (D270-D276): ``Environment.local(url, control_token=...)`` or
``PAYSDK_CONTROL_TOKEN``; ``client.sandbox`` sends it in ``Paysdk-Control-Token`` on every control call and
nowhere else; it never shows in a repr, a log line or an error. Async in process against an app built for
an exposed bind, sync over a real socket against ``paysdk serve --host 0.0.0.0``."""

from __future__ import annotations

import inspect
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import paysdk
from paysdk.server import create_app
from paysdk.server.control_token import control_token_digest
from paysdk.testing._ready import free_port, http_ok, wait_ready

HEADER = "Paysdk-Control-Token"
TOKEN = "sdk-control-5e1d7c2a9b4f4e30"


class _Recorder(httpx.AsyncBaseTransport):
    """An ASGI transport that records each request's path and control-token header."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.seen: list[tuple[str, str | None]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append((request.url.path, request.headers.get(HEADER)))
        return await self.inner.handle_async_request(request)


def test_environment_takes_the_token_and_hides_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAYSDK_CONTROL_TOKEN", raising=False)
    assert paysdk.Environment.local().control_token is None
    env = paysdk.Environment.local("http://10.0.0.5:8000", control_token=TOKEN)
    assert isinstance(env.control_token, paysdk.Secret)
    assert env.control_token.reveal() == TOKEN
    assert TOKEN not in repr(env)
    assert TOKEN not in str(env)
    assert env == paysdk.Environment.local("http://10.0.0.5:8000")  # not part of equality
    monkeypatch.setenv("PAYSDK_CONTROL_TOKEN", TOKEN)
    from_env = paysdk.Environment.local("http://10.0.0.5:8000")
    assert from_env.control_token is not None
    assert from_env.control_token.reveal() == TOKEN
    assert paysdk.Environment.local(control_token="other").control_token == "other"  # given wins
    made = paysdk.Environment.from_env({"PAYSDK_BASE_URL": "http://h:1", "PAYSDK_CONTROL_TOKEN": TOKEN})
    assert made.control_token == TOKEN
    with pytest.raises(paysdk.ValidationError, match="control_token"):
        paysdk.Environment.local(control_token="   ")


async def test_async_sandbox_sends_the_token_on_control_calls_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(
        f"sqlite:///{tmp_path / 'sdk.db'}",
        start_ticker=False,
        control_token_digest=control_token_digest(TOKEN),
        control_plane_exposed=True,
    )
    recorder = _Recorder(httpx.ASGITransport(app=app))
    env = paysdk.Environment.local("http://127.0.0.1:8000", control_token=TOKEN)
    caplog.set_level(logging.DEBUG, logger="paysdk")
    async with paysdk.AsyncClient(environment=env, transport=recorder, max_retries=0) as client:
        await client.sandbox.reset()
        created = await client.sandbox.create_client(slug="acme")
        assert created.sandbox_token != "****"
        reread = await client.sandbox.get_client("acme")
        assert reread.sandbox_token == "****"  # an exposed bind masks re-reads
        assert reread.callback_header_value == "****"
        revealed = await client.sandbox.reveal_client("acme")
        assert revealed.sandbox_token == created.sandbox_token
        assert revealed.production_token == created.production_token
        assert revealed.callback_header_value == created.callback_header_value
        assert (await client.sandbox.processor.secret()).secret == "****"
        await client.sandbox.clock()
        merchant = client.with_options(merchant_token=revealed.sandbox_token)
        await merchant.payment_links.create(amount=10, user_id="+50255550123", channel="wa", client="acme")
    control = [value for path, value in recorder.seen if path.startswith("/_sandbox")]
    public = [value for path, value in recorder.seen if not path.startswith("/_sandbox")]
    assert len(control) >= 6
    assert control == [TOKEN] * len(control)
    assert public
    assert public == [None] * len(public)  # never sent off the control plane
    assert TOKEN not in caplog.text

    wrong = paysdk.Environment.local("http://127.0.0.1:8000", control_token="wrong-token-value")
    async with paysdk.AsyncClient(environment=wrong, transport=recorder, max_retries=0) as client:
        with pytest.raises(paysdk.APIError) as refused:
            await client.sandbox.reset()
    assert refused.value.status_code == 403
    assert HEADER in str(refused.value)
    assert "wrong-token-value" not in repr(refused.value) + str(refused.value.body)
    none = paysdk.Environment.local("http://127.0.0.1:8000", control_token=None)
    async with paysdk.AsyncClient(environment=none, transport=recorder, max_retries=0) as client:
        with pytest.raises(paysdk.APIError) as missing:
            await client.sandbox.create_client(slug="intruder")
        assert missing.value.status_code == 401
    async with paysdk.AsyncClient(environment=env, transport=recorder, max_retries=0) as client:
        with pytest.raises(paysdk.NotFoundError):
            await client.sandbox.get_client("intruder")  # the refused create changed nothing


@pytest.fixture
def exposed_server(tmp_path: Path) -> Iterator[str]:
    """``paysdk serve --host 0.0.0.0`` with ``PAYSDK_CONTROL_TOKEN`` set, reached through 127.0.0.1."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYSDK_")}
    env["PAYSDK_CONTROL_TOKEN"] = TOKEN
    env["PAYSDK_CONFIG_DIR"] = str(tmp_path / "config")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "paysdk_cli",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
            "--db",
            f"sqlite:///{tmp_path / 'sync.db'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(http_ok(url + "/_sandbox/health", any_status=True), what="paysdk serve", process=proc)
        yield url
    finally:
        proc.send_signal(2)
        proc.communicate(timeout=30)


async def _call(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


@pytest.mark.covers("sandbox.reveal_client", "sandbox.processor.reveal_secret")
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_sandbox_over_a_socket_with_the_token_from_the_environment(
    kind: str, exposed_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAYSDK_CONTROL_TOKEN", TOKEN)
    cls: Any = paysdk.Client if kind == "sync" else paysdk.AsyncClient
    client = cls(environment=paysdk.Environment.local(exposed_server), max_retries=0)
    try:
        created = await _call(client.sandbox.create_client(slug="acme"))
        assert (await _call(client.sandbox.get_client("acme"))).production_token == "****"
        revealed = await _call(client.sandbox.reveal_client("acme"))
        assert revealed.production_token == created.production_token
        assert revealed.callback_header_value == created.callback_header_value
        assert (await _call(client.sandbox.processor.secret())).secret == "****"
        secret = (await _call(client.sandbox.processor.reveal_secret())).secret
        assert secret.startswith("psec_")
        assert TOKEN not in repr(client)
        await _call(client.sandbox.reset())
        with pytest.raises(paysdk.NotFoundError):
            await _call(client.sandbox.reveal_client("acme"))
    finally:
        await _call(client.close() if kind == "sync" else client.aclose())
    monkeypatch.delenv("PAYSDK_CONTROL_TOKEN")
    client = cls(environment=paysdk.Environment.local(exposed_server), max_retries=0)
    try:
        with pytest.raises(paysdk.APIError) as refused:
            await _call(client.sandbox.reset())
        assert refused.value.status_code == 401
    finally:
        await _call(client.close() if kind == "sync" else client.aclose())
