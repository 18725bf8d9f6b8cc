"""The console's routes under ``/_sandbox/console`` (D720-D729): pages, their form posts, the static
files and the live feed. :class:`_ConsoleRoute` puts every route behind the same rules:

* **token** (D720): a guarded control plane (a control token was given; always on a shared bind) needs
  the token, in the ``Paysdk-Control-Token`` header (scripts) or in the session cookie the token form
  sets (:data:`COOKIE`: HttpOnly, SameSite=Strict, Path=/_sandbox/console; its value is an HMAC under
  the token's digest, never the token). Without it a page answers ``401`` with the token form. The
  token form, the static files and sign-out are open. A plane without a token (loopback) asks nothing;
* **CSRF** (D722): a POST must say where it comes from, and it must be here: an ``Origin`` that is the
  server's own, or ``Sec-Fetch-Site: same-origin``; ``null``, another origin or neither header is a
  ``403`` page and nothing changes. (Besides SameSite=Strict; the host guard already refuses a foreign
  ``Origin`` on the whole control plane.)
* **headers** (D721): a strict Content-Security-Policy (only the package's own stylesheet and script,
  ``connect-src 'self'`` for the feed, no inline anything, no framing), ``Cache-Control: no-store``,
  ``Referrer-Policy: same-origin`` (so a browser sends its real ``Origin`` on posts), ``nosniff``,
  ``Content-Language`` and ``Vary``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from importlib import resources
from typing import Any, get_args
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Request
from fastapi.routing import APIRoute
from sqlalchemy.orm import Session
from starlette.responses import HTMLResponse, RedirectResponse, Response

from paysdk.contracts.sandbox import FaultKind
from paysdk.server.asgi.request_log import mask_query
from paysdk.server.console import views
from paysdk.server.console.html import Page, dl, e, form, layout, table
from paysdk.server.console.text import language_of, t
from paysdk.server.context import ServerContext, get_context
from paysdk.server.control_token import CONSOLE_PREFIX, CONTROL_TOKEN_HEADER
from paysdk.server.errors import APIProblem

__all__ = ["COOKIE", "CSP", "router"]

#: The console's session cookie (D720).
COOKIE = "paysdk_console"
#: The Content-Security-Policy of every console answer (D721).
CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}
_STATIC = {
    "console.css": "text/css; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
_MAX_FORM = 16 * 1024


def _open(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a route answered without the control token (the token form, static files, sign-out)."""
    endpoint._console_open = True  # type: ignore[attr-defined]
    return endpoint


def _page(request: Request) -> Page:
    language, explicit = language_of(request.query_params.get("lang"), request.headers.get("accept-language"))
    access = get_context(request).control
    signed_in = access.guarded and access.accepts_session(request.cookies.get(COOKIE))
    return Page(language, explicit, request.url.path, signed_in)


def _authorized(request: Request) -> bool:
    access = get_context(request).control
    if not access.guarded:
        return True
    header = request.headers.get(CONTROL_TOKEN_HEADER)
    if header is not None:
        return access.accepts(header)
    return access.accepts_session(request.cookies.get(COOKIE))


def _foreign(request: Request) -> bool:
    """Whether a POST fails the CSRF rule (module docstring, D722)."""
    site = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin")
    if site is not None and site != "same-origin":
        return True
    if origin is not None:
        addresses = get_context(request).addresses
        host = request.headers.get("host")
        return origin == "null" or not addresses.own_origin(
            request.scope,
            origin.encode("latin-1", "replace"),
            None if host is None else host.encode("latin-1"),
        )
    return site is None


class _ConsoleRoute(APIRoute):
    """A console route: the token and CSRF rules, then the security headers on every answer."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        is_open = getattr(self.endpoint, "_console_open", False)

        async def guarded(request: Request) -> Response:
            page = _page(request)
            if request.method == "POST" and _foreign(request):
                response: Response = _message(page, 403, "forbidden_title", "forbidden")
            elif not is_open and not _authorized(request):
                # after the form, a page (a post's own path answers no GET): the console's overview
                back = request.url.path if request.method == "GET" else CONSOLE_PREFIX
                response = _login(page, 401, next_path=back)
            else:
                response = await handler(request)
            response.headers.update(_HEADERS)
            response.headers["Content-Language"] = page.language
            response.headers["Vary"] = "Accept-Language, Cookie"
            return response

        return guarded


router = APIRouter(prefix=CONSOLE_PREFIX, include_in_schema=False, route_class=_ConsoleRoute)


def _html(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status)


def _message(page: Page, status: int, title: str, sentence: str) -> HTMLResponse:
    body = f"<p id='message'>{page.t(sentence)}</p><p><a href='{page.url()}'>{page.t('home')}</a></p>"
    return _html(layout(page, t(page.language, title), body), status)


def _login(
    page: Page, status: int, *, next_path: str = CONSOLE_PREFIX, error: str | None = None
) -> HTMLResponse:
    if not next_path.startswith(CONSOLE_PREFIX) or next_path.startswith(CONSOLE_PREFIX + "/login"):
        next_path = CONSOLE_PREFIX
    alert = f"<p class='error' role='alert' id='login-error'>{page.t(error)}</p>" if error else ""
    inner = (
        f"<input type='hidden' name='next' value='{e(next_path)}'>"
        f"<label for='token'>{page.t('login_field')}</label>"
        "<input id='token' name='token' type='password' autocomplete='current-password' required>"
    )
    body = f"<p>{page.t('login_intro')}</p>{alert}" + form(
        page.url("/login"), inner, t(page.language, "login_button"), form_id="login"
    )
    return _html(layout(page, t(page.language, "login_title"), body), status)


async def _form(request: Request) -> dict[str, str]:
    """The urlencoded body of a console form (the first value of each field; at most 16 KiB)."""
    raw = await request.body()
    if len(raw) > _MAX_FORM:
        raise APIProblem(413, None, "The form is too large.", [("body", "at most 16 KiB")])
    parsed = parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)
    return {key: values[0] for key, values in parsed.items()}


def _see(page: Page, path: str, **query: str) -> RedirectResponse:
    """The 303 after a form post: back to the console page ``path`` (``?lang=`` kept)."""
    return RedirectResponse(page.url(path, **query).replace("&amp;", "&"), status_code=303)


def _context(request: Request) -> ServerContext:
    return get_context(request)


# ------------------------------------------------------------------------------ token, static files


@router.get("/login")
@_open
async def login_form(request: Request) -> Response:
    """The token form (also what any page answers, ``401``, to a browser without the token)."""
    return _login(_page(request), 200, next_path=request.query_params.get("next", CONSOLE_PREFIX))


@router.post("/login")
@_open
async def login(request: Request) -> Response:
    """Check the token (constant time); right: set the session cookie and go to ``next`` (303)."""
    page = _page(request)
    fields = await _form(request)
    token = fields.get("token", "")
    next_path = fields.get("next", CONSOLE_PREFIX)
    access = _context(request).control
    if not token.strip():
        return _login(page, 400, next_path=next_path, error="login_missing")
    if not access.accepts(token):
        return _login(page, 403, next_path=next_path, error="login_wrong")
    if not next_path.startswith(CONSOLE_PREFIX) or "//" in next_path or "\\" in next_path:
        next_path = CONSOLE_PREFIX
    response = RedirectResponse(next_path + (f"?lang={page.language}" if page.explicit else ""), 303)
    if access.guarded:
        response.set_cookie(
            COOKIE,
            access.console_session(),
            path=CONSOLE_PREFIX,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
    return response


@router.post("/logout")
@_open
async def logout(request: Request) -> Response:
    """Forget the session cookie; back to the token form."""
    page = _page(request)
    response = RedirectResponse(page.url("/login").replace("&amp;", "&"), 303)
    response.delete_cookie(COOKIE, path=CONSOLE_PREFIX, httponly=True, samesite="strict")
    return response


@router.get("/static/{name}")
@_open
async def static(name: str) -> Response:
    """The stylesheet and the script, from the package (nothing else is served)."""
    media = _STATIC.get(name)
    if media is None:
        return Response("not found", status_code=404, media_type="text/plain")
    content = resources.files("paysdk.server.console").joinpath("static", name).read_bytes()
    response = Response(content, media_type=media)
    return response


@router.get("/events")
async def events(request: Request) -> Response:
    """The server's live feed (the same :class:`~paysdk.server.events.EventFeed` as
    ``/_sandbox/events``) for the console's script: the session cookie authorises it, since
    ``EventSource`` sends no custom header (D728)."""
    from paysdk.server.adapters.uvicorn import abort_connection
    from paysdk.server.events import FeedFilter, feed_stream

    context = _context(request)
    response = feed_stream(
        context.events,
        FeedFilter(),
        request.headers.get("last-event-id"),
        abort=functools.partial(abort_connection, request.scope),
    )
    return response


# ------------------------------------------------------------------------------------------- pages


@router.get("")
@router.get("/")
async def home(request: Request) -> Response:
    """The overview: the virtual time and how much of each section there is."""
    page = _page(request)
    context = _context(request)
    overview = await context.run(views.overview, context)
    lang = page.language
    counts = table(
        "overview",
        t(lang, "sections"),
        [t(lang, "sections"), t(lang, "value")],
        [
            [f"<a href='{page.url(path)}'>{page.t(key)}</a>", e(overview.counts.get(key, 0))]
            for key, path in views.COUNTED
        ],
        empty=t(lang, "none_yet"),
    )
    facts = dl(
        "clock-facts", [(t(lang, "now"), f"<time id='clock-now'>{e(overview.now.isoformat())}</time>")]
    )
    return _html(layout(page, t(lang, "home"), facts + counts, section="home"))


@router.get("/clock")
async def clock_page(request: Request) -> Response:
    """The virtual clock and its advance controls."""
    return await _clock(request, _page(request))


async def _clock(
    request: Request, page: Page, *, error: str | None = None, ran: int | None = None
) -> Response:
    context = _context(request)
    now, offset = await context.run(views.clock_state, context)
    lang = page.language
    ran_text = request.query_params.get("ran") if ran is None else str(ran)
    done = (
        f"<p role='status' id='clock-ran'>{page.t('jobs_ran', count=ran_text)}</p>"
        if ran_text is not None and ran_text.isdigit()
        else ""
    )
    alert = f"<p class='error' role='alert' id='clock-error'>{page.t(error)}</p>" if error else ""
    facts = dl(
        "clock-facts",
        [
            (t(lang, "now"), f"<time id='clock-now'>{e(now.isoformat())}</time>"),
            (t(lang, "offset"), f"<span id='clock-offset'>{e(offset)}</span> {page.t('seconds')}"),
        ],
    )
    presets = "".join(
        form(
            page.url("/clock/advance"),
            f"<input type='hidden' name='seconds' value='{seconds}'>",
            t(lang, "advance") + " " + t(lang, key),
            form_id=f"advance-{key.removeprefix('advance_')}",
            css="inline",
        )
        for key, seconds in (("advance_hour", 3600), ("advance_day", 86400), ("advance_month", 2592000))
    )
    custom = form(
        page.url("/clock/advance"),
        f"<label for='seconds'>{page.t('advance_seconds')}</label>"
        "<input id='seconds' name='seconds' inputmode='decimal' required"
        + (" aria-invalid='true' aria-describedby='clock-error'" if error else "")
        + ">",
        t(lang, "advance"),
        form_id="advance",
    )
    body = facts + done + alert + f"<h2 id='advance-heading'>{page.t('advance_by')}</h2>" + presets + custom
    return _html(layout(page, t(lang, "clock"), body, section="clock"), 400 if error else 200)


@router.post("/clock/advance")
async def clock_advance(request: Request) -> Response:
    """Advance the virtual clock by ``seconds`` (every job due on the way runs first, like
    ``POST /_sandbox/clock/advance``); 303 back to the clock page."""
    page = _page(request)
    fields = await _form(request)
    try:
        seconds = Decimal(fields.get("seconds", "").strip())
    except InvalidOperation:
        seconds = Decimal(0)
    if not seconds.is_finite() or seconds <= 0 or seconds > Decimal(10 * 365 * 86400):
        return await _clock(request, page, error="seconds_invalid")
    context = _context(request)
    micro = int((seconds * 1_000_000).to_integral_value())
    ran = await context.scheduler.advance(timedelta(microseconds=micro))
    return _see(page, "/clock", ran=str(ran))


def _when(value: object) -> str:
    """A time as a ``<time>`` element: ISO 8601 in ``datetime``, ``YYYY-MM-DD HH:MM:SS`` (UTC as stored)
    shown; empty for ``None``."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return f"<time datetime='{e(value.isoformat())}'>{e(value.strftime('%Y-%m-%d %H:%M:%S'))}</time>"
    return f"<time>{e(value)}</time>"


def _status(value: object) -> str:
    return f"<span class='status-{e(value)}'>{e(value)}</span>"


def _masked(request: Request) -> bool:
    return _context(request).control.exposed


async def _run(request: Request, page: Page, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(session, *args)`` in one transaction; an :class:`APIProblem` 404 becomes the 404 page."""
    return await _context(request).run(fn, *args)


def _not_found(page: Page) -> HTMLResponse:
    return _message(page, 404, "not_found_title", "not_found")


# ------------------------------------------------------------------------------------ merchants


@router.get("/merchants")
async def merchants_page(request: Request) -> Response:
    """Every merchant: slug, display name, country, currencies, callback URL."""
    page = _page(request)
    lang = page.language
    rows = await _run(request, page, views.merchants, _masked(request))
    body = table(
        "merchants",
        t(lang, "merchants"),
        [
            t(lang, "slug"),
            t(lang, "display_name"),
            t(lang, "country"),
            t(lang, "currency"),
            t(lang, "callback_url"),
        ],
        [
            [
                f"<a href='{page.url('/merchants/' + quote(c.slug))}'>{e(c.slug)}</a>",
                e(c.display_name),
                e(c.country),
                e(", ".join(c.currencies)),
                f"<code>{e(c.callback_url)}</code>" if c.callback_url else "",
            ]
            for c in rows
        ],
        empty=t(lang, "none_yet"),
    )
    return _html(layout(page, t(lang, "merchants"), body, section="merchants"))


#: The settings a merchant page lists, in order: (wire name, whether it is a secret).
_SETTINGS: tuple[tuple[str, bool], ...] = (
    ("slug", False),
    ("displayName", False),
    ("country", False),
    ("timezone", False),
    ("currencies", False),
    ("channels", False),
    ("paymentMethods", False),
    ("amountMin", False),
    ("amountMax", False),
    ("threeDS", False),
    ("callbackUrl", False),
    ("callbackHeaderName", False),
    ("callbackHeaderValue", True),
    ("sandboxToken", True),
    ("productionToken", True),
    ("hookPublicKey", False),
    ("hookPrivateKey", True),
    ("signingPublicKey", False),
    ("keysExpireAt", False),
    ("userAccessTokenTtl", False),
    ("userRefreshTokenTtl", False),
)


async def _merchant(request: Request, slug: str, *, reveal: bool) -> Response:
    page = _page(request)
    lang = page.language
    masked = _masked(request) and not reveal
    try:
        view = await _run(request, page, views.merchant, slug, masked)
    except APIProblem as problem:
        if problem.status == 404:
            return _not_found(page)
        raise
    wire = view.client.model_dump(by_alias=True, mode="json")
    rows = []
    for name, secret in _SETTINGS:
        value = wire.get(name)
        shown = (
            ", ".join(map(str, value)) if isinstance(value, list) else ("" if value is None else str(value))
        )
        cell = f"<code id='secret-{e(name)}'>{e(shown)}</code>" if secret else f"<code>{e(shown)}</code>"
        rows.append([e(name), cell])
    settings = table(
        "merchant-settings", t(lang, "setting") + "s" if lang == "en" else "Ajustes",
        [t(lang, "setting"), t(lang, "value")], rows, empty=t(lang, "none_yet"),
    )  # fmt: skip
    notes = ""
    if reveal:
        notes = f"<p class='note' role='status' id='revealed'>{page.t('revealed_note')}</p>"
    elif _masked(request):
        notes = f"<p class='note'>{page.t('masked_note')}</p>" + form(
            page.url("/merchants/" + quote(view.client.slug) + "/reveal"),
            "",
            t(lang, "reveal"),
            form_id="reveal",
        )
    txs = table(
        "merchant-transactions",
        t(lang, "transactions"),
        [t(lang, "uid"), t(lang, "reference"), t(lang, "status"), t(lang, "amount"), t(lang, "created")],
        [_transaction_row(page, tx) for tx in view.transactions],
        empty=t(lang, "none_yet"),
    )
    title = f"{t(lang, 'merchant')}: {view.client.display_name or view.client.slug}"
    response = _html(layout(page, title, notes + settings + txs, section="merchants"))
    return response


@router.get("/merchants/{slug}")
async def merchant_page(request: Request, slug: str) -> Response:
    """One merchant's settings (secrets masked on a shared sandbox) and its newest transactions."""
    return await _merchant(request, slug, reveal=False)


@router.post("/merchants/{slug}/reveal")
async def merchant_reveal(request: Request, slug: str) -> Response:
    """The reveal step (like ``POST /_sandbox/clients/{slug}/reveal``): the same page with the secrets in
    full, answered to this post only (nothing is stored; a reload masks them again)."""
    return await _merchant(request, slug, reveal=True)


# --------------------------------------------------------------------------------- transactions


def _transaction_row(page: Page, tx: Any) -> list[str]:
    return [
        f"<a href='{page.url('/transactions/' + quote(tx.uid))}'><code>{e(tx.uid)}</code></a>",
        e(tx.reference),
        _status(tx.status),
        f"{e(tx.amount)} {e(tx.currency)}",
        _when(tx.created_at),
    ]


@router.get("/transactions")
async def transactions_page(request: Request) -> Response:
    """The newest transactions with their status."""
    page = _page(request)
    lang = page.language
    rows = await _run(request, page, views.transactions_page)
    body = table(
        "transactions",
        t(lang, "transactions"),
        [t(lang, "uid"), t(lang, "reference"), t(lang, "status"), t(lang, "amount"), t(lang, "created"),
         t(lang, "merchant"), t(lang, "kind")],
        [
            [*_transaction_row(page, tx),
             f"<a href='{page.url('/merchants/' + quote(tx.client))}'>{e(tx.client)}</a>", e(tx.kind)]
            for tx in rows
        ],
        empty=t(lang, "none_yet"),
    )  # fmt: skip
    return _html(layout(page, t(lang, "transactions"), body, section="transactions"))


@router.get("/transactions/{uid}")
async def transaction_page(request: Request, uid: str) -> Response:
    """One transaction: its facts, its callback events (the exact body sent, with a resend action) and
    every delivery attempt (when, the answer or the error, the next attempt's time)."""
    page = _page(request)
    lang = page.language
    try:
        detail = await _run(request, page, views.transaction, uid)
    except APIProblem as problem:
        if problem.status == 404:
            return _not_found(page)
        raise
    tx = detail.transaction
    masked = _masked(request)
    facts = dl(
        "transaction-facts",
        [
            (t(lang, "uid"), f"<code id='transaction-uid'>{e(tx.uid)}</code>"),
            (t(lang, "reference"), e(tx.reference)),
            (t(lang, "status"), f"<span id='transaction-status'>{_status(tx.status)}</span>"),
            (t(lang, "amount"), f"<span id='transaction-amount'>{e(tx.amount)}</span> {e(tx.currency)}"),
            (
                t(lang, "merchant"),
                f"<a href='{page.url('/merchants/' + quote(tx.client))}'>{e(tx.client)}</a>",
            ),
            (t(lang, "kind"), e(tx.kind)),
            (t(lang, "created"), _when(tx.created_at)),
        ],
    )
    events = _events_table(page, detail.events, masked)
    attempts = table(
        "callback-attempts",
        t(lang, "callbacks"),
        [t(lang, "event"), t(lang, "attempt"), t(lang, "at"), t(lang, "answer"), t(lang, "timing")],
        [
            [
                f"<code>{e(a.event_id)}</code>",
                e(a.attempt),
                _when(a.at),
                e(a.status_code) if a.status_code is not None else e(a.error),
                _when(a.next_attempt_at) if a.next_attempt_at else (page.t("final") if a.final else ""),
            ]
            for a in detail.attempts
        ],
        empty=t(lang, "none_yet"),
    )
    title = f"{t(lang, 'transactions')}: {tx.reference}"
    return _html(layout(page, title, facts + events + attempts, section="transactions"))


@router.post("/callbacks/{event_id}/resend")
async def resend_callback(request: Request, event_id: str) -> Response:
    """Queue a new delivery of callback event ``event_id`` (same body and ``eventId``; D724), deliver it
    now, and go back (303) to its transaction's page."""
    page = _page(request)
    context = _context(request)
    try:
        event = await context.run(_resend, context, event_id)
    except APIProblem as problem:
        if problem.status == 404:
            return _not_found(page)
        if problem.status == 409:
            return _message(page, 409, "bad_input", "resend_pending")
        raise
    await context.scheduler.run_due()
    return _see(page, "/transactions/" + quote(event.uid))


def _resend(session: Session, context: ServerContext, event_id: str) -> Any:
    from paysdk.server.services import callbacks

    return callbacks.resend(session, event_id, context.clock.now(session))


# ---------------------------------------------------------------------------------------- faults


#: The kinds the form offers: the contract's, so a new kind shows up here too.
_FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)


@router.get("/faults")
async def faults_page(request: Request) -> Response:
    """The faults now on, a form to turn one on and one to turn them all off."""
    return await _faults(request, _page(request))


async def _faults(request: Request, page: Page, *, error: str | None = None) -> Response:
    lang = page.language
    rows = await _run(request, page, views.faults_page)
    listing = table(
        "faults",
        t(lang, "faults"),
        ["id", t(lang, "fault_kind"), t(lang, "fault_route"), t(lang, "fault_left"), t(lang, "status"),
         t(lang, "fault_latency")],
        [[f"<code>{e(f.id)}</code>", e(f.kind), f"<code>{e(f.route)}</code>", e(f.remaining), e(f.status),
          e(f.latency_ms)] for f in rows],
        empty=t(lang, "none_yet"),
    )  # fmt: skip
    alert = f"<p class='error' role='alert' id='fault-error'>{e(error)}</p>" if error else ""
    options = "".join(f"<option value='{k}'>{k}</option>" for k in _FAULT_KINDS)
    add = form(
        page.url("/faults"),
        f"<label for='fault-kind'>{page.t('fault_kind')}</label><select id='fault-kind' name='kind'>{options}"
        "</select>"
        f"<label for='fault-route'>{page.t('fault_route')}</label>"
        "<input id='fault-route' name='route' value='*' required>"
        f"<label for='fault-count'>{page.t('fault_times')}</label>"
        "<input id='fault-count' name='count' inputmode='numeric' value='1' required>"
        f"<label for='fault-status'>{page.t('fault_status_code')}</label>"
        "<input id='fault-status' name='status' inputmode='numeric'>"
        f"<label for='fault-latency'>{page.t('fault_latency')}</label>"
        "<input id='fault-latency' name='latency_ms' inputmode='numeric'>",
        t(lang, "fault_add"),
        form_id="fault-add",
    )
    clear = form(page.url("/faults/clear"), "", t(lang, "fault_clear"), form_id="fault-clear", css="danger")
    body = (
        listing
        + alert
        + f"<h2 id='fault-add-heading'>{page.t('fault_add')}</h2>"
        + add
        + f"<h2 id='fault-clear-heading'>{page.t('fault_clear')}</h2>"
        + clear
    )
    return _html(layout(page, t(lang, "faults"), body, section="faults"), 400 if error else 200)


@router.post("/faults")
async def fault_add(request: Request) -> Response:
    """Turn a fault on (the fields of ``POST /_sandbox/faults``); a bad field is the form again (400)
    naming it."""
    from pydantic import ValidationError

    from paysdk.contracts.sandbox import FaultCreate
    from paysdk.server import faults

    page = _page(request)
    fields = {k: v.strip() for k, v in (await _form(request)).items() if v.strip()}
    fields.pop("lang", None)
    try:
        spec = FaultCreate.model_validate(
            {("latencyMs" if k == "latency_ms" else k): v for k, v in fields.items()}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "form"
        return await _faults(request, page, error=f"{where}: {first['msg']}")
    context = _context(request)
    await context.run(lambda session: faults.create(session, spec, context.clock.now(session)))
    return _see(page, "/faults")


@router.post("/faults/clear")
async def faults_clear(request: Request) -> Response:
    """Turn every fault off."""
    from paysdk.server import faults

    page = _page(request)
    await _context(request).run(faults.delete_all)
    return _see(page, "/faults")


# -------------------------------------------------------------------------------------- live tail


@router.get("/tail")
async def tail_page(request: Request) -> Response:
    """The last requests and callback attempts, newest first; with JavaScript the script adds the
    feed's new events at the top as they come."""
    page = _page(request)
    lang = page.language
    view = await _run(request, page, views.tail)
    rows: list[tuple[Any, list[str]]] = [
        (
            r.at,
            [_when(r.at), "request", f"<code>{e(r.method)} {e(mask_query(r.path))}</code>", e(r.status_code)],
        )
        for r in view.requests
    ]
    rows += [
        (a.at, [_when(a.at), "callback", f"<code>{e(a.event_id)} {e(mask_query(a.url))}</code>",
                e(a.status_code) if a.status_code is not None else e(a.error)])
        for a in view.attempts
    ]  # fmt: skip
    rows.sort(key=lambda pair: pair[0], reverse=True)
    status = f"<p class='note' id='live-status' role='status' data-on='{page.t('live')}' data-off=''></p>"
    body = (
        f"<p>{page.t('tail_intro')}</p>"
        + status
        + table(
            "tail",
            t(lang, "tail"),
            [t(lang, "time"), t(lang, "kind"), t(lang, "request"), t(lang, "answer")],
            [cells for _, cells in rows],
            empty=t(lang, "none_yet"),
            body_id="tail-body",
        )
    )
    return _html(layout(page, t(lang, "tail"), body, section="tail", live="tail"))


async def _found(request: Request, page: Page, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn``'s view, or ``None`` when it answers ``404`` (the page then answers the 404 page)."""
    try:
        return await _run(request, page, fn, *args)
    except APIProblem as problem:
        if problem.status == 404:
            return None
        raise


def _money(amount: object, currency: object) -> str:
    return f"{e(amount)} {e(currency)}"


# ---------------------------------------------------------------------------------- subscriptions


@router.get("/subscriptions")
async def subscriptions_page(request: Request) -> Response:
    """The newest subscriptions: status, plan, email, next renewal."""
    page = _page(request)
    lang = page.language
    rows = await _run(request, page, views.subscriptions_page)
    body = table(
        "subscriptions",
        t(lang, "subscriptions"),
        [t(lang, "subscription"), t(lang, "status"), t(lang, "plan"), t(lang, "merchant"), t(lang, "email"),
         t(lang, "next_renewal")],
        [
            [f"<a href='{page.url('/subscriptions/' + quote(s.sub_uid))}'><code>{e(s.sub_uid)}</code></a>",
             _status(s.status), e(s.plan.name), e(s.client), e(s.email), e(s.next_renewal_date)]
            for s in rows
        ],
        empty=t(lang, "none_yet"),
    )  # fmt: skip
    return _html(layout(page, t(lang, "subscriptions"), body, section="subscriptions"))


@router.get("/subscriptions/{sub_uid}")
async def subscription_page(request: Request, sub_uid: str) -> Response:
    """One subscription: its facts and a timeline of charges, retries, emails and callbacks, with the
    next renewal and next attempt."""
    page = _page(request)
    lang = page.language
    detail = await _found(request, page, views.subscription, sub_uid)
    if detail is None:
        return _not_found(page)
    sub = detail.subscription
    facts = dl(
        "subscription-facts",
        [
            (t(lang, "subscription"), f"<code id='subscription-id'>{e(sub.sub_uid)}</code>"),
            (t(lang, "status"), f"<span id='subscription-status'>{_status(sub.status)}</span>"),
            (t(lang, "plan"), f"{e(sub.plan.name)} ({_money(sub.plan.amount, sub.plan.currency)})"),
            (
                t(lang, "merchant"),
                f"<a href='{page.url('/merchants/' + quote(sub.client))}'>{e(sub.client)}</a>",
            ),
            (t(lang, "email"), e(sub.email)),
            (t(lang, "next_renewal"), f"<span id='next-renewal'>{e(sub.next_renewal_date)}</span>"),
            (t(lang, "next_attempt"), f"<span id='next-attempt'>{_when(sub.next_attempt_at)}</span>"),
            (t(lang, "failed_attempts"), e(sub.attempts)),
        ],
    )
    items: list[tuple[Any, list[str]]] = []
    for c in sub.charges:
        what = t(lang, "retry") if c.attempt > 1 else t(lang, "charge")
        items.append(
            (c.created_at, [_when(c.created_at), e(f"{what} · {c.source}"),
                            f"{_status(c.status)} {e(c.reason)} · {_money(c.amount, c.currency)} · "
                            f"<code>{e(c.charge_id)}</code>"])
        )  # fmt: skip
    for at, event, to, subject in detail.emails:
        items.append((at, [_when(at), e(f"{t(lang, 'email')} · {event}"), f"{e(subject)} → {e(to)}"]))
    for a in detail.attempts:
        answer = e(a.status_code) if a.status_code is not None else e(a.error)
        items.append(
            (a.at, [_when(a.at), e(f"callback · {t(lang, 'attempt')} {a.attempt}"),
                    f"<code>{e(a.event_id)}</code> → {answer}"])
        )  # fmt: skip
    items.sort(key=lambda pair: pair[0])
    timeline = table(
        "subscription-timeline",
        t(lang, "timeline"),
        [t(lang, "time"), t(lang, "what"), t(lang, "details")],
        [cells for _, cells in items],
        empty=t(lang, "none_yet"),
    )
    events = _events_table(page, detail.events, _masked(request))
    title = f"{t(lang, 'subscription')}: {sub.sub_uid}"
    return _html(layout(page, title, facts + timeline + events, section="subscriptions"))


def _events_table(page: Page, events: list[Any], masked: bool) -> str:
    lang = page.language
    rows = []
    for event in events:
        resend = (
            form(
                page.url(f"/callbacks/{quote(event.event_id)}/resend"),
                "",
                t(lang, "resend"),
                form_id=f"resend-{event.event_id}",
            ).replace("<button ", f"<button aria-label='{page.t('resend_label', event=event.event_id)}' ", 1)
            if event.state != "pending"
            else ""
        )
        rows.append(
            [
                f"<code>{e(event.event_id)}</code>",
                e(event.event_type),
                _status(event.state),
                e(event.attempts),
                f"<code>{e(mask_query(event.url) if masked else event.url)}</code>",
                f"<details><summary>{page.t('payload')}</summary><pre><code>{e(event.payload)}</code></pre>"
                "</details>",
                resend,
            ]
        )
    return table(
        "callback-events",
        t(lang, "events"),
        [t(lang, "event"), t(lang, "kind"), t(lang, "state"), t(lang, "attempts"), t(lang, "request"),
         t(lang, "payload"), t(lang, "resend")],
        rows,
        empty=t(lang, "none_yet"),
    )  # fmt: skip


# ----------------------------------------------------------------------------------------- wallet


@router.get("/wallet")
async def cards_page(request: Request) -> Response:
    """The newest wallet cards with their balances."""
    page = _page(request)
    lang = page.language
    rows = await _run(request, page, views.cards_page)
    body = table(
        "cards",
        t(lang, "wallet"),
        [t(lang, "card"), t(lang, "status"), t(lang, "kind"), t(lang, "merchant"), t(lang, "holder"),
         t(lang, "balance"), t(lang, "available"), t(lang, "pending_debits"), t(lang, "pending_credits")],
        [
            [f"<a href='{page.url('/wallet/cards/' + quote(c.card_id))}'><code>{e(c.masked_pan)}</code></a>",
             _status(c.status), e(c.type), e(c.merchant), f"<code>{e(c.holder_id)}</code>",
             _money(c.balance, c.currency), _money(c.available_balance, c.currency),
             _money(c.pending_debits, c.currency), _money(c.pending_credits, c.currency)]
            for c in rows
        ],
        empty=t(lang, "none_yet"),
    )  # fmt: skip
    return _html(layout(page, t(lang, "wallet"), body, section="wallet"))


@router.get("/wallet/cards/{card_id}")
async def card_page(request: Request, card_id: str) -> Response:
    """One wallet card: balances, movements, and pending items (authorized charges, uncleared refunds)."""
    page = _page(request)
    lang = page.language
    activity = await _found(request, page, views.card, card_id)
    if activity is None:
        return _not_found(page)
    c = activity.card
    facts = dl(
        "card-facts",
        [
            (t(lang, "card"), f"<code id='card-id'>{e(c.card_id)}</code> <code>{e(c.masked_pan)}</code>"),
            (t(lang, "status"), _status(c.status)),
            (t(lang, "balance"), f"<span id='card-balance'>{_money(c.balance, c.currency)}</span>"),
            (
                t(lang, "available"),
                f"<span id='card-available'>{_money(c.available_balance, c.currency)}</span>",
            ),
            (t(lang, "pending_debits"), _money(c.pending_debits, c.currency)),
            (t(lang, "pending_credits"), _money(c.pending_credits, c.currency)),
            (t(lang, "merchant"), e(c.merchant)),
            (t(lang, "holder"), f"<code>{e(c.holder_id)}</code>"),
        ],
    )
    movements = table(
        "card-movements",
        t(lang, "movements"),
        [t(lang, "time"), t(lang, "kind"), t(lang, "direction"), t(lang, "amount"), t(lang, "balance_after"),
         t(lang, "reference")],
        [[_when(m.created_at), e(m.type), e(m.direction), _money(m.amount, m.currency),
          _money(m.balance_after, m.currency), e(m.reference)] for m in activity.movements],
        empty=t(lang, "none_yet"),
    )  # fmt: skip
    pending_rows = [
        [f"<code>{e(ch.charge_id)}</code>", t(lang, "charge"), _status(ch.status),
         _money(ch.amount, c.currency), _when(ch.created_at), _when(ch.expires_at)]
        for ch in activity.charges if ch.status == "authorized"
    ] + [
        [f"<code>{e(r.refund_id)}</code>", "refund", _status(r.status), _money(r.amount, c.currency),
         _when(r.created_at), ""]
        for r in activity.refunds if r.status == "pending"
    ]  # fmt: skip
    pending = table(
        "card-pending",
        t(lang, "pending_items"),
        ["id", t(lang, "kind"), t(lang, "status"), t(lang, "amount"), t(lang, "created"), t(lang, "expires")],
        pending_rows,
        empty=t(lang, "none_yet"),
    )
    title = f"{t(lang, 'card')}: {c.masked_pan}"
    return _html(layout(page, title, facts + pending + movements, section="wallet"))


# ---------------------------------------------------------------------------------------- batches


@router.get("/batches")
async def batches_page(request: Request) -> Response:
    """Backoffice cardholder batches with their progress; with JavaScript the ``#live`` region is
    fetched again as jobs run (D728)."""
    page = _page(request)
    lang = page.language
    rows = await _run(request, page, views.batches_page)
    listing = table(
        "batches",
        t(lang, "batches"),
        [
            t(lang, "batch"), t(lang, "status"), t(lang, "progress"), t(lang, "created_rows"),
            t(lang, "failed_rows"), t(lang, "partner"), t(lang, "file"), t(lang, "created"),
            t(lang, "finished"),
        ],
        [_batch_row(page, b) for b in rows],
        empty=t(lang, "none_yet"),
    )  # fmt: skip
    status = "<p class='note' id='live-status' role='status' data-on='' data-off=''></p>"
    body = f"<p class='note'>{page.t('live_batches')}</p>{status}<div id='live'>{listing}</div>"
    return _html(layout(page, t(lang, "batches"), body, section="batches", live="refresh"))


def _batch_row(page: Page, batch: Any) -> list[str]:
    p = batch.progress
    label = page.t("processed_of", processed=str(p.processed), total=str(p.total))
    bar = (
        f"<progress id='progress-{e(p.batch_id)}' max='{max(p.total, 1)}' value='{p.processed}' "
        f"aria-label='{page.t('progress')} {e(p.batch_id)}'></progress> {label}"
    )
    return [
        f"<code>{e(p.batch_id)}</code>",
        _status(p.status),
        bar,
        e(p.created),
        e(p.failed),
        e(batch.partner_id),
        e(batch.file_name),
        _when(batch.created_at),
        _when(batch.finished_at),
    ]


# --------------------------------------------------------------------------------------- terminal


@router.get("/terminal")
async def terminal_page(request: Request) -> Response:
    """Terminal payments with their capture, settlement and payout dates."""
    page = _page(request)
    lang = page.language
    rows = await _run(request, page, views.terminal_page)
    body = table(
        "terminal",
        t(lang, "terminal"),
        [t(lang, "payment"), t(lang, "status"), t(lang, "amount"), t(lang, "captured"), t(lang, "settlement"),
         t(lang, "payout"), t(lang, "reference"), t(lang, "created")],
        [
            [f"<code>{e(p.id)}</code>", _status(p.status), _money(p.amount, p.currency),
             f"{_money(p.captured_amount, p.currency)} {_when(p.captured_at)}",
             f"{e(p.settlement_date)} {_when(p.settled_at)}", f"{e(p.payout_date)} {_when(p.paid_out_at)}",
             e(p.reference), _when(p.created_at)]
            for p in rows
        ],
        empty=t(lang, "none_yet"),
    )  # fmt: skip
    return _html(layout(page, t(lang, "terminal"), body, section="terminal"))
