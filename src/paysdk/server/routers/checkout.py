"""The hosted checkout under ``/checkout`` (the spec's ``{webview_url}``): HTML pages, plain form POSTs.

* ``GET /checkout/?orderId=<uid>``: the card form while the link is pending; the final state (approved,
  declined, expired, dismissed) and no form otherwise; an unknown ``orderId`` is a 404 page. A card
  verification (``POST /v1/subscriptions/verify-card``, D140) has the same page, titled "Card
  verification, no charge".
* ``POST /checkout/pay``: applies the test card's outcome (shared with ``/_sandbox/.../pay``), then
  redirects (303) to the status page, or shows the 3-D Secure challenge, or the form with an error (400).
  A declined card (or a failed challenge) leaves the link payable: the page asks for another card
  until the link expires (D414).
* ``POST /checkout/3ds``: the challenge's Approve/Fail.
* ``GET/POST /checkout/rails/<processor>?orderId=``: the rail page of URL and QR rails (D11).

Callbacks caused by a page are delivered by a background task right after the answer.

Pages are in Spanish or English by the request's ``Accept-Language`` (D411; ``Content-Language`` and
``Vary: Accept-Language`` say so) and name the merchant by its display name (D413).

Every answer carries the page security headers (:func:`paysdk.server.pages.page_headers`, D93). Every
POST must carry the page's ``formToken`` (an HMAC of the ``orderId``, D94) and, when its ``Origin`` is
a real origin, come from the server's own; otherwise it is a ``403`` page and nothing changes. URLs
(form actions, redirects) are on the server's public address (D90).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import re
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any, Literal
from urllib.parse import parse_qs

from fastapi import APIRouter, BackgroundTasks, Request
from fastapi.routing import APIRoute
from sqlalchemy.orm import Session
from starlette.responses import HTMLResponse, RedirectResponse, Response

from paysdk._environment import CHECKOUT_PREFIX
from paysdk.contracts.alternative_payments import RAILS
from paysdk.contracts.payment_links import TransactionStatus
from paysdk.server.context import ServerContext, get_context
from paysdk.server.core_tables import ClientRow, TransactionRow
from paysdk.server.db import from_cents
from paysdk.server.errors import APIProblem
from paysdk.server.pages import (
    CheckoutView,
    Language,
    challenge_page,
    checkout_page,
    forbidden_page,
    negotiate_language,
    not_found_page,
    page_headers,
    rail_page,
)
from paysdk.server.routers._common import form_post, page, webview_url
from paysdk.server.services import payments, transactions
from paysdk.server.services.transactions import CARD_KINDS, KIND_ALTERNATIVE, KIND_VERIFICATION
from paysdk.server.services.wallet_tokens import server_keys

__all__ = ["form_token", "router"]


class _PageRoute(APIRoute):
    """A checkout route: every answer gets the page security headers (D93)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def with_headers(request: Request) -> Response:
            response = await handler(request)
            origin = get_context(request).addresses.public_origin(request.scope)
            response.headers.update(page_headers(origin))
            response.headers["Content-Language"] = _language(request)
            response.headers["Vary"] = "Accept-Language"
            return response

        return with_headers


router = APIRouter(prefix=CHECKOUT_PREFIX, tags=["hosted checkout"], route_class=_PageRoute)

_EXPIRY = re.compile(r"^\s*(\d{1,2})\s*/\s*(\d{2}|\d{4})\s*$")
#: The HTML answers of the checkout's pages and forms besides their own page or redirect.
_UNKNOWN = {404: "Unknown orderId (HTML page)."}
_REFUSED = {
    403: "No or a wrong formToken, or another Origin (HTML page; nothing changes, D94).",
    **_UNKNOWN,
}
#: The fields every checkout form posts (D94).
_HIDDEN: dict[str, dict[str, Any]] = {
    "orderId": {"type": "string", "description": "The transaction uid."},
    "formToken": {"type": "string", "description": "The page's form token (D94)."},
}
_STATUS_PAGE = "the status page `{webview_url}/?orderId=<uid>`"
#: A card paid (or a challenge answered) on the page: a decline leaves the link payable (D414).
_PAY_ON_PAGE = functools.partial(payments.pay_with_card, retry_declined=True)
_CHALLENGE_ON_PAGE = functools.partial(payments.complete_challenge, retry_declined=True)


_TOKEN_LABEL = b"paysdk checkout form token"


def form_token(session: Session, context: ServerContext, uid: str) -> str:
    """The form token of the checkout pages of ``uid`` (D94): HMAC-SHA256 of the uid under a key derived
    from the server's signing key, which lives in the database (every instance over it agrees, and
    ``/_sandbox/reset`` keeps it)."""
    key = hmac.new(bytes(server_keys(session, context).signing), _TOKEN_LABEL, hashlib.sha256).digest()
    digest = hmac.new(key, uid.encode("utf-8", "replace"), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class _Forged(Exception):
    """A POST without the page's form token."""


def _language(request: Request) -> Language:
    """The page language of ``request`` (its ``Accept-Language``, D411)."""
    return negotiate_language(request.headers.get("accept-language"))


def _view(tx: TransactionRow, client: ClientRow, token: str, language: Language) -> CheckoutView:
    return CheckoutView(
        uid=tx.uid,
        reference=tx.reference,
        merchant=client.display_name or client.slug,
        amount=from_cents(tx.amount_cents),
        currency=tx.currency,
        status=tx.status,
        message=tx.outcome_message,
        processor=tx.processor,
        token=token,
        verification=tx.kind == KIND_VERIFICATION,
        outcome=tx.outcome if tx.status == TransactionStatus.PENDING else None,
        language=language,
    )


def _load_view(
    session: Session,
    context: ServerContext,
    uid: str,
    kind: str | tuple[str, ...],
    language: Language,
    presented: str | None = None,
) -> CheckoutView | None:
    """The view of ``uid`` (``None``: unknown). ``presented``: a POST's form token, checked first
    (:class:`_Forged` when wrong, before anything is read or changed)."""
    token = form_token(session, context, uid)
    if presented is not None and not hmac.compare_digest(
        presented.encode("utf-8", "replace"), token.encode()
    ):
        raise _Forged
    try:
        tx, client = transactions.load(session, uid, kind=kind, lock=True)
    except APIProblem:
        return None
    transactions.expire_if_due(session, tx, client, context.clock.now(session))
    return _view(tx, client, token, language)


def _foreign(request: Request) -> bool:
    """Whether a POST comes from another origin (D94): an ``Origin`` that is neither the server's own
    nor ``null`` (what a browser sends from the server's own pages under ``Referrer-Policy:
    no-referrer``). A missing ``Origin`` (non-browser clients) is not foreign: the form token decides."""
    origin = host = None
    for key, value in request.scope["headers"]:
        if key == b"origin":
            origin = value
        elif key == b"host":
            host = value
    if origin is None or origin == b"null":
        return False
    return not get_context(request).addresses.own_origin(request.scope, origin, host)


def _forbidden(request: Request) -> HTMLResponse:
    return HTMLResponse(forbidden_page(_language(request)), status_code=403)


async def _posted_view(
    request: Request, context: ServerContext, form: dict[str, str], kind: str | tuple[str, ...]
) -> CheckoutView | HTMLResponse:
    """The view a checkout POST acts on, or the page refusing it: 403 (another origin, a wrong form
    token: nothing changes) or 404 (unknown ``orderId``)."""
    if _foreign(request):
        return _forbidden(request)
    uid = form.get("orderId", "")
    if not uid:
        return _not_found(request)
    language = _language(request)
    try:
        view = await context.run(_load_view, context, uid, kind, language, form.get("formToken", ""))
    except _Forged:
        return _forbidden(request)
    return view if view is not None else _not_found(request)


def _not_found(request: Request, *, rail: bool = False) -> HTMLResponse:
    return HTMLResponse(not_found_page(_language(request), rail=rail), status_code=404)


def _checkout_base(request: Request) -> str:
    return webview_url(request)


async def _form(request: Request) -> dict[str, str]:
    raw = await request.body()
    if len(raw) > 64 * 1024:
        return {}
    parsed = parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=20)
    return {key: values[0].replace("\x00", "") for key, values in parsed.items() if values}


def _form_error(form: dict[str, str], now: datetime) -> str | None:
    """What to correct in the card form (a key of :data:`paysdk.server.pages.FORM_ERRORS`), or ``None``."""
    match = _EXPIRY.match(form.get("expiry", ""))
    if match is None:
        return "expiry_format"
    month, year = int(match.group(1)), int(match.group(2))
    year = year + 2000 if year < 100 else year
    if not 1 <= month <= 12:
        return "expiry_month"
    if (year, month) < (now.year, now.month):
        return "card_expired"
    if not re.fullmatch(r"\d{3,4}", form.get("cvc", "").strip()):
        return "cvc"
    if not form.get("name", "").strip():
        return "name"
    return None


async def _after(context: ServerContext, background: BackgroundTasks) -> None:
    background.add_task(context.scheduler.run_due)


@router.get("/", **page("The hosted checkout page", errors=_UNKNOWN))
async def checkout(request: Request, background: BackgroundTasks, orderId: str | None = None) -> Response:
    """The card form of a pending payment link (or card verification), or its final state."""
    context = get_context(request)
    language = _language(request)
    view = await context.run(_load_view, context, orderId, CARD_KINDS, language) if orderId else None
    if view is None:
        return _not_found(request)
    await _after(context, background)
    return HTMLResponse(checkout_page(view, _checkout_base(request)), background=background)


@router.get("", **page("The hosted checkout page (no trailing slash)", errors=_UNKNOWN))
async def checkout_no_slash(
    request: Request, background: BackgroundTasks, orderId: str | None = None
) -> Response:
    """``/checkout?orderId=`` without the slash shows the same page."""
    return await checkout(request, background, orderId)


@router.post(
    "/pay",
    **form_post(
        "Submit the card form",
        fields={
            **_HIDDEN,
            "cardNumber": {"type": "string", "description": "A test card number (GET /_sandbox/test-cards)."},
            "expiry": {"type": "string", "description": "MM/YY or MM/YYYY, not in the past."},
            "cvc": {"type": "string", "description": "3 or 4 digits."},
            "name": {"type": "string", "description": "The name on the card."},
        },
        answers={
            200: "The 3-D Secure challenge page (test cards that require it).",
            400: "The card form again with what to correct (a malformed expiry, CVC or name, or a card "
            "number that is not valid); nothing changed.",
            **_REFUSED,
        },
        redirect=_STATUS_PAGE,
    ),
)
async def submit_card(request: Request, background: BackgroundTasks) -> Response:
    """Apply the test card's outcome; redirect to the status page (303) or show the 3-D Secure challenge."""
    context = get_context(request)
    form = await _form(request)
    view = await _posted_view(request, context, form, CARD_KINDS)
    if isinstance(view, Response):
        return view
    uid = view.uid
    base = _checkout_base(request)
    status_page = f"{base}/?orderId={view.uid}"
    if view.status != TransactionStatus.PENDING:
        return RedirectResponse(status_page, status_code=303)
    now = await context.run(context.clock.now)
    error = _form_error(form, now)
    if error is None:
        try:
            payment = await context.run(_PAY_ON_PAGE, context.clock, uid, form.get("cardNumber", ""), None)
        except APIProblem as problem:
            if problem.status == 409 and problem.own_code is not None:
                error = "card_number"
            else:
                return RedirectResponse(status_page, status_code=303)
        else:
            if payment.challenge_id is not None:
                return HTMLResponse(challenge_page(view, base, payment.challenge_id))
            await _after(context, background)
            return RedirectResponse(status_page, status_code=303, background=background)
    safe_form = {key: form.get(key, "") for key in ("expiry", "name")}
    return HTMLResponse(checkout_page(view, base, error=error, form=safe_form), status_code=400)


@router.post(
    "/3ds",
    **form_post(
        "Answer the 3-D Secure challenge",
        fields={
            **_HIDDEN,
            "challengeId": {"type": "string", "description": "The challenge of the page."},
            "result": {"type": "string", "enum": ["approve", "fail"]},
        },
        answers=_REFUSED,
        redirect=_STATUS_PAGE,
    ),
)
async def answer_challenge(request: Request, background: BackgroundTasks) -> Response:
    """Approve or fail the simulated 3-D Secure challenge."""
    context = get_context(request)
    form = await _form(request)
    result: Literal["approve", "fail"] = "approve" if form.get("result") == "approve" else "fail"
    view = await _posted_view(request, context, form, CARD_KINDS)
    if isinstance(view, Response):
        return view
    uid = view.uid
    status_page = f"{_checkout_base(request)}/?orderId={view.uid}"
    try:
        await context.run(_CHALLENGE_ON_PAGE, context.clock, uid, form.get("challengeId", ""), result)
    except APIProblem:
        return RedirectResponse(status_page, status_code=303)
    await _after(context, background)
    return RedirectResponse(status_page, status_code=303, background=background)


@router.get("/rails/{processor}", **page("The hosted page of a rail", errors=_UNKNOWN))
async def rail(
    processor: str, request: Request, background: BackgroundTasks, orderId: str | None = None
) -> Response:
    """The page a URL/QR rail sends the customer to (D11)."""
    context = get_context(request)
    if processor not in RAILS or not orderId:
        return _not_found(request)
    view = await context.run(_load_view, context, orderId, KIND_ALTERNATIVE, _language(request))
    if view is None or view.processor != processor:
        return _not_found(request, rail=True)
    await _after(context, background)
    return HTMLResponse(rail_page(view, _checkout_base(request), processor), background=background)


@router.post(
    "/rails/{processor}",
    **form_post(
        "Pay or expire on a rail page",
        fields={**_HIDDEN, "outcome": {"type": "string", "enum": ["paid", "expired"]}},
        answers=_REFUSED,
        redirect="the rail page `{webview_url}/rails/<processor>?orderId=<uid>`",
    ),
)
async def rail_outcome(processor: str, request: Request, background: BackgroundTasks) -> Response:
    """The customer paid on the rail (or let it expire): same code as ``/_sandbox/.../simulate``."""
    context = get_context(request)
    form = await _form(request)
    if processor not in RAILS:
        return _not_found(request)
    view = await _posted_view(request, context, form, KIND_ALTERNATIVE)
    if isinstance(view, Response):
        return view
    uid = view.uid
    if view.processor != processor:
        return _not_found(request, rail=True)
    outcome: Literal["paid", "expired"] = "paid" if form.get("outcome") == "paid" else "expired"
    page = f"{_checkout_base(request)}/rails/{processor}?orderId={view.uid}"
    try:
        await context.run(payments.simulate_rail, context.clock, uid, outcome, processor)
    except APIProblem:
        return RedirectResponse(page, status_code=303)
    await _after(context, background)
    return RedirectResponse(page, status_code=303, background=background)
