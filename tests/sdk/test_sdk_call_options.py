"""Per-call options (one place: ``apply_call_options``), the resource idiom (a method is its operation
builder), ``APIResponse`` and the closed input sets typed as literals (checked by running mypy)."""

from __future__ import annotations

import inspect
import subprocess
import sys
import typing
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

import paysdk
from paysdk._pipeline import (
    MANAGED_HEADERS,
    APIResponse,
    ClientConfig,
    Operation,
    ResponseInfo,
    apply_call_options,
    build_request,
    no_result,
    result_from_outcome,
)
from paysdk.contracts.alternative_payments import RAILS, RailName
from paysdk.contracts.common import Channel, ChannelName, Currency, CurrencyCode
from paysdk.contracts.wallet import Card, CardPermissionName, CardPermissionType
from paysdk.resources import wallet
from paysdk.resources._base import AsyncEndpoint, Endpoint
from sdk_coverage import public_methods

from .support import TOKEN, keyed_environment

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ClientConfig(
    environment=keyed_environment(),
    merchant_token=paysdk.Secret(TOKEN),
    default_headers=(("X-Team", "payments"), ("Cache-Control", "max-age=0")),
)


def post_op() -> Operation[None]:
    return Operation(method="POST", path="/things", parse=no_result, headers={"X-User-Token": "t"})


class TestApplyCallOptions:
    def test_no_options_is_the_same_operation(self) -> None:
        op = post_op()
        assert apply_call_options(op, {}) is op

    def test_options_land_on_the_request(self) -> None:
        op = post_op().with_call_options(
            timeout=2.5,
            idempotency_key="key-1",
            extra_headers={"X-Trace": "abc", "cache-control": "no-store"},
        )
        request = build_request(op, CONFIG, op.idempotency_key)
        assert request.extensions["timeout"] == httpx.Timeout(2.5).as_dict()
        assert request.headers["Idempotency-Key"] == "key-1"
        assert request.headers["X-Trace"] == "abc"
        assert request.headers.get_list("cache-control") == [
            "no-store"
        ]  # the call's wins, case-insensitively
        assert request.headers["X-Team"] == "payments"
        assert request.headers["X-User-Token"] == "t"

    @pytest.mark.parametrize(
        ("options", "field"),
        [
            ({"timeout": None}, "timeout"),
            ({"timeout": -1}, "timeout"),
            ({"idempotency_key": ""}, "idempotency_key"),
            ({"idempotency_key": "a\nb"}, "idempotency_key"),
            ({"extra_headers": {"X-A": "caf\u00e9"}}, "extra_headers"),
            ({"extra_headers": {"X-A": "1\r\nX-B: 2"}}, "extra_headers"),
            ({"extra_headers": {"Bad Name": "1"}}, "extra_headers"),
            ({"extra_headers": ["X-A", "1"]}, "extra_headers"),
            ({"extra_headers": {"authorization": "Bearer x"}}, "extra_headers"),
            ({"extra_headers": {"Idempotency-Key": "k"}}, "extra_headers"),
            ({"extra_headers": {"x-user-token": "other"}}, "extra_headers"),  # the call's own header
        ],
    )
    def test_refused_naming_the_option(self, options: dict[str, Any], field: str) -> None:
        with pytest.raises(paysdk.ValidationError) as caught:
            apply_call_options(post_op(), options)
        assert caught.value.field == field
        assert "Bearer x" not in str(caught.value)

    def test_every_managed_header_refused(self) -> None:
        for name in MANAGED_HEADERS:
            with pytest.raises(paysdk.ValidationError):
                apply_call_options(post_op(), {"extra_headers": {name: "v"}})

    def test_key_only_on_posts(self) -> None:
        get = Operation(method="GET", path="/x", parse=no_result)
        with pytest.raises(paysdk.ValidationError, match="only POST"):
            apply_call_options(get, {"idempotency_key": "k"})
        assert apply_call_options(get, {"idempotency_key": None}) is get

    def test_unknown_option_is_a_type_error(self) -> None:
        with pytest.raises(TypeError, match="'timout'"):
            apply_call_options(post_op(), {"timout": 3})

    def test_sensitive_extra_header_values_are_secrets_and_scrubbed(self) -> None:
        op = apply_call_options(post_op(), {"extra_headers": {"X-Api-Token": "tok-123456", "X-Trace": "t1"}})
        assert dict(op.extra_headers)["X-Trace"] == "t1"
        assert isinstance(dict(op.extra_headers)["X-Api-Token"], paysdk.Secret)
        assert "tok-123456" not in repr(op)
        assert build_request(op, CONFIG, None).headers["X-Api-Token"] == "tok-123456"
        echo = httpx.Response(
            400, json={"message": "bad header tok-123456"}, request=httpx.Request("POST", "http://x")
        )
        with pytest.raises(paysdk.APIError) as caught:
            result_from_outcome(op, echo, attempts=1)
        assert "tok-123456" not in str(caught.value)
        assert "tok-123456" not in repr(caught.value.body)

    def test_with_options_uses_the_same_validators(self) -> None:
        client = paysdk.Client(TOKEN, keyed_environment())
        with pytest.raises(paysdk.ValidationError) as caught:
            client.with_options(default_headers={"X-A": "1\n2"})
        assert caught.value.field == "default_headers"
        with pytest.raises(paysdk.ValidationError) as bad_timeout:
            client.with_options(timeout=None)  # type: ignore[arg-type]
        assert bad_timeout.value.field == "timeout"
        client.close()


def test_api_response_delegates_to_its_own_info() -> None:
    info = ResponseInfo(
        method="POST",
        path="/p",
        status_code=201,
        headers={"X-Request-Id": "req_1", "Idempotent-Replayed": "true", "Authorization": "secret"},
        attempts=2,
        elapsed=0.5,
    )
    answer = APIResponse(41, info).map(lambda n: n + 1)
    assert answer.parse() == 42
    assert (answer.status_code, answer.request_id, answer.attempts, answer.retries) == (201, "req_1", 2, 1)
    assert answer.replayed
    assert answer.headers["authorization"] == "****"
    assert "secret" not in repr(answer)


def test_every_method_takes_the_options_and_documents_itself() -> None:
    """The ONE signature is the builder's: ``help()``/``inspect`` show it on the method, with the
    options (``idempotency_key`` exactly on POSTs) and a docstring."""
    methods = public_methods("sync")
    endpoints = 0
    for (cls, name), dotted in methods.items():
        descriptor = inspect.getattr_static(cls, name)
        member = getattr(cls, name)
        assert member.__doc__, f"{dotted} has no docstring"
        if not isinstance(descriptor, Endpoint):
            continue  # not one API call: wallet.login, the token-store helpers, as_user
        endpoints += 1
        params = inspect.signature(member).parameters
        assert next(iter(params)) == "self"
        options = params["options"]
        assert options.kind is inspect.Parameter.VAR_KEYWORD, dotted
        assert "CallOptions" in str(options.annotation), dotted
        assert member.__qualname__ == f"{cls.__qualname__}.{name}"
    assert endpoints > 55


def test_async_and_sync_endpoints_share_builders() -> None:
    assert inspect.getattr_static(paysdk.AsyncClient, "with_raw_response")
    async_cards = inspect.getattr_static(wallet.AsyncCards, "get")
    sync_cards = inspect.getattr_static(wallet.Cards, "get")
    assert isinstance(async_cards, AsyncEndpoint)
    assert isinstance(sync_cards, Endpoint)
    assert inspect.signature(wallet.Cards.get) == inspect.signature(wallet.AsyncCards.get)


@pytest.mark.parametrize(
    ("literal", "values"),
    [
        (ChannelName, {c.value for c in Channel}),
        (CurrencyCode, {c.value for c in Currency}),
        (CardPermissionName, {p.value for p in CardPermissionType}),
        (RailName, set(RAILS)),
    ],
)
def test_literals_match_the_closed_sets(literal: Any, values: set[str]) -> None:
    assert set(typing.get_args(literal)) == values


HEADER = """
from decimal import Decimal
import paysdk
from paysdk.contracts.wallet import Card


async def ause(aclient: paysdk.AsyncClient) -> None:
    answer = await aclient.with_raw_response.sandbox.health()
    status: str = answer.parse().status
"""

#: One function per case: ``use_good`` with every value right, ``use_<field>`` with that field wrong.
USE = """

def use_{case}(client: paysdk.Client, aclient: paysdk.AsyncClient) -> None:
    client.payment_links.create(amount=Decimal("1"), user_id="+50255550123", channel={channel!r}, client="c")
    client.wallet.cards.issue_virtual("u", currency={currency!r})
    client.alternative_payments.process("uid", processor={rail!r})
    client.wallet.permissions.grant("c", "u", [{permission!r}])
    answer: paysdk.APIResponse[Card] = client.with_raw_response.wallet.cards.get("c")
    card: Card = answer.parse()
    client.wallet.transfers.create("a", "b", 1, idempotency_key="k", timeout=3, extra_headers={{"X": "1"}})
    {extra}
"""
GOOD = {"channel": "wa", "currency": "GTQ", "rail": "akisiQR", "permission": "checkCard", "extra": "pass"}


def _mypy(source: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--follow-imports=silent",
            str(source),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.heavy
def test_mypy_catches_a_typo_in_a_closed_set(tmp_path: Path) -> None:
    """One mypy run over the right calls and one wrong variant per closed set: each variant's error is
    reported inside its own function, and the right calls have none."""
    cases = {
        "channel": ("whatsapp", 'Argument "channel"'),
        "currency": ("EURO", 'Argument "currency"'),
        "rail": ("akisiQr", 'Argument "processor"'),
        "permission": ("checkcard", "List item 0"),
        "extra": (
            'client.wallet.cards.get("c", idempotency_key="k")',
            'Unexpected keyword argument "idempotency_key"',
        ),
    }
    source_text = HEADER + USE.format(case="good", **GOOD)
    for name, (value, _) in cases.items():
        source_text += USE.format(case=name, **{**GOOD, name: value})
    source = tmp_path / "snippet.py"
    source.write_text(source_text)
    # the first line of each function, by case
    starts = {
        line.split("(")[0].removeprefix("def use_"): number
        for number, line in enumerate(source_text.splitlines(), 1)
        if line.startswith("def use_")
    }
    bounds = sorted((number, case) for case, number in starts.items())

    def case_of(line: int) -> str:
        return [case for number, case in bounds if number <= line][-1]

    result = _mypy(source)
    errors: dict[str, list[str]] = {}
    for line in result.stdout.splitlines():
        where, _, message = line.partition(": error: ")
        if message:
            errors.setdefault(case_of(int(where.rsplit(":", 1)[1])), []).append(message)
    assert "good" not in errors, errors
    for name, (value, message) in cases.items():
        assert any(message in found for found in errors.get(name, [])), f"{name}={value!r}: {errors}"
    assert result.returncode == 1, result.stdout + result.stderr


def test_answers_stay_tolerant_of_unknown_values() -> None:
    card = Card.model_validate(
        {
            "cardId": "c1",
            "maskedPan": "************1234",
            "type": "virtual",
            "status": "active",
            "currency": "ZZZ",  # not a CurrencyCode: an answer keeps it
            "balance": 0,
            "availableBalance": 0,
            "pendingDebits": 0,
            "pendingCredits": 0,
            "merchant": "m",
            "createdAt": "2026-01-01T00:00:00Z",
        }
    )
    assert card.currency == "ZZZ"
    assert card.balance == Decimal(0)
