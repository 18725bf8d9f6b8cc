"""A sandbox filled with data of every family, through the real SDK, for the console's browser tests and
its screenshots (``scripts/console_screenshots.py``).

:func:`fill_sandbox` drives a running reference server (a socket, its ticker on) with the sync SDK, the
way a developer's test suite would: a merchant with settings; payment links paid, declined, pending and
paid with a callback that first failed; a callback that keeps failing (the resend action's subject); a
subscription with charges and one whose renewal was declined (a failed retry); wallet cards with
movements and a pending authorization; a backoffice batch of cardholders; terminal payments captured,
settled and paid out; an onboarding lead; an active fault. Each is recorded in :class:`ConsoleData` so a
test can look for it on the pages.

:class:`Receiver` is the merchants' callback endpoint: ``/ok`` answers 200 (or the statuses it is told
with :meth:`Receiver.respond_with`), ``/down`` always 503.
"""

from __future__ import annotations

import contextlib
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import paysdk
from paysdk.contracts.sandbox import CallbackAttempt, SandboxClient
from paysdk.server import create_app
from paysdk.server.connections import KEEP_ALIVE_TIMEOUT, uvicorn_connection_options
from paysdk.testing._ready import serve_in_thread

__all__ = ["CONSOLE", "PAGES", "ConsoleData", "PageSpec", "Receiver", "fill_sandbox", "serve", "wait_until"]

#: Where the console lives on the server.
CONSOLE = "/_sandbox/console"

APPROVE = "4242424242424242"
DECLINE = "4000000000000002"
#: Attaches, then every renewal charge is declined (the subscriptions' test card).
RENEWAL_DECLINES = "4000000000000341"
MASTERCARD = "5555555555554444"
HOLDERS_HEADER = "externalId,username,email,firstName,lastName,issueCard"


@dataclass
class ConsoleData:
    """What :func:`fill_sandbox` made (ids to look for on the pages)."""

    merchant: SandboxClient
    #: A second merchant whose callbacks go to the failing receiver.
    failing_merchant: SandboxClient
    paid_uid: str = ""
    declined_uid: str = ""
    pending_uid: str = ""
    #: Paid; its callback failed once (500), then was delivered.
    retried_uid: str = ""
    #: Paid; every attempt of its callback fails (the one to resend).
    failing_uid: str = ""
    plan_id: str = ""
    sub_uid: str = ""
    failed_sub_uid: str = ""
    wallet_user_id: str = ""
    card_id: str = ""
    spare_card_id: str = ""
    pending_charge_id: str = ""
    partner_id: str = ""
    batch_id: str = ""
    paid_out_terminal_id: str = ""
    captured_terminal_id: str = ""
    authorized_terminal_id: str = ""
    lead_id: str = ""
    fault_id: str = ""
    secrets_shown: list[str] = field(default_factory=list)

    def every_id(self) -> dict[str, str]:
        """Every id the console should show somewhere, by name."""
        names = [
            "paid_uid",
            "declined_uid",
            "pending_uid",
            "retried_uid",
            "failing_uid",
            "plan_id",
            "sub_uid",
            "failed_sub_uid",
            "card_id",
            "spare_card_id",
            "pending_charge_id",
            "batch_id",
            "paid_out_terminal_id",
            "captured_terminal_id",
            "authorized_terminal_id",
            "lead_id",
            "fault_id",
        ]
        found = {name: getattr(self, name) for name in names}
        found["merchant_slug"] = self.merchant.slug
        found["failing_slug"] = self.failing_merchant.slug
        return found


class Receiver:
    """A merchant's callback endpoint on 127.0.0.1 (a thread): ``ok_url`` answers 200 unless told
    otherwise, ``down_url`` always 503. ``received`` counts the POSTs by path."""

    def __init__(self) -> None:
        self.received: dict[str, int] = {}
        self._statuses: list[int] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status = outer._status(self.path)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # port 0: the system picks it
        port = self._server.server_address[1]
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.ok_url = f"http://127.0.0.1:{port}/ok"
        self.down_url = f"http://127.0.0.1:{port}/down"

    def _status(self, path: str) -> int:
        with self._lock:
            self.received[path] = self.received.get(path, 0) + 1
            if path != "/ok":
                return 503
            return self._statuses.pop(0) if self._statuses else 200

    def respond_with(self, statuses: list[int]) -> None:
        """Answer the next POSTs to ``ok_url`` with these statuses (then 200 again)."""
        with self._lock:
            self._statuses = list(statuses)

    def close(self) -> None:
        """Stop listening."""
        self._server.shutdown()
        self._server.server_close()


@contextlib.contextmanager
def serve(database_url: str, **options: Any) -> Iterator[str]:
    """The reference server (``create_app(database_url, **options)``, ticker on) on a free port of
    127.0.0.1 in a thread, as ``paysdk serve`` serves it; yields its base URL."""
    application = create_app(database_url, start_ticker=True, tick_interval=0.2, **options)
    with serve_in_thread(
        application,
        lifespan="on",
        what="the console's server",
        **uvicorn_connection_options(KEEP_ALIVE_TIMEOUT),
    ) as served:
        yield served.url


class _Nothing(dict[str, str]):
    """Fills any ``{field}`` with an id no sandbox has."""

    def __missing__(self, key: str) -> str:
        return "nothing-" + key.replace("_", "-")


@dataclass(frozen=True)
class PageSpec:
    """One console page: its ``name`` (screenshot file ``console-<name>.png``), its ``path`` under
    :data:`CONSOLE` (``{field}`` filled from :class:`ConsoleData`), the ids of its tables (each shows a
    ``<id>-empty`` paragraph on an empty sandbox), and the :class:`ConsoleData` fields whose values it
    shows with the data (``shows``, in the element ``within``)."""

    name: str
    path: str
    tables: tuple[str, ...]
    shows: tuple[str, ...] = ()
    within: str = "#main"
    #: ``(selector, text)``: more of what the page shows with the data (English).
    texts: tuple[tuple[str, str], ...] = ()

    @property
    def detail(self) -> bool:
        """A page of one thing (an id in its path): on an empty sandbox it is a 404 page."""
        return "{" in self.path

    def url(self, data: ConsoleData | None) -> str:
        """The page's path on the server, ``{field}`` filled from ``data``."""
        if data is None:
            return CONSOLE + self.path.format_map(_Nothing())
        return CONSOLE + self.path.format(**data.every_id())


#: Every page of the console, in the navigation's order, detail pages after their lists.
PAGES: tuple[PageSpec, ...] = (
    PageSpec("overview", "/", ("overview",)),
    PageSpec("merchants", "/merchants", ("merchants",), ("merchant_slug", "failing_slug")),
    PageSpec(
        "merchant",
        "/merchants/{merchant_slug}",
        ("merchant-settings", "merchant-transactions"),
        ("paid_uid", "declined_uid"),
        texts=(("#merchant-settings", "Tienda Sol"),),
    ),
    PageSpec(
        "transactions",
        "/transactions",
        ("transactions",),
        ("paid_uid", "declined_uid", "pending_uid", "retried_uid", "failing_uid"),
        texts=(("#transactions", "declined"), ("#transactions", "pending"), ("#transactions", "approved")),
    ),
    PageSpec(
        "transaction",
        "/transactions/{retried_uid}",
        ("callback-events", "callback-attempts"),
        ("retried_uid",),
        texts=(
            ("#callback-attempts", "500"),
            ("#callback-attempts", "200"),
            ("#callback-events", "delivered"),
        ),
    ),
    PageSpec("subscriptions", "/subscriptions", ("subscriptions",), ("sub_uid", "failed_sub_uid")),
    PageSpec(
        "subscription",
        "/subscriptions/{failed_sub_uid}",
        ("subscription-timeline",),
        ("failed_sub_uid",),
        texts=(("#subscription-timeline", "declined"),),
    ),
    PageSpec("wallet", "/wallet", ("cards",), ("card_id", "spare_card_id")),
    PageSpec(
        "card",
        "/wallet/cards/{card_id}",
        ("card-movements", "card-pending"),
        ("card_id", "pending_charge_id"),
        texts=(
            ("#card-pending", "12.34"),
            ("#card-movements", "transfer_out"),
            ("#card-movements", "top-up"),
        ),
    ),
    PageSpec("batches", "/batches", ("batches",), ("batch_id",), texts=(("#batches", "holders.csv"),)),
    PageSpec(
        "terminal",
        "/terminal",
        ("terminal",),
        ("paid_out_terminal_id", "captured_terminal_id", "authorized_terminal_id"),
        texts=(("#terminal", "paid_out"), ("#terminal", "captured"), ("#terminal", "authorized")),
    ),
    PageSpec("clock", "/clock", (), texts=(("#clock-now", "20"),)),
    PageSpec("faults", "/faults", ("faults",), ("fault_id",), texts=(("#faults", "POST /transactions"),)),
    PageSpec("tail", "/tail", ("tail",), texts=(("#tail", "POST /transactions"),)),
)


def wait_until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``check`` (a query of the server's state) until it holds; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _attempts(sandbox: paysdk.Client, uid: str) -> list[CallbackAttempt]:
    return list(sandbox.sandbox.callbacks(uid=uid))


def _link(client: paysdk.Client, slug: str, amount: str, external_id: str) -> str:
    link = client.payment_links.create(
        amount=Decimal(amount), user_id="+50255550123", channel="web", client=slug, external_id=external_id
    )
    return str(link.uid)


def _terminal(client: paysdk.Client, card: str, amount: str, **kw: Any) -> str:
    payment = client.terminal.create(
        amount=amount,
        currency="GTQ",
        terminal_id="POS-1",
        card_number=card,
        expiry_month=12,
        expiry_year=2030,
        **kw,
    )
    return str(payment.id)


def fill_sandbox(base_url: str, receiver: Receiver, *, control_token: str | None = None) -> ConsoleData:
    """Fill the server at ``base_url`` with data of every family (module docstring). The server's ticker
    must run (it delivers callbacks and processes the cardholder batch)."""
    env = paysdk.Environment.local(base_url, control_token=control_token)
    sandbox = paysdk.Client(environment=env)
    made: list[paysdk.Client] = [sandbox]
    try:
        return _fill(sandbox, env, made, receiver)
    finally:
        for client in made:
            client.close()


def _fill(
    sandbox: paysdk.Client,
    env: paysdk.Environment,
    made: list[paysdk.Client],
    receiver: Receiver,
) -> ConsoleData:
    tag = secrets.token_hex(3)
    merchant = sandbox.sandbox.create_client(
        slug=f"tienda-{tag}",
        display_name="Tienda Sol",
        currencies=["GTQ", "USD"],
        callback_url=receiver.ok_url,
        callback_header_value="console-" + secrets.token_hex(12),
        three_ds=False,
    )
    failing = sandbox.sandbox.create_client(
        slug=f"caida-{tag}", display_name="Callback Down", callback_url=receiver.down_url
    )
    data = ConsoleData(merchant=merchant, failing_merchant=failing)
    data.secrets_shown = [
        s for s in (merchant.sandbox_token, merchant.production_token, merchant.callback_header_value) if s
    ]

    # Terminal first: it moves the virtual clock days ahead (settlement and payout), which would also
    # run out the callback retries of everything made before.
    shop = paysdk.Client(merchant.sandbox_token, env)
    made.append(shop)
    data.paid_out_terminal_id = _terminal(shop, APPROVE, "10.50", reference="R-1")
    sandbox.sandbox.advance_clock(8 * 86400)
    held = sandbox.sandbox.terminal.get(data.paid_out_terminal_id)
    assert str(held.status) in ("paid_out", "TerminalStatus.PAID_OUT"), held.status
    data.captured_terminal_id = _terminal(shop, MASTERCARD, "20.00", reference="R-2")
    data.authorized_terminal_id = _terminal(shop, APPROVE, "5.25", reference="R-3", capture_mode="manual")

    # Payment links: paid, declined (the hosted checkout keeps a declined link payable, so the control
    # plane's "expired" makes a terminal failure), pending, and two with callback trouble.
    data.paid_uid = _link(shop, merchant.slug, "125.50", "order-1")
    sandbox.sandbox.pay(data.paid_uid, APPROVE)
    data.declined_uid = _link(shop, merchant.slug, "30.00", "order-2")
    sandbox.sandbox.pay(data.declined_uid, DECLINE)
    data.pending_uid = _link(shop, merchant.slug, "9.99", "order-3")
    wait_until(lambda: bool(_attempts(sandbox, data.paid_uid)), "the paid link's callback")

    down = paysdk.Client(failing.sandbox_token, env)
    made.append(down)
    data.failing_uid = _link(down, failing.slug, "45.00", "order-4")
    sandbox.sandbox.pay(data.failing_uid, APPROVE)
    wait_until(lambda: bool(_attempts(sandbox, data.failing_uid)), "the failing callback's first attempt")

    # Subscriptions: one charged (its first renewal), one whose renewal is declined.
    plan = sandbox.sandbox.plans.create(merchant.slug, "9.99", name="Monthly")
    data.plan_id = plan.plan_id
    today = sandbox.sandbox.clock().now.date()
    good = sandbox.sandbox.subscriptions.create(
        plan.plan_id, email=f"ana-{tag}@example.com", start_date=today
    )
    bad = sandbox.sandbox.subscriptions.create(
        plan.plan_id, email=f"ben-{tag}@example.com", card_number=RENEWAL_DECLINES, start_date=today
    )
    data.sub_uid, data.failed_sub_uid = good.sub_uids[0], bad.sub_uids[0]
    sandbox.sandbox.advance_clock(13 * 3600)
    wait_until(lambda: bool(sandbox.sandbox.subscriptions.get(data.sub_uid).charges), "a subscription charge")

    # Wallet: two cards, funds, a transfer, a withdrawal and a pending (uncaptured) card payment.
    assert merchant.signing_private_key is not None
    wallet = paysdk.Client(
        environment=env, wallet=paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key)
    )
    made.append(wallet)
    user = sandbox.sandbox.create_user(merchant.slug, f"ana{tag}", f"ana-w-{tag}@example.com", "password-1")
    data.wallet_user_id = user.user_id
    card = wallet.wallet.cards.issue_virtual(user.user_id, currency="GTQ", alias="main")
    spare = wallet.wallet.cards.issue_virtual(user.user_id, currency="GTQ", alias="spare")
    data.card_id, data.spare_card_id = card.card_id, spare.card_id
    wallet.wallet.funds.add(card.card_id, Decimal("100.00"), reference="top-up")
    wallet.wallet.funds.withdraw(card.card_id, "5.00")
    wallet.wallet.transfers.create(card.card_id, spare.card_id, "25.00", "rent")
    data.pending_charge_id = sandbox.sandbox.charge(card.card_id, "12.34").charge_id

    # Backoffice: an operator, a partner, and a batch of cardholders (one bad row).
    password = "operator-" + secrets.token_hex(8)
    email = f"op-{tag}@example.com"
    sandbox.sandbox.backoffice.create_operator(merchant.slug, email, password)
    partner = sandbox.sandbox.backoffice.create_partner(merchant.slug, "Acme Payroll", f"acme-{tag}")
    data.partner_id = partner.partner_id
    office = paysdk.Client(
        environment=env,
        backoffice=paysdk.BackofficeCredentials(
            merchant.slug, merchant.signing_private_key, user=paysdk.BackofficeUser(email, password)
        ),
    )
    made.append(office)
    lines = [HOLDERS_HEADER]
    for number in range(1, 6):
        mail = "not-an-email" if number == 3 else f"holder{number}-{tag}@example.com"
        lines.append(
            f"ext-{tag}-{number},holder{number}{tag},{mail},Ana,Holder{number},{'yes' if number % 2 else ''}"
        )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "holders.csv"
        path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
        upload = office.backoffice.cardholders.upload(partner.partner_id, path)
    data.batch_id = upload.batch_id
    office.backoffice.cardholders.wait(partner.partner_id, upload.batch_id)

    # Onboarding: a partner's lead.
    lead = shop.onboarding.create_lead(
        business={"legal_name": "Café Luna S.A.", "trade_name": "Café Luna", "tax_id": "7654321-0"},
        contact={"name": "Luis Mora", "email": f"luis-{tag}@cafeluna.gt", "phone": "+50255551234"},
        country="GT",
        channels=["wa", "web"],
        currencies=["GTQ"],
    )
    data.lead_id = lead.lead_id

    # A callback that fails once (500), then is delivered by its retry a minute later (virtual time).
    data.retried_uid = _link(shop, merchant.slug, "60.00", "order-5")
    receiver.respond_with([500])
    sandbox.sandbox.pay(data.retried_uid, APPROVE)
    wait_until(lambda: bool(_attempts(sandbox, data.retried_uid)), "the retried callback's first attempt")
    sandbox.sandbox.advance_clock(61)
    wait_until(
        lambda: any(a.status_code == 200 for a in _attempts(sandbox, data.retried_uid)),
        "the retried callback's delivery",
    )

    # An active fault (the last call here: nothing after it creates payment links): slow link creation.
    fault = sandbox.sandbox.add_fault("latency", route="POST /transactions", latency_ms=800, count=3)
    data.fault_id = str(fault.id)
    return data
