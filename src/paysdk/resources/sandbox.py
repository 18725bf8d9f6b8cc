"""The reference server's control plane, ``/_sandbox/*`` (``client.sandbox``).

Only the local reference server (``paysdk serve``) has these routes; they need no credentials and are
not part of the public API. Answers are the bare models of :mod:`paysdk.contracts.sandbox`. Their
POSTs never use idempotency keys, so they are retried only when nothing was sent (connect errors):
advancing the clock twice by accident would be a bug in a test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

import pydantic

from paysdk._errors import ValidationError
from paysdk._pipeline import Operation, list_of, no_result
from paysdk._sse import StreamOperation, StreamPolicy
from paysdk._streaming import AsyncEventStream, EventStream
from paysdk.contracts.common import Channel, Currency
from paysdk.contracts.sandbox import (
    CallbackAttempt,
    ClockAdvance,
    ClockState,
    Fault,
    FaultCreate,
    FaultKind,
    Health,
    PayRequest,
    PayResult,
    RequestLogEntry,
    SandboxClient,
    SandboxClientCreate,
    SandboxTransaction,
    SimulateRequest,
    TestCard,
)
from paysdk.contracts.sandbox_events import EVENT_TYPES, SandboxEvent
from paysdk.contracts.wallet import (
    Card,
    Cardholder,
    OutboxMessage,
    SandboxCharge,
    SandboxChargeCreate,
    SandboxLinkingToken,
    SandboxLinkingTokenCreate,
    SandboxRefund,
    SandboxRefundCreate,
    SandboxStockCardCreate,
    SandboxUserCreate,
    SandboxWalletKeys,
    SandboxWalletKeysCreate,
    UserProfile,
)
from paysdk.resources._validation import check_amount, check_str, path_segment, validation_error_from

if TYPE_CHECKING:
    from collections.abc import Callable

    from paysdk._client import AsyncClient, Client

__all__ = ["AsyncSandbox", "Sandbox"]

_ROOT = "/_sandbox"


def _op(method: str, path: str, parse: Callable[[Any], Any], **kwargs: Any) -> Operation[Any]:
    return Operation(
        method=method, path=_ROOT + path, parse=parse, auth="none", uses_idempotency_keys=False, **kwargs
    )


def _wire(model: type[pydantic.BaseModel], **fields: Any) -> dict[str, Any]:
    try:
        instance = model.model_validate(fields)
    except pydantic.ValidationError as exc:
        raise validation_error_from(exc) from None
    return instance.model_dump(by_alias=True, exclude_none=True, mode="python")


def health_operation() -> Operation[Health]:
    """``GET /_sandbox/health``."""
    return _op("GET", "/health", Health.model_validate)


def reset_operation() -> Operation[None]:
    """``POST /_sandbox/reset``: forget every client, transaction, callback and fault."""
    return _op("POST", "/reset", no_result)


def _bare(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The control plane answers bare models; a ``{"data": ...}`` envelope is accepted too."""

    def unwrap(body: Any) -> Any:
        if isinstance(body, dict) and set(body) == {"data"}:
            body = body["data"]
        return parse(body)

    return unwrap


def _wallet_amount(value: object, field: str = "amount") -> Decimal:
    from paysdk.resources.wallet import check_wallet_amount  # wallet amounts: 4 places

    return check_wallet_amount(value, field)


def rotate_wallet_keys_operation(
    slug: str, public_key: str | None = None, expires_at: datetime | None = None
) -> Operation[SandboxWalletKeys]:
    """``POST /_sandbox/clients/{slug}/keys``: generate (or register ``public_key``) and rotate."""
    body = _wire(SandboxWalletKeysCreate, public_key=public_key, expires_at=expires_at)
    path = f"/clients/{path_segment(slug, 'slug')}/keys"
    return _op("POST", path, _bare(SandboxWalletKeys.model_validate), json=body)


def create_user_operation(
    merchant: str,
    username: str,
    email: str,
    password: str,
    profile: UserProfile | Mapping[str, Any] | None = None,
) -> Operation[Cardholder]:
    """``POST /_sandbox/users``: a wallet user (cardholder) of ``merchant``."""
    if isinstance(profile, UserProfile):
        profile = profile.model_dump(by_alias=True, exclude_none=True)
    fields = {"merchant": merchant, "username": username, "email": email, "password": password}
    body = _wire(SandboxUserCreate, profile=profile, **fields)
    return _op("POST", "/users", _bare(Cardholder.model_validate), json=body)


def create_stock_card_operation(
    merchant: str, currency: str | Currency = "GTQ", balance: Decimal | int | str | None = None
) -> Operation[Card]:
    """``POST /_sandbox/cards``: an issued physical card no one holds yet."""
    amount = None if balance is None else _wallet_amount(balance, "balance")
    body = _wire(SandboxStockCardCreate, merchant=merchant, currency=currency, balance=amount)
    return _op("POST", "/cards", _bare(Card.model_validate), json=body)


def create_linking_token_operation(pan: str, expiry: str) -> Operation[SandboxLinkingToken]:
    """``POST /_sandbox/linking-tokens``: what a third party's tokenization would hand the wallet."""
    body = _wire(SandboxLinkingTokenCreate, pan=pan, expiry=expiry)
    return _op("POST", "/linking-tokens", _bare(SandboxLinkingToken.model_validate), json=body)


def charge_operation(
    card_id: str, amount: Decimal | int | str, capture: bool = False
) -> Operation[SandboxCharge]:
    """``POST /_sandbox/cards/{cardId}/charges``: a card payment (pending debit unless ``capture``)."""
    body = _wire(SandboxChargeCreate, amount=_wallet_amount(amount), capture=capture)
    path = f"/cards/{path_segment(card_id, 'card_id')}/charges"
    return _op("POST", path, _bare(SandboxCharge.model_validate), json=body)


def capture_operation(charge_id: str) -> Operation[SandboxCharge]:
    """``POST /_sandbox/charges/{chargeId}/capture``."""
    path = f"/charges/{path_segment(charge_id, 'charge_id')}/capture"
    return _op("POST", path, _bare(SandboxCharge.model_validate))


def refund_operation(charge_id: str, amount: Decimal | int | str | None = None) -> Operation[SandboxRefund]:
    """``POST /_sandbox/charges/{chargeId}/refunds`` (a pending credit)."""
    body = _wire(SandboxRefundCreate, amount=None if amount is None else _wallet_amount(amount))
    path = f"/charges/{path_segment(charge_id, 'charge_id')}/refunds"
    return _op("POST", path, _bare(SandboxRefund.model_validate), json=body)


def clear_refund_operation(refund_id: str) -> Operation[SandboxRefund]:
    """``POST /_sandbox/refunds/{refundId}/clear``: the credit reaches the balance."""
    path = f"/refunds/{path_segment(refund_id, 'refund_id')}/clear"
    return _op("POST", path, _bare(SandboxRefund.model_validate))


def outbox_operation(to: str | None = None) -> Operation[list[OutboxMessage]]:
    """``GET /_sandbox/outbox[?to=]``: the emails (OTP codes) the sandbox would have sent."""
    params = None if to is None else {"to": check_str(to, "to")}
    return _op("GET", "/outbox", _bare(list_of(OutboxMessage.model_validate)), params=params)


def create_client_operation(**fields: Any) -> Operation[SandboxClient]:
    """``POST /_sandbox/clients`` with the snake_case fields of ``SandboxClientCreate``."""
    for name in ("amount_min", "amount_max"):
        if fields.get(name) is not None:
            fields[name] = check_amount(fields[name], name)
    return _op("POST", "/clients", SandboxClient.model_validate, json=_wire(SandboxClientCreate, **fields))


def get_client_operation(slug: str) -> Operation[SandboxClient]:
    """``GET /_sandbox/clients/{slug}``."""
    return _op("GET", f"/clients/{path_segment(slug, 'slug')}", SandboxClient.model_validate)


def clock_operation() -> Operation[ClockState]:
    """``GET /_sandbox/clock``."""
    return _op("GET", "/clock", ClockState.model_validate)


def advance_clock_operation(seconds: int | Decimal) -> Operation[ClockState]:
    """``POST /_sandbox/clock/advance``; ``seconds`` is an ``int`` or ``Decimal`` > 0 (never ``float``)."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | Decimal):
        raise ValidationError("seconds", "must be an int or Decimal")
    return _op("POST", "/clock/advance", ClockState.model_validate, json=_wire(ClockAdvance, seconds=seconds))


def pay_operation(uid: str, card_number: str, three_ds_result: str | None = None) -> Operation[PayResult]:
    """``POST /_sandbox/transactions/{uid}/pay``: complete the hosted checkout with a test card."""
    body = _wire(PayRequest, card_number=card_number, three_ds_result=three_ds_result)
    return _op("POST", f"/transactions/{path_segment(uid, 'uid')}/pay", PayResult.model_validate, json=body)


def simulate_operation(uid: str, outcome: str) -> Operation[PayResult]:
    """``POST /_sandbox/transactions/{uid}/simulate``: a rail reports ``paid`` or the payment ``expired``.

    The answer is a :class:`PayResult`, like ``/pay`` (decision D60).
    """
    body = _wire(SimulateRequest, outcome=outcome)
    path = f"/transactions/{path_segment(uid, 'uid')}/simulate"
    return _op("POST", path, PayResult.model_validate, json=body)


def transaction_operation(uid: str) -> Operation[SandboxTransaction]:
    """``GET /_sandbox/transactions/{uid}``."""
    return _op("GET", f"/transactions/{path_segment(uid, 'uid')}", SandboxTransaction.model_validate)


def callbacks_operation(uid: str | None = None) -> Operation[list[CallbackAttempt]]:
    """``GET /_sandbox/callbacks[?uid=]``."""
    params = None if uid is None else {"uid": check_str(uid, "uid")}
    return _op("GET", "/callbacks", list_of(CallbackAttempt.model_validate), params=params)


def requests_operation() -> Operation[list[RequestLogEntry]]:
    """``GET /_sandbox/requests``."""
    return _op("GET", "/requests", list_of(RequestLogEntry.model_validate))


def add_fault_operation(
    kind: FaultKind,
    route: str = "*",
    count: int = 1,
    status: int | None = None,
    latency_ms: int | None = None,
    retry_after: int | None = None,
    after_events: int | None = None,
) -> Operation[Fault]:
    """``POST /_sandbox/faults``."""
    body = _wire(
        FaultCreate,
        kind=kind,
        route=route,
        count=count,
        status=status,
        latency_ms=latency_ms,
        retry_after=retry_after,
        after_events=after_events,
    )
    return _op("POST", "/faults", Fault.model_validate, json=body)


def faults_operation() -> Operation[list[Fault]]:
    """``GET /_sandbox/faults``."""
    return _op("GET", "/faults", list_of(Fault.model_validate))


def clear_faults_operation() -> Operation[None]:
    """``DELETE /_sandbox/faults``."""
    return _op("DELETE", "/faults", no_result)


def events_operation(
    path: str | None = None,
    status: str | None = None,
    uid: str | None = None,
    last_event_id: str | None = None,
    read_timeout: float | None = None,
    max_reconnects: int | None = None,
) -> StreamOperation:
    """``GET /_sandbox/events``: the live feed (Server-Sent Events, decisions D115-D117)."""
    params = {
        name: check_str(value, name)
        for name, value in (("path", path), ("status", status), ("uid", uid))
        if value is not None
    }
    if read_timeout is not None and (
        isinstance(read_timeout, bool) or not isinstance(read_timeout, int | float) or not read_timeout > 0
    ):
        raise ValidationError("read_timeout", "must be a positive number of seconds, or None")
    policy = StreamPolicy()
    if max_reconnects is not None:
        if isinstance(max_reconnects, bool) or not isinstance(max_reconnects, int) or max_reconnects < 0:
            raise ValidationError("max_reconnects", "must be an int >= 0")
        policy = StreamPolicy(max_reconnects=max_reconnects)
    op = _op("GET", "/events", no_result, params=params or None)
    return StreamOperation(
        op,
        EVENT_TYPES,
        read_timeout=None if read_timeout is None else float(read_timeout),
        last_event_id=None if last_event_id is None else check_str(last_event_id, "last_event_id"),
        policy=policy,
    )


def test_cards_operation() -> Operation[list[TestCard]]:
    """``GET /_sandbox/test-cards``."""
    return _op("GET", "/test-cards", list_of(TestCard.model_validate))


# unasync: begin
class AsyncSandbox:
    """The reference server's control plane (``client.sandbox``): clients, clock, payments, faults,
    and the wallet's keys, users, stock cards, linking tokens, card payments and email outbox.

    Works only against ``paysdk serve`` (the local reference server); needs no merchant token.
    """

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def health(self) -> Health:
        """Server status, environment, database and virtual time (``GET /_sandbox/health``)."""
        return await self._client._request(health_operation())

    async def reset(self) -> None:
        """Erase all state: clients, transactions, callbacks, faults, clock offset."""
        await self._client._request(reset_operation())

    async def create_client(
        self,
        *,
        slug: str | None = None,
        amount_min: Decimal | int | str | None = None,
        amount_max: Decimal | int | str | None = None,
        channels: Sequence[str | Channel] | None = None,
        currencies: Sequence[str | Currency] | None = None,
        payment_methods: Sequence[str] | None = None,
        country: str | None = None,
        timezone: str | None = None,
        callback_url: str | None = None,
        callback_header_name: str | None = None,
        callback_header_value: str | None = None,
        three_ds: bool | None = None,
        signing_public_key: str | None = None,
        keys_expire_at: datetime | None = None,
        user_access_token_ttl: int | None = None,
        user_refresh_token_ttl: int | None = None,
    ) -> SandboxClient:
        """Onboard a merchant client; every field is optional (the server picks defaults).

        The answer holds the client's sandbox and production tokens and hook keys (its repr hides them).
        Wallet: the server generates the client's Ed25519 key pair (``signing_private_key`` in the
        answer, once) unless you register ``signing_public_key``; ``keys_expire_at`` (virtual clock)
        and the user-token lifetimes in seconds are optional.
        """
        op = create_client_operation(
            slug=slug,
            amount_min=amount_min,
            amount_max=amount_max,
            channels=None if channels is None else list(channels),
            currencies=None if currencies is None else list(currencies),
            payment_methods=None if payment_methods is None else list(payment_methods),
            country=country,
            timezone=timezone,
            callback_url=callback_url,
            callback_header_name=callback_header_name,
            callback_header_value=callback_header_value,
            three_ds=three_ds,
            signing_public_key=signing_public_key,
            keys_expire_at=keys_expire_at,
            user_access_token_ttl=user_access_token_ttl,
            user_refresh_token_ttl=user_refresh_token_ttl,
        )
        return await self._client._request(op)

    async def get_client(self, slug: str) -> SandboxClient:
        """The client ``slug``, with its credentials."""
        return await self._client._request(get_client_operation(slug))

    async def clock(self) -> ClockState:
        """The virtual time and its offset from the wall clock."""
        return await self._client._request(clock_operation())

    async def advance_clock(self, seconds: int | Decimal) -> ClockState:
        """Move the virtual clock forward by ``seconds``; due timed jobs (expiry, callback retries) run."""
        return await self._client._request(advance_clock_operation(seconds))

    async def pay(self, uid: str, card_number: str, three_ds_result: str | None = None) -> PayResult:
        """Pay transaction ``uid`` with a test card, as the hosted checkout would.

        ``three_ds_result`` (``"approve"`` or ``"fail"``) answers a 3-D Secure challenge.
        """
        return await self._client._request(pay_operation(uid, card_number, three_ds_result))

    async def simulate(self, uid: str, outcome: Literal["paid", "expired"]) -> PayResult:
        """Make the rail of alternative payment ``uid`` report ``paid``, or let transaction ``uid`` expire.

        Answers the outcome like :meth:`pay`: ``status`` (``approved`` or ``expired``), ``outcome``
        (``rail_paid`` or ``expired``) and ``message`` (decision D60).
        """
        return await self._client._request(simulate_operation(uid, outcome))

    async def transaction(self, uid: str) -> SandboxTransaction:
        """Transaction ``uid`` as the server holds it (status, amount, timestamps)."""
        return await self._client._request(transaction_operation(uid))

    async def callbacks(self, uid: str | None = None) -> list[CallbackAttempt]:
        """Merchant callback delivery attempts, all or those of transaction ``uid``."""
        return await self._client._request(callbacks_operation(uid))

    async def requests(self) -> list[RequestLogEntry]:
        """The public requests the server received (secrets masked)."""
        return await self._client._request(requests_operation())

    async def add_fault(
        self,
        kind: FaultKind,
        route: str = "*",
        count: int = 1,
        status: int | None = None,
        latency_ms: int | None = None,
        retry_after: int | None = None,
        after_events: int | None = None,
    ) -> Fault:
        """Inject a fault (``latency``, ``error``, ``rate_limit``, ``drop``, ``duplicate_callback``,
        ``stream_cut``).

        ``route`` is ``"METHOD /path"`` or ``"/path"`` (a trailing ``*`` matches a prefix); ``count`` how
        many matching requests (for ``stream_cut``: event streams) it applies to. ``stream_cut`` drops
        the connection of a matching event stream after ``after_events`` events (D118).
        """
        op = add_fault_operation(kind, route, count, status, latency_ms, retry_after, after_events)
        return await self._client._request(op)

    async def faults(self) -> list[Fault]:
        """The active faults."""
        return await self._client._request(faults_operation())

    async def clear_faults(self) -> None:
        """Remove every fault."""
        await self._client._request(clear_faults_operation())

    def events(
        self,
        *,
        path: str | None = None,
        status: str | None = None,
        uid: str | None = None,
        last_event_id: str | None = None,
        read_timeout: float | None = None,
        max_reconnects: int | None = None,
    ) -> AsyncEventStream[SandboxEvent]:
        """The server's live feed (``GET /_sandbox/events``): an async iterator of typed events, a
        :class:`~paysdk.contracts.sandbox_events.RequestEvent` per public request, a ``CallbackEvent`` per
        callback attempt, a ``JobEvent`` per job run, a ``GapEvent`` when events were lost.

        Filters: ``path`` (a prefix, or a glob with ``*``), ``status`` (``4xx``, ``500``, or a comma
        list), ``uid`` (a transaction, card or event id anywhere in the event). ``last_event_id`` resumes
        after that event. The connection opens at the first iteration and is reopened with
        ``Last-Event-ID`` when it drops (``max_reconnects`` consecutive failures at most, default 10);
        no read timeout applies between events unless ``read_timeout`` is given. ``async with`` it, or
        ``aclose()`` it, to close the connection.
        """
        op = events_operation(path, status, uid, last_event_id, read_timeout, max_reconnects)
        return AsyncEventStream(self._client, op)

    async def test_cards(self) -> list[TestCard]:
        """The test card numbers and the outcome each drives."""
        return await self._client._request(test_cards_operation())

    async def rotate_wallet_keys(
        self, slug: str, public_key: str | None = None, expires_at: datetime | None = None
    ) -> SandboxWalletKeys:
        """Rotate client ``slug``'s wallet signing key: generate a pair (``private_key`` in the
        answer, masked repr) or register ``public_key``; ``expires_at`` on the virtual clock."""
        return await self._client._request(rotate_wallet_keys_operation(slug, public_key, expires_at))

    async def create_user(
        self,
        merchant: str,
        username: str,
        email: str,
        password: str,
        profile: UserProfile | Mapping[str, Any] | None = None,
    ) -> Cardholder:
        """Create a wallet user (cardholder) of ``merchant``; its ``user_id`` (``authUserId`` on the
        wire) is what the wallet calls take as ``user_id``."""
        op = create_user_operation(merchant, username, email, password, profile)
        return await self._client._request(op)

    async def create_stock_card(
        self, merchant: str, currency: str | Currency = "GTQ", balance: Decimal | int | str | None = None
    ) -> Card:
        """An issued physical card no one holds yet (link it with ``wallet.cards.link``)."""
        return await self._client._request(create_stock_card_operation(merchant, currency, balance))

    async def create_linking_token(self, pan: str, expiry: str) -> SandboxLinkingToken:
        """A single-use linking token for an external card (``pan`` digits, ``expiry`` ``MM/YY``)."""
        return await self._client._request(create_linking_token_operation(pan, expiry))

    async def charge(self, card_id: str, amount: Decimal | int | str, capture: bool = False) -> SandboxCharge:
        """A card payment: an authorization holding a pending debit, captured at once if ``capture``."""
        return await self._client._request(charge_operation(card_id, amount, capture))

    async def capture(self, charge_id: str) -> SandboxCharge:
        """Capture an authorization: the pending debit reduces the balance."""
        return await self._client._request(capture_operation(charge_id))

    async def refund(self, charge_id: str, amount: Decimal | int | str | None = None) -> SandboxRefund:
        """Refund part (``amount``) or all of a captured charge: a pending credit."""
        return await self._client._request(refund_operation(charge_id, amount))

    async def clear_refund(self, refund_id: str) -> SandboxRefund:
        """Clear a refund: the credit reaches the balance."""
        return await self._client._request(clear_refund_operation(refund_id))

    async def outbox(self, to: str | None = None) -> list[OutboxMessage]:
        """The emails the sandbox would have sent (OTP codes), all or those to ``to``."""
        return await self._client._request(outbox_operation(to))


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class Sandbox:
    """The reference server's control plane (``client.sandbox``): clients, clock, payments, faults,
    and the wallet's keys, users, stock cards, linking tokens, card payments and email outbox.

    Works only against ``paysdk serve`` (the local reference server); needs no merchant token.
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    def health(self) -> Health:
        """Server status, environment, database and virtual time (``GET /_sandbox/health``)."""
        return self._client._request(health_operation())

    def reset(self) -> None:
        """Erase all state: clients, transactions, callbacks, faults, clock offset."""
        self._client._request(reset_operation())

    def create_client(
        self,
        *,
        slug: str | None = None,
        amount_min: Decimal | int | str | None = None,
        amount_max: Decimal | int | str | None = None,
        channels: Sequence[str | Channel] | None = None,
        currencies: Sequence[str | Currency] | None = None,
        payment_methods: Sequence[str] | None = None,
        country: str | None = None,
        timezone: str | None = None,
        callback_url: str | None = None,
        callback_header_name: str | None = None,
        callback_header_value: str | None = None,
        three_ds: bool | None = None,
        signing_public_key: str | None = None,
        keys_expire_at: datetime | None = None,
        user_access_token_ttl: int | None = None,
        user_refresh_token_ttl: int | None = None,
    ) -> SandboxClient:
        """Onboard a merchant client; every field is optional (the server picks defaults).

        The answer holds the client's sandbox and production tokens and hook keys (its repr hides them).
        Wallet: the server generates the client's Ed25519 key pair (``signing_private_key`` in the
        answer, once) unless you register ``signing_public_key``; ``keys_expire_at`` (virtual clock)
        and the user-token lifetimes in seconds are optional.
        """
        op = create_client_operation(
            slug=slug,
            amount_min=amount_min,
            amount_max=amount_max,
            channels=None if channels is None else list(channels),
            currencies=None if currencies is None else list(currencies),
            payment_methods=None if payment_methods is None else list(payment_methods),
            country=country,
            timezone=timezone,
            callback_url=callback_url,
            callback_header_name=callback_header_name,
            callback_header_value=callback_header_value,
            three_ds=three_ds,
            signing_public_key=signing_public_key,
            keys_expire_at=keys_expire_at,
            user_access_token_ttl=user_access_token_ttl,
            user_refresh_token_ttl=user_refresh_token_ttl,
        )
        return self._client._request(op)

    def get_client(self, slug: str) -> SandboxClient:
        """The client ``slug``, with its credentials."""
        return self._client._request(get_client_operation(slug))

    def clock(self) -> ClockState:
        """The virtual time and its offset from the wall clock."""
        return self._client._request(clock_operation())

    def advance_clock(self, seconds: int | Decimal) -> ClockState:
        """Move the virtual clock forward by ``seconds``; due timed jobs (expiry, callback retries) run."""
        return self._client._request(advance_clock_operation(seconds))

    def pay(self, uid: str, card_number: str, three_ds_result: str | None = None) -> PayResult:
        """Pay transaction ``uid`` with a test card, as the hosted checkout would.

        ``three_ds_result`` (``"approve"`` or ``"fail"``) answers a 3-D Secure challenge.
        """
        return self._client._request(pay_operation(uid, card_number, three_ds_result))

    def simulate(self, uid: str, outcome: Literal["paid", "expired"]) -> PayResult:
        """Make the rail of alternative payment ``uid`` report ``paid``, or let transaction ``uid`` expire.

        Answers the outcome like :meth:`pay`: ``status`` (``approved`` or ``expired``), ``outcome``
        (``rail_paid`` or ``expired``) and ``message`` (decision D60).
        """
        return self._client._request(simulate_operation(uid, outcome))

    def transaction(self, uid: str) -> SandboxTransaction:
        """Transaction ``uid`` as the server holds it (status, amount, timestamps)."""
        return self._client._request(transaction_operation(uid))

    def callbacks(self, uid: str | None = None) -> list[CallbackAttempt]:
        """Merchant callback delivery attempts, all or those of transaction ``uid``."""
        return self._client._request(callbacks_operation(uid))

    def requests(self) -> list[RequestLogEntry]:
        """The public requests the server received (secrets masked)."""
        return self._client._request(requests_operation())

    def add_fault(
        self,
        kind: FaultKind,
        route: str = "*",
        count: int = 1,
        status: int | None = None,
        latency_ms: int | None = None,
        retry_after: int | None = None,
        after_events: int | None = None,
    ) -> Fault:
        """Inject a fault (``latency``, ``error``, ``rate_limit``, ``drop``, ``duplicate_callback``,
        ``stream_cut``).

        ``route`` is ``"METHOD /path"`` or ``"/path"`` (a trailing ``*`` matches a prefix); ``count`` how
        many matching requests (for ``stream_cut``: event streams) it applies to. ``stream_cut`` drops
        the connection of a matching event stream after ``after_events`` events (D118).
        """
        op = add_fault_operation(kind, route, count, status, latency_ms, retry_after, after_events)
        return self._client._request(op)

    def faults(self) -> list[Fault]:
        """The active faults."""
        return self._client._request(faults_operation())

    def clear_faults(self) -> None:
        """Remove every fault."""
        self._client._request(clear_faults_operation())

    def events(
        self,
        *,
        path: str | None = None,
        status: str | None = None,
        uid: str | None = None,
        last_event_id: str | None = None,
        read_timeout: float | None = None,
        max_reconnects: int | None = None,
    ) -> EventStream[SandboxEvent]:
        """The server's live feed (``GET /_sandbox/events``): an async iterator of typed events, a
        :class:`~paysdk.contracts.sandbox_events.RequestEvent` per public request, a ``CallbackEvent`` per
        callback attempt, a ``JobEvent`` per job run, a ``GapEvent`` when events were lost.

        Filters: ``path`` (a prefix, or a glob with ``*``), ``status`` (``4xx``, ``500``, or a comma
        list), ``uid`` (a transaction, card or event id anywhere in the event). ``last_event_id`` resumes
        after that event. The connection opens at the first iteration and is reopened with
        ``Last-Event-ID`` when it drops (``max_reconnects`` consecutive failures at most, default 10);
        no read timeout applies between events unless ``read_timeout`` is given. ``with`` it, or
        ``close()`` it, to close the connection.
        """
        op = events_operation(path, status, uid, last_event_id, read_timeout, max_reconnects)
        return EventStream(self._client, op)

    def test_cards(self) -> list[TestCard]:
        """The test card numbers and the outcome each drives."""
        return self._client._request(test_cards_operation())

    def rotate_wallet_keys(
        self, slug: str, public_key: str | None = None, expires_at: datetime | None = None
    ) -> SandboxWalletKeys:
        """Rotate client ``slug``'s wallet signing key: generate a pair (``private_key`` in the
        answer, masked repr) or register ``public_key``; ``expires_at`` on the virtual clock."""
        return self._client._request(rotate_wallet_keys_operation(slug, public_key, expires_at))

    def create_user(
        self,
        merchant: str,
        username: str,
        email: str,
        password: str,
        profile: UserProfile | Mapping[str, Any] | None = None,
    ) -> Cardholder:
        """Create a wallet user (cardholder) of ``merchant``; its ``user_id`` (``authUserId`` on the
        wire) is what the wallet calls take as ``user_id``."""
        op = create_user_operation(merchant, username, email, password, profile)
        return self._client._request(op)

    def create_stock_card(
        self, merchant: str, currency: str | Currency = "GTQ", balance: Decimal | int | str | None = None
    ) -> Card:
        """An issued physical card no one holds yet (link it with ``wallet.cards.link``)."""
        return self._client._request(create_stock_card_operation(merchant, currency, balance))

    def create_linking_token(self, pan: str, expiry: str) -> SandboxLinkingToken:
        """A single-use linking token for an external card (``pan`` digits, ``expiry`` ``MM/YY``)."""
        return self._client._request(create_linking_token_operation(pan, expiry))

    def charge(self, card_id: str, amount: Decimal | int | str, capture: bool = False) -> SandboxCharge:
        """A card payment: an authorization holding a pending debit, captured at once if ``capture``."""
        return self._client._request(charge_operation(card_id, amount, capture))

    def capture(self, charge_id: str) -> SandboxCharge:
        """Capture an authorization: the pending debit reduces the balance."""
        return self._client._request(capture_operation(charge_id))

    def refund(self, charge_id: str, amount: Decimal | int | str | None = None) -> SandboxRefund:
        """Refund part (``amount``) or all of a captured charge: a pending credit."""
        return self._client._request(refund_operation(charge_id, amount))

    def clear_refund(self, refund_id: str) -> SandboxRefund:
        """Clear a refund: the credit reaches the balance."""
        return self._client._request(clear_refund_operation(refund_id))

    def outbox(self, to: str | None = None) -> list[OutboxMessage]:
        """The emails the sandbox would have sent (OTP codes), all or those to ``to``."""
        return self._client._request(outbox_operation(to))
# unasync: generated end
