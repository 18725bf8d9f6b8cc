"""Helpers of the cardholder upload tests: an operator's token, partners, files (csv and xlsx), uploads
and the progress stream parsed (D186-D188)."""

from __future__ import annotations

import base64
import io
import json
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import nacl.signing

from paysdk._jwt import sign_merchant
from paysdk.contracts.sandbox import SandboxClient

JSON_TYPE = {"Content-Type": "application/json"}
CMS = "/cms/rest"
HEADER = ("externalId", "username", "email", "firstName", "lastName", "phone", "issueCard", "cardAlias")


@dataclass(frozen=True)
class Event:
    """One parsed event of the stream."""

    id: int
    event: str
    data: dict[str, Any]


def parse_events(text: str) -> list[Event]:
    """The events of an event-stream body (comments and ``retry`` left out)."""
    events: list[Event] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        if "event" in fields:
            events.append(Event(int(fields["id"]), fields["event"], json.loads(fields["data"])))
    return events


def person(index: int, *, prefix: str = "", card: bool = False) -> list[object]:
    """A valid row for ``index``: externalId ``E<index>``, username ``u<index>`` ..."""
    name = f"{prefix}u{index}"
    row: list[object] = [
        f"{prefix}E{index}",
        name,
        f"{name}@example.com",
        "Ana",
        f"Lima {index}",
        "",
        "yes" if card else "",
        f"Card {index}" if card else "",
    ]
    return row


def csv_file(rows: Sequence[Sequence[object]], header: Sequence[str] = HEADER) -> bytes:
    """A CSV file (CRLF, quoted where needed) of ``header`` then ``rows``."""
    import csv

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    for row in rows:
        writer.writerow(row)
    return buffer.getvalue().encode()


def xlsx_file(rows: Sequence[Sequence[object]], header: Sequence[str] = HEADER) -> bytes:
    """An xlsx workbook whose first worksheet holds ``header`` then ``rows``."""
    import xlsxwriter

    buffer = io.BytesIO()
    workbook = xlsxwriter.Workbook(buffer, {"in_memory": True, "constant_memory": True})
    sheet = workbook.add_worksheet("Cardholders")
    sheet.write_row(0, 0, list(header))
    for index, row in enumerate(rows, 1):
        for column, value in enumerate(row):
            if isinstance(value, str) and value:
                sheet.write_string(index, column, value)  # text, even "=...": never a formula
            elif value != "":
                sheet.write(index, column, value)
    workbook.close()
    return buffer.getvalue()


class Backoffice:
    """One merchant's backoffice driven through the HTTP API (in process or over a socket)."""

    def __init__(self, client: httpx.AsyncClient, merchant: SandboxClient) -> None:
        self.client = client
        self.merchant = merchant
        assert merchant.signing_private_key is not None
        self.key = nacl.signing.SigningKey(base64.b64decode(merchant.signing_private_key))
        self._token: str | None = None

    async def token(self) -> str:
        """An operator's user access token (operator created through the control plane, D185)."""
        if self._token is None:
            email = f"op-{secrets.token_hex(4)}@example.com"
            password = "operator password 1"
            made = await self.client.post(
                "/_sandbox/backoffice/operators",
                content=json.dumps({"merchant": self.merchant.slug, "email": email, "password": password}),
                headers=JSON_TYPE,
            )
            assert made.status_code == 201, made.text
            signature = sign_merchant(self.key, self.merchant.slug)
            app = await self.client.post(
                CMS + "/app/auth/login",
                content=json.dumps({"merchant": self.merchant.slug, "signature": signature}),
                headers=JSON_TYPE,
            )
            assert app.status_code == 200, app.text
            app_token = app.json()["data"]["accessToken"]
            user = await self.client.post(
                CMS + "/app/users/login",
                content=json.dumps({"email": email, "password": password, "accessTokenTtl": 86400}),
                headers={**JSON_TYPE, "Authorization": f"Bearer {app_token}"},
            )
            assert user.status_code == 200, user.text
            self._token = user.json()["data"]["accessToken"]
        return self._token

    async def partner(self, partner_id: str | None = None) -> str:
        """A new partner of the merchant."""
        body: dict[str, Any] = {"merchant": self.merchant.slug, "name": "Acme payroll"}
        if partner_id:
            body["partnerId"] = partner_id
        made = await self.client.post(
            "/_sandbox/backoffice/partners", content=json.dumps(body), headers=JSON_TYPE
        )
        assert made.status_code == 201, made.text
        found: str = made.json()["partnerId"]
        return found

    async def upload(
        self, partner: str, content: bytes, name: str = "people.csv", token: str | None = None
    ) -> httpx.Response:
        """``POST .../cardholders/upload`` with ``content`` as the part ``file`` named ``name``."""
        return await self.client.post(
            f"{CMS}/app/partners/{partner}/cardholders/upload",
            files={"file": (name, content, "application/octet-stream")},
            headers={"Authorization": f"Bearer {token or await self.token()}"},
        )

    async def progress_raw(
        self, partner: str, batch: str, last_event_id: int | None = None, token: str | None = None
    ) -> httpx.Response:
        """The whole progress stream (the batch must finish for an in-process call to return)."""
        headers = {"Authorization": f"Bearer {token or await self.token()}"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        return await self.client.get(
            f"{CMS}/app/partners/{partner}/cardholders/batch/{batch}/progress", headers=headers, timeout=120
        )

    async def progress(self, partner: str, batch: str, last_event_id: int | None = None) -> list[Event]:
        response = await self.progress_raw(partner, batch, last_event_id)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/event-stream")
        return parse_events(response.text)


def cardholders(db_url: str, merchant: str) -> dict[str, int]:
    """username -> how many wallet users of ``merchant`` have it, read from the database itself."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sqlalchemy.text(
                    "SELECT username, COUNT(*) FROM wallet_users WHERE merchant = :m GROUP BY username"
                ),
                {"m": merchant},
            ).all()
    finally:
        engine.dispose()
    return {row[0]: row[1] for row in rows}


def done(events: Sequence[Event]) -> dict[str, Any]:
    """The ``done`` event's data (the last event)."""
    assert events, "no events"
    assert events[-1].event == "done", events[-3:]
    return events[-1].data


def failures(events: Sequence[Event]) -> dict[int, tuple[str, str]]:
    """row -> (field, message) of the ``row-failed`` events."""
    return {e.data["row"]: (e.data["field"], e.data["message"]) for e in events if e.event == "row-failed"}


def progress_path(partner: str, batch: str) -> str:
    """The progress stream's path of ``batch``."""
    return f"{CMS}/app/partners/{partner}/cardholders/batch/{batch}/progress"


async def read_stream(
    client: httpx.AsyncClient, path: str, token: str, last_event_id: int | None = None
) -> tuple[list[Event], bool, list[float]]:
    """Read the stream at ``path`` until it ends or is cut: ``(events, ended cleanly, arrival times)``."""
    headers = {"Authorization": f"Bearer {token}"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    buffer = ""
    events: list[Event] = []
    times: list[float] = []
    clean = True
    try:
        async with client.stream("GET", path, headers=headers, timeout=60) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            async for text in response.aiter_text():
                buffer += text
                while "\n\n" in buffer:
                    block, buffer = buffer.split("\n\n", 1)
                    parsed = parse_events(block + "\n\n")
                    events.extend(parsed)
                    times.extend(time.time() for _ in parsed)
    except (httpx.RemoteProtocolError, httpx.ReadError):
        clean = False
    return events, clean, times


def check_complete(events: Sequence[Event], rows: int) -> None:
    """Every event once, in order, ending with ``done`` for ``rows`` rows, one in 50 failed (the rows of
    the live tests)."""
    assert [e.id for e in events] == list(range(1, len(events) + 1)), "lost or repeated events"
    final = done(events)
    assert final["processed"] == rows
    assert final["status"] == "completed"
    assert final["failed"] == rows // 50 == sum(1 for e in events if e.event == "row-failed")
    processed = [e.data["processed"] for e in events if e.event == "progress"]
    assert processed == sorted(processed)
    assert processed[-1] == rows
