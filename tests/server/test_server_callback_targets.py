"""Callback URLs never point at link-local or cloud-metadata addresses; loopback stays allowed (8.13, D97)."""

from __future__ import annotations

import socket
import time
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from server_helpers import JSON_TYPE, assert_error, attempts, create_link, dumps, pay
from sqlalchemy import update

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import create_app
from paysdk.server.core_tables import ClientRow

REFUSED = [
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.170.2/v2/credentials",
    "https://[fd00:ec2::254]/latest/",
    "http://[fe80::1]:8080/cb",
    "http://[::ffff:169.254.169.254]/",
    "http://2852039166/",  # 169.254.169.254 as one number
    "http://0xa9.0xfe.0xa9.0xfe/",
    "http://100.100.100.200/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.google.internal./",
]
ALLOWED = [
    "http://127.0.0.1:9/cb",
    "http://localhost:9/cb",
    "http://[::1]:9/cb",
    "http://10.0.0.5/cb",
    "https://shop.example/cb",
]


@pytest.mark.parametrize("url", REFUSED)
async def test_link_local_and_metadata_callback_urls_are_refused(
    asgi_client: httpx.AsyncClient, url: str
) -> None:
    answer = await asgi_client.post(
        "/_sandbox/clients", content=dumps({"callbackUrl": url}), headers=JSON_TYPE
    )
    data = assert_error(answer, 409, 5000, "callbackUrl")
    assert "metadata" in data["details"][0]["message"]


async def test_loopback_and_private_callback_urls_stay_allowed(asgi_client: httpx.AsyncClient) -> None:
    for url in ALLOWED:
        answer = await asgi_client.post(
            "/_sandbox/clients", content=dumps({"callbackUrl": url}), headers=JSON_TYPE
        )
        assert answer.status_code == 201, (url, answer.text)


async def test_delivery_refuses_a_stored_url_with_a_forbidden_address(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    """A client registered before the check (a database of an older version) is refused at delivery."""
    merchant = await merchant_factory(callback_url=callback_sink.url)
    with app.state.paysdk.db.session() as session:
        session.execute(
            update(ClientRow)
            .where(ClientRow.slug == merchant.slug)
            .values(callback_url="http://169.254.169.254/latest/meta-data/")
        )
    link = await create_link(asgi_client, merchant)
    await pay(asgi_client, link["uid"], "4242424242424242")
    [attempt] = await attempts(asgi_client, link["uid"])
    assert attempt.status_code is None
    assert attempt.error is not None
    assert attempt.error.startswith("refused: callbackUrl points at a link-local or cloud metadata address")
    assert not attempt.final  # retried on schedule like any failed attempt
    assert callback_sink.received == []


async def test_delivery_resolves_a_name_and_refuses_a_metadata_answer(
    asgi_client: httpx.AsyncClient,
    merchant_factory: Any,
    callback_sink: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A name is resolved at delivery: one that resolves to a metadata address gets no connection; one
    that resolves to loopback is delivered."""
    real = socket.getaddrinfo
    names = {"metadata-alias.test": "169.254.169.254", "receiver-alias.test": "127.0.0.1"}

    def fake_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        return real(names.get(name, name), *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    port = httpx.URL(callback_sink.url).port
    hostile = await merchant_factory(callback_url=f"http://metadata-alias.test:{port}/callbacks")
    link = await create_link(asgi_client, hostile)
    await pay(asgi_client, link["uid"], "4242424242424242")
    [attempt] = await attempts(asgi_client, link["uid"])
    assert attempt.error == (
        "refused: callbackUrl resolves to 169.254.169.254, a link-local or cloud metadata address (D97)"
    )
    assert callback_sink.received == []

    friendly = await merchant_factory(callback_url=f"http://receiver-alias.test:{port}/callbacks")
    link = await create_link(asgi_client, friendly)
    await pay(asgi_client, link["uid"], "4242424242424242")
    [attempt] = await attempts(asgi_client, link["uid"])
    assert attempt.status_code == 200
    assert len(callback_sink.received) == 1


async def test_a_name_that_does_not_resolve_in_time_is_a_failed_attempt(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lookup at delivery is bounded by the callback timeout (a hanging resolver holds nothing)."""
    real = socket.getaddrinfo

    def slow_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("slow-dns.test", b"slow-dns.test"):
            time.sleep(3)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow_getaddrinfo)
    app = create_app(db_url, start_ticker=False, callback_timeout=0.5)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver"
        ) as client:
            created = await client.post(
                "/_sandbox/clients",
                content=dumps({"callbackUrl": "http://slow-dns.test/cb"}),
                headers=JSON_TYPE,
            )
            merchant = SandboxClient.model_validate(created.json())
            link = await create_link(client, merchant)
            await pay(client, link["uid"], "4242424242424242")
            [attempt] = await attempts(client, link["uid"])
    finally:
        app.state.paysdk.db.dispose()
    assert attempt.error == "refused: callbackUrl could not be resolved within 0.5 s"
    assert attempt.next_attempt_at is not None  # retried on schedule
