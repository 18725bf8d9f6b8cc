"""Terminal payments through the SDK against the REAL reference server: async in process (ASGITransport)
and sync over a uvicorn socket, on SQLite and PostgreSQL (the ``kind``/``make`` fixtures of
``conftest.py``). The whole life of a payment on the virtual clock (D190-D192): one-step -> settled ->
paid out, two-step capture within 7 days, lapse after 7 days, void before and after the cutoff, partial
and full refunds, refunds before settlement refused.

The virtual clock only moves forward, so each test first moves it to a known weekday and time (a
Monday or Friday some weeks ahead) and works from there.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import pytest

import paysdk
from paysdk.contracts.terminal import CaptureMode, TerminalPayment, TerminalStatus

from .conftest import Maker, call

VISA = "4242424242424242"  # T+1
MASTERCARD = "5555555555554444"  # T+2
AMEX = "378282246310005"  # T+3
DECLINE = "4000000000009995"  # insufficient funds


async def _now(sandbox: Any) -> datetime:
    state = await call(sandbox.sandbox.clock())
    now: datetime = state.now
    return now.astimezone(UTC)


async def move_to(sandbox: Any, target: datetime) -> datetime:
    """Advance the virtual clock to ``target`` (which must lie ahead); due jobs run on the way."""
    now = await _now(sandbox)
    delta = target - now
    assert delta > timedelta(0), f"{target} is not ahead of {now}"
    seconds = Decimal(delta // timedelta(microseconds=1)).scaleb(-6)
    await call(sandbox.sandbox.advance_clock(seconds))
    return await _now(sandbox)


async def next_weekday(sandbox: Any, weekday: int, at: time, *, weeks_ahead: int = 1) -> datetime:
    """The instant ``at`` (UTC) on the ``weekday`` (0 Monday) at least ``weeks_ahead`` weeks from now."""
    now = await _now(sandbox)
    day = now.date() + timedelta(weeks=weeks_ahead)
    day += timedelta(days=(weekday - day.weekday()) % 7)
    return datetime.combine(day, at, tzinfo=UTC)


async def _setup(make: Maker) -> tuple[Any, Any, Any]:
    sandbox = make()
    merchant = await call(sandbox.sandbox.create_client(currencies=["GTQ", "USD"]))
    client = make(merchant_token=merchant.sandbox_token)
    return sandbox, client, merchant


def _field(error: paysdk.APIError) -> str:
    return str(error.body["details"][0]["field"])


async def _create(client: Any, card: str = VISA, amount: str = "10.00", **kw: Any) -> TerminalPayment:
    payment = await call(
        client.terminal.create(
            amount=amount,
            currency="GTQ",
            terminal_id="POS-1",
            card_number=card,
            expiry_month=12,
            expiry_year=2030,
            **kw,
        )
    )
    assert isinstance(payment, TerminalPayment)
    return payment


@pytest.mark.covers("terminal.create", "sandbox.terminal.get", "sandbox.terminal.affiliation")
async def test_one_step_settles_then_pays_out_by_card(make: Maker) -> None:
    sandbox, client, merchant = await _setup(make)
    friday = await next_weekday(sandbox, 4, time(10, 0))
    await move_to(sandbox, friday)

    visa = await _create(client, VISA, "10.50", cvv="123", reference="R-1", external_id="ext-1")
    assert visa.status is TerminalStatus.CAPTURED
    assert visa.capture_mode is CaptureMode.AUTOMATIC
    assert visa.id.startswith("tpm_")
    assert len(visa.id) == 28
    assert visa.amount == visa.captured_amount == Decimal("10.50")
    assert isinstance(visa.amount, Decimal)
    assert visa.refunded_amount == Decimal("0.00")
    assert (visa.card_last4, visa.terminal_id, visa.reference, visa.external_id) == (
        "4242",
        "POS-1",
        "R-1",
        "ext-1",
    )
    monday = friday.date() + timedelta(days=3)
    assert visa.settlement_date == monday  # Friday before the cutoff: Friday's batch, settles Monday
    assert visa.payout_date == monday + timedelta(days=1)  # 4...: T+1
    master = await _create(client, MASTERCARD)
    assert master.payout_date == monday + timedelta(days=2)  # 5...: T+2
    amex = await _create(client, AMEX)
    assert amex.card_last4 == "0005"
    assert amex.payout_date == monday + timedelta(days=3)  # any other first digit: T+3

    affiliation = await call(sandbox.sandbox.terminal.affiliation(merchant.slug))
    assert affiliation.client == merchant.slug
    assert affiliation.affiliation == visa.affiliation == master.affiliation
    assert len(affiliation.affiliation) == 10
    assert affiliation.affiliation.isdigit()

    # Saturday and Sunday: nothing settles.
    await move_to(sandbox, datetime.combine(monday - timedelta(days=1), time(23, 59), tzinfo=UTC))
    held = await call(sandbox.sandbox.terminal.get(visa.id))
    assert held.status is TerminalStatus.CAPTURED
    assert held.settled_at is None

    await move_to(sandbox, datetime.combine(monday, time(0, 1), tzinfo=UTC))
    settled = await call(sandbox.sandbox.terminal.get(visa.id))
    assert settled.status is TerminalStatus.SETTLED
    assert settled.settled_at == datetime.combine(monday, time(0), tzinfo=UTC)

    await move_to(sandbox, datetime.combine(monday + timedelta(days=1), time(0, 1), tzinfo=UTC))
    paid = await call(sandbox.sandbox.terminal.get(visa.id))
    assert paid.status is TerminalStatus.PAID_OUT
    assert paid.paid_out_at == datetime.combine(monday + timedelta(days=1), time(0), tzinfo=UTC)
    assert (await call(sandbox.sandbox.terminal.get(master.id))).status is TerminalStatus.SETTLED
    await move_to(sandbox, datetime.combine(monday + timedelta(days=2), time(0, 1), tzinfo=UTC))
    assert (await call(sandbox.sandbox.terminal.get(master.id))).status is TerminalStatus.PAID_OUT
    assert (await call(sandbox.sandbox.terminal.get(amex.id))).status is TerminalStatus.SETTLED
    await move_to(sandbox, datetime.combine(monday + timedelta(days=3), time(0, 1), tzinfo=UTC))
    assert (await call(sandbox.sandbox.terminal.get(amex.id))).status is TerminalStatus.PAID_OUT

    # A refund after payout is still allowed (settled funds).
    refunded = await call(client.terminal.refund(visa.id))
    assert refunded.status is TerminalStatus.REFUNDED
    assert refunded.refunded_amount == Decimal("10.50")

    declined = await _create(client, DECLINE)
    assert declined.status is TerminalStatus.DECLINED
    assert declined.decline_reason == "insufficient_funds"
    assert declined.captured_amount == Decimal("0.00")
    assert declined.settlement_date is None

    with pytest.raises(paysdk.NotFoundError) as missing:
        await call(sandbox.sandbox.terminal.get("tpm_" + "0" * 24))
    assert _field(missing.value) == "id"


@pytest.mark.covers("terminal.create", "terminal.capture", "terminal.void", "sandbox.terminal.get")
async def test_two_step_capture_within_seven_days_and_lapse_after(make: Maker) -> None:
    sandbox, client, _ = await _setup(make)
    monday = await next_weekday(sandbox, 0, time(9, 0))
    await move_to(sandbox, monday)

    kept = await _create(client, amount="10.00", capture_mode="manual")
    assert kept.status is TerminalStatus.AUTHORIZED
    assert kept.capture_mode is CaptureMode.MANUAL
    assert kept.captured_amount == Decimal("0.00")
    assert kept.authorized_at is not None
    assert kept.capture_before == kept.authorized_at + timedelta(days=7)
    lapsing = await _create(client, capture_mode=CaptureMode.MANUAL)
    voided = await _create(client, capture_mode="manual")

    with pytest.raises(paysdk.ConflictError) as too_much:
        await call(client.terminal.capture(kept.id, "10.01"))
    assert _field(too_much.value) == "amount"
    assert too_much.value.own_code is None

    # Six days on (Sunday), a partial capture: the rest is released; it joins Monday's batch.
    await move_to(sandbox, monday + timedelta(days=6))
    captured = await call(client.terminal.capture(kept.id, Decimal("6.00")))
    assert captured.status is TerminalStatus.CAPTURED
    assert captured.captured_amount == Decimal("6.00")
    assert captured.amount == Decimal("10.00")
    assert captured.settlement_date == (monday + timedelta(days=8)).date()  # Sunday -> Monday's batch -> Tue
    with pytest.raises(paysdk.ConflictError) as twice:
        await call(client.terminal.capture(kept.id))
    assert _field(twice.value) == "action"

    assert (await call(client.terminal.void(voided.id))).status is TerminalStatus.VOIDED
    with pytest.raises(paysdk.ConflictError):
        await call(client.terminal.capture(voided.id))

    # Seven days after its authorization the other lapses (a job on the virtual clock).
    await move_to(sandbox, monday + timedelta(days=7, minutes=1))
    lapsed = await call(sandbox.sandbox.terminal.get(lapsing.id))
    assert lapsed.status is TerminalStatus.LAPSED
    assert lapsed.lapsed_at == lapsing.capture_before
    with pytest.raises(paysdk.ConflictError) as late:
        await call(client.terminal.capture(lapsing.id))
    assert _field(late.value) == "action"
    assert "lapsed" in late.value.message


@pytest.mark.covers("terminal.create", "terminal.void", "terminal.refund", "sandbox.terminal.get")
async def test_void_before_the_cutoff_refund_only_after_settlement(make: Maker) -> None:
    sandbox, client, _ = await _setup(make)
    tuesday = await next_weekday(sandbox, 1, time(12, 0))
    await move_to(sandbox, tuesday)
    early = await _create(client)
    late = await _create(client, amount="20.00")

    await move_to(sandbox, tuesday.replace(hour=23, minute=29))
    assert (await call(client.terminal.void(early.id))).status is TerminalStatus.VOIDED

    with pytest.raises(paysdk.ConflictError) as before:
        await call(client.terminal.refund(late.id))
    assert _field(before.value) == "action"
    assert "not settled" in before.value.message

    await move_to(sandbox, tuesday.replace(hour=23, minute=31))
    with pytest.raises(paysdk.ConflictError) as after_cutoff:
        await call(client.terminal.void(late.id))
    assert _field(after_cutoff.value) == "action"
    assert "cutoff" in after_cutoff.value.message
    assert (await call(sandbox.sandbox.terminal.get(late.id))).status is TerminalStatus.CAPTURED

    await move_to(sandbox, datetime.combine(tuesday.date() + timedelta(days=1), time(0, 1), tzinfo=UTC))
    assert (await call(sandbox.sandbox.terminal.get(late.id))).status is TerminalStatus.SETTLED
    part = await call(client.terminal.refund(late.id, "7.50"))
    assert part.status is TerminalStatus.SETTLED
    assert part.refunded_amount == Decimal("7.50")
    with pytest.raises(paysdk.ConflictError) as above:
        await call(client.terminal.refund(late.id, "12.51"))
    assert _field(above.value) == "amount"
    rest = await call(client.terminal.refund(late.id))
    assert rest.status is TerminalStatus.REFUNDED
    assert rest.refunded_amount == rest.captured_amount == Decimal("20.00")
    with pytest.raises(paysdk.ConflictError):
        await call(client.terminal.refund(late.id, "0.01"))
    with pytest.raises(paysdk.ConflictError):
        await call(client.terminal.void(early.id))  # voided is final


@pytest.mark.covers("terminal.create", "terminal.capture", "terminal.void", "terminal.refund")
async def test_errors_name_their_field(make: Maker) -> None:
    sandbox, client, _ = await _setup(make)
    other_sandbox = await call(sandbox.sandbox.create_client())
    other = make(merchant_token=other_sandbox.sandbox_token)
    mine = await _create(client, capture_mode="manual")

    with pytest.raises(paysdk.AmountOutOfRangeError) as out_of_range:
        await _create(client, amount="99999999")
    assert _field(out_of_range.value) == "amount"
    with pytest.raises(paysdk.InvalidFieldError) as currency:
        await call(
            client.terminal.create(
                amount="1",
                currency="MXN",
                terminal_id="T",
                card_number=VISA,
                expiry_month=1,
                expiry_year=2030,
            )
        )
    assert _field(currency.value) == "currency"
    with pytest.raises(paysdk.InvalidFieldError) as luhn:
        await _create(client, card="4242424242424241")
    assert _field(luhn.value) == "card.number"

    # Another merchant's payment is not found, for every action; nothing changes.
    for action in (other.terminal.capture, other.terminal.void, other.terminal.refund):
        with pytest.raises(paysdk.NotFoundError) as foreign:
            await call(action(mine.id))
        assert _field(foreign.value) == "id"
    assert (await call(sandbox.sandbox.terminal.get(mine.id))).status is TerminalStatus.AUTHORIZED

    with pytest.raises(paysdk.ValidationError) as local:
        await call(client.terminal.capture(mine.id, 1.5))
    assert local.value.field == "amount"
    with pytest.raises(paysdk.ValidationError) as mode:
        await _create(client, capture_mode="later")
    assert mode.value.field == "capture_mode"
    with pytest.raises(paysdk.ValidationError) as number:
        await _create(client, card="4242-abc")
    assert number.value.field == "card_number"

    raw = await call(client.with_raw_response.terminal.void(mine.id))
    assert raw.status_code == 200
    assert raw.parse().status is TerminalStatus.VOIDED
