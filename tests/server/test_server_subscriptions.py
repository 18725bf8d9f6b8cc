"""The subscription family on the reference server (spec 4.2; D138-D143, D150-D153), in process, SQLite and
PostgreSQL: the four public routes with their envelope and errors, the card verification on the hosted
checkout (headless, the page's forms, 3-D Secure, decline, expiry, callback) and the control-plane routes.
Every public exchange is checked against ``/openapi.json`` at the end of each test (D133)."""

from __future__ import annotations

import base64
import re
import secrets
import time
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import nacl.signing
import pytest
from fastapi import FastAPI
from server_helpers import (
    JSON_TYPE,
    TIMES_OF_DAY,
    advance,
    assert_error,
    body,
    dumps,
    page_token,
    transaction,
)
from sqlalchemy import MetaData, func, select, update

from openapi_conformance import checked_server_recorder as server_recorder
from paysdk._jwt import sign_merchant
from paysdk.contracts.callbacks import CallbackPayload
from paysdk.contracts.sandbox import SandboxClient
from paysdk.contracts.subscriptions import SandboxSubscription, Subscription, SubscriptionCharge, VerifyCard
from paysdk.server.services import subscriptions as subscription_service
from paysdk.server.subscription_tables import SubscriptionRow, VerificationRow

__all__ = ["server_recorder"]  # every public answer checked against /openapi.json (D133)

P = "/v1/subscriptions"
CARD_FORM = {"expiry": "12/39", "cvc": "123", "name": "Ada Lovelace"}
VISA = "4242424242424242"
MASTERCARD = "5555555555554444"
DECLINE = "4000000000000002"
THREE_DS = "4000002500003155"


class Merchant:
    """One client driven through the API: its application token, plans and verifications."""

    def __init__(self, client: httpx.AsyncClient, merchant: SandboxClient) -> None:
        self.client = client
        self.merchant = merchant
        self._token: str | None = None

    async def token(self) -> str:
        """The (cached) wallet application access token (D138)."""
        if self._token is None:
            assert self.merchant.signing_private_key is not None
            key = nacl.signing.SigningKey(base64.b64decode(self.merchant.signing_private_key))
            signature = sign_merchant(key, self.merchant.slug)
            response = await self.client.post(
                "/rest/auth/login", content=dumps({"merchant": self.merchant.slug, "signature": signature})
            )
            assert response.status_code == 200, response.text
            self._token = body(response)["data"]["accessToken"]
        assert self._token is not None
        return self._token

    async def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {await self.token()}"}

    async def user_token(self) -> str:
        """A cardholder's user access token (the wrong kind for subscriptions: 7106)."""
        name = "user-" + secrets.token_hex(4)
        created = await self.client.post(
            "/_sandbox/users",
            content=dumps(
                {
                    "merchant": self.merchant.slug,
                    "username": name,
                    "email": f"{name}@example.com",
                    "password": "correct horse battery",
                }
            ),
            headers=JSON_TYPE,
        )
        assert created.status_code == 201, created.text
        response = await self.client.post(
            "/rest/users/login",
            content=dumps({"username": name, "password": "correct horse battery"}),
            headers=await self.headers(),
        )
        assert response.status_code == 200, response.text
        token: str = body(response)["data"]["accessToken"]
        return token

    async def plan(self, **fields: Any) -> dict[str, Any]:
        payload = {"client": self.merchant.slug, "amount": Decimal("9.99"), **fields}
        response = await self.client.post("/_sandbox/plans", content=dumps(payload), headers=JSON_TYPE)
        assert response.status_code == 201, response.text
        plan: dict[str, Any] = body(response)
        return plan

    async def verify_raw(self, payload: Any, headers: dict[str, str] | None = None) -> httpx.Response:
        content = payload if isinstance(payload, bytes) else dumps(payload)
        return await self.client.post(
            f"{P}/verify-card", content=content, headers=await self.headers() if headers is None else headers
        )

    async def verify(
        self, plan_id: str | None = None, email: str = "Ana@Example.com", **extra: Any
    ) -> VerifyCard:
        payload: dict[str, Any] = {"shouldCreateSubscription": plan_id is not None, **extra}
        if plan_id is not None:
            payload.update(planId=plan_id, email=email)
        response = await self.verify_raw(payload)
        assert response.status_code == 201, response.text
        answer = body(response)
        assert answer["success"] is True
        assert isinstance(answer["message"], str)
        assert answer["message"]
        return VerifyCard.model_validate(answer["data"])

    async def subscribe(self, plan_id: str, card: str = VISA) -> str:
        """A subscription made through verify-card and the headless checkout."""
        verification = await self.verify(plan_id)
        await pay(self.client, verification.uid, card)
        assert verification.sub_uid is not None
        return verification.sub_uid


async def pay(client: httpx.AsyncClient, uid: str, card: str, three_ds: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"cardNumber": card}
    if three_ds is not None:
        payload["threeDSResult"] = three_ds
    response = await client.post(
        f"/_sandbox/transactions/{uid}/pay", content=dumps(payload), headers=JSON_TYPE
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = body(response)
    return result


async def sandbox_sub(client: httpx.AsyncClient, sub_uid: str) -> SandboxSubscription:
    response = await client.get(f"/_sandbox/subscriptions/{sub_uid}")
    assert response.status_code == 200, response.text
    return SandboxSubscription.model_validate(body(response))


def data_of(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    answer = body(response)
    assert set(answer) == {"success", "message", "data"}, answer
    assert answer["success"] is True
    return answer["data"]


def set_status(app: FastAPI, sub_uid: str, status: str) -> None:
    with app.state.paysdk.db.session() as session:
        session.execute(
            update(SubscriptionRow).where(SubscriptionRow.sub_uid == sub_uid).values(status=status)
        )


def count_subscriptions(app: FastAPI) -> int:
    with app.state.paysdk.db.session() as session:
        return int(session.scalar(select(func.count()).select_from(SubscriptionRow)) or 0)


@pytest.fixture
async def shop(asgi_client: httpx.AsyncClient, merchant_factory: Any) -> Merchant:
    return Merchant(asgi_client, await merchant_factory())


# ------------------------------------------------------------------------------------ verify-card


@pytest.mark.parametrize("timezone", ["Pacific/Kiritimati", "Pacific/Pago_Pago"])
@pytest.mark.parametrize("wall_clock", TIMES_OF_DAY)
async def test_verify_card_with_the_flag_creates_the_subscription_when_the_card_verifies(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, wall_clock: datetime, timezone: str
) -> None:
    # Timezones far from UTC (+14 and -11), so "today in the client's timezone" is not "today in UTC"
    # for most of the day; the wall clock pinned at 00:30, 12:00 and 23:30 UTC: at each, one of the two
    # local dates differs from the UTC date (an anchor taken in UTC is caught whenever the suite runs).
    shop = Merchant(asgi_client, await merchant_factory(timezone=timezone, currencies=["USD", "GTQ"]))
    plan = await shop.plan(planId="gold-" + secrets.token_hex(3), currency="GTQ", amount=Decimal("25.50"))
    verification = await shop.verify(plan["planId"], email="Ana@Example.com", externalId="order-7")
    assert verification.status == "pending"
    assert verification.reference.startswith("CV-")
    assert verification.url == f"http://testserver/checkout/?orderId={verification.uid}"
    assert verification.sub_uid is not None
    assert verification.sub_uid.startswith("sub_")
    # Reserved, not created: unknown until the card verifies.
    assert (await asgi_client.get(f"/_sandbox/subscriptions/{verification.sub_uid}")).status_code == 404
    stored = await transaction(asgi_client, verification.uid)
    assert stored.kind == "card_verification"
    assert stored.amount == Decimal("0.00")
    assert stored.currency == "GTQ"  # the plan's
    assert stored.channel == "web"
    assert stored.external_id == "order-7"
    assert stored.expire_at - stored.created_at == timedelta(hours=24)

    page = await asgi_client.get(verification.url)
    assert page.status_code == 200
    assert "data-testid='purpose'>Verificación de tarjeta, sin cargo<" in page.text  # Spanish by default
    assert "data-testid='pay-button'" in page.text

    result = await pay(asgi_client, verification.uid, MASTERCARD)
    assert result["status"] == "approved"
    sub = await sandbox_sub(asgi_client, verification.sub_uid)
    assert sub.status == "active"
    assert sub.plan_id == plan["planId"]
    assert sub.email == "ana@example.com"
    assert sub.default_payment_method.brand == "mastercard"
    assert sub.default_payment_method.last4 == "4444"
    clock = body(await asgi_client.get("/_sandbox/clock"))
    now = datetime.fromisoformat(clock["now"])
    assert now - wall_clock < timedelta(minutes=5)  # the pinned time of day, not the real one
    today = now.astimezone(ZoneInfo(timezone)).date()
    assert sub.anchor_date == today
    assert sub.next_renewal_date == today
    assert sub.timezone == timezone
    assert sub.period == 0
    assert sub.attempts == 0
    assert sub.charges == []
    # The card number is never shown.
    assert MASTERCARD not in (await asgi_client.get(f"/_sandbox/subscriptions/{verification.sub_uid}")).text
    # The page shows the final state, no form.
    final = await asgi_client.get(verification.url)
    assert "data-testid='card-number'" not in final.text
    # Created in the transaction that finished the verification: the same virtual instant.
    assert sub.created_at == (await transaction(asgi_client, verification.uid)).updated_at


async def test_verify_card_without_the_flag_only_verifies(
    app: FastAPI, asgi_client: httpx.AsyncClient, shop: Merchant
) -> None:
    await shop.plan()
    # planId and email are ignored when the flag is false.
    verification = await shop.verify(None, planId="no-such-plan", email="not an email")
    assert verification.sub_uid is None
    stored = await transaction(asgi_client, verification.uid)
    assert stored.currency == shop.merchant.currencies[0]  # the client's first
    result = await pay(asgi_client, verification.uid, VISA)
    assert result["status"] == "approved"
    assert count_subscriptions(app) == 0


async def test_a_declined_card_leaves_the_reserved_sub_uid_unknown(
    app: FastAPI, asgi_client: httpx.AsyncClient, shop: Merchant
) -> None:
    plan = await shop.plan()
    verification = await shop.verify(plan["planId"])
    result = await pay(asgi_client, verification.uid, DECLINE)
    assert result["status"] == "declined"
    assert (await asgi_client.get(f"/_sandbox/subscriptions/{verification.sub_uid}")).status_code == 404
    history = await asgi_client.get(
        f"{P}/payment-history", params={"subscriptionId": verification.sub_uid}, headers=await shop.headers()
    )
    assert_error(history, 404, None, "subscriptionId")
    assert_error(
        await asgi_client.delete(f"{P}/{verification.sub_uid}", headers=await shop.headers()), 404, None
    )
    assert count_subscriptions(app) == 0
    # Finished: paying again is a conflict and creates nothing.
    again = await asgi_client.post(
        f"/_sandbox/transactions/{verification.uid}/pay",
        content=dumps({"cardNumber": VISA}),
        headers=JSON_TYPE,
    )
    assert_error(again, 409, None)
    assert count_subscriptions(app) == 0


@pytest.mark.parametrize("answer", ["approve", "fail"])
async def test_three_ds_on_the_hosted_checkout_of_a_three_ds_client(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant_factory: Any, answer: str
) -> None:
    shop = Merchant(asgi_client, await merchant_factory(three_ds=True))
    plan = await shop.plan()
    verification = await shop.verify(plan["planId"])
    token = await page_token(asgi_client, verification.url)
    form = {"orderId": verification.uid, "formToken": token, "cardNumber": THREE_DS, **CARD_FORM}
    challenge = await asgi_client.post("/checkout/pay", data=form)
    assert challenge.status_code == 200, challenge.text
    assert "data-testid='3ds-approve'" in challenge.text
    assert (await transaction(asgi_client, verification.uid)).status == "pending"
    assert count_subscriptions(app) == 0
    challenge_id = re.search(r"name='challengeId' value='([^']+)'", challenge.text)
    assert challenge_id is not None
    done = await asgi_client.post(
        "/checkout/3ds",
        data={
            "orderId": verification.uid,
            "formToken": token,
            "challengeId": challenge_id.group(1),
            "result": answer,
        },
    )
    assert done.status_code == 303
    assert done.headers["location"] == verification.url
    status = (await transaction(asgi_client, verification.uid)).status
    if answer == "approve":
        assert status == "approved"
        sub = await sandbox_sub(asgi_client, str(verification.sub_uid))
        assert sub.status == "active"
        assert sub.default_payment_method.last4 == THREE_DS[-4:]
    else:
        assert status == "pending"  # a failed challenge on the page leaves the verification payable (D414)
        assert (await asgi_client.get(f"/_sandbox/subscriptions/{verification.sub_uid}")).status_code == 404
        assert count_subscriptions(app) == 0


async def test_three_ds_headlessly_through_the_control_plane(
    asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    shop = Merchant(asgi_client, await merchant_factory(three_ds=True))
    plan = await shop.plan()
    verification = await shop.verify(plan["planId"])
    pending = await pay(asgi_client, verification.uid, THREE_DS)
    assert (pending["status"], pending["outcome"]) == ("pending", "three_ds_required")
    approved = await pay(asgi_client, verification.uid, THREE_DS, "approve")
    assert approved["status"] == "approved"
    assert (await sandbox_sub(asgi_client, str(verification.sub_uid))).status == "active"


async def test_the_verification_expires_after_24_hours(
    app: FastAPI, asgi_client: httpx.AsyncClient, shop: Merchant
) -> None:
    plan = await shop.plan()
    verification = await shop.verify(plan["planId"])
    await advance(asgi_client, 24 * 3600 - 60)
    assert (await transaction(asgi_client, verification.uid)).status == "pending"
    await advance(asgi_client, 61)
    assert (await transaction(asgi_client, verification.uid)).status == "expired"
    late = await asgi_client.post(
        f"/_sandbox/transactions/{verification.uid}/pay",
        content=dumps({"cardNumber": VISA}),
        headers=JSON_TYPE,
    )
    assert_error(late, 409, None)
    assert (await asgi_client.get(f"/_sandbox/subscriptions/{verification.sub_uid}")).status_code == 404
    assert count_subscriptions(app) == 0


async def test_the_verification_sends_the_merchant_callback_like_a_link(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    shop = Merchant(asgi_client, await merchant_factory(callback_url=callback_sink.url))
    plan = await shop.plan()
    verification = await shop.verify(plan["planId"], externalId="ext-1")
    await pay(asgi_client, verification.uid, VISA)
    assert len(callback_sink.received) == 1  # delivered before /pay answered
    payload = CallbackPayload.model_validate(callback_sink.received[0].json())
    assert payload.uid == verification.uid
    assert payload.reference == verification.reference
    assert payload.status == "approved"
    assert payload.amount == Decimal("0.00")
    assert payload.external_id == "ext-1"


async def test_verification_atomic_with_the_subscription(
    app: FastAPI, shop: Merchant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the subscription cannot be created the verification does not finish either."""
    plan = await shop.plan()
    verification = await shop.verify(plan["planId"])

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected")

    monkeypatch.setattr(subscription_service, "create_subscription", broken)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, raise_app_exceptions=False), base_url="http://testserver"
    ) as client:
        response = await client.post(
            f"/_sandbox/transactions/{verification.uid}/pay",
            content=dumps({"cardNumber": VISA}),
            headers=JSON_TYPE,
        )
        assert response.status_code == 500
        assert (await transaction(client, verification.uid)).status == "pending"
    monkeypatch.undo()
    await pay(shop.client, verification.uid, VISA)
    assert count_subscriptions(app) == 1


async def test_verify_card_errors(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, shop: Merchant
) -> None:
    plan = await shop.plan()
    good = {"shouldCreateSubscription": True, "planId": plan["planId"], "email": "a@example.com"}
    assert_error(await shop.verify_raw(good, headers={}), 401, 7102)
    user = await shop.user_token()
    assert_error(await shop.verify_raw(good, headers={"Authorization": f"Bearer {user}"}), 401, 7106)
    assert_error(await shop.verify_raw(b"[1]"), 400, None, "body")
    assert_error(await shop.verify_raw(b"{nope"), 400, None, "body")
    assert_error(await shop.verify_raw({}), 400, None, "shouldCreateSubscription")
    assert_error(
        await shop.verify_raw({**good, "shouldCreateSubscription": "true"}),
        400,
        None,
        "shouldCreateSubscription",
    )
    assert_error(await shop.verify_raw({**good, "planId": None}), 400, None, "planId")
    assert_error(await shop.verify_raw({**good, "email": None}), 400, None, "email")
    assert_error(await shop.verify_raw({**good, "email": "two@@example.com"}), 400, None, "email")
    assert_error(await shop.verify_raw({**good, "email": "a\u202e@example.com"}), 400, None, "email")
    assert_error(await shop.verify_raw({**good, "planId": "no-such-plan"}), 404, None, "planId")
    other = Merchant(asgi_client, await merchant_factory())
    foreign = await other.plan()
    assert_error(await shop.verify_raw({**good, "planId": foreign["planId"]}), 404, None, "planId")


# ------------------------------------------------------------------------------------ cancel


async def test_cancel(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant_factory: Any, shop: Merchant
) -> None:
    plan = await shop.plan()
    sub_uid = await shop.subscribe(plan["planId"])
    headers = await shop.headers()
    cancelled = data_of(await asgi_client.delete(f"{P}/{sub_uid}", headers=headers))
    assert cancelled["nextRenewalDate"] is None  # D153: null unless active
    assert "endedAt" not in cancelled
    first = Subscription.model_validate(cancelled)
    assert first.status == "cancelled"
    assert first.cancelled_at is not None
    assert first.next_renewal_date is None
    # Again: 200, unchanged.
    await advance(asgi_client, 60)
    again = Subscription.model_validate(data_of(await asgi_client.delete(f"{P}/{sub_uid}", headers=headers)))
    assert again == first
    assert (await sandbox_sub(asgi_client, sub_uid)).status == "cancelled"

    for status in ("inactive", "expired"):
        other = await shop.subscribe(plan["planId"])
        set_status(app, other, status)
        assert_error(await asgi_client.delete(f"{P}/{other}", headers=headers), 409, None, "subUid")
        assert (await sandbox_sub(asgi_client, other)).status == status

    # Another client's subscription is not found; no token 401; a user token 7106.
    foreign_shop = Merchant(asgi_client, await merchant_factory())
    foreign = await foreign_shop.subscribe((await foreign_shop.plan())["planId"])
    assert_error(await asgi_client.delete(f"{P}/{foreign}", headers=headers), 404, None, "subscriptionId")
    assert (await sandbox_sub(asgi_client, foreign)).status == "active"
    assert_error(await asgi_client.delete(f"{P}/{foreign}"), 401, 7102)
    user = {"Authorization": f"Bearer {await shop.user_token()}"}
    assert_error(await asgi_client.delete(f"{P}/{sub_uid}", headers=user), 401, 7106)
    assert_error(await asgi_client.delete(f"{P}/sub_unknown", headers=headers), 404, None)


# ------------------------------------------------------------------------------------ update email


async def test_update_email(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant_factory: Any, shop: Merchant
) -> None:
    plan = await shop.plan()
    sub_uid = await shop.subscribe(plan["planId"])
    headers = await shop.headers()

    async def put(payload: Any, with_headers: dict[str, str] | None = None) -> httpx.Response:
        content = payload if isinstance(payload, bytes) else dumps(payload)
        return await asgi_client.put(
            P, content=content, headers=headers if with_headers is None else with_headers
        )

    updated = Subscription.model_validate(
        data_of(await put({"subscriptionId": sub_uid, "email": "New@Example.org"}))
    )
    assert updated.email == "new@example.org"
    assert updated.status == "active"
    assert updated.next_renewal_date is not None
    assert (await sandbox_sub(asgi_client, sub_uid)).email == "new@example.org"
    # Any state, the status never changes.
    set_status(app, sub_uid, "inactive")
    later = Subscription.model_validate(
        data_of(await put({"subscriptionId": sub_uid, "email": "z@example.org"}))
    )
    assert (later.status, later.email) == ("inactive", "z@example.org")

    for field, value in (("planId", "other"), ("status", "active"), ("amount", 1)):
        refused = assert_error(
            await put({"subscriptionId": sub_uid, "email": "y@example.org", field: value}), 400, None, field
        )
        assert "only the notification email" in refused["message"]
    assert (await sandbox_sub(asgi_client, sub_uid)).email == "z@example.org"
    assert_error(await put({"subscriptionId": sub_uid, "email": "no-at-sign"}), 400, None, "email")
    assert_error(await put({"email": "y@example.org"}), 400, None, "subscriptionId")
    assert_error(await put({"subscriptionId": sub_uid}), 400, None, "email")
    assert_error(await put(b'"text"'), 400, None, "body")
    assert_error(
        await put({"subscriptionId": "sub_unknown", "email": "y@example.org"}), 404, None, "subscriptionId"
    )
    foreign_shop = Merchant(asgi_client, await merchant_factory())
    foreign = await foreign_shop.subscribe((await foreign_shop.plan())["planId"])
    assert_error(
        await put({"subscriptionId": foreign, "email": "y@example.org"}), 404, None, "subscriptionId"
    )
    assert_error(await put({"subscriptionId": sub_uid, "email": "y@example.org"}, {}), 401, 7102)


# ------------------------------------------------------------------------------------ payment history


async def test_payment_history(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant_factory: Any, shop: Merchant
) -> None:
    plan = await shop.plan(amount=Decimal("12.30"))
    sub_uid = await shop.subscribe(plan["planId"], card="4000000000000341")
    headers = await shop.headers()
    url = f"{P}/payment-history"
    assert data_of(await asgi_client.get(url, params={"subscriptionId": sub_uid}, headers=headers)) == []
    # Two charges written by the one charge function (a declined renewal, an approved batch row).
    with app.state.paysdk.db.session() as session:
        sub = session.scalars(select(SubscriptionRow).where(SubscriptionRow.sub_uid == sub_uid)).one()
        now = app.state.paysdk.clock.now(session)
        subscription_service.charge(
            session,
            sub,
            now=now,
            source="renewal",
            amount_cents=1230,
            currency=plan["currency"],
            attempt=1,
            period=0,
            renewal_date=sub.next_renewal_date,
        )
        subscription_service.charge(
            session,
            sub,
            now=now,
            source="batch",
            amount_cents=500,
            currency=plan["currency"],
            attempt=1,
            reference="row-1",
        )
    items = [
        SubscriptionCharge.model_validate(item)
        for item in data_of(await asgi_client.get(url, params={"subscriptionId": sub_uid}, headers=headers))
    ]
    assert [(item.source, item.status, item.amount) for item in items] == [
        ("renewal", "declined", Decimal("12.30")),
        ("batch", "declined", Decimal("5.00")),
    ]
    assert all(item.subscription_id == sub_uid and item.payment_method.last4 == "0341" for item in items)
    assert items[1].reference == "row-1"
    # Every state.
    set_status(app, sub_uid, "expired")
    assert len(data_of(await asgi_client.get(url, params={"subscriptionId": sub_uid}, headers=headers))) == 2

    assert_error(await asgi_client.get(url, headers=headers), 400, None, "subscriptionId")
    assert_error(
        await asgi_client.get(url, params={"subscriptionId": ""}, headers=headers),
        400,
        None,
        "subscriptionId",
    )
    assert_error(
        await asgi_client.get(url, params={"subscriptionId": "sub_nope"}, headers=headers),
        404,
        None,
        "subscriptionId",
    )
    foreign_shop = Merchant(asgi_client, await merchant_factory())
    foreign = await foreign_shop.subscribe((await foreign_shop.plan())["planId"])
    assert_error(
        await asgi_client.get(url, params={"subscriptionId": foreign}, headers=headers),
        404,
        None,
        "subscriptionId",
    )
    assert_error(await asgi_client.get(url, params={"subscriptionId": sub_uid}), 401, 7102)
    user = {"Authorization": f"Bearer {await shop.user_token()}"}
    assert_error(await asgi_client.get(url, params={"subscriptionId": sub_uid}, headers=user), 401, 7106)


async def test_the_envelope_is_documented_in_openapi(asgi_client: httpx.AsyncClient) -> None:
    document = (await asgi_client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    operations = {
        ("post", f"{P}/verify-card"): ("201", "VerifyCardSubscriptionEnvelope"),
        ("delete", f"{P}/{{subUid}}"): ("200", "SubscriptionSubscriptionEnvelope"),
        ("put", P): ("200", "SubscriptionSubscriptionEnvelope"),
        ("get", f"{P}/payment-history"): ("200", "SubscriptionChargeListSubscriptionEnvelope"),
    }
    for (method, path), (status, name) in operations.items():
        operation = document["paths"][path][method]
        ref = operation["responses"][status]["content"]["application/json"]["schema"]["$ref"]
        assert ref == f"#/components/schemas/{name}"
        assert set(schemas[name]["required"]) == {"success", "message", "data"}
        assert schemas[name]["properties"]["success"] == {
            "type": "boolean",
            "const": True,
            "title": "Success",
        } or (schemas[name]["properties"]["success"].get("const") is True)
        assert operation["security"] == [{"walletApplication": []}]
        assert "401" in operation["responses"]


# ------------------------------------------------------------------------------------ control plane


async def test_control_plane_plans(asgi_client: httpx.AsyncClient, shop: Merchant) -> None:
    plan = await shop.plan(
        planId="annual",
        name="Annual",
        amount=Decimal("120.00"),
        currency="USD",
        interval="year",
        term=3,
        dailyAttempts=2,
        intervalAttempt=6,
        graceDays=5,
    )
    assert plan["planId"] == "annual"
    assert plan["amount"] == Decimal("120.00")
    assert (plan["interval"], plan["intervalCount"], plan["term"]) == ("year", 1, 3)
    assert (plan["dailyAttempts"], plan["intervalAttempt"], plan["graceDays"]) == (2, 6, 5)
    fetched = await asgi_client.get("/_sandbox/plans/annual")
    assert fetched.status_code == 200
    assert body(fetched) == plan
    default = await shop.plan()
    assert (default["interval"], default["dailyAttempts"], default["intervalAttempt"]) == ("month", 3, 24)
    assert default["currency"] == shop.merchant.currencies[0]

    async def create(payload: dict[str, Any]) -> httpx.Response:
        return await asgi_client.post("/_sandbox/plans", content=dumps(payload), headers=JSON_TYPE)

    base = {"client": shop.merchant.slug, "amount": Decimal("1.00")}
    assert_error(await create({**base, "planId": "annual"}), 409, None, "planId")
    assert_error(await create({**base, "client": "nobody"}), 409, 5000, "client")
    assert_error(await create({**base, "amount": "1.00"}), 409, 5000, "amount")
    assert_error(await create({**base, "interval": "fortnight"}), 409, 5000, "interval")
    assert_error(await create({**base, "dailyAttempts": 25}), 409, 5000, "dailyAttempts")
    assert_error(await create({**base, "currency": "EUR"}), 409, 5000, "currency")
    assert_error(await create({"amount": 1}), 409, 5000, "client")
    assert_error(await asgi_client.get("/_sandbox/plans/nope"), 404, None, "planId")
    no_type = await asgi_client.post("/_sandbox/plans", content=dumps(base))
    assert no_type.status_code == 415


async def test_control_plane_subscriptions(asgi_client: httpx.AsyncClient, merchant_factory: Any) -> None:
    shop = Merchant(asgi_client, await merchant_factory(timezone="America/Guatemala"))
    plan = await shop.plan(term=12)

    async def create(payload: dict[str, Any]) -> httpx.Response:
        return await asgi_client.post("/_sandbox/subscriptions", content=dumps(payload), headers=JSON_TYPE)

    response = await create(
        {
            "planId": plan["planId"],
            "count": 3,
            "email": "Bulk@Example.com",
            "cardNumber": MASTERCARD,
            "startDate": "2024-01-31",
        }
    )
    assert response.status_code == 201, response.text
    created = body(response)
    assert created["count"] == 3
    assert len(set(created["subUids"])) == 3
    sub = await sandbox_sub(asgi_client, created["subUids"][0])
    assert sub.status == "active"
    assert str(sub.anchor_date) == "2024-01-31"
    assert str(sub.ends_on) == "2025-01-31"
    # Due from the local midnight of the anchor (stored as UTC, read back aware, on both databases).
    assert sub.next_attempt_at == datetime(2024, 1, 31, tzinfo=ZoneInfo("America/Guatemala"))
    assert sub.email == "bulk@example.com"
    assert (sub.default_payment_method.brand, sub.default_payment_method.last4) == ("mastercard", "4444")
    assert sub.plan.plan_id == plan["planId"]
    assert sub.client == shop.merchant.slug
    # The public API sees them as the client's.
    history = await asgi_client.get(
        f"{P}/payment-history", params={"subscriptionId": created["subUids"][1]}, headers=await shop.headers()
    )
    assert data_of(history) == []

    assert_error(await create({"planId": plan["planId"], "count": 0}), 409, 5000, "count")
    assert_error(await create({"planId": plan["planId"], "count": 100_001}), 409, 5000, "count")
    assert_error(await create({"planId": plan["planId"], "email": "nope"}), 409, 5000, "email")
    assert_error(
        await create({"planId": plan["planId"], "cardNumber": "4242424242424241"}), 409, 5000, "cardNumber"
    )
    assert_error(await create({"planId": plan["planId"], "startDate": "2024-02-30"}), 409, 5000, "startDate")
    assert_error(await create({"planId": "nope"}), 404, None, "planId")
    assert_error(await asgi_client.get("/_sandbox/subscriptions/sub_nope"), 404, None)


async def test_control_plane_creates_100000_subscriptions_at_once(
    app: FastAPI, asgi_client: httpx.AsyncClient, shop: Merchant
) -> None:
    plan = await shop.plan()
    started = time.perf_counter()
    response = await asgi_client.post(
        "/_sandbox/subscriptions",
        content=dumps({"planId": plan["planId"], "count": 100_000}),
        headers=JSON_TYPE,
    )
    elapsed = time.perf_counter() - started
    assert response.status_code == 201, response.text
    assert body(response)["count"] == 100_000
    assert count_subscriptions(app) == 100_000
    assert elapsed < 60, f"100,000 subscriptions took {elapsed:.1f} s"
    with app.state.paysdk.db.session() as session:
        assert session.scalar(select(func.count()).select_from(VerificationRow)) == 0


# ------------------------------------------------------------------------------------ stored cards


def card_numbers_in_database(app: FastAPI, numbers: list[str]) -> list[tuple[str, str, str]]:
    """Every ``(table, column, number)`` where a value of the server's database (every table of the real
    database, reflected, every column read as text, spaces and dashes removed) holds one of ``numbers``."""
    engine = app.state.paysdk.db.engine
    metadata = MetaData()
    metadata.reflect(bind=engine)
    found: list[tuple[str, str, str]] = []
    with engine.connect() as connection:
        for table in metadata.sorted_tables:
            for row in connection.execute(select(table)).mappings():
                for column, value in row.items():
                    if value is None:
                        continue
                    if isinstance(value, memoryview):
                        value = bytes(value)
                    raw = value.decode("latin-1") if isinstance(value, bytes) else str(value)
                    text = re.sub(r"[\s-]", "", raw)
                    found.extend((table.name, column, number) for number in numbers if number in text)
    return found


async def test_no_table_holds_a_full_card_number_after_enrolment(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    """Each way a card reaches the server (verify-card paid headlessly, on the hosted checkout's form and
    through a 3-D Secure challenge; the control plane's bulk subscriptions; a payment link; a terminal
    payment; a wallet linking token), then renewals and a batch charge: no value of any table holds a
    whole card number; the subscription shows brand and last four and keeps charging as its test card
    does (D351)."""
    three_ds = Merchant(asgi_client, await merchant_factory(three_ds=True))
    shop = Merchant(asgi_client, await merchant_factory())
    numbers: list[str] = []

    plan = await shop.plan(interval="day")
    headless = await shop.subscribe(plan["planId"], MASTERCARD)
    numbers.append(MASTERCARD)

    form_card = "4000000000000333"  # declines the first attempt of period 1
    verification = await shop.verify(plan["planId"], email="form@example.com")
    token = await page_token(asgi_client, verification.url)
    form = {"orderId": verification.uid, "formToken": token, "cardNumber": "4000 0000 0000 0333", **CARD_FORM}
    assert (await asgi_client.post("/checkout/pay", data=form)).status_code in (200, 303)
    assert verification.sub_uid is not None
    on_form = verification.sub_uid
    numbers.append(form_card)

    challenged = await three_ds.verify((await three_ds.plan())["planId"])
    pending = await pay(asgi_client, challenged.uid, THREE_DS)
    assert pending["outcome"] == "three_ds_required"
    numbers.append(THREE_DS)
    # Between the card form and the challenge's answer, the verification keeps the card: not its number.
    assert card_numbers_in_database(app, numbers) == []
    assert (await pay(asgi_client, challenged.uid, THREE_DS, "approve"))["status"] == "approved"

    unknown = "4111111111111111"  # Luhn-valid, not a test card: every off-session charge declines
    declining = "4000000000009995"  # insufficient funds
    bulk: list[str] = []
    for number in (unknown, declining):
        created = await asgi_client.post(
            "/_sandbox/subscriptions",
            content=dumps({"planId": plan["planId"], "count": 2, "cardNumber": number}),
            headers=JSON_TYPE,
        )
        assert created.status_code == 201, created.text
        bulk.append(body(created)["subUids"][0])
        numbers.append(number)
    bulk_unknown, bulk_declining = bulk

    link = await asgi_client.post(
        "/transactions",
        content=dumps(
            {
                "amount": Decimal("10.50"),
                "userId": "+50212345678",
                "channel": "wa",
                "client": shop.merchant.slug,
            }
        ),
        headers={"Authorization": shop.merchant.sandbox_token},
    )
    assert link.status_code == 200, link.text
    amex = "378282246310005"
    assert (await pay(asgi_client, body(link)["uid"], amex))["status"] == "approved"
    numbers.append(amex)

    terminal = await asgi_client.post(
        "/terminal-payment",
        content=dumps(
            {
                "amount": 25,
                "currency": shop.merchant.currencies[0],
                "terminalId": "POS-1",
                "card": {"number": VISA, "expiryMonth": 12, "expiryYear": 2030, "cvv": "123"},
            }
        ),
        headers={"Authorization": shop.merchant.sandbox_token},
    )
    assert terminal.status_code == 201, terminal.text
    numbers.append(VISA)
    discover = "6011000990139424"
    linking = await asgi_client.post(
        "/_sandbox/linking-tokens", content=dumps({"pan": discover, "expiry": "12/30"}), headers=JSON_TYPE
    )
    assert linking.status_code == 201, linking.text
    numbers.append(discover)

    await advance(asgi_client, 3 * 86400)  # renewals charge every subscription
    shop._token = None  # the access token expired during the advance: log in again
    rows = f"subscriptionId,amount,reference\n{headless},5.00,once-1\n{on_form},5.00,once-2\n"
    batch = await asgi_client.post(
        f"{P}/charges/upload-csv",
        files={"file": ("charges.csv", rows.encode(), "text/csv")},
        headers=await shop.headers(),
    )
    results = data_of(batch)["results"]
    assert results[0]["status"] == "charged"
    assert results[1]["status"] == "charged"

    assert card_numbers_in_database(app, numbers) == []

    # What is shown and how each keeps charging: as its test card.
    shown = await sandbox_sub(asgi_client, headless)
    assert (shown.default_payment_method.brand, shown.default_payment_method.last4) == ("mastercard", "4444")
    assert {c.status for c in shown.charges} == {"approved"}
    form_sub = await sandbox_sub(asgi_client, on_form)
    assert [(c.period, c.attempt, c.status) for c in form_sub.charges][:3] == [
        (0, 1, "approved"),
        (1, 1, "declined"),
        (1, 2, "approved"),
    ]
    assert (await sandbox_sub(asgi_client, str(challenged.sub_uid))).default_payment_method.last4 == "3155"
    for sub_uid, reason in ((bulk_unknown, "card_declined"), (bulk_declining, "insufficient_funds")):
        charges = (await sandbox_sub(asgi_client, sub_uid)).charges
        assert charges
        assert {(c.status, c.reason) for c in charges} == {("declined", reason)}
    with app.state.paysdk.db.session() as session:
        tokens = session.scalars(select(SubscriptionRow.card_token)).all()
    assert all(re.fullmatch(r"pm_[0-9a-f]{24}", token) for token in tokens)
    assert len(set(tokens)) == len(tokens)  # one payment method per subscription
