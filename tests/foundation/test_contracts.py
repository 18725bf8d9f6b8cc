"""The SDK's fast wire builder gives exactly what the contract models give."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from paysdk.contracts.alternative_payments import AlternativePaymentCreate
from paysdk.contracts.common import Channel, Currency
from paysdk.contracts.payment_links import PaymentLinkCreate

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
