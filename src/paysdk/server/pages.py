"""HTML of the hosted checkout (no JavaScript, no external assets; plain form POSTs work in any browser).

Every value is escaped with :func:`html.escape`. Every form carries the page's token (``formToken``,
D94). :func:`page_headers` are the security headers of every page (D93): a Content-Security-Policy
that allows nothing but the page's own stylesheet (by hash) and form posts to the server, and forbids
framing; ``X-Frame-Options``, ``Referrer-Policy``, ``Cache-Control: no-store``. Elements automation
needs carry ``data-testid``:
``amount``, ``currency``, ``merchant``, ``reference``, ``status``, ``message``, ``form-error``,
``card-number``, ``card-expiry``, ``card-cvc``, ``card-name``, ``pay-button``, ``3ds-approve``,
``3ds-fail``, ``rail-pay``, ``rail-expire``, ``test-cards``, ``purpose`` (a card verification's
"Card verification, no charge", D140).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from decimal import Decimal
from html import escape

from paysdk.server.services.test_cards import TEST_CARDS

__all__ = [
    "VERIFICATION_PURPOSE",
    "CheckoutView",
    "challenge_page",
    "checkout_page",
    "forbidden_page",
    "not_found_page",
    "page_headers",
    "rail_page",
]

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#f4f5f7;margin:0;color:#1d2330}
main{max-width:440px;margin:40px auto;background:#fff;border-radius:12px;padding:28px;
box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:1.1rem;margin:0 0 4px} .amount{font-size:2rem;font-weight:700;margin:12px 0}
.muted{color:#667085;font-size:.9rem} label{display:block;margin:12px 0 4px;font-size:.9rem}
input{width:100%;box-sizing:border-box;padding:10px;border:1px solid #cfd4dc;border-radius:8px;font-size:1rem}
.row{display:flex;gap:12px} .row>div{flex:1}
button{margin-top:18px;width:100%;padding:12px;border:0;border-radius:8px;background:#3b5bdb;color:#fff;
font-size:1rem;cursor:pointer} button.secondary{background:#868e96}
.status{display:inline-block;padding:4px 10px;border-radius:999px;font-weight:600;background:#e9ecef}
.status.approved{background:#d3f9d8;color:#2b8a3e}.status.declined,.status.expired,.status.dismissed{
background:#ffe3e3;color:#c92a2a}.error{background:#fff5f5;color:#c92a2a;padding:10px;border-radius:8px}
table{width:100%;font-size:.8rem;border-collapse:collapse;margin-top:8px} td{padding:2px 4px}
details{margin-top:20px}
"""
#: The CSP source of the one inline stylesheet: its hash, so no other inline style or script runs.
_STYLE_SOURCE = "'sha256-" + base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode() + "'"


def page_headers(form_origin: str) -> dict[str, str]:
    """The security headers of a checkout page (D93). ``form_origin``: the origin its forms post to
    (the server's public address), allowed besides ``'self'``."""
    policy = (
        f"default-src 'none'; style-src {_STYLE_SOURCE}; "
        f"form-action 'self' {form_origin}; frame-ancestors 'none'; base-uri 'none'"
    )
    return {
        "Content-Security-Policy": policy,
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
    }


@dataclass(frozen=True, slots=True)
class CheckoutView:
    """What a checkout page shows about one transaction."""

    uid: str
    reference: str
    merchant: str
    amount: Decimal
    currency: str
    status: str
    message: str | None
    processor: str | None = None
    #: The page's form token (D94): every form posts it back.
    token: str = ""
    #: A card verification (D140): nothing is charged, the page says so.
    verification: bool = False


def _page(title: str, body: str, status_text: str = "") -> str:
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><main data-status='{escape(status_text)}'>{body}</main></body></html>"
    )


def _hidden(view: CheckoutView) -> str:
    """The hidden fields every form of ``view`` posts: ``orderId`` and ``formToken``."""
    return (
        f"<input type='hidden' name='orderId' value='{escape(view.uid)}'>"
        f"<input type='hidden' name='formToken' value='{escape(view.token)}'>"
    )


#: The heading of a card verification's page (D140).
VERIFICATION_PURPOSE = "Card verification, no charge"


def _summary(view: CheckoutView) -> str:
    if view.verification:
        return (
            f"<h1><span data-testid='merchant'>{escape(view.merchant)}</span>: "
            f"<span data-testid='purpose'>{VERIFICATION_PURPOSE}</span></h1>"
            "<div class='muted'>Reference "
            f"<span data-testid='reference'>{escape(view.reference)}</span></div>"
            "<p class='muted'>Your card is checked and saved for the subscription; nothing is charged now "
            f"(<span data-testid='amount'>{escape(format(view.amount, ',.2f'))}</span> "
            f"<span data-testid='currency'>{escape(view.currency)}</span>).</p>"
            f"<p>Status: <span class='status {escape(view.status)}' data-testid='status'>"
            f"{escape(view.status)}</span></p>"
        )
    return (
        f"<h1>Pay <span data-testid='merchant'>{escape(view.merchant)}</span></h1>"
        f"<div class='muted'>Reference <span data-testid='reference'>{escape(view.reference)}</span></div>"
        f"<div class='amount'><span data-testid='amount'>{escape(format(view.amount, ',.2f'))}</span> "
        f"<span data-testid='currency'>{escape(view.currency)}</span></div>"
        f"<p>Status: <span class='status {escape(view.status)}' data-testid='status'>"
        f"{escape(view.status)}</span></p>"
    )


def _test_cards_table() -> str:
    rows = "".join(
        f"<tr><td><code>{card.number}</code></td><td>{escape(card.description)}</td></tr>"
        for card in TEST_CARDS
    )
    return (
        "<details data-testid='test-cards'><summary class='muted'>Sandbox test cards</summary>"
        f"<table>{rows}</table><p class='muted'>Any expiry in the future, any 3-digit CVC.</p></details>"
    )


def checkout_page(
    view: CheckoutView, base: str, *, error: str | None = None, form: dict[str, str] | None = None
) -> str:
    """The hosted checkout: a card form while pending, the final state (and no form) otherwise."""
    body = _summary(view)
    if view.status != "pending":
        if view.message:
            body += f"<p data-testid='message'>{escape(view.message)}</p>"
        return _page(f"{view.status} - {view.reference}", body, view.status)
    values = form or {}
    if error:
        body += f"<p class='error' role='alert' data-testid='form-error'>{escape(error)}</p>"
    body += (
        f"<form method='post' action='{escape(base)}/pay' autocomplete='off'>"
        + _hidden(view)
        + "<label for='cardNumber'>Card number</label>"
        "<input id='cardNumber' name='cardNumber' inputmode='numeric' data-testid='card-number' "
        f"placeholder='4242 4242 4242 4242' value='{escape(values.get('cardNumber', ''))}' required>"
        "<div class='row'><div><label for='expiry'>Expiry (MM/YY)</label>"
        "<input id='expiry' name='expiry' data-testid='card-expiry' placeholder='12/34' "
        f"value='{escape(values.get('expiry', ''))}' required></div>"
        "<div><label for='cvc'>CVC</label><input id='cvc' name='cvc' inputmode='numeric' "
        "data-testid='card-cvc' placeholder='123' required></div></div>"
        "<label for='name'>Name on card</label><input id='name' name='name' data-testid='card-name' "
        f"value='{escape(values.get('name', ''))}' required>"
        f"<button type='submit' data-testid='pay-button'>{_pay_label(view)}</button></form>"
    )
    body += _test_cards_table()
    title = f"{VERIFICATION_PURPOSE} {view.reference}" if view.verification else f"Pay {view.reference}"
    return _page(title, body, view.status)


def _pay_label(view: CheckoutView) -> str:
    if view.verification:
        return "Verify card"
    return f"Pay {escape(format(view.amount, ',.2f'))} {escape(view.currency)}"


def challenge_page(view: CheckoutView, base: str, challenge_id: str) -> str:
    """The simulated 3-D Secure challenge with Approve and Fail buttons."""

    def button(result: str, label: str, testid: str, css: str) -> str:
        return (
            f"<form method='post' action='{escape(base)}/3ds'>"
            + _hidden(view)
            + f"<input type='hidden' name='challengeId' value='{escape(challenge_id)}'>"
            f"<input type='hidden' name='result' value='{result}'>"
            f"<button type='submit' class='{css}' data-testid='{testid}'>{label}</button></form>"
        )

    body = (
        _summary(view)
        + "<h1>3-D Secure</h1><p data-testid='message'>Your bank asks you to confirm this "
        + ("card" if view.verification else "payment")
        + " (sandbox simulation).</p>"
        + button("approve", "Approve", "3ds-approve", "")
        + button("fail", "Fail", "3ds-fail", "secondary")
    )
    return _page("3-D Secure", body, "challenge")


def rail_page(view: CheckoutView, base: str, processor: str) -> str:
    """The hosted page of a URL/QR rail (D11): the customer pays or lets it expire."""
    body = _summary(view) + f"<p class='muted'>Rail: <code data-testid='rail'>{escape(processor)}</code></p>"
    if view.status != "pending":
        if view.message:
            body += f"<p data-testid='message'>{escape(view.message)}</p>"
        return _page(f"{view.status} - {view.reference}", body, view.status)
    action = f"{escape(base)}/rails/{escape(processor)}"
    for outcome, label, testid, css in (
        ("paid", "Pay", "rail-pay", ""),
        ("expired", "Let it expire", "rail-expire", "secondary"),
    ):
        body += (
            f"<form method='post' action='{action}'>"
            + _hidden(view)
            + f"<input type='hidden' name='outcome' value='{outcome}'>"
            f"<button type='submit' class='{css}' data-testid='{testid}'>{label}</button></form>"
        )
    return _page(f"{processor} - {view.reference}", body, view.status)


def not_found_page(message: str = "This payment link does not exist.") -> str:
    """The 404 page of an unknown ``orderId``."""
    return _page("Not found", f"<h1>Not found</h1><p data-testid='status'>{escape(message)}</p>", "not_found")


def forbidden_page() -> str:
    """The 403 page of a form that did not come from its checkout page (D94)."""
    return _page(
        "Refused",
        "<h1>Request refused</h1><p data-testid='status'>This form was not sent from its payment page, "
        "so nothing was changed. Open the payment link again to pay.</p>",
        "forbidden",
    )
