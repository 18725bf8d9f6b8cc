"""The reference server's control plane under ``/_sandbox/`` (not part of the public API).

camelCase JSON like the public API. Shared by the server (``paysdk.server``), the SDK's
``client.sandbox`` resource and the CLI's ``paysdk sandbox`` commands.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from pydantic import Field

from paysdk.contracts.common import Channel, Currency, DecimalNumber, WireModel

__all__ = [
    "DISPLAY_NAME_MAX",
    "CallbackAttempt",
    "ClockAdvance",
    "ClockState",
    "Fault",
    "FaultCreate",
    "FaultKind",
    "Health",
    "PayRequest",
    "PayResult",
    "RequestLogEntry",
    "SandboxClient",
    "SandboxClientCreate",
    "SandboxClientUpdate",
    "SandboxJob",
    "SandboxTransaction",
    "SimulateRequest",
    "TestCard",
    "UploadPart",
    "UploadReceipt",
]


#: The longest display name of a client (characters, D413).
DISPLAY_NAME_MAX = 80


class SandboxClientCreate(WireModel):
    """Body of ``POST /_sandbox/clients``. Every field is optional; defaults are in the server guide."""

    slug: str | None = Field(default=None, min_length=1, max_length=64)
    #: The name the hosted checkout shows the customer ("Pay Corner Shop"); the slug when absent (D413).
    display_name: str | None = Field(default=None, min_length=1, max_length=DISPLAY_NAME_MAX)
    amount_min: DecimalNumber | None = None
    amount_max: DecimalNumber | None = None
    channels: list[Channel] | None = None
    currencies: list[Currency] | None = None
    payment_methods: list[str] | None = None
    country: str | None = Field(default=None, min_length=2, max_length=2)
    timezone: str | None = None
    callback_url: str | None = None
    callback_header_name: str | None = Field(default=None, min_length=1, max_length=100)
    callback_header_value: str | None = Field(default=None, min_length=1, max_length=500)
    three_ds: bool | None = Field(default=None, alias="threeDS")
    # Wallet (D34, D36): register your own Ed25519 public key (base64, 32 bytes) instead of having one
    # generated; when the keys expire on the virtual clock; user-token lifetimes in seconds.
    signing_public_key: str | None = None
    keys_expire_at: datetime | None = None
    user_access_token_ttl: int | None = Field(default=None, ge=60, le=86400)
    user_refresh_token_ttl: int | None = Field(default=None, ge=300, le=90 * 86400)


class SandboxClientUpdate(WireModel):
    """Body of ``PATCH /_sandbox/clients/{slug}`` (D413): the fields it names change, the others stay.
    ``displayName: null`` removes the display name (the checkout shows the slug again)."""

    display_name: str | None = Field(default=None, min_length=1, max_length=DISPLAY_NAME_MAX)


class SandboxClient(WireModel):
    """A merchant client as the control plane answers it, with its secrets (sandbox only)."""

    slug: str
    #: The name the hosted checkout shows (D413); ``None``: it shows the slug.
    display_name: str | None = None
    amount_min: DecimalNumber
    amount_max: DecimalNumber
    channels: list[str]
    currencies: list[str]
    payment_methods: list[str]
    country: str
    timezone: str
    callback_url: str | None = None
    callback_header_name: str
    callback_header_value: str
    three_ds: bool = Field(alias="threeDS")
    sandbox_token: str
    production_token: str
    hook_private_key: str
    hook_public_key: str
    #: The wallet signing key pair (D36). ``signing_private_key`` (base64 32-byte seed) is given once,
    #: when the server generated the pair; it is ``None`` when you registered your own public key.
    signing_public_key: str | None = None
    signing_private_key: str | None = None
    keys_expire_at: datetime | None = None
    user_access_token_ttl: int = 900
    user_refresh_token_ttl: int = 30 * 86400

    def __repr__(self) -> str:  # the tokens and keys never show
        return (
            f"SandboxClient(slug={self.slug!r}, channels={self.channels!r}, currencies={self.currencies!r})"
        )

    __str__ = __repr__


class Health(WireModel):
    """``GET /_sandbox/health``."""

    status: Literal["ok"]
    environment: Literal["sandbox", "production"]
    database: str
    now: datetime


class ClockState(WireModel):
    """``GET /_sandbox/clock``: the virtual time and how far it is ahead of the wall clock."""

    now: datetime
    offset_seconds: Decimal


class ClockAdvance(WireModel):
    """Body of ``POST /_sandbox/clock/advance``."""

    seconds: Decimal = Field(gt=0, le=Decimal(10 * 365 * 86400))


class PayRequest(WireModel):
    """Body of ``POST /_sandbox/transactions/{uid}/pay``: the checkout completed headlessly."""

    card_number: str = Field(min_length=12, max_length=23)
    three_ds_result: Literal["approve", "fail"] | None = Field(default=None, alias="threeDSResult")


class PayResult(WireModel):
    """The outcome of a payment: the transaction's new status and why.

    The answer of both ``POST /_sandbox/transactions/{uid}/pay`` and ``.../simulate`` (decision D60):
    ``status`` is the transaction's status after the call (``approved``, ``declined``, ``expired``, or
    ``pending`` while a 3-D Secure challenge waits), ``outcome`` the machine-readable reason
    (``approved``, ``insufficient_funds``, ``three_ds_required``, ``rail_paid``, ``expired``, ...).
    Read the whole transaction with ``GET /_sandbox/transactions/{uid}``.
    """

    uid: str
    status: str
    outcome: str
    message: str


class SimulateRequest(WireModel):
    """Body of ``POST /_sandbox/transactions/{uid}/simulate`` for rail payments."""

    outcome: Literal["paid", "expired"]


class SandboxTransaction(WireModel):
    """``GET /_sandbox/transactions/{uid}``: a transaction as the server holds it."""

    uid: str
    reference: str
    kind: Literal["payment_link", "alternative_payment", "card_verification"]
    client: str
    status: str
    amount: DecimalNumber
    currency: str
    channel: str
    user_id: str
    external_id: str | None = None
    processor: str | None = None
    created_at: datetime
    expire_at: datetime
    updated_at: datetime


class CallbackAttempt(WireModel):
    """One delivery attempt of a merchant callback (``GET /_sandbox/callbacks``)."""

    event_id: str
    uid: str
    attempt: int
    url: str
    status_code: int | None = None
    error: str | None = None
    at: datetime
    next_attempt_at: datetime | None = None
    final: bool = False


class SandboxJob(WireModel):
    """One timed job of the server (``GET /_sandbox/jobs``): ``status`` ``pending``, ``running``,
    ``done`` or ``failed`` (D126); ``dueAt`` virtual time, ``leaseUntil`` wall-clock time (D125);
    ``leaseOwner`` the runner that holds or last held it; ``everySeconds`` a recurring job's interval."""

    id: int
    kind: str
    ref: str
    status: str
    attempts: int
    last_error: str | None = None
    due_at: datetime
    every_seconds: int | None = None
    lease_owner: str | None = None
    lease_until: datetime | None = None
    created_at: datetime


class RequestLogEntry(WireModel):
    """One public request (``GET /_sandbox/requests``); secrets masked. ``request_id`` is the
    ``X-Request-Id`` of its answer (D65; ``None`` for entries older than that)."""

    method: str
    path: str
    status_code: int
    at: datetime
    headers: dict[str, str] = Field(default_factory=dict)
    request_id: str | None = None
    #: Milliseconds from the request's arrival to the end of its answer (a stream: its end).
    duration_ms: int | None = None


FaultKind = Literal[
    "latency", "error", "rate_limit", "drop", "duplicate_callback", "stream_cut", "callback_down"
]


class FaultCreate(WireModel):
    """Body of ``POST /_sandbox/faults``: inject a fault on requests matching ``route``.

    ``route`` is ``"METHOD /path"`` or ``"/path"``; a path may end with ``*`` to match a prefix.
    ``count`` is how many matching requests (or callback events) the fault applies to.
    """

    kind: FaultKind
    route: str = Field(default="*", min_length=1)
    count: int = Field(default=1, ge=1, le=10000)
    status: int | None = Field(default=None, ge=500, le=599)
    latency_ms: int | None = Field(default=None, ge=0, le=60000)
    retry_after: int | None = Field(default=None, ge=0, le=3600)
    #: ``stream_cut``: the connection of a matching event stream is dropped after this many events.
    after_events: int | None = Field(default=None, ge=0, le=10000)


class Fault(FaultCreate):
    """A fault as stored, with how many uses remain."""

    id: str
    remaining: int


class TestCard(WireModel):
    """A test card number and the outcome it drives (``GET /_sandbox/test-cards``)."""

    __test__ = False  # not a pytest test class

    number: str
    brand: str
    outcome: str
    description: str
    extra: dict[str, Any] = Field(default_factory=dict)


class UploadPart(WireModel):
    """What the upload sink learnt of one part: never its content, only its size and SHA-256.

    ``name`` is the form field name and ``filename``/``content_type`` what the part declared (all
    ``None`` for a raw body but ``content_type``, the request's).
    """

    name: str | None = None
    filename: str | None = None
    content_type: str | None = None
    size: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class UploadReceipt(WireModel):
    """The answer of ``POST /_sandbox/uploads``: one :class:`UploadPart` per part received, in order."""

    parts: list[UploadPart]

    @property
    def size(self) -> int:
        """The bytes of every part together."""
        return sum(part.size for part in self.parts)

    @property
    def sha256(self) -> str | None:
        """The SHA-256 (hex) of the only part, ``None`` when there were several or none."""
        return self.parts[0].sha256 if len(self.parts) == 1 else None
