"""A payment link's ``userId``: the SDK's dependency-free E.164 check never refuses a number the reference
server accepts, and a number it lets through that the server refuses comes back as the server's clear
``409 / 5000`` naming ``userId`` (D24, D525). Both sides are the real code: the server in process over
``httpx.ASGITransport``, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from decimal import Decimal

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import example, given, settings
from hypothesis import strategies as st

import paysdk
from paysdk import _json
from paysdk.contracts.sandbox import SandboxClient
from paysdk.resources._validation import check_phone as sdk_check_phone
from paysdk.server.errors import APIProblem
from paysdk.server.services.common import check_phone as server_check_phone

#: Numbers people send, from every side of the rule.
CORPUS = [
    # valid for their countries
    "+50255550123",
    "+502 5555-0123",
    "+502 (5555) 01.23",
    " +1 (650) 253-0000 ",
    "+44 20 7946 0958",
    "+502\u00a05555\u20130123",  # a no-break space and an en dash, as pasted from a document
    "+290 1234",  # 7 digits: Saint Helena
    "+683 1234",  # 7 digits: Niue
    "+50200000000",  # possible, not valid for Guatemala: the server takes it (the SDK refused it before D525)
    # the right shape, refused by the server: an unknown country code, impossible lengths for the country
    "+999123456789",
    "+1 650 253 000",
    "+502 5555 012",
    # too short, too long
    "+50255",
    "+1234",
    "+4912",  # diallable only inside Germany: not an E.164 number
    "+1234567890123456",
    "+6212345678901234567",
    # no "+", or a country code starting with 0
    "50255550123",
    "0050255550123",
    "+0502555501",
    # letters, extensions, other marks
    "+1 800 FLOWERS",
    "+50255550123abc",
    "+5025555abc0123",
    "+502 5555 0123 ext. 12",
    "+50255550123;ext=1",
    "tel:+50255550123",
    "++50255550123",
    "+502/5555/0123",
    "+\uff15\uff10\uff12\uff15\uff15\uff15\uff15\uff10\uff11\uff12\uff13",  # full-width digits
    "not a phone",
    "+",
    "   ",
]


@pytest.fixture
async def sdk(app: FastAPI, merchant: SandboxClient) -> AsyncIterator[paysdk.AsyncClient]:
    client = paysdk.AsyncClient(
        environment=paysdk.Environment.local("http://testserver"),
        transport=httpx.ASGITransport(app=app),
        merchant_token=merchant.sandbox_token,
    )
    yield client
    await client.aclose()


async def _server_accepts(asgi_client: httpx.AsyncClient, merchant: SandboxClient, user_id: str) -> bool:
    """Whether the server, sent ``user_id`` exactly as given, creates the link; else its 409 names userId."""
    body = {"amount": Decimal("10"), "userId": user_id, "channel": "wa", "client": merchant.slug, "ads": []}
    response = await asgi_client.post(
        "/transactions",
        content=_json.dumps(body),
        headers={"Authorization": merchant.sandbox_token, "Content-Type": "application/json"},
    )
    if response.status_code == 200:
        return True
    assert response.status_code == 409, (user_id, response.text)
    data = _json.loads(response.content)
    assert data["ownCode"] == 5000, (user_id, data)
    assert [d["field"] for d in data["details"]] == ["userId"], (user_id, data)
    return False


async def _sdk_refusal(
    sdk: paysdk.AsyncClient, merchant: SandboxClient, user_id: str
) -> paysdk.PaySDKError | None:
    """The SDK's error for a link to ``user_id`` (local or the server's), ``None`` when it was created."""
    try:
        await sdk.payment_links.create(amount=10, user_id=user_id, channel="wa", client=merchant.slug)
    except (paysdk.ValidationError, paysdk.InvalidFieldError) as exc:
        return exc
    return None


async def test_payment_link_user_id_the_sdk_never_refuses_what_the_server_accepts(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, sdk: paysdk.AsyncClient
) -> None:
    outcomes: dict[str, list[str]] = {"accepted": [], "server refused": [], "sdk refused": []}
    for user_id in CORPUS:
        server_accepts = await _server_accepts(asgi_client, merchant, user_id)
        refusal = await _sdk_refusal(sdk, merchant, user_id)
        if refusal is None:
            assert server_accepts, f"the server took {user_id!r} from the SDK but refuses it as typed"
            outcomes["accepted"].append(user_id)
        elif isinstance(refusal, paysdk.ValidationError):  # refused locally, nothing sent
            assert not server_accepts, f"the SDK refuses {user_id!r}, which the server accepts"
            assert refusal.field == "user_id"
            assert str(refusal).startswith("user_id: must "), str(refusal)
            outcomes["sdk refused"].append(user_id)
        else:  # sent, refused by the server: its 409 / 5000 naming userId
            assert isinstance(refusal, paysdk.InvalidFieldError)
            assert not server_accepts, user_id
            assert (refusal.status_code, refusal.own_code) == (409, 5000)
            assert [d["field"] for d in refusal.body["details"]] == ["userId"], refusal.body
            assert "userId" in refusal.message, refusal.message
            outcomes["server refused"].append(user_id)
    assert outcomes == {
        "accepted": CORPUS[:9],
        "server refused": CORPUS[9:12],
        "sdk refused": CORPUS[12:],
    }


def _server_status(text: str) -> int:
    """200 when the server's own check takes ``text``, else the status of its refusal."""
    try:
        server_check_phone(text)
    except APIProblem as problem:
        return problem.status
    return 200


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.from_regex(r"\A ?\+?[0-9][0-9 ().\-]{3,20}(x[0-9])?\Z"),
        st.text(alphabet="+0123456789 -.()/xA\u00a0", max_size=22),
    )
)
@example("+50200000000")
@example(" +1 (650) 253-0000")
@example("+290 1234")
def test_payment_link_user_id_rule_holds_for_any_text(text: str) -> None:
    """The server's own check, called directly on random texts: whatever it takes, the SDK takes too, and
    sends the same canonical number the server validated."""
    status = _server_status(text)
    if status != 200:
        assert status == 409
        return
    canonical = sdk_check_phone(text)
    assert _server_status(canonical) == 200
    assert canonical.startswith("+")
    assert canonical[1:].isdigit()


async def test_alternative_payment_user_id_is_any_non_empty_string_on_both_sides(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, sdk: paysdk.AsyncClient
) -> None:
    """Alternative payments take any non-empty ``userId`` (D24): the SDK refuses only what the server
    refuses, and sends the rest as given (an id that is no phone number included)."""
    for user_id in ("customer-42", "0223456789", "+50255550123", "not a phone"):
        payment = await sdk.alternative_payments.create(
            amount=10, user_id=user_id, channel="web", client=merchant.slug
        )
        assert payment.uid
    for user_id in ("", "   "):
        with pytest.raises(paysdk.ValidationError) as info:
            await sdk.alternative_payments.create(
                amount=10, user_id=user_id, channel="web", client=merchant.slug
            )
        assert info.value.field == "user_id"
        body = {"amount": Decimal("10"), "userId": user_id, "channel": "web", "client": merchant.slug}
        response = await asgi_client.post(
            "/api/v1/integrations/transactions",
            content=_json.dumps(body),
            headers={"Authorization": f"Bearer {merchant.sandbox_token}", "Content-Type": "application/json"},
        )
        assert response.status_code == 409, response.text
        assert [d["field"] for d in _json.loads(response.content)["details"]] == ["userId"]
