"""The sandbox test cards: the one table used by the checkout page, the control plane and the docs.

Outcomes follow Stripe's test numbers. ``4000 0027 6000 3184`` asks for 3-D Secure only when the client has
``threeDS`` enabled; for a client without 3-D Secure it simply approves (as a card that supports but does
not require authentication). A number that fails the Luhn check is a form error (nothing changes); a
Luhn-valid number not in the table is a generic decline.

Charges of a saved card (subscription renewals and batch CSV rows, :func:`decide_charge`) never ask for
3-D Secure: the scheduled charge sets ``modKeys['3ds']`` false (spec 3.3.5, D149), also for clients with
``threeDS`` enabled. Three cards exist for renewals: ``4000 0000 0000 0341`` verifies and then declines
every charge; ``4000 0000 0000 0333`` declines the first attempt of the second renewal (period 1) and
approves everything else; ``4000 0025 0000 3155`` needs 3-D Secure at verification when ``threeDS`` is
enabled and renews without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "TEST_CARDS",
    "CardDecision",
    "Renewal",
    "SavedCard",
    "TestCardSpec",
    "brand_of",
    "decide",
    "decide_charge",
    "decide_saved_charge",
    "luhn_valid",
    "normalize_number",
    "saved_card",
]

Outcome = Literal["approved", "declined", "three_ds_challenge"]
#: What a saved card does when charged off-session (renewals, batch rows): see :func:`decide_charge`.
Renewal = Literal["approve", "decline", "decline_first_attempt_of_second_renewal"]


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
    #: Off-session charges (renewals, batch rows): never 3-D Secure (D149).
    renewal: Renewal = "approve"


TEST_CARDS: tuple[TestCardSpec, ...] = (
    TestCardSpec("4242424242424242", "visa", "approved", "approved", "Approves."),
    TestCardSpec("5555555555554444", "mastercard", "approved", "approved", "Approves (Mastercard)."),
    TestCardSpec("378282246310005", "amex", "approved", "approved", "Approves (Amex; terminal payout T+3)."),
    TestCardSpec(
        "4000000000000002",
        "visa",
        "declined",
        "generic_decline",
        "Declines (generic decline).",
        renewal="decline",
    ),
    TestCardSpec(
        "4000000000009995",
        "visa",
        "declined",
        "insufficient_funds",
        "Declines: insufficient funds.",
        renewal="decline",
    ),
    TestCardSpec(
        "4000000000000069", "visa", "declined", "expired_card", "Declines: expired card.", renewal="decline"
    ),
    TestCardSpec(
        "4000002760003184",
        "visa",
        "three_ds_challenge",
        "three_ds_required",
        "Asks for a 3-D Secure challenge when the client has threeDS enabled (Approve approves, Fail "
        "declines); approves directly when threeDS is disabled.",
        {"threeDS": "challenge"},
    ),
    TestCardSpec(
        "4000000000000341",
        "visa",
        "approved",
        "approved",
        "Verifies (card verification approves), then declines every renewal and batch charge.",
        renewal="decline",
    ),
    TestCardSpec(
        "4000000000000333",
        "visa",
        "approved",
        "approved",
        "Verifies; declines the first attempt of the second renewal and approves its retry (and every "
        "other charge).",
        renewal="decline_first_attempt_of_second_renewal",
    ),
    TestCardSpec(
        "4000002500003155",
        "visa",
        "three_ds_challenge",
        "three_ds_required",
        "Needs 3-D Secure at verification (and on a payment link) when the client has threeDS enabled; "
        "renewals and batch charges never ask for it and approve.",
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


@dataclass(frozen=True, slots=True)
class SavedCard:
    """What the server keeps of a card saved for later charges (a subscription's default method), as a
    processor would: never the number (D351). ``brand`` and ``last4`` are shown; ``renewal`` and
    ``decline_reason`` are the sandbox's stand-in for the issuer, what the test card does when charged
    off-session (:func:`decide_saved_charge`), derived from the number once, at enrolment."""

    brand: str
    last4: str
    renewal: Renewal
    decline_reason: str


def saved_card(raw_number: str) -> SavedCard:
    """What is kept of the card ``raw_number`` when it is saved (see :class:`SavedCard`): a number not in
    the table declines every off-session charge (``card_declined``)."""
    number = normalize_number(raw_number)
    card = _BY_NUMBER.get(number)
    if card is None:
        return SavedCard(brand_of(number), number[-4:], "decline", "card_declined")
    reason = card.reason if card.outcome == "declined" else "card_declined"
    return SavedCard(card.brand, number[-4:], card.renewal, reason)


def decide_saved_charge(card: SavedCard, *, period: int | None, attempt: int) -> CardDecision:
    """The outcome of charging the saved ``card`` off-session: a renewal of ``period`` (0-based; ``None``
    for a batch CSV row), attempt ``attempt`` (1-based) of it. Never a 3-D Secure challenge (D149)."""
    declined = card.renewal == "decline" or (
        card.renewal == "decline_first_attempt_of_second_renewal" and period == 1 and attempt == 1
    )
    if not declined:
        return CardDecision(True, "approved", "approved", card.brand, "Approved.")
    reason = card.decline_reason
    messages = {
        "insufficient_funds": "The card has insufficient funds.",
        "expired_card": "The card has expired.",
    }
    return CardDecision(True, "declined", reason, card.brand, messages.get(reason, "The card was declined."))


def decide_charge(raw_number: str, *, period: int | None, attempt: int) -> CardDecision:
    """The outcome of charging the card ``raw_number`` off-session (:func:`decide_saved_charge` of what
    :func:`saved_card` keeps of it)."""
    return decide_saved_charge(saved_card(raw_number), period=period, attempt=attempt)
