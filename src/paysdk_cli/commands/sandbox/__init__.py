"""``paysdk sandbox``: the reference server's control plane (``/_sandbox/``), for tests and demos.

This package assembles the ``sandbox`` group; each sub-group lives in its own module (``clients``,
``clock``, ``transactions``, ``faults``, ``users``, ``cards``, ``linking_tokens``, ``charges``,
``backoffice``, ``plans``, ``subscriptions``, ``terminal``, ``processor``, ``leads``,
``deprecations``), and the group's own commands in ``server`` (health, reset, control-token),
``payments`` (pay, simulate, test-cards), ``activity`` (callbacks, jobs, requests, tail, outbox) and
``subscriptions`` (subscription). What several modules share is in ``_common``. The registration order
below is the order of ``paysdk sandbox --help``. Like every family, the package is imported only when
``paysdk sandbox`` is invoked.
"""

from __future__ import annotations

from paysdk_cli._app import new_app
from paysdk_cli.commands.sandbox import (
    activity,
    backoffice,
    cards,
    charges,
    clients,
    clock,
    deprecations,
    faults,
    leads,
    linking_tokens,
    payments,
    plans,
    processor,
    server,
    subscriptions,
    terminal,
    transactions,
    users,
)

__all__ = ["app"]

app = new_app(
    "Control plane of the local reference server.\n\n"
    "Clients, clock, test payments, callbacks, requests and faults (under /_sandbox/)."
)

app.command("health")(server.health)
app.command("reset")(server.reset)
app.command("control-token")(server.control_token)
app.command("pay")(payments.pay)
app.command("simulate")(payments.simulate)
app.command("callbacks")(activity.callbacks)
app.command("resend-callback")(activity.resend_callback)
app.command("jobs")(activity.jobs)
app.command("requests")(activity.requests)
app.command("tail")(activity.tail)
app.command("test-cards")(payments.test_cards)
app.command("outbox")(activity.outbox)
app.command("subscription")(subscriptions.subscription)

app.add_typer(clients.app, name="clients")
app.add_typer(clock.app, name="clock")
app.add_typer(transactions.app, name="transactions")
app.add_typer(faults.app, name="faults")
app.add_typer(users.app, name="users")
app.add_typer(cards.app, name="cards")
app.add_typer(linking_tokens.app, name="linking-tokens")
app.add_typer(charges.app, name="charges")
app.add_typer(backoffice.app, name="backoffice")
app.add_typer(plans.app, name="plan")
app.add_typer(subscriptions.app, name="subscriptions")
app.add_typer(terminal.app, name="terminal")
app.add_typer(processor.app, name="processor")
app.add_typer(leads.app, name="lead")
app.add_typer(deprecations.app, name="deprecations")
