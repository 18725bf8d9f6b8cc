"""Payment links: ``POST /transactions`` and ``POST /transactions-hook`` (spec 2.1, 2.2, 4.1; D2, D3, D4,
D14, D19, D22).

A link is created ``pending`` with ``expire_at`` = creation + 24 h (virtual clock, D19); the scheduler
expires it then. Its ``URL`` is ``{webview_url}/?orderId=<uid>`` (spec 2.2).

Creation is split for the group commit (:meth:`paysdk.server.context.ServerContext.run_grouped`): the
body is parsed, validated and its phone checked on the event loop (:func:`parse`, :func:`parse_hook`),
and what needs the database runs in the batch (:func:`create`, :func:`create_from_hook`). A body error
is only raised in the batch, at the point where it was raised before, so the order of the checks (and
so every answer) is unchanged: the token is checked before the body.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy.engine import Connection

from paysdk.contracts.payment_links import PaymentLink, PaymentLinkCreate, PaymentLinkHookCreate
from paysdk.server.auth import (
    Credentials,
    EnvironmentName,
    authenticate_hook_keys_core,
    authenticate_token_core,
)
from paysdk.server.bodies import parse_json_object, validate
from paysdk.server.clock import Clock
from paysdk.server.core_tables import ClientRow
from paysdk.server.services.common import check_phone
from paysdk.server.services.transactions import KIND_LINK, create_pending

__all__ = ["LINK_LIFETIME", "Parsed", "create", "create_from_hook", "parse", "parse_hook"]

LINK_LIFETIME = timedelta(hours=24)


class Parsed:
    """The outcome of parsing a body before the database is asked: the value, or the exception that
    parsing raised (raised again, in the batch, where the checks raised it before)."""

    __slots__ = ("error", "value")

    def __init__(self, step: Callable[[], Any]) -> None:
        self.value: Any = None
        self.error: Exception | None = None
        try:
            self.value = step()
        except Exception as exc:
            self.error = exc

    def get(self) -> Any:
        """The value, or raise the parse error."""
        if self.error is not None:
            raise self.error
        return self.value


#: ``userId`` values :func:`check_phone` accepted (a pure check: same input, same verdict); bounded.
_GOOD_PHONES: set[str] = set()
_GOOD_PHONES_MAX = 4096


def _check_phone(user_id: str) -> None:
    """:func:`check_phone`, remembering the numbers it accepted (the hot path sees the same ones often)."""
    if user_id in _GOOD_PHONES:
        return
    check_phone(user_id)
    if len(_GOOD_PHONES) >= _GOOD_PHONES_MAX:
        _GOOD_PHONES.clear()
    _GOOD_PHONES.add(user_id)


def _link_body(raw_body: bytes) -> PaymentLinkCreate:
    body = validate(PaymentLinkCreate, parse_json_object(raw_body))
    _check_phone(body.user_id)
    return body


def parse(raw_body: bytes) -> Parsed:
    """The body of ``POST /transactions`` parsed, validated and its phone checked (on the event loop)."""
    return Parsed(lambda: _link_body(raw_body))


def _hook_body(data: dict[str, Any]) -> PaymentLinkHookCreate:
    body = validate(PaymentLinkHookCreate, data)
    _check_phone(body.user_id)
    return body


def parse_hook(raw_body: bytes) -> tuple[Parsed, Parsed]:
    """``POST /transactions-hook``: the JSON object, then the validated body (both may hold an error)."""
    data = Parsed(lambda: parse_json_object(raw_body))
    if data.error is not None:
        return data, data
    return data, Parsed(lambda: _hook_body(data.value))


def _store(
    connection: Connection, clock: Clock, client: ClientRow, body: PaymentLinkCreate, webview_url: str
) -> PaymentLink:
    uid, reference, _ = create_pending(
        connection, clock, client, body, kind=KIND_LINK, prefix="PL-", lifetime=LINK_LIFETIME
    )
    return PaymentLink(uid=uid, reference=reference, url=f"{webview_url}/?orderId={uid}")


def create(
    connection: Connection,
    clock: Clock,
    environment: EnvironmentName,
    credentials: Credentials,
    parsed: Parsed,
    webview_url: str,
) -> PaymentLink:
    """``POST /transactions``: authenticate (401/2007), parse (400/5000), slug (5004), range (2003).

    Runs on a Core connection in a group commit (:meth:`ServerContext.run_grouped`): the hot path of
    the server. ``parsed``: :func:`parse` of the body.
    """
    client = authenticate_token_core(connection, credentials, environment)
    body: PaymentLinkCreate = parsed.get()
    return _store(connection, clock, client, body, webview_url)


def create_from_hook(
    connection: Connection, clock: Clock, parsed: tuple[Parsed, Parsed], webview_url: str
) -> PaymentLink:
    """``POST /transactions-hook``: the body's key pair identifies the client (D14); ``client`` optional.
    ``parsed``: :func:`parse_hook` of the body."""
    data: dict[str, Any] = parsed[0].get()
    client = authenticate_hook_keys_core(connection, data.get("privateKey"), data.get("publicKey"))
    body: PaymentLinkHookCreate = parsed[1].get()
    return _store(connection, clock, client, body, webview_url)
