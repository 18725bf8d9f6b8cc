"""The terminal family on the reference server (spec 1, 4.4; D183, D190-D192, D230-D233), in process on
SQLite and PostgreSQL: every error of ``POST``/``PATCH /terminal-payment`` names its field and changes
nothing, ``installments`` is refused, and the shared transition call (``apply_processor_event``) applies
each event id at most once and records what it refused. Every public exchange is checked against
``/openapi.json`` at the end of each test (D133)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from server_helpers import JSON_TYPE, assert_error, auth, body, dumps
from sqlalchemy import func, select

from openapi_conformance import checked_server_recorder as server_recorder
from paysdk.contracts.sandbox import SandboxClient
from paysdk.server.services import terminal
from paysdk.server.terminal_tables import ProcessorEventRow, TerminalPaymentRow

__all__ = ["server_recorder"]  # every public answer checked against /openapi.json (D133)

VISA = "4242424242424242"
P = "/terminal-payment"


def payment_body(merchant: SandboxClient, **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "amount": 25,
        "currency": merchant.currencies[0],
        "terminalId": "POS-7",
        "card": {"number": VISA, "expiryMonth": 12, "expiryYear": 2030, "cvv": "123"},
    }
    base.update(overrides)
    return {key: value for key, value in base.items() if value is not ...}


async def create(
    client: httpx.AsyncClient, merchant: SandboxClient, status: int = 201, **overrides: Any
) -> httpx.Response:
    response = await client.post(
        P, content=dumps(payment_body(merchant, **overrides)), headers=auth(merchant)
    )
    assert response.status_code == status, response.text
    return response


def count(app: FastAPI) -> int:
    with app.state.paysdk.db.session() as session:
        return int(session.scalar(select(func.count()).select_from(TerminalPaymentRow)) or 0)


async def test_create_answers_the_payment_and_the_card_never_shows(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    data = body(await create(asgi_client, merchant, reference="R1", captureMode="automatic"))
    assert data["status"] == "captured"
    assert data["amount"] == data["capturedAmount"] == 25
    assert data["cardLast4"] == "4242"
    assert VISA not in str(data)
    assert "123" not in str(data.get("card"))
    bearer = await asgi_client.post(
        P, content=dumps(payment_body(merchant)), headers=auth(merchant, bearer=True)
    )
    assert bearer.status_code == 201


@pytest.mark.parametrize(
    ("overrides", "status", "own_code", "field"),
    [
        ({"installments": None}, 409, 5000, "installments"),
        ({"installments": 3}, 409, 5000, "installments"),
        ({"amount": ...}, 409, 5000, "amount"),
        ({"amount": "10.00"}, 409, 5000, "amount"),
        ({"amount": 1.234}, 409, 5000, "amount"),
        ({"amount": 0}, 400, 2003, "amount"),
        ({"amount": 10**9}, 400, 2003, "amount"),
        ({"currency": ...}, 409, 5000, "currency"),
        ({"currency": "EUR"}, 409, 5000, "currency"),
        ({"terminalId": ...}, 409, 5000, "terminalId"),
        ({"terminalId": ""}, 409, 5000, "terminalId"),
        ({"card": ...}, 409, 5000, "card"),
        ({"card": {"number": VISA, "expiryMonth": 13, "expiryYear": 2030}}, 409, 5000, "card.expiryMonth"),
        ({"card": {"number": VISA, "expiryMonth": 1}}, 409, 5000, "card.expiryYear"),
        (
            {"card": {"number": VISA, "expiryMonth": 1, "expiryYear": 2030, "cvv": "12"}},
            409,
            5000,
            "card.cvv",
        ),
        (
            {"card": {"number": "4242424242424241", "expiryMonth": 1, "expiryYear": 2030}},
            409,
            5000,
            "card.number",
        ),
        ({"captureMode": "later"}, 409, 5000, "captureMode"),
        ({"reference": 12}, 409, 5000, "reference"),
    ],
)
async def test_every_create_error_names_its_field_and_creates_nothing(
    app: FastAPI,
    asgi_client: httpx.AsyncClient,
    merchant: SandboxClient,
    overrides: dict[str, Any],
    status: int,
    own_code: int | None,
    field: str,
) -> None:
    response = await create(asgi_client, merchant, status, **overrides)
    assert_error(response, status, own_code, field)
    assert count(app) == 0


async def test_credentials_and_malformed_bodies(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    content = dumps(payment_body(merchant))
    assert_error(await asgi_client.post(P, content=content, headers=JSON_TYPE), 401, None)
    assert_error(await asgi_client.post(P, content=content, headers={"Authorization": "nope"}), 401, None)
    production = await asgi_client.post(P, content=content, headers=auth(merchant, production=True))
    assert_error(production, 401, 2007, "Authorization")
    assert_error(await asgi_client.post(P, content=b"{", headers=auth(merchant)), 400, None, "body")
    assert_error(await asgi_client.post(P, content=b"[]", headers=auth(merchant)), 409, 5000, "body")
    assert count(app) == 0


async def test_every_patch_error_names_its_field_and_changes_nothing(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    merchant = await merchant_factory()
    other = await merchant_factory()
    created = body(await create(asgi_client, merchant, captureMode="manual"))
    path = f"{P}/{created['id']}"

    async def patch(payload: Any, who: SandboxClient = merchant) -> httpx.Response:
        return await asgi_client.patch(path, content=dumps(payload), headers=auth(who))

    assert_error(await patch({"action": "capture"}, other), 404, None, "id")
    unknown = await asgi_client.patch(
        f"{P}/tpm_nope", content=dumps({"action": "void"}), headers=auth(merchant)
    )
    assert_error(unknown, 404, None, "id")
    assert_error(await patch({}), 409, 5000, "action")
    assert_error(await patch({"action": 3}), 409, 5000, "action")
    assert_error(await patch({"action": "settle"}), 409, None, "action")
    assert_error(await patch({"action": "capture", "amount": 0}), 409, 5000, "amount")
    assert_error(await patch({"action": "capture", "amount": "5"}), 409, 5000, "amount")
    assert_error(await patch({"action": "capture", "amount": 25.01}), 409, None, "amount")
    assert_error(await patch({"action": "void", "amount": 5}), 409, 5000, "amount")
    assert_error(await patch({"action": "refund"}), 409, None, "action")
    no_auth = await asgi_client.patch(path, content=dumps({"action": "void"}), headers=JSON_TYPE)
    assert_error(no_auth, 401, None)
    shown = (await asgi_client.get(f"/_sandbox/terminal/payments/{created['id']}")).json()
    assert shown == created  # nothing changed

    captured = await patch({"action": "capture", "amount": 20})
    assert captured.status_code == 200
    assert body(captured)["capturedAmount"] == 20


async def test_a_capture_eight_days_on_is_refused_even_when_the_lapse_job_has_not_run(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    """The clock moves 8 days on in the database (no ``clock/advance``, so the lapse job has not run and
    the payment is still ``authorized``): the capture itself checks the 7 days (D191) and is refused."""
    created = body(await create(asgi_client, merchant, captureMode="manual"))
    context = app.state.paysdk
    with context.db.session() as session:
        context.clock.set_offset_at_least(session, context.clock.offset_us(session) + 8 * 86400 * 1_000_000)
    shown = (await asgi_client.get(f"/_sandbox/terminal/payments/{created['id']}")).json()
    assert shown["status"] == "authorized"  # the job did not run
    path = f"{P}/{created['id']}"
    refused = await asgi_client.patch(path, content=dumps({"action": "capture"}), headers=auth(merchant))
    assert_error(refused, 409, None, "action")
    assert "7 days" in body(refused)["message"]
    after = (await asgi_client.get(f"/_sandbox/terminal/payments/{created['id']}")).json()
    assert after == shown  # nothing captured


async def test_control_plane_affiliation(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    first = await asgi_client.get("/_sandbox/terminal/affiliation", params={"client": merchant.slug})
    assert first.status_code == 200
    number = first.json()["affiliation"]
    assert len(number) == 10
    assert number.isdigit()
    again = await asgi_client.get("/_sandbox/terminal/affiliation", params={"client": merchant.slug})
    assert again.json()["affiliation"] == number
    assert body(await create(asgi_client, merchant))["affiliation"] == number
    assert_error(
        await asgi_client.get("/_sandbox/terminal/affiliation", params={"client": "nobody"}),
        404,
        None,
        "client",
    )
    assert_error(await asgi_client.get("/_sandbox/terminal/affiliation"), 409, 5000, "client")


async def test_apply_processor_event_applies_each_id_once_and_records_refusals(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    created = body(await create(asgi_client, merchant))
    payment_id = created["id"]
    captured_at = datetime.fromisoformat(created["capturedAt"])
    db = app.state.paysdk.db
    early = captured_at + timedelta(seconds=1)
    late = datetime.fromisoformat(created["settlementDate"]).replace(tzinfo=UTC)

    with db.session() as session:
        refused = terminal.apply_processor_event(session, payment_id, "settled", early, "n-early")
    assert isinstance(refused, terminal.Ignored)
    assert refused.code == "not_allowed"
    with db.session() as session:
        paid_first = terminal.apply_processor_event(session, payment_id, "paid_out", late, "n-paid-first")
    assert isinstance(paid_first, terminal.Ignored)
    with db.session() as session:
        applied = terminal.apply_processor_event(session, payment_id, "settled", late, "n-1")
    assert applied == terminal.Applied(payment_id, "settled", "settled")
    with db.session() as session:
        again = terminal.apply_processor_event(session, payment_id, "settled", late, "n-1")
    assert isinstance(again, terminal.Ignored)
    assert again.code == "duplicate"
    with db.session() as session:
        twice = terminal.apply_processor_event(session, payment_id, "settled", late, "n-2")
    assert isinstance(twice, terminal.Ignored)
    assert twice.code == "not_allowed"
    with db.session() as session:
        void = terminal.apply_processor_event(session, payment_id, "voided", late, "n-3")
    assert isinstance(void, terminal.Ignored)
    with db.session() as session:
        unknown = terminal.apply_processor_event(session, "tpm_" + "f" * 24, "settled", late, "n-4")
        odd = terminal.apply_processor_event(session, payment_id, "exploded", late, "n-5")
    assert isinstance(unknown, terminal.Ignored)
    assert unknown.code == "unknown_payment"
    assert isinstance(odd, terminal.Ignored)
    assert odd.code == "not_allowed"
    with db.session() as session:
        paid = terminal.apply_processor_event(
            session, payment_id, "paid_out", late + timedelta(days=1), "n-6"
        )
        rows = {row.event_id: row.outcome for row in session.scalars(select(ProcessorEventRow))}
    assert paid == terminal.Applied(payment_id, "paid_out", "paid_out")
    assert rows == {
        "n-early": "ignored",
        "n-paid-first": "ignored",
        "n-1": "applied",
        "n-2": "ignored",
        "n-3": "ignored",
        "n-5": "ignored",
        "n-6": "applied",
    }
    shown = (await asgi_client.get(f"/_sandbox/terminal/payments/{payment_id}")).json()
    assert shown["status"] == "paid_out"
    assert shown["settlementDate"] == created["settlementDate"]  # an event never moves the dates


async def test_concurrent_first_payments_and_refunds_never_break_the_rules(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    """On PostgreSQL the requests run in parallel threads: the first payments of a client share one
    affiliation number, and concurrent refunds never exceed what was captured."""
    first = await asyncio.gather(*(create(asgi_client, merchant) for _ in range(6)))
    numbers = {body(response)["affiliation"] for response in first}
    assert len(numbers) == 1
    payment_id = body(first[0])["id"]
    await asgi_client.post(
        "/_sandbox/clock/advance", content=dumps({"seconds": 6 * 86400}), headers=JSON_TYPE
    )
    assert (await asgi_client.get(f"/_sandbox/terminal/payments/{payment_id}")).json()["status"] == "paid_out"

    async def refund() -> httpx.Response:
        return await asgi_client.patch(
            f"{P}/{payment_id}", content=dumps({"action": "refund", "amount": 10}), headers=auth(merchant)
        )

    answers = await asyncio.gather(*(refund() for _ in range(5)))
    statuses = sorted(response.status_code for response in answers)
    assert statuses == [200, 200, 409, 409, 409]  # 25 captured: two refunds of 10 fit, a third does not
    shown = (await asgi_client.get(f"/_sandbox/terminal/payments/{payment_id}")).json()
    assert shown["refundedAmount"] == 20
    assert shown["status"] == "paid_out"


async def test_a_retried_create_with_an_idempotency_key_creates_one_payment(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    headers = {**auth(merchant), "Idempotency-Key": "pos-retry-1"}
    content = dumps(payment_body(merchant))
    first = await asgi_client.post(P, content=content, headers=headers)
    again = await asgi_client.post(P, content=content, headers=headers)
    assert first.status_code == again.status_code == 201
    assert body(first)["id"] == body(again)["id"]
    assert count(app) == 1


@pytest.mark.parametrize("wall_clock", [datetime(2026, 3, 4, 15, 0, tzinfo=UTC)])  # a Wednesday, before 23:30
async def test_a_voided_payment_shows_no_settlement_or_payout_date(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    """D436: the dates a capture sets are cleared by a void (the API's or the processor's): a voided
    payment never settles nor is paid out."""
    created = body(await create(asgi_client, merchant))
    assert created["settlementDate"] is not None
    assert created["payoutDate"] is not None
    path = f"{P}/{created['id']}"
    voided = body(await asgi_client.patch(path, content=dumps({"action": "void"}), headers=auth(merchant)))
    assert voided["status"] == "voided"
    assert voided.get("settlementDate") is None
    assert voided.get("payoutDate") is None

    other = body(await create(asgi_client, merchant))
    at = datetime.fromisoformat(other["capturedAt"]) + timedelta(seconds=1)
    with app.state.paysdk.db.session() as session:
        applied = terminal.apply_processor_event(session, other["id"], "voided", at, "n-void")
    assert applied == terminal.Applied(other["id"], "voided", "voided")
    with app.state.paysdk.db.session() as session:
        rows = session.scalars(
            select(TerminalPaymentRow).where(TerminalPaymentRow.payment_id.in_([created["id"], other["id"]]))
        ).all()
        assert [(r.status, r.settlement_date, r.payout_date) for r in rows] == [("voided", None, None)] * 2
