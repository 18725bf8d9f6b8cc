"""/api/v1/integrations/transactions[...]: create, process (D11, real QR), intents (D12), dismiss (D13)."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import PIL.Image
import pytest
import zxingcpp
from server_helpers import (
    JSON_TYPE,
    PHONE,
    advance,
    assert_error,
    auth,
    body,
    create_alternative,
    dumps,
    page_token,
    transaction,
)

from paysdk.contracts.alternative_payments import ProcessResult
from paysdk.contracts.sandbox import SandboxClient

BASE = "/api/v1/integrations/transactions"


async def process(
    client: httpx.AsyncClient, merchant: SandboxClient, uid: str, processor: str
) -> httpx.Response:
    return await client.post(
        f"{BASE}/{uid}/payments",
        content=dumps({"processor": processor, "data": {}}),
        headers=auth(merchant, bearer=True),
    )


async def test_create_answers_201_with_rails_and_expiry_in_ms(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    data = await create_alternative(asgi_client, merchant, customKeys={"order": "A1"})
    assert set(data) == {"uid", "paymentMethods", "expireAt"}
    assert data["paymentMethods"] == merchant.payment_methods
    stored = await transaction(asgi_client, data["uid"])
    assert stored.kind == "alternative_payment"
    assert re.fullmatch(r"AP-[A-Z2-7]{16}", stored.reference)
    assert stored.expire_at - stored.created_at == timedelta(minutes=15)
    assert data["expireAt"] == (stored.expire_at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(
        milliseconds=1
    )
    assert isinstance(data["expireAt"], int)


async def test_create_accepts_raw_token_and_checks_like_links(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    payload: dict[str, Any] = {"amount": 5, "userId": PHONE, "channel": "sms", "client": merchant.slug}
    ok = await asgi_client.post(BASE, content=dumps(payload), headers=auth(merchant))
    assert ok.status_code == 201
    assert_error(await asgi_client.post(BASE, content=dumps(payload)), 401, None)
    assert_error(
        await asgi_client.post(
            BASE, content=dumps(payload), headers=auth(merchant, production=True, bearer=True)
        ),
        401,
        2007,
    )
    assert_error(
        await asgi_client.post(BASE, content=dumps({**payload, "client": "X"}), headers=auth(merchant)),
        409,
        5004,
    )
    assert_error(
        await asgi_client.post(BASE, content=dumps({**payload, "amount": 0}), headers=auth(merchant)),
        400,
        2003,
    )
    missing = {key: value for key, value in payload.items() if key != "channel"}
    assert_error(
        await asgi_client.post(BASE, content=dumps(missing), headers=auth(merchant)), 409, 5000, "channel"
    )
    assert_error(await asgi_client.post(BASE, content=b"[1]", headers=auth(merchant)), 409, 5000, "body")
    assert_error(await asgi_client.post(BASE, content=b"{", headers=auth(merchant)), 400, None, "body")


def decode_qr(result: ProcessResult) -> str:
    image = PIL.Image.open(io.BytesIO(result.png_bytes()))
    assert image.format == "PNG"
    barcodes = zxingcpp.read_barcodes(image)
    assert len(barcodes) == 1
    text: str = barcodes[0].text
    return text


@pytest.mark.parametrize("processor", ["akisiQR", "quickPayQR"])
async def test_qr_rails_answer_a_png_that_decodes_to_the_rail_page(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, processor: str
) -> None:
    uid = (await create_alternative(asgi_client, merchant))["uid"]
    response = await process(asgi_client, merchant, uid, processor)
    assert response.status_code == 200, response.text
    result = ProcessResult.model_validate(body(response)["data"])
    assert result.type == "base64"
    assert result.data.startswith("data:image/png;base64,")
    url = f"http://testserver/checkout/rails/{processor}?orderId={uid}"
    assert decode_qr(result) == url
    page = await asgi_client.get(url)
    assert page.status_code == 200
    assert 'data-testid="rail-pay"' in page.text or "data-testid='rail-pay'" in page.text
    assert (await transaction(asgi_client, uid)).processor == processor


@pytest.mark.parametrize("processor", ["zigi", "bamPaymentButton"])
async def test_url_rails_answer_the_rail_page(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, processor: str
) -> None:
    uid = (await create_alternative(asgi_client, merchant))["uid"]
    data = body(await process(asgi_client, merchant, uid, processor))["data"]
    assert data == {"type": "url", "data": f"http://testserver/checkout/rails/{processor}?orderId={uid}"}


@pytest.mark.parametrize("processor", ["bancoIndustrial", "pronet"])
async def test_reference_rails_answer_a_stable_12_digit_reference(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, processor: str
) -> None:
    uid = (await create_alternative(asgi_client, merchant))["uid"]
    first = body(await process(asgi_client, merchant, uid, processor))["data"]
    again = body(await process(asgi_client, merchant, uid, processor))["data"]
    assert first["type"] == "reference"
    assert re.fullmatch(r"\d{12}", first["data"])
    assert again == first


async def test_process_errors(asgi_client: httpx.AsyncClient, merchant_factory: Any) -> None:
    merchant = await merchant_factory(payment_methods=["zigi"])
    other = await merchant_factory()
    uid = (await create_alternative(asgi_client, merchant))["uid"]
    assert_error(await process(asgi_client, merchant, uid, "akisiQR"), 409, 5000, "processor")
    assert_error(await process(asgi_client, merchant, uid, "bitcoin"), 409, 5000, "processor")
    assert_error(await process(asgi_client, merchant, "0c0c0c0c-unknown", "zigi"), 404, None)
    assert_error(await process(asgi_client, merchant, "%00", "zigi"), 404, None)
    assert_error(await process(asgi_client, other, uid, "zigi"), 404, None)  # another client's uid
    no_processor = await asgi_client.post(
        f"{BASE}/{uid}/payments", content=b"{}", headers=auth(merchant, bearer=True)
    )
    assert_error(no_processor, 409, 5000, "processor")
    assert_error(
        await asgi_client.post(f"{BASE}/{uid}/payments", content=b"{}", headers={"Authorization": "x"}),
        401,
        None,
    )
    # A payment link uid is not an alternative payment.
    link = await asgi_client.post(
        "/transactions",
        content=dumps({"amount": 5, "userId": PHONE, "channel": "wa", "client": merchant.slug}),
        headers=auth(merchant),
    )
    assert_error(await process(asgi_client, merchant, body(link)["uid"], "zigi"), 404, None)


async def test_payment_intent(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    created = await create_alternative(asgi_client, merchant)
    uid = created["uid"]
    response = await asgi_client.post(
        f"{BASE}/{uid}/payment-intents",
        content=dumps({"processor": "zigi"}),
        headers=auth(merchant, bearer=True),
    )
    assert response.status_code == 201, response.text
    data = body(response)["data"]
    assert data["uid"] == uid
    assert data["processor"] == "zigi"
    assert data["status"] == "requires_action"
    assert data["expireAt"] == created["expireAt"]
    assert data["intentId"].startswith("pi_")
    assert (await transaction(asgi_client, uid)).processor == "zigi"
    assert_error(
        await asgi_client.post(
            f"{BASE}/{uid}/payment-intents", content=b"{}", headers=auth(merchant, bearer=True)
        ),
        409,
        5000,
        "processor",
    )
    assert_error(
        await asgi_client.post(
            f"{BASE}/nope/payment-intents",
            content=dumps({"processor": "zigi"}),
            headers=auth(merchant, bearer=True),
        ),
        404,
        None,
    )


@pytest.mark.parametrize("raw", [b"", b"{}", b'{"reason": "customer left"}'])
async def test_dismiss_then_dismiss_again_is_409(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, raw: bytes
) -> None:
    uid = (await create_alternative(asgi_client, merchant))["uid"]
    response = await asgi_client.post(
        f"{BASE}/{uid}/dismiss", content=raw, headers=auth(merchant, bearer=True)
    )
    assert response.status_code == 200, response.text
    assert body(response) == {"data": {"uid": uid, "status": "dismissed"}}
    assert (await transaction(asgi_client, uid)).status == "dismissed"
    again = await asgi_client.post(f"{BASE}/{uid}/dismiss", headers=auth(merchant, bearer=True))
    assert_error(again, 409, None)
    assert_error(await process(asgi_client, merchant, uid, "zigi"), 409, None)


async def test_dismiss_errors(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    uid = (await create_alternative(asgi_client, merchant))["uid"]
    assert_error(
        await asgi_client.post(f"{BASE}/{uid}/dismiss", content=b"[]", headers=auth(merchant)), 409, 5000
    )
    assert_error(
        await asgi_client.post(f"{BASE}/{uid}/dismiss", content=b"{x", headers=auth(merchant)), 400, None
    )
    assert_error(await asgi_client.post(f"{BASE}/unknown/dismiss", headers=auth(merchant)), 404, None)
    assert_error(await asgi_client.post(f"{BASE}/{uid}/dismiss"), 401, None)


async def test_alternative_payment_expires_after_15_minutes(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    uid = (await create_alternative(asgi_client, merchant))["uid"]
    await advance(asgi_client, 14 * 60)
    assert (await transaction(asgi_client, uid)).status == "pending"
    await advance(asgi_client, 61)
    assert (await transaction(asgi_client, uid)).status == "expired"
    assert_error(await process(asgi_client, merchant, uid, "zigi"), 409, None)


async def test_rail_paid_by_simulate_and_by_rail_page(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    uid = (await create_alternative(asgi_client, merchant))["uid"]
    early = await asgi_client.post(
        f"/_sandbox/transactions/{uid}/simulate", content=dumps({"outcome": "paid"}), headers=JSON_TYPE
    )
    assert_error(early, 409, None)  # no rail chosen yet
    await process(asgi_client, merchant, uid, "zigi")
    paid = await asgi_client.post(
        f"/_sandbox/transactions/{uid}/simulate", content=dumps({"outcome": "paid"}), headers=JSON_TYPE
    )
    assert body(paid)["status"] == "approved"
    stored = await transaction(asgi_client, uid)
    assert stored.status == "approved"
    assert (stored.model_extra or {})["paymentMethodType"] == "zigi"

    second = (await create_alternative(asgi_client, merchant))["uid"]
    await process(asgi_client, merchant, second, "bamPaymentButton")
    token = await page_token(asgi_client, f"/checkout/rails/bamPaymentButton?orderId={second}")
    page = await asgi_client.post(
        "/checkout/rails/bamPaymentButton", data={"orderId": second, "formToken": token, "outcome": "expired"}
    )
    assert page.status_code == 303
    final = await asgi_client.get(page.headers["location"])
    assert "expired" in final.text
    assert (await transaction(asgi_client, second)).status == "expired"
    wrong_rail = await asgi_client.get(f"/checkout/rails/zigi?orderId={second}")
    assert wrong_rail.status_code == 404
