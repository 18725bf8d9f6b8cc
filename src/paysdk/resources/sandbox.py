"""The reference server's control plane, ``/_sandbox/*`` (``client.sandbox``).

Only the local reference server (``paysdk serve``) has these routes; they need no credentials and are
not part of the public API. Answers are the bare models of :mod:`paysdk.contracts.sandbox`. Their
POSTs never use idempotency keys, so they are retried only when nothing was sent (connect errors):
advancing the clock twice by accident would be a bug in a test.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, Unpack

import pydantic

from paysdk._errors import ValidationError
from paysdk._pipeline import CallOptions, Operation, PostCallOptions, list_of, no_result
from paysdk._sse import StreamOperation, StreamPolicy
from paysdk._streaming import AsyncEventStream, EventStream
from paysdk.contracts.alternative_payments import RailName
from paysdk.contracts.common import Channel, ChannelName, Currency, CurrencyCode
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
    SandboxClientUpdate,
    SandboxJob,
    SandboxTransaction,
    SimulateRequest,
    TestCard,
    UploadReceipt,
)
from paysdk.contracts.sandbox_events import EVENT_TYPES, SandboxEvent
from paysdk.contracts.subscriptions import (
    DEFAULT_INTERVAL_ATTEMPT_HOURS,
    Interval,
    Plan,
    PlanCreate,
    SandboxSubscription,
    SandboxSubscriptionsCreate,
    SandboxSubscriptionsCreated,
)
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
from paysdk.resources._base import AsyncEndpoint, AsyncResource, Endpoint, M, Resource, control_operation
from paysdk.resources._validation import (
    check_amount,
    check_email,
    check_str,
    path_segment,
    validation_error_from,
)
from paysdk.resources.sandbox_backoffice import AsyncSandboxBackoffice, SandboxBackoffice
from paysdk.resources.sandbox_deprecations import AsyncSandboxDeprecations, SandboxDeprecations
from paysdk.resources.sandbox_onboarding import AsyncSandboxLeads, SandboxLeads
from paysdk.resources.sandbox_processor import AsyncSandboxProcessor, SandboxProcessor
from paysdk.resources.sandbox_terminal import AsyncSandboxTerminal, SandboxTerminal

if TYPE_CHECKING:
    from collections.abc import Callable

    from paysdk._client import AsyncClient, Client
    from paysdk._uploads import FileInput, FileSource

__all__ = [
    "AsyncPlans",
    "AsyncSandbox",
    "AsyncSandboxSubscriptions",
    "AsyncUploads",
    "JobStatus",
    "Plans",
    "Sandbox",
    "SandboxSubscriptions",
    "Uploads",
]

_ROOT = "/_sandbox"


#: The family's operations (:func:`~paysdk.resources._base.operation` with its defaults).
_op = functools.partial(control_operation, root=_ROOT)


def _wire(model: type[pydantic.BaseModel], **fields: Any) -> dict[str, Any]:
    try:
        instance = model.model_validate(fields)
    except pydantic.ValidationError as exc:
        raise validation_error_from(exc) from None
    return instance.model_dump(by_alias=True, exclude_none=True, mode="python")


def health_operation(**options: Unpack[CallOptions]) -> Operation[Health]:
    """Server status, environment, database and virtual time (``GET /_sandbox/health``)."""
    return _op("GET", "/health", Health.model_validate, options)


def reset_operation(**options: Unpack[PostCallOptions]) -> Operation[None]:
    """Erase all state: clients, transactions, callbacks, faults, clock offset (``POST /_sandbox/reset``)."""
    return _op("POST", "/reset", no_result, options)


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
    slug: str,
    public_key: str | None = None,
    expires_at: datetime | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[SandboxWalletKeys]:
    """Rotate client ``slug``'s wallet signing key (``POST /_sandbox/clients/{slug}/keys``): generate a
    pair (``private_key`` in the answer, masked repr) or register ``public_key``; ``expires_at`` on
    the virtual clock."""
    body = _wire(SandboxWalletKeysCreate, public_key=public_key, expires_at=expires_at)
    path = f"/clients/{path_segment(slug, 'slug')}/keys"
    return _op("POST", path, _bare(SandboxWalletKeys.model_validate), options, json=body)


def create_user_operation(
    merchant: str,
    username: str,
    email: str,
    password: str,
    profile: UserProfile | Mapping[str, Any] | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[Cardholder]:
    """Create a wallet user (cardholder) of ``merchant`` (``POST /_sandbox/users``); its ``user_id``
    (``authUserId`` on the wire) is what the wallet calls take as ``user_id``."""
    if isinstance(profile, UserProfile):
        profile = profile.model_dump(by_alias=True, exclude_none=True)
    fields = {"merchant": merchant, "username": username, "email": email, "password": password}
    body = _wire(SandboxUserCreate, profile=profile, **fields)
    return _op("POST", "/users", _bare(Cardholder.model_validate), options, json=body)


def create_stock_card_operation(
    merchant: str,
    currency: Currency | CurrencyCode = "GTQ",
    balance: Decimal | int | str | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[Card]:
    """An issued physical card no one holds yet (``POST /_sandbox/cards``; link it with
    ``wallet.cards.link``)."""
    amount = None if balance is None else _wallet_amount(balance, "balance")
    body = _wire(SandboxStockCardCreate, merchant=merchant, currency=currency, balance=amount)
    return _op("POST", "/cards", _bare(Card.model_validate), options, json=body)


def create_linking_token_operation(
    pan: str, expiry: str, **options: Unpack[PostCallOptions]
) -> Operation[SandboxLinkingToken]:
    """A single-use linking token for an external card (``POST /_sandbox/linking-tokens``: what a third
    party's tokenization would hand the wallet; ``pan`` digits, ``expiry`` ``MM/YY``)."""
    body = _wire(SandboxLinkingTokenCreate, pan=pan, expiry=expiry)
    return _op("POST", "/linking-tokens", _bare(SandboxLinkingToken.model_validate), options, json=body)


def charge_operation(
    card_id: str, amount: Decimal | int | str, capture: bool = False, **options: Unpack[PostCallOptions]
) -> Operation[SandboxCharge]:
    """A card payment (``POST /_sandbox/cards/{cardId}/charges``): an authorization holding a pending
    debit, captured at once if ``capture``."""
    body = _wire(SandboxChargeCreate, amount=_wallet_amount(amount), capture=capture)
    path = f"/cards/{path_segment(card_id, 'card_id')}/charges"
    return _op("POST", path, _bare(SandboxCharge.model_validate), options, json=body)


def capture_operation(charge_id: str, **options: Unpack[PostCallOptions]) -> Operation[SandboxCharge]:
    """Capture an authorization (``POST /_sandbox/charges/{chargeId}/capture``): the pending debit
    reduces the balance."""
    path = f"/charges/{path_segment(charge_id, 'charge_id')}/capture"
    return _op("POST", path, _bare(SandboxCharge.model_validate), options)


def refund_operation(
    charge_id: str, amount: Decimal | int | str | None = None, **options: Unpack[PostCallOptions]
) -> Operation[SandboxRefund]:
    """Refund part (``amount``) or all of a captured charge (``POST /_sandbox/charges/{chargeId}/refunds``):
    a pending credit."""
    body = _wire(SandboxRefundCreate, amount=None if amount is None else _wallet_amount(amount))
    path = f"/charges/{path_segment(charge_id, 'charge_id')}/refunds"
    return _op("POST", path, _bare(SandboxRefund.model_validate), options, json=body)


def clear_refund_operation(refund_id: str, **options: Unpack[PostCallOptions]) -> Operation[SandboxRefund]:
    """Clear a refund (``POST /_sandbox/refunds/{refundId}/clear``): the credit reaches the balance."""
    path = f"/refunds/{path_segment(refund_id, 'refund_id')}/clear"
    return _op("POST", path, _bare(SandboxRefund.model_validate), options)


def outbox_operation(to: str | None = None, **options: Unpack[CallOptions]) -> Operation[list[OutboxMessage]]:
    """The emails the sandbox would have sent (OTP codes), all or those to ``to``
    (``GET /_sandbox/outbox[?to=]``)."""
    params = None if to is None else {"to": check_str(to, "to")}
    return _op("GET", "/outbox", _bare(list_of(OutboxMessage.model_validate)), options, params=params)


def create_client_operation(
    *,
    slug: str | None = None,
    display_name: str | None = None,
    amount_min: Decimal | int | str | None = None,
    amount_max: Decimal | int | str | None = None,
    channels: Sequence[Channel | ChannelName] | None = None,
    currencies: Sequence[Currency | CurrencyCode] | None = None,
    payment_methods: Sequence[RailName] | None = None,
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
    **options: Unpack[PostCallOptions],
) -> Operation[SandboxClient]:
    """Onboard a merchant client (``POST /_sandbox/clients``); every field is optional (the server
    picks defaults).

    The answer holds the client's sandbox and production tokens and hook keys (its repr hides them).
    Wallet: the server generates the client's Ed25519 key pair (``signing_private_key`` in the
    answer, once) unless you register ``signing_public_key``; ``keys_expire_at`` (virtual clock)
    and the user-token lifetimes in seconds are optional. ``display_name``: what the hosted checkout
    calls the merchant (its slug when unset).
    """
    fields: dict[str, Any] = {
        "slug": slug,
        "display_name": display_name,
        "amount_min": None if amount_min is None else check_amount(amount_min, "amount_min"),
        "amount_max": None if amount_max is None else check_amount(amount_max, "amount_max"),
        "channels": None if channels is None else list(channels),
        "currencies": None if currencies is None else list(currencies),
        "payment_methods": None if payment_methods is None else list(payment_methods),
        "country": country,
        "timezone": timezone,
        "callback_url": callback_url,
        "callback_header_name": callback_header_name,
        "callback_header_value": callback_header_value,
        "three_ds": three_ds,
        "signing_public_key": signing_public_key,
        "keys_expire_at": keys_expire_at,
        "user_access_token_ttl": user_access_token_ttl,
        "user_refresh_token_ttl": user_refresh_token_ttl,
    }
    body = _wire(SandboxClientCreate, **fields)
    return _op("POST", "/clients", SandboxClient.model_validate, options, json=body)


def get_client_operation(slug: str, **options: Unpack[CallOptions]) -> Operation[SandboxClient]:
    """The client ``slug``, with its credentials (``GET /_sandbox/clients/{slug}``). A server on a
    non-loopback address answers its tokens and callback header value as ``****`` (they were answered
    by the create): :meth:`~AsyncSandbox.reveal_client` answers them in full."""
    return _op("GET", f"/clients/{path_segment(slug, 'slug')}", SandboxClient.model_validate, options)


def update_client_operation(
    slug: str, *, display_name: str | None, **options: Unpack[PostCallOptions]
) -> Operation[SandboxClient]:
    """Change the client ``slug``'s display name, what its hosted checkout calls the merchant
    (``PATCH /_sandbox/clients/{slug}``); ``None`` removes it (the checkout shows the slug again).
    Answers the client like :meth:`~AsyncSandbox.get_client`; setting the same name again changes
    nothing, so it is retried like a read."""
    body = _wire(SandboxClientUpdate, display_name=display_name)
    return _op(
        "PATCH",
        f"/clients/{path_segment(slug, 'slug')}",
        SandboxClient.model_validate,
        options,
        json={"displayName": body.get("displayName")},  # null is sent: it removes the name
        idempotent=True,
    )


def reveal_client_operation(slug: str, **options: Unpack[CallOptions]) -> Operation[SandboxClient]:
    """The client ``slug`` with its sandbox and production tokens and callback header value in full,
    on any server (``POST /_sandbox/clients/{slug}/reveal``; the control token guards it). Changes
    nothing, so it is retried like a read. The hook private key stays ``****`` (only its hash is kept).
    """
    return _op(
        "POST",
        f"/clients/{path_segment(slug, 'slug')}/reveal",
        SandboxClient.model_validate,
        options,
        idempotent=True,
    )


def clock_operation(**options: Unpack[CallOptions]) -> Operation[ClockState]:
    """The virtual time and its offset from the wall clock (``GET /_sandbox/clock``)."""
    return _op("GET", "/clock", ClockState.model_validate, options)


def advance_clock_operation(
    seconds: int | Decimal, **options: Unpack[PostCallOptions]
) -> Operation[ClockState]:
    """Move the virtual clock forward by ``seconds`` (``POST /_sandbox/clock/advance``; an ``int`` or
    ``Decimal`` > 0, never ``float``); due timed jobs (expiry, callback retries) run."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | Decimal):
        raise ValidationError("seconds", "must be an int or Decimal")
    body = _wire(ClockAdvance, seconds=seconds)
    return _op("POST", "/clock/advance", ClockState.model_validate, options, json=body)


def pay_operation(
    uid: str,
    card_number: str,
    three_ds_result: Literal["approve", "fail"] | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[PayResult]:
    """Pay transaction ``uid`` with a test card, as the hosted checkout would
    (``POST /_sandbox/transactions/{uid}/pay``).

    ``three_ds_result`` (``"approve"`` or ``"fail"``) answers a 3-D Secure challenge.
    """
    body = _wire(PayRequest, card_number=card_number, three_ds_result=three_ds_result)
    path = f"/transactions/{path_segment(uid, 'uid')}/pay"
    return _op("POST", path, PayResult.model_validate, options, json=body)


def simulate_operation(
    uid: str, outcome: Literal["paid", "expired"], **options: Unpack[PostCallOptions]
) -> Operation[PayResult]:
    """Make the rail of alternative payment ``uid`` report ``paid``, or let transaction ``uid`` expire
    (``POST /_sandbox/transactions/{uid}/simulate``).

    Answers the outcome like ``pay``: ``status`` (``approved`` or ``expired``), ``outcome``
    (``rail_paid`` or ``expired``) and ``message`` (decision D60).
    """
    body = _wire(SimulateRequest, outcome=outcome)
    path = f"/transactions/{path_segment(uid, 'uid')}/simulate"
    return _op("POST", path, PayResult.model_validate, options, json=body)


def transaction_operation(uid: str, **options: Unpack[CallOptions]) -> Operation[SandboxTransaction]:
    """Transaction ``uid`` as the server holds it (``GET /_sandbox/transactions/{uid}``: status,
    amount, timestamps)."""
    path = f"/transactions/{path_segment(uid, 'uid')}"
    return _op("GET", path, SandboxTransaction.model_validate, options)


def callbacks_operation(
    uid: str | None = None, **options: Unpack[CallOptions]
) -> Operation[list[CallbackAttempt]]:
    """Merchant callback delivery attempts, all or those of transaction ``uid``
    (``GET /_sandbox/callbacks[?uid=]``)."""
    params = None if uid is None else {"uid": check_str(uid, "uid")}
    return _op("GET", "/callbacks", list_of(CallbackAttempt.model_validate), options, params=params)


def resend_callback_operation(
    event_id: str, **options: Unpack[PostCallOptions]
) -> Operation[CallbackAttempt]:
    """Deliver callback event ``event_id`` once more (``POST /_sandbox/callbacks/{eventId}/resend``, D724):
    the same body, ``eventId`` and header through the normal delivery path, recorded as the event's next
    attempt, which is answered (the delivery has run). ``404`` unknown event, ``409`` while a retry of it
    is still queued."""
    path = f"/callbacks/{path_segment(event_id, 'event_id')}/resend"
    return _op("POST", path, CallbackAttempt.model_validate, options)


#: The statuses of a job (D126).
JobStatus = Literal["pending", "running", "done", "failed"]


def jobs_operation(
    status: JobStatus | None = None,
    kind: str | None = None,
    limit: int | None = None,
    **options: Unpack[CallOptions],
) -> Operation[list[SandboxJob]]:
    """The server's timed jobs, newest first: kind, ref, status, attempts, last error, due time,
    lease owner (``GET /_sandbox/jobs``, D129); ``status``, ``kind`` filter, ``limit`` 1..1000
    (default 200)."""
    params: dict[str, Any] = {}
    if status is not None:
        if status not in ("pending", "running", "done", "failed"):
            raise ValidationError("status", "must be pending, running, done or failed")
        params["status"] = status
    if kind is not None:
        params["kind"] = check_str(kind, "kind")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise ValidationError("limit", "must be an integer from 1 to 1000")
        params["limit"] = limit
    return _op("GET", "/jobs", list_of(SandboxJob.model_validate), options, params=params or None)


def requests_operation(**options: Unpack[CallOptions]) -> Operation[list[RequestLogEntry]]:
    """The public requests the server received, secrets masked (``GET /_sandbox/requests``)."""
    return _op("GET", "/requests", list_of(RequestLogEntry.model_validate), options)


def add_fault_operation(
    kind: FaultKind,
    route: str = "*",
    count: int = 1,
    status: int | None = None,
    latency_ms: int | None = None,
    retry_after: int | None = None,
    after_events: int | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[Fault]:
    """Inject a fault (``POST /_sandbox/faults``: ``latency``, ``error``, ``rate_limit``, ``drop``,
    ``duplicate_callback``, ``stream_cut``).

    ``route`` is ``"METHOD /path"`` or ``"/path"`` (a trailing ``*`` matches a prefix); ``count`` how
    many matching requests it applies to. ``stream_cut`` drops an event stream's connection after
    ``after_events`` events (D118).
    """
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
    return _op("POST", "/faults", Fault.model_validate, options, json=body)


def faults_operation(**options: Unpack[CallOptions]) -> Operation[list[Fault]]:
    """The active faults (``GET /_sandbox/faults``)."""
    return _op("GET", "/faults", list_of(Fault.model_validate), options)


def clear_faults_operation(**options: Unpack[CallOptions]) -> Operation[None]:
    """Remove every fault (``DELETE /_sandbox/faults``)."""
    return _op("DELETE", "/faults", no_result, options)


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


def test_cards_operation(**options: Unpack[CallOptions]) -> Operation[list[TestCard]]:
    """The test card numbers and the outcome each drives (``GET /_sandbox/test-cards``)."""
    return _op("GET", "/test-cards", list_of(TestCard.model_validate), options)


def upload_operation(
    file: FileInput | None = None,
    *,
    files: Mapping[str, FileInput] | Sequence[tuple[str, FileInput]] | None = None,
    content: FileInput | None = None,
    filename: str | None = None,
    content_type: str | None = None,
    **options: Unpack[CallOptions],
) -> Operation[UploadReceipt]:
    """Upload ``file`` (a path, a binary file object, ``bytes``, an iterable of ``bytes`` or a
    :class:`paysdk.FileUpload`) as a multipart part named ``file``; or several parts, ``files``
    (``{"field": file}`` or ``[("field", file), ...]``); or ``content`` as the raw body
    (``POST /_sandbox/uploads``: exactly one of the three).

    The sink keeps nothing but each part's size and SHA-256, so the call is idempotent. Files stream
    from disk, never read whole. A failed attempt is retried re-sending the whole body: a path is
    re-opened, a seekable file rewound to where it was when the call started; a non-seekable stream
    (a pipe, a generator) is sent once and never retried. ``timeout``: the seconds one attempt may
    take (it may exceed the client's ``total_timeout``, D112).
    """
    from paysdk._uploads import file_source, multipart_body, raw_body  # only when uploading

    if [file, files, content].count(None) != 2:
        raise ValidationError("file", "pass exactly one of file=, files= or content=")
    if files is not None:
        if filename is not None or content_type is not None:
            raise ValidationError("files", "give each file its name and type with paysdk.FileUpload(...)")
        pairs = list(files.items()) if isinstance(files, Mapping) else list(files)
        if not pairs:
            raise ValidationError("files", "must name at least one file")
        sources: list[tuple[str, FileSource]] = []
        for index, pair in enumerate(pairs):
            if not isinstance(pair, tuple) or len(pair) != 2 or not isinstance(pair[0], str) or not pair[0]:
                raise ValidationError(f"files[{index}]", "must be a (field name, file) pair")
            sources.append((pair[0], file_source(pair[1], f"files[{pair[0]}]")))
        body = multipart_body(sources)
    elif file is not None:
        source = file_source(file, "file", filename=filename, content_type=content_type)
        body = multipart_body([("file", source)])
    else:
        body = raw_body(file_source(content, "content", filename=filename, content_type=content_type))
    return _op("POST", "/uploads", _bare(UploadReceipt.model_validate), options, upload=body, idempotent=True)


# ------------------------------------------------------------------ subscriptions (D141, D142)


def _sub_answer(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Subscription control-plane answers: a bare model, or the family's ``{success, message, data}``."""

    def unwrap(body: Any) -> Any:
        if isinstance(body, dict) and "data" in body and set(body) <= {"success", "message", "data"}:
            body = body["data"]
        return parse(body)

    return unwrap


def create_plan_operation(
    client: str,
    amount: Decimal | int | str,
    *,
    plan_id: str | None = None,
    name: str | None = None,
    currency: Currency | CurrencyCode | None = None,
    interval: Interval = "month",
    interval_count: int = 1,
    term: int | None = None,
    daily_attempts: int = 3,
    interval_attempt: int = DEFAULT_INTERVAL_ATTEMPT_HOURS,
    grace_days: int | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[Plan]:
    """Create a subscription plan of client ``client`` (``POST /_sandbox/plans``, D141): the only way
    plans are made (the public API has none).

    ``amount`` is exact (``Decimal``, ``int`` or decimal string, never ``float``); ``currency``
    defaults to the client's first. A period is ``interval_count`` ``interval`` s (``day``, ``week``,
    ``month``, ``year``); ``term`` is the number of periods of a fixed-term plan (``None``:
    open-ended). Retries of a declined renewal: ``daily_attempts`` (1-24) attempts ``interval_attempt``
    hours apart (default 24) within ``grace_days`` days of the renewal date (``None``: no bound).
    ``plan_id`` defaults to one the server picks. Returns the
    :class:`~paysdk.contracts.subscriptions.Plan`; a plan never changes.
    """
    body = _wire(
        PlanCreate,
        client=check_str(client, "client"),
        plan_id=plan_id,
        name=name,
        amount=check_amount(amount),
        currency=currency,
        interval=interval,
        interval_count=interval_count,
        term=term,
        daily_attempts=daily_attempts,
        interval_attempt=interval_attempt,
        grace_days=grace_days,
    )
    return _op("POST", "/plans", _sub_answer(Plan.model_validate), options, json=body)


def get_plan_operation(plan_id: str, **options: Unpack[CallOptions]) -> Operation[Plan]:
    """One plan (``GET /_sandbox/plans/{planId}``); :class:`~paysdk.NotFoundError` when unknown."""
    path = "/plans/" + path_segment(plan_id, "plan_id")
    return _op("GET", path, _sub_answer(Plan.model_validate), options)


def create_subscriptions_operation(
    plan_id: str,
    count: int = 1,
    email: str | None = None,
    card_number: str = "4242424242424242",
    start_date: date | str | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[SandboxSubscriptionsCreated]:
    """Create ``count`` (1-100,000) ``active`` subscriptions of plan ``plan_id`` at once, without a
    card verification (``POST /_sandbox/subscriptions``, D142): for tests and benchmarks.

    ``card_number`` (a test card, default ``4242424242424242``) is their default method, ``email``
    their notification address. ``start_date`` (a ``date`` or ``YYYY-MM-DD``) is the first renewal
    date, in the client's timezone (default: today there); only the control plane may choose it.
    Returns the count and the ``sub_uids``.
    """
    from paysdk.resources.wallet import check_date

    if isinstance(count, bool) or not isinstance(count, int):
        raise ValidationError("count", "must be an int from 1 to 100000")
    body = _wire(
        SandboxSubscriptionsCreate,
        plan_id=check_str(plan_id, "plan_id", max_length=64),
        count=count,
        email=None if email is None else check_email(email),
        card_number=check_str(card_number, "card_number"),
        start_date=None if start_date is None else check_date(start_date, "start_date"),
    )
    parse = _sub_answer(SandboxSubscriptionsCreated.model_validate)
    return _op("POST", "/subscriptions", parse, options, json=body)


def get_subscription_operation(
    sub_uid: str, **options: Unpack[CallOptions]
) -> Operation[SandboxSubscription]:
    """One subscription as the server holds it (``GET /_sandbox/subscriptions/{subUid}``, D142): its
    state, plan, client and timezone, anchor date, ``next_renewal_date``, the period being charged, its
    failed ``attempts`` and ``next_attempt_at``, ``ends_on`` (fixed term) and every charge."""
    path = "/subscriptions/" + path_segment(sub_uid, "sub_uid")
    return _op("GET", path, _sub_answer(SandboxSubscription.model_validate), options)


# unasync: begin
class AsyncUploads(AsyncResource[M]):
    """The control plane's upload sink (``client.sandbox.uploads``): test file uploads end to end.

    The server streams what it receives and answers each part's size and SHA-256; it stores nothing.
    """

    create = AsyncEndpoint(upload_operation)


class AsyncPlans(AsyncResource[M]):
    """Subscription plans (``client.sandbox.plans``): created only on the control plane (D141)."""

    create = AsyncEndpoint(create_plan_operation)
    get = AsyncEndpoint(get_plan_operation)


class AsyncSandboxSubscriptions(AsyncResource[M]):
    """Subscriptions on the control plane (``client.sandbox.subscriptions``): many at once for tests
    and benchmarks, and the full view of one (D142)."""

    create = AsyncEndpoint(create_subscriptions_operation)
    get = AsyncEndpoint(get_subscription_operation)


class AsyncSandbox(AsyncResource[M]):
    """The reference server's control plane (``client.sandbox``): clients, clock, payments, faults,
    and the wallet's keys, users, stock cards, linking tokens, card payments and email outbox.

    Works only against ``paysdk serve`` (the local reference server); needs no merchant token. Every
    call sends the environment's control token (:attr:`paysdk.Environment.control_token`), which a
    server on a non-loopback address requires.
    """

    health = AsyncEndpoint(health_operation)
    reset = AsyncEndpoint(reset_operation)
    create_client = AsyncEndpoint(create_client_operation)
    get_client = AsyncEndpoint(get_client_operation)
    update_client = AsyncEndpoint(update_client_operation)
    reveal_client = AsyncEndpoint(reveal_client_operation)
    clock = AsyncEndpoint(clock_operation)
    advance_clock = AsyncEndpoint(advance_clock_operation)
    pay = AsyncEndpoint(pay_operation)
    simulate = AsyncEndpoint(simulate_operation)
    transaction = AsyncEndpoint(transaction_operation)
    callbacks = AsyncEndpoint(callbacks_operation)
    resend_callback = AsyncEndpoint(resend_callback_operation)
    jobs = AsyncEndpoint(jobs_operation)
    requests = AsyncEndpoint(requests_operation)
    add_fault = AsyncEndpoint(add_fault_operation)
    faults = AsyncEndpoint(faults_operation)
    clear_faults = AsyncEndpoint(clear_faults_operation)
    test_cards = AsyncEndpoint(test_cards_operation)
    rotate_wallet_keys = AsyncEndpoint(rotate_wallet_keys_operation)
    create_user = AsyncEndpoint(create_user_operation)
    create_stock_card = AsyncEndpoint(create_stock_card_operation)
    create_linking_token = AsyncEndpoint(create_linking_token_operation)
    charge = AsyncEndpoint(charge_operation)
    capture = AsyncEndpoint(capture_operation)
    refund = AsyncEndpoint(refund_operation)
    clear_refund = AsyncEndpoint(clear_refund_operation)
    outbox = AsyncEndpoint(outbox_operation)

    def __init__(self, client: AsyncClient, *, raw: bool = False) -> None:
        super().__init__(client, raw=raw)
        self.uploads: AsyncUploads[M] = AsyncUploads(client, raw=raw)
        self.plans: AsyncPlans[M] = AsyncPlans(client, raw=raw)
        self.subscriptions: AsyncSandboxSubscriptions[M] = AsyncSandboxSubscriptions(client, raw=raw)
        self.backoffice: AsyncSandboxBackoffice[M] = AsyncSandboxBackoffice(client, raw=raw)
        self.terminal: AsyncSandboxTerminal[M] = AsyncSandboxTerminal(client, raw=raw)
        self.processor: AsyncSandboxProcessor[M] = AsyncSandboxProcessor(client, raw=raw)
        self.leads: AsyncSandboxLeads[M] = AsyncSandboxLeads(client, raw=raw)
        self.deprecations: AsyncSandboxDeprecations[M] = AsyncSandboxDeprecations(client, raw=raw)

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


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class Uploads(Resource[M]):
    """The control plane's upload sink (``client.sandbox.uploads``): test file uploads end to end.

    The server streams what it receives and answers each part's size and SHA-256; it stores nothing.
    """

    create = Endpoint(upload_operation)


class Plans(Resource[M]):
    """Subscription plans (``client.sandbox.plans``): created only on the control plane (D141)."""

    create = Endpoint(create_plan_operation)
    get = Endpoint(get_plan_operation)


class SandboxSubscriptions(Resource[M]):
    """Subscriptions on the control plane (``client.sandbox.subscriptions``): many at once for tests
    and benchmarks, and the full view of one (D142)."""

    create = Endpoint(create_subscriptions_operation)
    get = Endpoint(get_subscription_operation)


class Sandbox(Resource[M]):
    """The reference server's control plane (``client.sandbox``): clients, clock, payments, faults,
    and the wallet's keys, users, stock cards, linking tokens, card payments and email outbox.

    Works only against ``paysdk serve`` (the local reference server); needs no merchant token. Every
    call sends the environment's control token (:attr:`paysdk.Environment.control_token`), which a
    server on a non-loopback address requires.
    """

    health = Endpoint(health_operation)
    reset = Endpoint(reset_operation)
    create_client = Endpoint(create_client_operation)
    get_client = Endpoint(get_client_operation)
    update_client = Endpoint(update_client_operation)
    reveal_client = Endpoint(reveal_client_operation)
    clock = Endpoint(clock_operation)
    advance_clock = Endpoint(advance_clock_operation)
    pay = Endpoint(pay_operation)
    simulate = Endpoint(simulate_operation)
    transaction = Endpoint(transaction_operation)
    callbacks = Endpoint(callbacks_operation)
    resend_callback = Endpoint(resend_callback_operation)
    jobs = Endpoint(jobs_operation)
    requests = Endpoint(requests_operation)
    add_fault = Endpoint(add_fault_operation)
    faults = Endpoint(faults_operation)
    clear_faults = Endpoint(clear_faults_operation)
    test_cards = Endpoint(test_cards_operation)
    rotate_wallet_keys = Endpoint(rotate_wallet_keys_operation)
    create_user = Endpoint(create_user_operation)
    create_stock_card = Endpoint(create_stock_card_operation)
    create_linking_token = Endpoint(create_linking_token_operation)
    charge = Endpoint(charge_operation)
    capture = Endpoint(capture_operation)
    refund = Endpoint(refund_operation)
    clear_refund = Endpoint(clear_refund_operation)
    outbox = Endpoint(outbox_operation)

    def __init__(self, client: Client, *, raw: bool = False) -> None:
        super().__init__(client, raw=raw)
        self.uploads: Uploads[M] = Uploads(client, raw=raw)
        self.plans: Plans[M] = Plans(client, raw=raw)
        self.subscriptions: SandboxSubscriptions[M] = SandboxSubscriptions(client, raw=raw)
        self.backoffice: SandboxBackoffice[M] = SandboxBackoffice(client, raw=raw)
        self.terminal: SandboxTerminal[M] = SandboxTerminal(client, raw=raw)
        self.processor: SandboxProcessor[M] = SandboxProcessor(client, raw=raw)
        self.leads: SandboxLeads[M] = SandboxLeads(client, raw=raw)
        self.deprecations: SandboxDeprecations[M] = SandboxDeprecations(client, raw=raw)

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


# unasync: generated end
