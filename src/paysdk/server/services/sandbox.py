"""The control plane's logic: clients, health, the request log (``/_sandbox/...``).

Client defaults (``POST /_sandbox/clients`` with every field optional): slug ``merchant-<8 hex>``,
amount range ``1.00``..``100000.00`` (D4), all five channels, currencies ``GTQ, USD``, all six rails,
country ``GT``, timezone ``America/Guatemala``, callback header ``X-Callback-Token`` with a random
32-hex value (D15), 3-D Secure off. Tokens are 64 hex (spec 5.2.1), distinct for sandbox and production;
hook keys are UUID4 strings (D14), of which only ``sha256(private:public)`` is stored, so the private key
is shown once, by the create answer (later reads show ``****``).

Wallet (D34, D36): every client gets an Ed25519 signing key pair (the private key, a base64 32-byte seed,
is answered once and never stored) unless it registers ``signingPublicKey``; ``keysExpireAt`` and the
user-token lifetimes are kept with it (:mod:`paysdk.server.services.wallet_tokens`).

Display name (D413): what the hosted checkout calls the merchant, set by the create or by
``PATCH /_sandbox/clients/{slug}`` (``null`` removes it: the checkout shows the slug). Surrounding
whitespace is dropped; it must keep 1 to 80 characters and hold no control character.
"""

from __future__ import annotations

import re
import secrets
import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk._redact import MASK
from paysdk.contracts.alternative_payments import RAILS
from paysdk.contracts.callbacks import DEFAULT_TIMEZONE
from paysdk.contracts.common import Channel
from paysdk.contracts.sandbox import (
    DISPLAY_NAME_MAX,
    RequestLogEntry,
    SandboxClient,
    SandboxClientCreate,
    SandboxClientUpdate,
)
from paysdk.server.auth import hook_keys_digest, sha256_hex
from paysdk.server.core_tables import ClientRow, RequestLogRow
from paysdk.server.db import from_cents, to_cents
from paysdk.server.errors import APIProblem
from paysdk.server.services.callbacks import callback_host_problem

__all__ = [
    "DEFAULT_AMOUNT_MAX",
    "DEFAULT_AMOUNT_MIN",
    "client_view",
    "create_client",
    "get_client",
    "list_clients",
    "masked_view",
    "request_log",
    "update_client",
    "valid_slug",
]

DEFAULT_AMOUNT_MIN = Decimal("1.00")
DEFAULT_AMOUNT_MAX = Decimal("100000.00")
DEFAULT_CURRENCIES = ("GTQ", "USD")
_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_TOKEN_CHARS = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")
_VISIBLE_ASCII = re.compile(r"^[\x20-\x7e]{1,500}$")
_FORBIDDEN_HEADERS = {
    "content-type",
    "content-length",
    "host",
    "x-event-id",
    "transfer-encoding",
    "user-agent",
}


def valid_slug(slug: str) -> bool:
    """Letters, digits, ``.``, ``_``, ``-``; 1..64 characters, starting with a letter or digit."""
    return bool(_SLUG.match(slug))


def _money(value: Decimal | None, default: Decimal, field: str) -> int:
    amount = default if value is None else value
    if not amount.is_finite() or amount <= 0 or amount.adjusted() >= 15:
        raise APIProblem.invalid_field(field, "must be a positive amount")
    if amount != amount.quantize(Decimal("0.01")):
        raise APIProblem.invalid_field(field, "has more than 2 decimal places")
    return to_cents(amount)


def _display_name(value: str | None) -> str | None:
    """A display name as kept (see the module docstring); ``409`` naming ``displayName`` otherwise."""
    if value is None:
        return None
    name = value.strip()
    if not 1 <= len(name) <= DISPLAY_NAME_MAX:
        raise APIProblem.invalid_field("displayName", f"must hold 1 to {DISPLAY_NAME_MAX} characters")
    if any(ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0 or char in "\u2028\u2029" for char in name):
        raise APIProblem.invalid_field("displayName", "must not hold control characters")
    return name


def _unique(values: list[str], field: str) -> list[str]:
    if not values:
        raise APIProblem.invalid_field(field, "must not be empty")
    return list(dict.fromkeys(values))


def create_client(session: Session, spec: SandboxClientCreate, now: datetime) -> SandboxClient:
    """Create a client with the defaults of the module docstring; duplicate slug ``409``."""
    slug = spec.slug if spec.slug is not None else "merchant-" + secrets.token_hex(4)
    if not valid_slug(slug):
        raise APIProblem.invalid_field("slug", "may hold only letters, digits, '.', '_' and '-'")
    display_name = _display_name(spec.display_name)
    low = _money(spec.amount_min, DEFAULT_AMOUNT_MIN, "amountMin")
    high = _money(spec.amount_max, DEFAULT_AMOUNT_MAX, "amountMax")
    if low > high:
        raise APIProblem.invalid_field("amountMax", "must not be below amountMin")
    channels = _unique(
        [c.value for c in spec.channels] if spec.channels is not None else [c.value for c in Channel],
        "channels",
    )
    currencies = _unique(
        [c.value for c in spec.currencies] if spec.currencies is not None else list(DEFAULT_CURRENCIES),
        "currencies",
    )
    rails = _unique(
        list(spec.payment_methods) if spec.payment_methods is not None else list(RAILS), "paymentMethods"
    )
    for index, rail in enumerate(rails):
        if rail not in RAILS:
            raise APIProblem.invalid_field(f"paymentMethods.{index}", f"must be one of {', '.join(RAILS)}")
    country = (spec.country or "GT").upper()
    if not re.fullmatch(r"[A-Z]{2}", country):
        raise APIProblem.invalid_field("country", "must be a two-letter country code")
    timezone = spec.timezone or DEFAULT_TIMEZONE
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise APIProblem.invalid_field("timezone", "is not a known IANA timezone") from None
    if spec.callback_url is not None:
        _check_url(spec.callback_url)
    header_name = spec.callback_header_name or "X-Callback-Token"
    if not _TOKEN_CHARS.match(header_name) or header_name.lower() in _FORBIDDEN_HEADERS:
        raise APIProblem.invalid_field("callbackHeaderName", "is not a usable HTTP header name")
    header_value = spec.callback_header_value or secrets.token_hex(16)
    if not _VISIBLE_ASCII.match(header_value):
        raise APIProblem.invalid_field("callbackHeaderValue", "must be visible ASCII")
    if session.scalar(select(ClientRow.id).where(ClientRow.slug == slug)) is not None:
        raise APIProblem.conflict(f"A client with slug {slug!r} already exists.", "slug")
    sandbox_token, production_token = secrets.token_hex(32), secrets.token_hex(32)
    private_key, public_key = str(uuid.uuid4()), str(uuid.uuid4())
    row = ClientRow(
        slug=slug,
        display_name=display_name,
        amount_min_cents=low,
        amount_max_cents=high,
        channels=channels,
        currencies=currencies,
        payment_methods=rails,
        country=country,
        timezone=timezone,
        callback_url=spec.callback_url,
        callback_header_name=header_name,
        callback_header_value=header_value,
        three_ds=bool(spec.three_ds),
        sandbox_token=sandbox_token,
        sandbox_token_sha256=sha256_hex(sandbox_token),
        production_token=production_token,
        production_token_sha256=sha256_hex(production_token),
        hook_public_key=public_key,
        hook_keys_sha256=hook_keys_digest(private_key, public_key),
        created_at=now,
    )
    session.add(row)
    try:
        session.flush()
    except IntegrityError:  # a concurrent create took the slug
        raise APIProblem.conflict(f"A client with slug {slug!r} already exists.", "slug") from None
    from paysdk.server.services import wallet_tokens  # the wallet family's, imported when used (D303)

    wallet = wallet_tokens.create_client_keys(session, row, spec, now)
    return client_view(row, private_key, wallet)


def _check_url(url: str) -> None:
    import httpx  # imported when first used: the server's start does without it (D303)

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError):
        raise APIProblem.invalid_field("callbackUrl", "is not a valid URL") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise APIProblem.invalid_field("callbackUrl", "must be an http(s) URL")
    problem = callback_host_problem(parsed.host)
    if problem is not None:
        raise APIProblem.invalid_field("callbackUrl", problem)


def client_view(
    row: ClientRow, private_key: str = MASK, wallet: dict[str, Any] | None = None
) -> SandboxClient:
    """The control plane's view of a client (with its tokens: sandbox only) and its wallet settings."""
    return SandboxClient(
        slug=row.slug,
        display_name=row.display_name,
        amount_min=from_cents(row.amount_min_cents),
        amount_max=from_cents(row.amount_max_cents),
        channels=list(row.channels),
        currencies=list(row.currencies),
        payment_methods=list(row.payment_methods),
        country=row.country,
        timezone=row.timezone,
        callback_url=row.callback_url,
        callback_header_name=row.callback_header_name,
        callback_header_value=row.callback_header_value,
        three_ds=row.three_ds,
        sandbox_token=row.sandbox_token,
        production_token=row.production_token,
        hook_private_key=private_key,
        hook_public_key=row.hook_public_key,
        **(wallet or {}),
    )


def masked_view(client: SandboxClient) -> SandboxClient:
    """``client`` with the secrets the create answered (its sandbox and production tokens and callback
    header value) shown as ``****``, as a re-read on an exposed control plane answers it (D272)."""
    return client.model_copy(
        update={
            "sandbox_token": MASK,
            "production_token": MASK,
            "callback_header_value": MASK,
            "hook_private_key": MASK,
        }
    )


def _client_row(session: Session, slug: str, *, lock: bool = False) -> ClientRow:
    """The client row of ``slug`` (case-sensitive); ``404`` when unknown."""
    statement = select(ClientRow).where(ClientRow.slug == slug)
    if lock:
        statement = statement.with_for_update()
    row = session.scalars(statement).first() if valid_slug(slug) else None
    if row is None:
        raise APIProblem.not_found("Client", "slug")
    return row


def get_client(session: Session, slug: str) -> SandboxClient:
    """One client by slug (case-sensitive); ``404`` when unknown."""
    row = _client_row(session, slug)
    from paysdk.server.services import wallet_tokens

    return client_view(row, wallet=wallet_tokens.client_wallet_settings(session, row.id))


def update_client(session: Session, slug: str, spec: SandboxClientUpdate) -> SandboxClient:
    """Change the fields ``spec`` names (D413: ``displayName``; ``null`` removes it) of client ``slug``
    and answer it like :func:`get_client`; ``404`` when unknown, ``409`` naming a bad field (nothing
    changes)."""
    row = _client_row(session, slug, lock=True)
    if "display_name" in spec.model_fields_set:
        row.display_name = _display_name(spec.display_name)
    session.flush()
    from paysdk.server.services import wallet_tokens

    return client_view(row, wallet=wallet_tokens.client_wallet_settings(session, row.id))


def request_log(session: Session, limit: int, path: str | None = None) -> list[RequestLogEntry]:
    """The last ``limit`` public requests, oldest first."""
    statement = select(RequestLogRow).order_by(RequestLogRow.id.desc()).limit(limit)
    if path is not None:
        statement = statement.where(RequestLogRow.path.startswith(path.replace("\x00", ""), autoescape=True))
    rows = list(session.scalars(statement))
    rows.reverse()
    return [
        RequestLogEntry(
            method=row.method,
            path=row.path,
            status_code=row.status_code,
            at=row.at,
            headers={str(k): str(v) for k, v in row.headers.items()},
            request_id=row.request_id,
            duration_ms=row.duration_ms,
        )
        for row in rows
    ]


def list_clients(session: Session, limit: int = 500) -> list[SandboxClient]:
    """Every client (slug order, at most ``limit``), as :func:`get_client` answers each (the browser
    console's merchants page, D723; mask them on an exposed plane with :func:`masked_view`)."""
    from paysdk.server.services import wallet_tokens

    rows = session.scalars(select(ClientRow).order_by(ClientRow.slug).limit(limit)).all()
    return [client_view(row, wallet=wallet_tokens.client_wallet_settings(session, row.id)) for row in rows]
