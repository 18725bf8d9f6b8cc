"""What the console's pages show, read through each family's services (D723): one function per page,
run in one transaction with :meth:`paysdk.server.context.ServerContext.run` (``fn(session, ...)``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from sqlalchemy.orm import Session

from paysdk.contracts.sandbox import (
    CallbackAttempt,
    Fault,
    RequestLogEntry,
    SandboxClient,
    SandboxTransaction,
)
from paysdk.contracts.subscriptions import SandboxSubscription
from paysdk.contracts.terminal import TerminalPayment
from paysdk.contracts.wallet import Card
from paysdk.server import faults
from paysdk.server.context import ServerContext
from paysdk.server.services import (
    callbacks,
    cardholders,
    sandbox,
    subscriptions,
    terminal,
    transactions,
    wallet_sandbox,
)

__all__ = [
    "COUNTED",
    "MerchantView",
    "Overview",
    "SubscriptionDetail",
    "TailView",
    "TransactionDetail",
    "batches_page",
    "card",
    "cards_page",
    "clock_state",
    "faults_page",
    "merchant",
    "merchants",
    "overview",
    "subscription",
    "subscriptions_page",
    "tail",
    "terminal_page",
    "transaction",
    "transactions_page",
]

#: The overview's counted sections: (text key, path).
COUNTED: tuple[tuple[str, str], ...] = (
    ("merchants", "/merchants"),
    ("transactions", "/transactions"),
    ("subscriptions", "/subscriptions"),
    ("wallet", "/wallet"),
    ("batches", "/batches"),
    ("terminal", "/terminal"),
)
#: Rows a list page shows at most.
LIMIT = 200


@dataclass(frozen=True, slots=True)
class Overview:
    now: datetime
    counts: dict[str, int] = field(default_factory=dict)


def clock_state(session: Session, context: ServerContext) -> tuple[datetime, Decimal]:
    """The virtual time and its offset from the wall clock (seconds)."""
    return context.clock.now(session), context.clock.offset_seconds(session)


def overview(session: Session, context: ServerContext) -> Overview:
    """The overview page: the virtual time and how many merchants and transactions there are."""
    return Overview(
        now=context.clock.now(session),
        counts={
            "merchants": len(sandbox.list_clients(session, LIMIT)),
            "transactions": len(transactions.recent(session, LIMIT)),
            "subscriptions": len(subscriptions.recent_subscriptions(session, LIMIT)),
            "wallet": len(wallet_sandbox.recent_cards(session, LIMIT)),
            "batches": len(cardholders.recent_batches(session, LIMIT)),
            "terminal": len(terminal.recent_payments(session, LIMIT)),
        },
    )


@dataclass(frozen=True, slots=True)
class MerchantView:
    client: SandboxClient
    transactions: list[SandboxTransaction]


def merchants(session: Session, masked: bool) -> list[SandboxClient]:
    """Every merchant, secrets masked when ``masked`` (an exposed plane, D272)."""
    rows = sandbox.list_clients(session, LIMIT)
    return [sandbox.masked_view(row) for row in rows] if masked else rows


def merchant(session: Session, slug: str, masked: bool) -> MerchantView:
    """One merchant's settings (``404`` when unknown) and its newest transactions."""
    client = sandbox.get_client(session, slug)
    return MerchantView(
        sandbox.masked_view(client) if masked else client, transactions.recent(session, 50, client=slug)
    )


def transactions_page(session: Session) -> list[SandboxTransaction]:
    """The newest transactions (payment links, alternative payments, card verifications)."""
    return transactions.recent(session, LIMIT)


@dataclass(frozen=True, slots=True)
class TransactionDetail:
    transaction: SandboxTransaction
    events: list[callbacks.CallbackEventView]
    attempts: list[CallbackAttempt]


def transaction(session: Session, uid: str) -> TransactionDetail:
    """One transaction (``404`` when unknown), its callback events and every attempt of them."""
    tx, client = transactions.load(session, uid)
    return TransactionDetail(
        transactions.sandbox_view(tx, client),
        callbacks.events_of(session, uid),
        callbacks.attempts(session, uid),
    )


def faults_page(session: Session) -> list[Fault]:
    """Every fault, oldest first, with its uses left."""
    return faults.list_all(session)


@dataclass(frozen=True, slots=True)
class TailView:
    requests: list[RequestLogEntry]
    attempts: list[CallbackAttempt]


def tail(session: Session) -> TailView:
    """The last requests and callback attempts (the live tail without JavaScript)."""
    return TailView(sandbox.request_log(session, 100), callbacks.attempts(session)[-100:])


def subscriptions_page(session: Session) -> list[SandboxSubscription]:
    """The newest subscriptions."""
    return subscriptions.recent_subscriptions(session, LIMIT)


@dataclass(frozen=True, slots=True)
class SubscriptionDetail:
    subscription: SandboxSubscription
    #: ``(at, notify event, to, subject)`` of each email (D147).
    emails: list[tuple[datetime, str, str, str]]
    events: list[callbacks.CallbackEventView]
    attempts: list[CallbackAttempt]


def subscription(session: Session, sub_uid: str) -> SubscriptionDetail:
    """One subscription (``404`` when unknown) with its charges, emails and callbacks."""
    sub = subscriptions.sandbox_view(session, subscriptions.load(session, sub_uid))
    return SubscriptionDetail(
        sub,
        subscriptions.subscription_emails(session, sub_uid),
        callbacks.events_of(session, sub_uid),
        callbacks.attempts(session, sub_uid),
    )


def cards_page(session: Session) -> list[Card]:
    """The newest wallet cards."""
    return wallet_sandbox.recent_cards(session, LIMIT)


def card(session: Session, card_id: str) -> wallet_sandbox.CardActivity:
    """One wallet card with its movements and pending items."""
    return wallet_sandbox.card_activity(session, card_id)


def batches_page(session: Session) -> list[cardholders.BatchListing]:
    """The newest backoffice (cardholder) batches with their progress."""
    return cardholders.recent_batches(session, LIMIT)


def terminal_page(session: Session) -> list[TerminalPayment]:
    """The newest terminal payments with their capture, settlement and payout dates."""
    return terminal.recent_payments(session, LIMIT)
