"""The sandbox test cards: the one table used by the checkout page, the control plane and the docs.

Outcomes follow Stripe's test numbers. ``4000 0027 6000 3184`` asks for 3-D Secure only when the client has
``threeDS`` enabled; for a client without 3-D Secure it simply approves (as a card that supports but does
not require authentication). A number that fails the Luhn check is a form error (nothing changes); a
Luhn-valid number not in the table is a generic decline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "TEST_CARDS",
    "CardDecision",
    "TestCardSpec",
    "brand_of",
    "decide",
    "luhn_valid",
    "normalize_number",
]

Outcome = Literal["approved", "declined", "three_ds_challenge"]


@dataclass(frozen=True, slots=True)
class TestCardSpec:
    """One test card: its number, brand, what it does and the decline reason when it declines."""

    __test__ = False  # not a pytest class

    number: str
    brand: str
    outcome: Outcome
    reason: str
    description: str
    extra: dict[str, str] = field(default_factory=dict)


TEST_CARDS: tuple[TestCardSpec, ...] = (
    TestCardSpec("4242424242424242", "visa", "approved", "approved", "Approves."),
    TestCardSpec("5555555555554444", "mastercard", "approved", "approved", "Approves (Mastercard)."),
    TestCardSpec("4000000000000002", "visa", "declined", "generic_decline", "Declines (generic decline)."),
    TestCardSpec(
        "4000000000009995", "visa", "declined", "insufficient_funds", "Declines: insufficient funds."
    ),
    TestCardSpec("4000000000000069", "visa", "declined", "expired_card", "Declines: expired card."),
    TestCardSpec(
        "4000002760003184",
        "visa",
        "three_ds_challenge",
        "three_ds_required",
        "Asks for a 3-D Secure challenge when the client has threeDS enabled (Approve approves, Fail "
        "declines); approves directly when threeDS is disabled.",
        {"threeDS": "challenge"},
    ),
)

_BY_NUMBER = {card.number: card for card in TEST_CARDS}


def normalize_number(number: str) -> str:
    """Remove spaces and dashes."""
    return "".join(ch for ch in number if ch not in " -")


def luhn_valid(number: str) -> bool:
    """The Luhn check on a digit string of 12..19 digits."""
    if not number.isascii() or not number.isdigit() or not 12 <= len(number) <= 19:
        return False
    total = 0
    for index, char in enumerate(reversed(number)):
        digit = int(char)
        if index % 2 == 1:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def brand_of(number: str) -> str:
    """A rough brand from the first digits (used as the callback's ``paymentMethodType``)."""
    if number.startswith("4"):
        return "visa"
    if number[:2] in {"51", "52", "53", "54", "55"} or number[:2] == "22":
        return "mastercard"
    if number[:2] in {"34", "37"}:
        return "amex"
    return "card"


@dataclass(frozen=True, slots=True)
class CardDecision:
    """What a card number does for a client: ``outcome`` and ``reason`` (``invalid`` for a form error)."""

    valid: bool
    outcome: Outcome
    reason: str
    brand: str
    message: str


def decide(raw_number: str, *, three_ds_enabled: bool) -> CardDecision:
    """The outcome of paying with ``raw_number`` (see the module docstring)."""
    number = normalize_number(raw_number)
    if not luhn_valid(number):
        return CardDecision(False, "declined", "invalid_number", "card", "The card number is not valid.")
    brand = brand_of(number)
    card = _BY_NUMBER.get(number)
    if card is None:
        return CardDecision(True, "declined", "card_declined", brand, "The card was declined.")
    if card.outcome == "three_ds_challenge" and not three_ds_enabled:
        return CardDecision(True, "approved", "approved", card.brand, "Approved (3-D Secure not enabled).")
    messages = {
        "approved": "Approved.",
        "generic_decline": "The card was declined.",
        "insufficient_funds": "The card has insufficient funds.",
        "expired_card": "The card has expired.",
        "three_ds_required": "3-D Secure authentication required.",
    }
    return CardDecision(
        True, card.outcome, card.reason, card.brand, messages.get(card.reason, card.description)
    )
