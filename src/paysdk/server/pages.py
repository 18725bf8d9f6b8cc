"""HTML of the hosted checkout (no JavaScript, no external assets; plain form POSTs work in any browser).

Every value is escaped with :func:`html.escape`. Every form carries the page's token (``formToken``,
D94). :func:`page_headers` are the security headers of every page (D93): a Content-Security-Policy
that allows nothing but the page's own stylesheet (by hash) and form posts to the server, and forbids
framing; ``X-Frame-Options``, ``Referrer-Policy``, ``Cache-Control: no-store``.

What the customer reads (D410-D416): every sentence in Spanish and English, the language chosen by the
request's ``Accept-Language`` (:func:`negotiate_language`; Spanish by default); the merchant's display
name (its slug when it has none); the amount with its currency's symbol (:func:`format_amount`, "Q1,234.50");
a test-mode banner on every page; a sentence about the payment's state, never the internal status word
(that one is in the ``data-status`` attribute of ``<main>`` and of the ``status`` element, for
automation); the card fields carry the ``cc-*`` autocomplete tokens. A declined card on the page leaves
the link payable: the page says why and asks for another card (D414).

Elements automation needs carry ``data-testid``: ``test-mode`` (the banner), ``amount`` (formatted,
with the symbol), ``currency`` (the ISO code), ``merchant``, ``reference``, ``status`` (the sentence;
``data-status`` holds the state), ``message``, ``declined`` (the last card's decline, while the link is
payable), ``form-error``, ``card-number``, ``card-expiry``, ``card-cvc``, ``card-name``, ``pay-button``,
``3ds-approve``, ``3ds-fail``, ``rail-pay``, ``rail-expire``, ``test-cards``, ``purpose`` (a card
verification's "Card verification, no charge", D140).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from html import escape
from typing import Literal, TypeAlias

from paysdk.server.services.test_cards import TEST_CARDS, TestCardSpec

__all__ = [
    "CURRENCY_SYMBOLS",
    "DEFAULT_LANGUAGE",
    "FORM_ERRORS",
    "LANGUAGES",
    "VERIFICATION_PURPOSE",
    "CheckoutView",
    "Language",
    "challenge_page",
    "checkout_page",
    "decline_sentence",
    "forbidden_page",
    "format_amount",
    "negotiate_language",
    "not_found_page",
    "page_headers",
    "rail_page",
    "text",
]

Language: TypeAlias = Literal["es", "en"]
#: The page languages, in the order a tie between equal quality values is not decided by (D411).
LANGUAGES: tuple[Language, ...] = ("es", "en")
#: The language of a request without a usable ``Accept-Language`` (D411): the market is Central America.
DEFAULT_LANGUAGE: Language = "es"

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#f4f5f7;margin:0;color:#1d2330}
.banner{background:#fff3bf;color:#5c3c00;border-bottom:2px solid #f08c00;padding:10px 16px;text-align:center;
font-size:.95rem;margin:0}
main{max-width:440px;margin:32px auto;background:#fff;border-radius:12px;padding:28px;
box-shadow:0 2px 12px rgba(0,0,0,.08)}
@media (max-width:480px){main{margin:12px;padding:20px}}
h1{font-size:1.1rem;margin:0 0 4px;overflow-wrap:anywhere}
.amount{font-size:2rem;font-weight:700;margin:12px 0}
.code{font-size:.9rem;font-weight:400;color:#555e6e}
.muted{color:#555e6e;font-size:.9rem} label{display:block;margin:12px 0 4px;font-size:.9rem}
input{width:100%;box-sizing:border-box;padding:10px;border:1px solid #8a93a3;border-radius:8px;font-size:1rem}
input:focus,button:focus{outline:3px solid #748ffc;outline-offset:1px}
.row{display:flex;gap:12px} .row>div{flex:1}
button{margin-top:18px;width:100%;padding:12px;border:0;border-radius:8px;background:#3b5bdb;color:#fff;
font-size:1rem;cursor:pointer} button.secondary{background:#5c636a}
.status{font-weight:600} .status.approved{color:#237032}
.status.declined,.status.expired,.status.dismissed{color:#c92a2a}
.error{background:#fff5f5;color:#c92a2a;padding:10px;border-radius:8px}
table{width:100%;font-size:.8rem;border-collapse:collapse;margin-top:8px} td{padding:2px 4px}
details{margin-top:20px}
"""
#: The CSP source of the one inline stylesheet: its hash, so no other inline style or script runs.
_STYLE_SOURCE = "'sha256-" + base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode() + "'"

#: Every sentence a customer reads, in both languages (D410). ``{name}`` fields are filled (escaped).
_TEXT: dict[str, dict[Language, str]] = {
    "banner": {
        "en": "Test mode: this is the sandbox. No real payment is made; use a test card.",
        "es": "Modo de prueba: este es el entorno sandbox. No se realiza ningún cobro real; use una "
        "tarjeta de prueba.",
    },
    "pay_heading": {"en": "Pay {merchant}", "es": "Pagar a {merchant}"},
    "verification_purpose": {
        "en": "Card verification, no charge",
        "es": "Verificación de tarjeta, sin cargo",
    },
    "verification_note": {
        "en": "Your card is checked and saved for the subscription; nothing is charged now",
        "es": "Su tarjeta se verifica y se guarda para la suscripción; no se cobra nada ahora",
    },
    "reference": {"en": "Reference", "es": "Referencia"},
    "state_pending": {
        "en": "Enter your card details to pay.",
        "es": "Ingrese los datos de su tarjeta para pagar.",
    },
    "state_pending_verification": {
        "en": "Enter your card details to verify it.",
        "es": "Ingrese los datos de su tarjeta para verificarla.",
    },
    "state_approved": {"en": "Payment received. Thank you!", "es": "Pago recibido. ¡Gracias!"},
    "state_approved_verification": {"en": "Your card was verified.", "es": "Su tarjeta fue verificada."},
    "state_declined": {
        "en": "The payment was not completed: the card was declined.",
        "es": "El pago no se completó: la tarjeta fue rechazada.",
    },
    "state_expired": {
        "en": "This payment link has expired. Ask the merchant for a new one.",
        "es": "Este enlace de pago venció. Pida uno nuevo al comercio.",
    },
    "state_dismissed": {
        "en": "The merchant cancelled this payment.",
        "es": "El comercio canceló este pago.",
    },
    "state_challenge": {
        "en": "Confirm the payment with your bank.",
        "es": "Confirme el pago con su banco.",
    },
    "declined_generic_decline": {"en": "Your card was declined.", "es": "Su tarjeta fue rechazada."},
    "declined_card_declined": {"en": "Your card was declined.", "es": "Su tarjeta fue rechazada."},
    "declined_insufficient_funds": {
        "en": "Your card has insufficient funds.",
        "es": "Su tarjeta no tiene fondos suficientes.",
    },
    "declined_expired_card": {"en": "Your card has expired.", "es": "Su tarjeta está vencida."},
    "declined_three_ds_failed": {
        "en": "Your bank did not confirm the payment.",
        "es": "Su banco no confirmó el pago.",
    },
    "try_another": {
        "en": "Nothing was charged. Try another card.",
        "es": "No se cobró nada. Intente con otra tarjeta.",
    },
    "card_number": {"en": "Card number", "es": "Número de tarjeta"},
    "expiry": {"en": "Expiry (MM/YY)", "es": "Vencimiento (MM/AA)"},
    "expiry_placeholder": {"en": "MM/YY", "es": "MM/AA"},
    "cvc": {"en": "Security code (CVC)", "es": "Código de seguridad (CVC)"},
    "name": {"en": "Name on card", "es": "Nombre en la tarjeta"},
    "pay_button": {"en": "Pay {amount}", "es": "Pagar {amount}"},
    "verify_button": {"en": "Verify card", "es": "Verificar tarjeta"},
    "error_expiry_format": {"en": "Enter the expiry as MM/YY.", "es": "Ingrese el vencimiento como MM/AA."},
    "error_expiry_month": {
        "en": "The expiry month must be 01 to 12.",
        "es": "El mes de vencimiento debe ser de 01 a 12.",
    },
    "error_card_expired": {"en": "The card has expired.", "es": "La tarjeta está vencida."},
    "error_cvc": {"en": "Enter the 3 or 4 digit CVC.", "es": "Ingrese el CVC de 3 o 4 dígitos."},
    "error_name": {"en": "Enter the name on the card.", "es": "Ingrese el nombre en la tarjeta."},
    "error_card_number": {"en": "The card number is not valid.", "es": "El número de tarjeta no es válido."},
    "test_cards": {"en": "Sandbox test cards", "es": "Tarjetas de prueba del sandbox"},
    "test_cards_note": {
        "en": "Any expiry in the future, any 3-digit CVC.",
        "es": "Cualquier vencimiento futuro, cualquier CVC de 3 dígitos.",
    },
    "card_approves": {"en": "Approves", "es": "Aprueba"},
    "card_generic_decline": {"en": "Declines", "es": "Rechaza"},
    "card_insufficient_funds": {
        "en": "Declines: insufficient funds",
        "es": "Rechaza: fondos insuficientes",
    },
    "card_expired_card": {"en": "Declines: expired card", "es": "Rechaza: tarjeta vencida"},
    "card_three_ds": {
        "en": "Asks for 3-D Secure (when the merchant enabled it)",
        "es": "Pide 3-D Secure (si el comercio lo activó)",
    },
    "card_renewals_decline": {"en": "; renewals are declined", "es": "; las renovaciones se rechazan"},
    "challenge_heading": {"en": "3-D Secure", "es": "3-D Secure"},
    "challenge_payment": {
        "en": "Your bank asks you to confirm this payment (sandbox simulation).",
        "es": "Su banco le pide confirmar este pago (simulación del sandbox).",
    },
    "challenge_card": {
        "en": "Your bank asks you to confirm this card (sandbox simulation).",
        "es": "Su banco le pide confirmar esta tarjeta (simulación del sandbox).",
    },
    "approve": {"en": "Approve", "es": "Aprobar"},
    "fail": {"en": "Fail", "es": "Rechazar"},
    "rail": {"en": "Payment method", "es": "Medio de pago"},
    "rail_pay": {"en": "Pay", "es": "Pagar"},
    "rail_expire": {"en": "Let it expire", "es": "Dejar que venza"},
    "not_found_title": {"en": "Not found", "es": "No encontrado"},
    "not_found": {"en": "This payment link does not exist.", "es": "Este enlace de pago no existe."},
    "not_found_rail": {
        "en": "This payment does not exist on this payment method.",
        "es": "Este pago no existe en este medio de pago.",
    },
    "forbidden_title": {"en": "Request refused", "es": "Solicitud rechazada"},
    "forbidden": {
        "en": "This form was not sent from its payment page, so nothing was changed. Open the payment "
        "link again to pay.",
        "es": "Este formulario no se envió desde su página de pago, así que no se cambió nada. Abra de "
        "nuevo el enlace de pago para pagar.",
    },
}

#: The symbol written before an amount of each currency of spec 2.1 (D412). Where a symbol is shared
#: (``$``, ``₡``) the page prints the ISO code beside the amount too.
CURRENCY_SYMBOLS: dict[str, str] = {
    "GTQ": "Q",
    "USD": "$",
    "MXN": "MX$",
    "CRC": "₡",
    "HNL": "L",
    "DOP": "RD$",
    "COP": "COL$",
    "SVC": "₡",
    "NIO": "C$",
}
#: ``(thousands, decimal)`` separators per page language (D412): Latin American Spanish (es-419, as
#: written in Guatemala, Honduras, El Salvador, Mexico and the Dominican Republic) and English agree.
_SEPARATORS: dict[Language, tuple[str, str]] = {"es": (",", "."), "en": (",", ".")}
_CENT = Decimal("0.01")


def text(language: Language, key: str, **values: str) -> str:
    """The sentence ``key`` in ``language``, its ``{fields}`` filled with ``values`` (not escaped)."""
    sentence = _TEXT[key][language]
    return sentence.format(**values) if values else sentence


def format_amount(amount: Decimal, currency: str, language: Language = DEFAULT_LANGUAGE) -> str:
    """``amount`` as a customer reads it: the currency's symbol, thousands grouped, two decimals
    (``Q1,234.50``; Decimal throughout, rounded half to even). A currency without a known symbol is
    written after the amount (``1,234.50 XYZ``)."""
    cents = amount.quantize(_CENT, rounding=ROUND_HALF_EVEN)
    grouped = format(abs(cents), ",.2f")
    thousands, decimal = _SEPARATORS[language]
    if (thousands, decimal) != (",", "."):
        grouped = grouped.translate(str.maketrans(",.", thousands + decimal))
    sign = "-" if cents < 0 else ""
    symbol = CURRENCY_SYMBOLS.get(currency)
    return f"{sign}{symbol}{grouped}" if symbol is not None else f"{sign}{grouped} {currency}"


def negotiate_language(header: str | None) -> Language:
    """The page language for an ``Accept-Language`` header (RFC 9110 section 12.5.4; D411).

    Each range names a language by its primary subtag (``es-GT`` is ``es``) with a quality value
    (``q``, 1 when absent; ``q=0``: not acceptable); ``*`` stands for every language the header does not
    name. The language of :data:`LANGUAGES` with the highest quality wins, the one named earlier on a
    tie; :data:`DEFAULT_LANGUAGE` when the header is missing, unparsable or accepts neither language.
    """
    if not header:
        return DEFAULT_LANGUAGE
    named: dict[Language, tuple[float, int]] = {}
    wildcard: tuple[float, int] | None = None
    for position, part in enumerate(header[:1024].split(",")[:32]):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = -1.0
        if not 0.0 <= quality <= 1.0:
            continue  # a malformed range is ignored
        primary = tag.strip().lower().split("-")[0]
        if primary == "*":
            wildcard = wildcard or (quality, position)
        for language in LANGUAGES:
            if language == primary and language not in named:
                named[language] = (quality, position)
    ranked: list[tuple[float, int, int]] = []
    for order, language in enumerate(LANGUAGES):
        quality, position = named.get(language) or wildcard or (0.0, 0)
        if quality > 0.0:
            ranked.append((-quality, position, order))
    return LANGUAGES[min(ranked)[2]] if ranked else DEFAULT_LANGUAGE


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
    #: The merchant as the customer reads it: the client's display name, else its slug (D413).
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
    #: The machine-readable outcome of the last card (``insufficient_funds``...): on a pending link, the
    #: decline the customer is asked to try another card after (D414).
    outcome: str | None = None
    #: The page language (D411).
    language: Language = DEFAULT_LANGUAGE


def _page(title: str, body: str, status_text: str, language: Language) -> str:
    return (
        f"<!doctype html><html lang='{language}'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><header class='banner' data-testid='test-mode'>{escape(text(language, 'banner'))}</header>"
        f"<main data-status='{escape(status_text)}'>{body}</main></body></html>"
    )


def _hidden(view: CheckoutView) -> str:
    """The hidden fields every form of ``view`` posts: ``orderId`` and ``formToken``."""
    return (
        f"<input type='hidden' name='orderId' value='{escape(view.uid)}'>"
        f"<input type='hidden' name='formToken' value='{escape(view.token)}'>"
    )


#: The heading of a card verification's page (D140), in English (:func:`text` has both languages).
VERIFICATION_PURPOSE = _TEXT["verification_purpose"]["en"]


def _state_sentence(view: CheckoutView, state: str) -> str:
    """The customer's sentence for ``state`` (never the status word itself, D415)."""
    key = f"state_{state}"
    if view.verification and f"{key}_verification" in _TEXT:
        key = f"{key}_verification"
    return text(view.language, key) if key in _TEXT else text(view.language, "state_pending")


def _status(view: CheckoutView, state: str | None = None) -> str:
    state = state or view.status
    return (
        f"<p class='status {escape(state)}' role='status' data-testid='status' data-status='{escape(state)}'>"
        f"{escape(_state_sentence(view, state))}</p>"
    )


def _money(view: CheckoutView) -> str:
    return escape(format_amount(view.amount, view.currency, view.language))


def _summary(view: CheckoutView, state: str | None = None) -> str:
    lang = view.language
    merchant = f"<span data-testid='merchant'>{escape(view.merchant)}</span>"
    reference = (
        f"<div class='muted'>{text(lang, 'reference')} "
        f"<span data-testid='reference'>{escape(view.reference)}</span></div>"
    )
    currency = f"<span class='code' data-testid='currency'>{escape(view.currency)}</span>"
    if view.verification:
        return (
            f"<h1>{merchant}: <span data-testid='purpose'>{escape(text(lang, 'verification_purpose'))}"
            f"</span></h1>{reference}"
            f"<p class='muted'>{escape(text(lang, 'verification_note'))} "
            f"(<span data-testid='amount'>{_money(view)}</span> {currency}).</p>" + _status(view, state)
        )
    return (
        f"<h1>{text(lang, 'pay_heading', merchant=merchant)}</h1>{reference}"
        f"<div class='amount'><span data-testid='amount'>{_money(view)}</span> {currency}</div>"
        + _status(view, state)
    )


def _card_label(card: TestCardSpec, language: Language) -> str:
    if card.outcome == "approved":
        label = text(language, "card_approves")
    elif card.outcome == "three_ds_challenge":
        label = text(language, "card_three_ds")
    else:
        label = text(
            language, f"card_{card.reason}" if f"card_{card.reason}" in _TEXT else "card_generic_decline"
        )
    if card.renewal != "approve":
        label += text(language, "card_renewals_decline")
    return label


def _test_cards_table(language: Language) -> str:
    rows = "".join(
        f"<tr><td><code>{card.number}</code></td><td>{escape(_card_label(card, language))}</td></tr>"
        for card in TEST_CARDS
    )
    return (
        f"<details data-testid='test-cards'><summary class='muted'>{text(language, 'test_cards')}</summary>"
        f"<table>{rows}</table><p class='muted'>{text(language, 'test_cards_note')}</p></details>"
    )


def decline_sentence(outcome: str, language: Language) -> str:
    """Why the last card was declined, for the customer (a generic decline when the reason is unknown)."""
    key = f"declined_{outcome}"
    return text(language, key if key in _TEXT else "declined_card_declined")


#: The form errors :func:`checkout_page` shows (``error`` is one of these keys).
FORM_ERRORS = ("expiry_format", "expiry_month", "card_expired", "cvc", "name", "card_number")


def checkout_page(
    view: CheckoutView, base: str, *, error: str | None = None, form: dict[str, str] | None = None
) -> str:
    """The hosted checkout: a card form while pending (with the last card's decline, if any, D414), the
    final state (and no form) otherwise. ``error``: one of :data:`FORM_ERRORS`."""
    lang = view.language
    body = _summary(view)
    if view.status != "pending":
        return _page(f"{_state_sentence(view, view.status)} - {view.reference}", body, view.status, lang)
    values = form or {}
    if error:
        body += (
            "<p class='error' role='alert' data-testid='form-error'>"
            f"{escape(text(lang, f'error_{error}'))}</p>"
        )
    elif view.outcome is not None:
        body += (
            "<p class='error' role='alert' data-testid='declined'>"
            f"{escape(decline_sentence(view.outcome, lang))} {escape(text(lang, 'try_another'))}</p>"
        )
    body += (
        f"<form method='post' action='{escape(base)}/pay'>"
        + _hidden(view)
        + f"<label for='cardNumber'>{text(lang, 'card_number')}</label>"
        "<input id='cardNumber' name='cardNumber' inputmode='numeric' autocomplete='cc-number' "
        "data-testid='card-number' placeholder='4242 4242 4242 4242' "
        f"value='{escape(values.get('cardNumber', ''))}' required>"
        f"<div class='row'><div><label for='expiry'>{text(lang, 'expiry')}</label>"
        "<input id='expiry' name='expiry' autocomplete='cc-exp' data-testid='card-expiry' "
        f"placeholder='{text(lang, 'expiry_placeholder')}' value='{escape(values.get('expiry', ''))}' "
        "required></div>"
        f"<div><label for='cvc'>{text(lang, 'cvc')}</label><input id='cvc' name='cvc' inputmode='numeric' "
        "autocomplete='cc-csc' data-testid='card-cvc' placeholder='123' required></div></div>"
        f"<label for='name'>{text(lang, 'name')}</label><input id='name' name='name' autocomplete='cc-name' "
        f"data-testid='card-name' value='{escape(values.get('name', ''))}' required>"
        f"<button type='submit' data-testid='pay-button'>{_pay_label(view)}</button></form>"
    )
    body += _test_cards_table(lang)
    heading = (
        text(lang, "verification_purpose")
        if view.verification
        else text(lang, "pay_button", amount=format_amount(view.amount, view.currency, lang))
    )
    return _page(f"{heading} - {view.reference}", body, view.status, lang)


def _pay_label(view: CheckoutView) -> str:
    if view.verification:
        return text(view.language, "verify_button")
    return text(view.language, "pay_button", amount=_money(view))


def challenge_page(view: CheckoutView, base: str, challenge_id: str) -> str:
    """The simulated 3-D Secure challenge with Approve and Fail buttons."""
    lang = view.language

    def button(result: str, label: str, testid: str, css: str) -> str:
        return (
            f"<form method='post' action='{escape(base)}/3ds'>"
            + _hidden(view)
            + f"<input type='hidden' name='challengeId' value='{escape(challenge_id)}'>"
            f"<input type='hidden' name='result' value='{result}'>"
            f"<button type='submit' class='{css}' data-testid='{testid}'>{label}</button></form>"
        )

    body = (
        _summary(view, "challenge")
        + f"<h2>{text(lang, 'challenge_heading')}</h2><p data-testid='message'>"
        + text(lang, "challenge_card" if view.verification else "challenge_payment")
        + "</p>"
        + button("approve", text(lang, "approve"), "3ds-approve", "")
        + button("fail", text(lang, "fail"), "3ds-fail", "secondary")
    )
    return _page(text(lang, "challenge_heading"), body, "challenge", lang)


def rail_page(view: CheckoutView, base: str, processor: str) -> str:
    """The hosted page of a URL/QR rail (D11): the customer pays or lets it expire."""
    lang = view.language
    body = (
        _summary(view)
        + f"<p class='muted'>{text(lang, 'rail')}: <code data-testid='rail'>{escape(processor)}</code></p>"
    )
    if view.status != "pending":
        return _page(f"{_state_sentence(view, view.status)} - {view.reference}", body, view.status, lang)
    action = f"{escape(base)}/rails/{escape(processor)}"
    for outcome, label, testid, css in (
        ("paid", text(lang, "rail_pay"), "rail-pay", ""),
        ("expired", text(lang, "rail_expire"), "rail-expire", "secondary"),
    ):
        body += (
            f"<form method='post' action='{action}'>"
            + _hidden(view)
            + f"<input type='hidden' name='outcome' value='{outcome}'>"
            f"<button type='submit' class='{css}' data-testid='{testid}'>{label}</button></form>"
        )
    return _page(f"{processor} - {view.reference}", body, view.status, lang)


def not_found_page(language: Language = DEFAULT_LANGUAGE, *, rail: bool = False) -> str:
    """The 404 page of an unknown ``orderId`` (``rail``: of a payment that is not on that rail)."""
    message = text(language, "not_found_rail" if rail else "not_found")
    title = text(language, "not_found_title")
    return _page(
        title, f"<h1>{title}</h1><p data-testid='status'>{escape(message)}</p>", "not_found", language
    )


def forbidden_page(language: Language = DEFAULT_LANGUAGE) -> str:
    """The 403 page of a form that did not come from its checkout page (D94)."""
    title = text(language, "forbidden_title")
    return _page(
        title,
        f"<h1>{title}</h1><p data-testid='status'>{escape(text(language, 'forbidden'))}</p>",
        "forbidden",
        language,
    )
