"""Alternative payments on direct rails (spec 2.3, 4.1; decisions D3, D4, D10-D13, D21, D22).

* Create: ``201 {data: {uid, paymentMethods, expireAt}}``; ``paymentMethods`` are the client's rails,
  ``expireAt`` Unix epoch milliseconds 15 minutes after creation (virtual clock, D10), when the
  scheduler expires it.
* Process (D11): ``akisiQR``/``quickPayQR`` answer a real QR PNG (segno) as a ``data:image/png;base64,``
  URI encoding the rail page ``{webview_url}/rails/<processor>?orderId=<uid>``; ``zigi``/``bamPaymentButton``
  answer that page's URL; ``bancoIndustrial``/``pronet`` a 12-digit payment reference (kept per
  transaction). A rail the client lacks: ``409 / 5000`` naming ``processor``; unknown uid ``404``;
  not pending ``409`` with ``ownCode: null``.
* Payment intent (D12) records the chosen rail; dismiss (D13) finishes the transaction as ``dismissed``.
"""

from __future__ import annotations

import base64
import io
import secrets
from datetime import UTC, datetime, timedelta

import segno
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from paysdk.contracts.alternative_payments import (
    QR_RAILS,
    REFERENCE_RAILS,
    URL_RAILS,
    AlternativePayment,
    AlternativePaymentCreate,
    DismissResult,
    PaymentIntent,
    PaymentIntentCreate,
    ProcessRequest,
    ProcessResult,
)
from paysdk.contracts.payment_links import TransactionStatus
from paysdk.server.auth import Credentials, EnvironmentName, authenticate_token, authenticate_token_core
from paysdk.server.bodies import parse_json_object, validate
from paysdk.server.clock import Clock
from paysdk.server.core_tables import ClientRow, TransactionRow
from paysdk.server.errors import APIProblem
from paysdk.server.services import transactions
from paysdk.server.services.payment_links import Parsed
from paysdk.server.services.transactions import KIND_ALTERNATIVE, create_pending

__all__ = [
    "ALTERNATIVE_LIFETIME",
    "create",
    "dismiss",
    "epoch_ms",
    "parse",
    "payment_intent",
    "process",
    "qr_png_data_uri",
    "rail_page_url",
]

ALTERNATIVE_LIFETIME = timedelta(minutes=15)


def epoch_ms(moment: datetime) -> int:
    """Unix epoch milliseconds (D10), computed without floating point."""
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


def rail_page_url(webview_url: str, processor: str, uid: str) -> str:
    """The hosted rail page of a transaction (D11)."""
    return f"{webview_url}/rails/{processor}?orderId={uid}"


def qr_png_data_uri(content: str) -> str:
    """A QR code of ``content`` as a PNG data URI."""
    buffer = io.BytesIO()
    segno.make(content, error="m").save(buffer, kind="png", scale=6, border=4)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def parse(raw_body: bytes) -> Parsed:
    """The create body parsed and validated on the event loop; its error is raised by :func:`create`
    after authentication, as before (see :mod:`paysdk.server.services.payment_links`)."""
    return Parsed(lambda: validate(AlternativePaymentCreate, parse_json_object(raw_body)))


def create(
    connection: Connection,
    clock: Clock,
    environment: EnvironmentName,
    credentials: Credentials,
    parsed: Parsed,
) -> AlternativePayment:
    """``POST /api/v1/integrations/transactions`` in a group commit (a Core connection:
    :meth:`ServerContext.run_grouped`). ``parsed``: :func:`parse` of the body."""
    client = authenticate_token_core(connection, credentials, environment)
    body: AlternativePaymentCreate = parsed.get()
    uid, _reference, expire_at = create_pending(
        connection, clock, client, body, kind=KIND_ALTERNATIVE, prefix="AP-", lifetime=ALTERNATIVE_LIFETIME
    )
    return AlternativePayment(
        uid=uid, payment_methods=list(client.payment_methods), expire_at=epoch_ms(expire_at)
    )


def _pending_for_rail(
    session: Session, clock: Clock, client: ClientRow, uid: str, processor: str
) -> tuple[TransactionRow, datetime]:
    tx, _ = transactions.load(session, uid, kind=KIND_ALTERNATIVE, client=client, lock=True)
    if processor not in client.payment_methods:
        raise APIProblem.invalid_field("processor", f"{processor!r} is not a rail enabled for this client")
    now = clock.now(session)
    transactions.expire_if_due(session, tx, client, now)
    if tx.status != TransactionStatus.PENDING:
        raise APIProblem.conflict(f"The transaction is {tx.status}, no longer pending.")
    return tx, now


def process(
    session: Session,
    clock: Clock,
    environment: EnvironmentName,
    credentials: Credentials,
    uid: str,
    raw_body: bytes,
    webview_url: str,
) -> ProcessResult:
    """``POST .../{uid}/payments`` (D11)."""
    client = authenticate_token(session, credentials, environment)
    body = validate(ProcessRequest, parse_json_object(raw_body))
    tx, now = _pending_for_rail(session, clock, client, uid, body.processor)
    tx.processor = body.processor
    tx.updated_at = now
    page = rail_page_url(webview_url, body.processor, tx.uid)
    if body.processor in QR_RAILS:
        return ProcessResult(type="base64", data=qr_png_data_uri(page))
    if body.processor in URL_RAILS:
        return ProcessResult(type="url", data=page)
    if body.processor in REFERENCE_RAILS:
        if tx.payment_reference is None:
            tx.payment_reference = "".join(secrets.choice("0123456789") for _ in range(12))
        return ProcessResult(type="reference", data=tx.payment_reference)
    # A rail configured for the client but unknown to this server version: hand out the page.
    return ProcessResult(type="url", data=page)  # pragma: no cover - clients only hold known rails


def payment_intent(
    session: Session,
    clock: Clock,
    environment: EnvironmentName,
    credentials: Credentials,
    uid: str,
    raw_body: bytes,
) -> PaymentIntent:
    """``POST .../{uid}/payment-intents`` (D12)."""
    client = authenticate_token(session, credentials, environment)
    body = validate(PaymentIntentCreate, parse_json_object(raw_body))
    tx, now = _pending_for_rail(session, clock, client, uid, body.processor)
    tx.processor = body.processor
    tx.intent_id = "pi_" + secrets.token_hex(12)
    tx.updated_at = now
    return PaymentIntent(
        intent_id=tx.intent_id,
        uid=tx.uid,
        processor=body.processor,
        status="requires_action",
        expire_at=epoch_ms(tx.expire_at),
    )


def dismiss(
    session: Session,
    clock: Clock,
    environment: EnvironmentName,
    credentials: Credentials,
    uid: str,
    raw_body: bytes,
) -> DismissResult:
    """``POST .../{uid}/dismiss`` (D13): no body or any JSON object; a terminal transaction is ``409``."""
    client = authenticate_token(session, credentials, environment)
    parse_json_object(raw_body, allow_empty=True)
    tx, _ = transactions.load(session, uid, kind=KIND_ALTERNATIVE, client=client, lock=True)
    now = clock.now(session)
    transactions.expire_if_due(session, tx, client, now)
    if not transactions.finish(
        session, tx, client, TransactionStatus.DISMISSED, now=now, outcome="dismissed", message="Dismissed."
    ):
        raise APIProblem.conflict(f"The transaction is {tx.status}, it cannot be dismissed.")
    return DismissResult(uid=tx.uid, status="dismissed")
