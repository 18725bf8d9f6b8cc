"""The SDK's fast wire builder gives exactly what the contract models give."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paysdk.contracts.alternative_payments import AlternativePaymentCreate
from paysdk.contracts.common import Channel, Currency
from paysdk.contracts.payment_links import PaymentLinkCreate
from paysdk.contracts.wallet import Cardholder, PermissionRecord

amounts = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("99999999"), places=2)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-0123456789", min_size=1, max_size=30)
optional_keys = st.none() | st.dictionaries(names, st.integers() | names, max_size=3)


@given(
    amount=amounts,
    channel=st.sampled_from(list(Channel)),
    client=names,
    currency=st.none() | st.sampled_from(list(Currency)),
    external_id=st.none() | names,
    custom_keys=optional_keys,
)
def test_payment_link_wire_matches_the_model(**values: Any) -> None:
    values["user_id"] = "+50255550123"
    values["ads"] = []
    assert PaymentLinkCreate.wire_from_checked(**values) == PaymentLinkCreate(**values).to_wire()


@given(
    amount=amounts,
    channel=st.sampled_from(list(Channel)),
    client=names,
    currency=st.none() | st.sampled_from(list(Currency)),
    external_id=st.none() | names,
    custom_keys=optional_keys,
)
def test_alternative_payment_wire_matches_the_model(**values: Any) -> None:
    values["user_id"] = "+50255550123"
    assert (
        AlternativePaymentCreate.wire_from_checked(**values) == AlternativePaymentCreate(**values).to_wire()
    )


def test_the_wallet_user_id_is_user_id_in_python_and_auth_user_id_on_the_wire() -> None:
    holder = Cardholder.model_validate(
        {"authUserId": "usr_1", "username": "ana", "email": "ana@example.com", "merchant": "m"}
    )
    assert holder.user_id == "usr_1"
    assert holder.to_wire()["authUserId"] == "usr_1"
    assert "userId" not in holder.to_wire()
    assert (
        Cardholder(user_id="usr_2", username="b", email="b@example.com", merchant="m").to_wire()["authUserId"]
        == "usr_2"
    )
    record = PermissionRecord.model_validate(
        {
            "id": "perm_1",
            "cardId": "crd_1",
            "authUserId": "usr_1",
            "permissions": ["checkCard"],
            "createdAt": "2030-01-01T00:00:00Z",
            "updatedAt": "2030-01-01T00:00:00Z",
        }
    )
    assert record.user_id == "usr_1"
    assert record.to_wire()["authUserId"] == "usr_1"
    # the old Python name still reads the id, with a deprecation warning
    with pytest.warns(DeprecationWarning, match="use user_id"):
        assert holder.auth_user_id == "usr_1"
    with pytest.warns(DeprecationWarning, match="use user_id"):
        assert record.auth_user_id == "usr_1"


def test_money_is_a_json_number_in_the_schema_and_decimal_at_run_time() -> None:
    # D130: the schema says number; parsing an answer stays tolerant (a decimal string from another
    # server is still read exactly); a request amount refuses strings (D3, D45).
    from pydantic import ValidationError

    from paysdk.contracts.wallet import Card, FundsRequest, Movement

    for model, field in ((Card, "balance"), (Movement, "balanceAfter"), (FundsRequest, "amount")):
        for mode in ("validation", "serialization"):
            schema = model.model_json_schema(by_alias=True, mode=mode)
            assert schema["properties"][field]["type"] == "number", (model, field, mode)
    assert PaymentLinkCreate.model_json_schema(by_alias=True)["properties"]["amount"] == {
        "title": "Amount",
        "type": "number",
    }
    card = {
        "cardId": "crd_1",
        "maskedPan": "**** 1234",
        "type": "virtual",
        "status": "active",
        "currency": "GTQ",
        "availableBalance": Decimal("10.0001"),
        "pendingDebits": 0,
        "pendingCredits": 0,
        "merchant": "m",
        "createdAt": "2026-01-01T00:00:00Z",
    }
    assert Card.model_validate({**card, "balance": "10.0001"}).balance == Decimal("10.0001")
    parsed = Card.model_validate({**card, "balance": Decimal("10.0001")})
    assert parsed.balance == Decimal("10.0001")
    assert isinstance(parsed.to_wire()["balance"], Decimal)  # the server writes it as an exact number
    with pytest.raises(ValidationError, match="amount"):
        FundsRequest.model_validate({"operation": "add", "amount": "10.00"})


def _contract_modules() -> list[str]:
    """Every module of ``paysdk.contracts``, found on disk (a new family's module included)."""
    import pkgutil

    import paysdk.contracts

    return sorted(
        f"paysdk.contracts.{info.name}"
        for info in pkgutil.iter_modules(paysdk.contracts.__path__)
        if not info.ispkg
    )


@pytest.mark.parametrize("module_name", _contract_modules())
def test_every_contract_module_imports_and_builds_its_models(module_name: str) -> None:
    """Each contract module is imported and each of its models built in both JSON schema modes: the
    models are built on first use (``defer_build``), so a broken annotation or validator of a model no
    other test touches would otherwise surface only at a user's first call."""
    import importlib

    from pydantic import BaseModel

    module = importlib.import_module(module_name)
    models = [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, BaseModel)
        and value.__module__ == module_name
        and not value.__pydantic_generic_metadata__["parameters"]
    ]
    for model in models:
        model.model_rebuild(force=True, raise_errors=True)
        for mode in ("validation", "serialization"):
            assert model.model_json_schema(by_alias=True, mode=mode)["type"] in {"object", "string"}, model


def test_the_contract_walk_finds_every_family_module() -> None:
    found = _contract_modules()
    assert {"paysdk.contracts.wallet", "paysdk.contracts.onboarding", "paysdk.contracts.common"} <= set(found)
