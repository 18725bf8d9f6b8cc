"""Checks every transaction-creating endpoint shares (decisions D3, D4).

Order (D4): contract errors (``409 / 5000``, checked by the contract model and :func:`check_phone`) come
first, then the slug (``409 / 5004``, case-sensitive), then what depends on the client: a channel or
currency the client has not enabled (``409 / 5000``), and last the amount range (``400 / 2003``; zero
and negatives are outside every range).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from paysdk.contracts.common import OwnCode, parse_e164
from paysdk.server.core_tables import ClientRow
from paysdk.server.db import from_cents, to_cents
from paysdk.server.errors import APIProblem

__all__ = ["Checked", "check_against_client", "check_phone"]


def check_phone(user_id: str, field: str = "userId") -> None:
    """``userId`` must be a phone number in E.164 form (spec 2.1) that exists for its country: ``409 / 5000``
    naming the field otherwise.

    First the shape rule the SDK applies too (:func:`paysdk.contracts.common.parse_e164`: ``+``, 7 to 15
    digits, separators ignored), so the SDK never refuses a number this server takes; then, on the
    canonical form, ``phonenumbers``: a known country code and a possible length for it (D24, D525).
    """
    try:
        e164 = parse_e164(user_id)
    except ValueError as exc:
        raise APIProblem.invalid_field(field, str(exc)) from None
    import phonenumbers  # its metadata costs tens of ms: imported on the first number, not at start (D303)

    try:
        number = phonenumbers.parse(e164, None)
    except phonenumbers.NumberParseException:
        raise APIProblem.invalid_field(field, "has no known country code (e.g. +50212345678)") from None
    if not phonenumbers.is_possible_number(number):
        raise APIProblem.invalid_field(field, "is not a possible phone number for its country code")


@dataclass(frozen=True, slots=True)
class Checked:
    """The values a transaction is created with once the client's rules passed."""

    currency: str
    amount_cents: int


def check_against_client(
    client: ClientRow,
    *,
    slug: str | None,
    channel: str,
    currency: str | None,
    amount: Decimal,
) -> Checked:
    """Apply the slug, channel, currency and range rules of ``client`` (see the module docstring)."""
    if slug is not None and slug != client.slug:
        raise APIProblem.unknown_client()
    if channel not in client.channels:
        raise APIProblem.invalid_field("channel", f"{channel!r} is not enabled for this client")
    chosen = currency if currency is not None else str(client.currencies[0])
    if chosen not in client.currencies:
        raise APIProblem.invalid_field("currency", f"{chosen!r} is not enabled for this client")
    cents = to_cents(amount)
    if not client.amount_min_cents <= cents <= client.amount_max_cents:
        low, high = from_cents(client.amount_min_cents), from_cents(client.amount_max_cents)
        message = f"must be between {low} and {high}"
        raise APIProblem(
            400, OwnCode.AMOUNT_OUT_OF_RANGE, f"Amount out of range: {message}.", [("amount", message)]
        )
    return Checked(currency=chosen, amount_cents=cents)
