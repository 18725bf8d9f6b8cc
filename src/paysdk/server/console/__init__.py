"""The sandbox console in the browser, under ``/_sandbox/console`` (issue 23; D720-D729).

Server-rendered HTML on the control plane: same host, origin and control-token rules as the rest of it
(:mod:`paysdk.server.console.router` says how a browser carries the token, and the CSRF rule), a strict
CSP, no asset from outside the package (the stylesheet and the one script are
``paysdk/server/console/static/``), readable with JavaScript off, Spanish and English (``?lang=es|en``,
else ``Accept-Language``, like the checkout). A family-level module: it reads each family's data through
that family's services (:mod:`paysdk.server.console.views`); the core never imports it.

**Stable URLs** (the browser tests and docs rely on them; all under ``/_sandbox/console``):

========================================  ===================================================
``GET  /``                                 overview (virtual time, counts)
``GET  /login`` · ``POST /login``          the token form (open); ``POST /logout``
``GET  /merchants`` · ``/merchants/{slug}``  merchants; one merchant's settings
``POST /merchants/{slug}/reveal``          the same page with the secrets in full (the reveal step)
``GET  /transactions`` · ``/transactions/{uid}``  transactions; one with its callback events/attempts
``POST /callbacks/{eventId}/resend``       queue a new delivery of an event (303 to its transaction)
``GET  /subscriptions`` · ``/subscriptions/{id}``  subscriptions; one with its timeline
``GET  /wallet`` · ``/wallet/cards/{id}``  wallet cards; one with movements and pending items
``GET  /batches``                          backoffice batches (live progress with JS)
``GET  /terminal``                         terminal payments (capture, settlement, payout dates)
``GET  /clock`` · ``POST /clock/advance``  the virtual clock (form field ``seconds``)
``GET  /faults`` · ``POST /faults`` · ``POST /faults/clear``  faults on and off
``GET  /tail``                             the live tail (requests and events)
``GET  /events``                           the server's event feed (SSE) for the script
``GET  /static/console.css`` · ``/static/console.js`` · ``/static/favicon.svg``
========================================  ===================================================

**Stable element ids**: on every page ``main`` (``<main id="main">``, with ``data-live`` on live
pages), the skip link to ``#main``, ``test-mode`` (the banner), ``nav-<section>`` (the navigation
links: home, merchants, transactions, subscriptions, wallet, batches, terminal, clock, faults, tail),
``lang-es`` / ``lang-en``, ``logout`` (signed-in shared sandbox only). Token form: ``login``, ``token``,
``login-submit``, ``login-error``. Messages: ``message`` (403/404 pages). Tables carry an id, a
``<caption id="<table>-caption">`` and, when empty, ``<p id="<table>-empty">``: ``overview``,
``merchants``, ``merchant-settings``, ``merchant-transactions``, ``transactions``, ``callback-events``,
``callback-attempts``, ``subscriptions``, ``subscription-timeline``, ``cards``, ``card-movements``,
``card-pending``, ``batches``, ``terminal``, ``faults``, ``tail`` (rows in ``tail-body``). Clock:
``clock-now``, ``clock-offset``, ``clock-ran``, ``clock-error``, forms ``advance-hour``, ``advance-day``,
``advance-month``, ``advance`` (field ``seconds``). Merchant: ``reveal`` (form), ``revealed``, and
``secret-<field>`` on each secret's value. Resend: forms ``resend-<eventId>``. Faults: forms
``fault-add`` (fields ``kind``, ``route``, ``count``, ``status``, ``latency_ms``; inputs ``fault-kind``,
``fault-route``, ``fault-count``, ``fault-status``, ``fault-latency``; error ``fault-error``) and
``fault-clear``.
Every form's button is ``<form id>-submit``. Live status: ``live-status``; refreshed region: ``live``;
batch progress bars ``progress-<batchId>``. Facts: ``transaction-uid``, ``transaction-status``,
``transaction-amount``, ``subscription-id``, ``subscription-status``, ``next-renewal``, ``next-attempt``,
``card-id``, ``card-balance``, ``card-available`` (description lists ``transaction-facts``,
``subscription-facts``, ``card-facts``, ``clock-facts``).
"""

from __future__ import annotations

__all__: list[str] = []
