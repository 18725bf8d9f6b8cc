"""Every sentence of the console in Spanish and English (D726), chosen like the checkout's.

The language of a page is ``?lang=es|en`` when the query gives one, else the request's
``Accept-Language`` negotiated by :func:`paysdk.server.pages.negotiate_language` (Spanish by default,
D411): the checkout's machinery, one table more.
"""

from __future__ import annotations

from paysdk.server.pages import LANGUAGES, Language, negotiate_language

__all__ = ["LANGUAGES", "Language", "language_of", "t"]

_TEXT: dict[str, tuple[str, str]] = {
    # key: (en, es)
    "console": ("paysdk sandbox console", "Consola del sandbox de paysdk"),
    "skip": ("Skip to content", "Saltar al contenido"),
    "sections": ("Sections", "Secciones"),
    "language": ("Language", "Idioma"),
    "test_mode": (
        "Sandbox: test data only, no real money moves.",
        "Sandbox: solo datos de prueba, no se mueve dinero real.",
    ),
    "home": ("Overview", "Resumen"),
    "merchants": ("Merchants", "Comercios"),
    "transactions": ("Transactions", "Transacciones"),
    "subscriptions": ("Subscriptions", "Suscripciones"),
    "wallet": ("Wallet cards", "Tarjetas de billetera"),
    "batches": ("Backoffice batches", "Lotes del backoffice"),
    "terminal": ("Terminal payments", "Pagos con terminal"),
    "clock": ("Virtual clock", "Reloj virtual"),
    "faults": ("Faults", "Fallas"),
    "tail": ("Live tail", "Registro en vivo"),
    "logout": ("Sign out", "Cerrar sesión"),
    # login
    "login_title": ("Control token", "Token de control"),
    "login_intro": (
        "This sandbox is shared: enter its control token to open the console.",
        "Este sandbox es compartido: ingrese su token de control para abrir la consola.",
    ),
    "login_field": ("Control token", "Token de control"),
    "login_button": ("Open the console", "Abrir la consola"),
    "login_wrong": (
        "That is not this server's control token.",
        "Ese no es el token de control de este servidor.",
    ),
    "login_missing": ("Enter the control token.", "Ingrese el token de control."),
    "forbidden_title": ("Request refused", "Solicitud rechazada"),
    "forbidden": (
        "This form was not sent from the console itself, so nothing was changed.",
        "Este formulario no se envió desde la propia consola, así que no se cambió nada.",
    ),
    "not_found_title": ("Not found", "No encontrado"),
    "not_found": ("There is nothing here.", "No hay nada aquí."),
    "bad_input": ("Check the form", "Revise el formulario"),
    # common
    "none_yet": ("Nothing yet.", "Nada todavía."),
    "status": ("Status", "Estado"),
    "created": ("Created", "Creado"),
    "amount": ("Amount", "Monto"),
    "currency": ("Currency", "Moneda"),
    "reference": ("Reference", "Referencia"),
    "merchant": ("Merchant", "Comercio"),
    "now": ("Virtual time", "Hora virtual"),
    "offset": ("Offset from the wall clock", "Desfase con el reloj real"),
    "seconds": ("seconds", "segundos"),
    "details": ("Details", "Detalle"),
    "masked_note": (
        "Secrets show as **** on a shared sandbox until you reveal them.",
        "Los secretos se muestran como **** en un sandbox compartido hasta que los revele.",
    ),
    "reveal": ("Reveal secrets", "Mostrar secretos"),
    "revealed_note": (
        "Secrets shown in full on this page only; reload to mask them again.",
        "Secretos visibles solo en esta página; recárguela para ocultarlos de nuevo.",
    ),
    "slug": ("Slug", "Identificador"),
    "display_name": ("Display name", "Nombre visible"),
    "country": ("Country", "País"),
    "setting": ("Setting", "Ajuste"),
    "value": ("Value", "Valor"),
    "callback_url": ("Callback URL", "URL de callback"),
    "uid": ("UID", "UID"),
    "kind": ("Kind", "Tipo"),
    "callbacks": ("Callback attempts", "Intentos de callback"),
    "event": ("Event", "Evento"),
    "attempt": ("Attempt", "Intento"),
    "at": ("At", "Hora"),
    "answer": ("Answer", "Respuesta"),
    "timing": ("Next attempt", "Próximo intento"),
    "request": ("Request", "Solicitud"),
    "events": ("Callback events", "Eventos de callback"),
    "state": ("State", "Estado"),
    "attempts": ("Attempts", "Intentos"),
    "resend": ("Resend", "Reenviar"),
    "resend_label": ("Resend event {event}", "Reenviar el evento {event}"),
    "payload": ("Payload", "Contenido"),
    "final": ("final", "final"),
    "resend_pending": (
        "That event is still being delivered: its next attempt is already queued.",
        "Ese evento aún se está entregando: su próximo intento ya está en cola.",
    ),
    "subscription": ("Subscription", "Suscripción"),
    "email": ("Email", "Correo"),
    "plan": ("Plan", "Plan"),
    "next_renewal": ("Next renewal", "Próxima renovación"),
    "next_attempt": ("Next attempt", "Próximo intento"),
    "failed_attempts": ("Failed attempts this period", "Intentos fallidos del período"),
    "timeline": ("Timeline", "Cronología"),
    "charge": ("Charge", "Cobro"),
    "retry": ("Retry", "Reintento"),
    "emails": ("Emails", "Correos"),
    "what": ("What", "Qué"),
    "card": ("Card", "Tarjeta"),
    "holder": ("Holder", "Titular"),
    "balance": ("Balance", "Saldo"),
    "available": ("Available", "Disponible"),
    "pending_debits": ("Pending debits", "Débitos pendientes"),
    "pending_credits": ("Pending credits", "Créditos pendientes"),
    "movements": ("Movements", "Movimientos"),
    "pending_items": ("Pending items", "Pendientes"),
    "direction": ("Direction", "Sentido"),
    "balance_after": ("Balance after", "Saldo después"),
    "expires": ("Expires", "Vence"),
    "batch": ("Batch", "Lote"),
    "partner": ("Partner", "Socio"),
    "file": ("File", "Archivo"),
    "progress": ("Progress", "Avance"),
    "processed_of": ("{processed} of {total}", "{processed} de {total}"),
    "created_rows": ("Created", "Creados"),
    "failed_rows": ("Failed", "Fallidos"),
    "finished": ("Finished", "Terminado"),
    "payment": ("Payment", "Pago"),
    "captured": ("Captured", "Capturado"),
    "settlement": ("Settlement", "Liquidación"),
    "payout": ("Payout", "Pago al comercio"),
    "live_batches": (
        "Progress updates by itself while JavaScript is on; reload the page otherwise.",
        "El avance se actualiza solo con JavaScript activo; si no, recargue la página.",
    ),
    # clock
    "advance": ("Advance", "Adelantar"),
    "advance_by": ("Advance the clock by", "Adelantar el reloj"),
    "advance_seconds": ("Seconds", "Segundos"),
    "advance_hour": ("1 hour", "1 hora"),
    "advance_day": ("1 day", "1 día"),
    "advance_month": ("30 days", "30 días"),
    "seconds_invalid": (
        "seconds: enter a number of seconds greater than 0.",
        "seconds: ingrese un número de segundos mayor que 0.",
    ),
    "jobs_ran": ("Jobs run on the way: {count}", "Trabajos ejecutados en el camino: {count}"),
    # faults
    "fault_kind": ("Fault", "Falla"),
    "fault_route": ("Route", "Ruta"),
    "fault_times": ("Times", "Veces"),
    "fault_left": ("Uses left", "Usos restantes"),
    "fault_add": ("Turn a fault on", "Activar una falla"),
    "fault_clear": ("Turn every fault off", "Desactivar todas las fallas"),
    "fault_status_code": ("Status code (error)", "Código de estado (error)"),
    "fault_latency": ("Latency in ms (latency)", "Latencia en ms (latency)"),
    # tail
    "tail_intro": (
        "The last requests and events; new ones appear as they happen when JavaScript is on.",
        "Las últimas solicitudes y eventos; con JavaScript activo, los nuevos aparecen al ocurrir.",
    ),
    "method": ("Method", "Método"),
    "path": ("Path", "Ruta"),
    "time": ("Time", "Hora"),
    "live": ("Live", "En vivo"),
}


def t(language: Language, key: str, **values: str) -> str:
    """The sentence ``key`` in ``language`` with its ``{fields}`` filled (not escaped)."""
    en, es = _TEXT[key]
    sentence = es if language == "es" else en
    return sentence.format(**values) if values else sentence


def language_of(query: str | None, accept_language: str | None) -> tuple[Language, bool]:
    """The page language and whether the query chose it (links then carry ``?lang=``)."""
    if query in LANGUAGES:
        return query, True
    return negotiate_language(accept_language), False
