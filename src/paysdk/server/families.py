"""One registration per API family of the reference server: :data:`FAMILIES`, the only list to edit.

A :class:`Family` says everything the server-wide parts need to know about a family, and they read it
from here (nothing registers itself as a side effect of being imported):

* :func:`paysdk.server.app.create_app` mounts its ``routers``, serves its ``fast_lane`` endpoints as fast
  lanes, hands its ``cors_paths`` to the hook CORS layer, creates and resets its ``tables``
  (:class:`paysdk.server.db.Database`), gives its ``jobs`` to the
  :class:`paysdk.server.scheduler.Scheduler` and, before serving anything, refuses (``ValueError``,
  :func:`check_families`) a registration that does not hold together: a route outside the family's
  ``prefixes``, two families claiming one prefix or job kind, a table no family registers;
* :class:`paysdk.server.asgi.idempotency.Idempotency` makes a ``POST`` with ``Idempotency-Key``
  idempotent (D17) exactly under the prefixes of the families whose ``idempotent_posts`` is true
  (:func:`honours_idempotency_key`), which ``/openapi.json`` documents; a family with ``public`` false
  (the control plane) is never logged, faulted or idempotent;
* the coverage test (``tests/foundation/test_coverage.py``) and ``scripts/coverage_table.py``
  (``docs/coverage.md``) read ``operations``: for each public operation, the SDK method(s) (attribute
  paths from ``Client``/``AsyncClient``) and the CLI command(s) (``paysdk`` command paths, optionally
  ending with the option that selects the operation) that reach it, or why none does (:class:`Left`).

``docs/architecture.md`` ("Adding an API family") is the recipe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fastapi.routing
from fastapi import APIRouter
from fastapi.routing import APIRoute
from sqlalchemy.orm import DeclarativeBase

from paysdk._environment import CHECKOUT_PREFIX, CMS_PREFIX, WALLET_PREFIX
from paysdk.server import health
from paysdk.server.core_tables import CORE_TABLES, Base
from paysdk.server.refs import is_ref, resolve
from paysdk.server.scheduler import JobHandler

__all__ = [
    "FAMILIES",
    "HOOKS",
    "LANE_ATTRIBUTE",
    "Family",
    "JobHandler",
    "Left",
    "Reach",
    "check_families",
    "family_of",
    "fast_lane_of",
    "honours_idempotency_key",
    "hook",
    "idempotent_prefixes",
    "job_handlers",
    "kept_tables_of",
    "reset_order",
    "route_paths",
    "routers_of",
    "schema_tables",
    "tables_of",
    "under",
]


class Left:
    """Why an operation has no SDK method or no CLI command: the reasons the coverage table lists."""

    #: The hosted checkout's pages and their form posts.
    PAGE = "a hosted checkout page or its form post: the payer's browser uses it, not a merchant's program"
    #: Spec 2.5 and D44: the CVV is shown to the cardholder by an app, never read through a backend.
    CVV = "the CVV is never read from a backend (spec 2.5, D44): no CLI command fetches or prints it"
    #: Inbound webhooks the processors call (later families).
    PROCESSOR_WEBHOOK = "an inbound processor webhook: the processor calls it, merchants never do"
    #: Token refreshes the SDK's token manager runs itself.
    AUTOMATIC_REFRESH = (
        "the token manager refreshes the application token itself (single flight, stored before use); "
        "no method or command asks for it"
    )
    #: A user session's refresh: the CLI does it when a stored session needs it.
    SESSION_REFRESH = "the CLI refreshes a stored user session itself when a command run --as-user needs it"
    #: The hook: a web page's create with the public hook keys (D14).
    HOOK = "made for web pages with the hook keys (D14, CORS); a shell has the merchant token: links create"


@dataclass(frozen=True, slots=True)
class Reach:
    """How one public operation is reached: ``sdk`` attribute paths from the client (each must exist on
    ``Client`` and ``AsyncClient``), ``cli`` command paths (``"cards show"``, or ``"users otp --verify"``
    when an option selects the operation); or, instead of either, the reason there is none (:class:`Left`)."""

    sdk: tuple[str, ...] = ()
    cli: tuple[str, ...] = ()
    no_sdk: str | None = None
    no_cli: str | None = None


def _reach(sdk: str | None = None, cli: str | None = None, **left: str) -> Reach:
    return Reach(
        sdk=(sdk,) if sdk else (),
        cli=(cli,) if cli else (),
        no_sdk=left.get("no_sdk"),
        no_cli=left.get("no_cli"),
    )


@dataclass(frozen=True, slots=True)
class Family:
    """The registration of one API family (see the module docstring for who reads what).

    ``prefixes``: the paths its routes live under, as served (a route's path equals a prefix or continues
    it after a ``/``). ``routers``: ``(mount prefix, router)`` pairs. ``tables``: the tables
    ``/_sandbox/reset`` empties, children first (a family's tables are emptied before the core's and
    before those of the families registered earlier, which they may reference); ``kept_tables``: created,
    never emptied.
    ``jobs``: job kind (at most 16 characters) -> handler. ``idempotent_posts``: its ``POST`` routes honour
    ``Idempotency-Key`` (D17). ``public``: in ``/openapi.json``, logged and faulted (the control plane is
    not). ``fast_lane``: route handlers served as fast lanes, plain Starlette routes ahead of FastAPI's
    (:mod:`paysdk.server.hotpath.lanes`; hot creates without path parameters). ``cors_paths``: paths
    called from web pages (CORS for any origin, preflight answered:
    :class:`paysdk.server.asgi.hook_cors.HookCors`, D14). ``sdk_resources`` / ``cli_groups``: the client
    attributes and ``paysdk`` command groups that serve it. ``operations``: ``"METHOD /path"`` (as in
    ``/openapi.json``) -> :class:`Reach`.

    ``security_schemes``: the ``components.securitySchemes`` of ``/openapi.json`` its routes name beside
    the core's ``merchantToken`` (:mod:`paysdk.server.openapi`, D131). ``hooks``: hook name (one of
    :data:`HOOKS`) -> the functions called at that point, so the core (or another family) calls into a
    family without importing it (D551).

    A router, fast-lane handler, job handler, hook or table may be given as a ``"package.module:attribute"``
    reference (:mod:`paysdk.server.refs`), imported when first needed: the registrations stay cheap to
    import, and a server started by :func:`paysdk.server.boot.serve` imports a family's routers on the
    first request they may answer (D303). :func:`routers_of`, :func:`fast_lane_of`, :func:`tables_of`
    and :func:`hook` resolve them. A table reference names a table class or a tuple of them (a family's
    reset order). The registrations import no family module: they name them (D550).
    """

    name: str
    prefixes: tuple[str, ...]
    routers: tuple[tuple[str, APIRouter | str], ...]
    tables: tuple[type[DeclarativeBase] | str, ...] = ()
    kept_tables: tuple[type[DeclarativeBase] | str, ...] = ()
    jobs: Mapping[str, JobHandler | str] = field(default_factory=dict)
    idempotent_posts: bool = True
    public: bool = True
    fast_lane: tuple[Callable[..., Any] | str, ...] = ()
    cors_paths: tuple[str, ...] = ()
    sdk_resources: tuple[str, ...] = ()
    cli_groups: tuple[str, ...] = ()
    operations: Mapping[str, Reach] = field(default_factory=dict)
    hooks: Mapping[str, tuple[Callable[..., Any] | str, ...]] = field(default_factory=dict)
    security_schemes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


PAYMENT_LINKS = Family(
    name="payment links",
    prefixes=("/transactions", "/transactions-hook"),
    routers=(("", "paysdk.server.routers.payment_links:router"),),
    fast_lane=("paysdk.server.routers.payment_links:create_payment_link",),
    # The outbound events' deliveries (D16, any family queues them) and transaction expiries (the
    # scheduler runs ``expire`` at each pending transaction's ``expire_at``; job rows of older versions).
    jobs={
        "callback": "paysdk.server.services.callbacks:deliver_job",
        "expire": "paysdk.server.services.payments:expire_job",
    },
    cors_paths=("/transactions-hook",),
    sdk_resources=("payment_links",),
    cli_groups=("links",),
    operations={
        "POST /transactions": _reach("payment_links.create", "links create"),
        "POST /transactions-hook": _reach("payment_links.create_with_hook_keys", no_cli=Left.HOOK),
    },
)

ALTERNATIVE_PAYMENTS = Family(
    name="alternative payments",
    prefixes=("/api/v1/integrations",),
    routers=(("", "paysdk.server.routers.alternative_payments:router"),),
    fast_lane=("paysdk.server.routers.alternative_payments:create_alternative_payment",),
    sdk_resources=("alternative_payments",),
    cli_groups=("alt",),
    operations={
        "POST /api/v1/integrations/transactions": _reach("alternative_payments.create", "alt create"),
        "POST /api/v1/integrations/transactions/{uid}/payments": _reach(
            "alternative_payments.process", "alt process"
        ),
        "POST /api/v1/integrations/transactions/{uid}/payment-intents": _reach(
            "alternative_payments.create_payment_intent", "alt intent"
        ),
        "POST /api/v1/integrations/transactions/{uid}/dismiss": _reach(
            "alternative_payments.dismiss", "alt dismiss"
        ),
    },
)

CHECKOUT = Family(
    name="hosted checkout",
    prefixes=(CHECKOUT_PREFIX,),
    routers=(("", "paysdk.server.routers.checkout:router"),),
    idempotent_posts=False,  # form posts of a browser: a token per form (D94), never a key
    operations={
        f"{method} {CHECKOUT_PREFIX}{path}": _reach(no_sdk=Left.PAGE, no_cli=Left.PAGE)
        for method, path in (
            ("GET", ""),
            ("GET", "/"),
            ("POST", "/pay"),
            ("POST", "/3ds"),
            ("GET", "/rails/{processor}"),
            ("POST", "/rails/{processor}"),
        )
    },
)

#: The wallet's path prefix, as the operation keys below spell it.
_WALLET = WALLET_PREFIX
WALLET = Family(
    name="wallet",
    prefixes=(WALLET_PREFIX,),
    routers=(
        (WALLET_PREFIX, "paysdk.server.routers.wallet_auth:router"),
        (WALLET_PREFIX, "paysdk.server.routers.wallet_users:router"),
        (WALLET_PREFIX, "paysdk.server.routers.wallet_cards:router"),
    ),
    tables=("paysdk.server.wallet_tables:WALLET_RESET_ORDER",),
    kept_tables=("paysdk.server.wallet_tables:WalletServerKeyRow",),
    jobs={"wallet_auth_exp": "paysdk.server.services.wallet_sandbox:expire_authorization"},
    security_schemes={
        "walletApplication": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "The wallet application's access token (POST /rest/auth/login, D32, D33).",
        },
        "walletUser": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "A cardholder's user access token (POST /rest/users/login, D34).",
        },
    },
    sdk_resources=("wallet",),
    cli_groups=("wallet", "users", "cards", "funds", "transfers", "permissions"),
    operations={
        f"POST {_WALLET}/auth/login": _reach("wallet.login", "wallet login"),
        f"POST {_WALLET}/auth/refresh": _reach(no_sdk=Left.AUTOMATIC_REFRESH, no_cli=Left.AUTOMATIC_REFRESH),
        f"GET {_WALLET}/.well-known/jwks.json": _reach("wallet.jwks", "wallet jwks"),
        f"POST {_WALLET}/users/login": _reach("wallet.users.login", "users login"),
        f"POST {_WALLET}/users/refresh": Reach(
            sdk=("wallet.users.refresh",),
            no_cli=Left.SESSION_REFRESH,
        ),
        f"POST {_WALLET}/users/logout": _reach("wallet.users.logout", "users logout"),
        f"POST {_WALLET}/users/auth/otp": _reach("wallet.users.request_otp", "users otp"),
        f"PUT {_WALLET}/users/auth/otp": _reach("wallet.users.verify_otp", "users otp --verify"),
        f"POST {_WALLET}/users/auth/password/reset": _reach(
            "wallet.users.reset_password", "users reset-password"
        ),
        f"GET {_WALLET}/users/{{userId}}/cards": _reach("wallet.cards.list", "cards list"),
        f"POST {_WALLET}/users/{{userId}}/cards": _reach("wallet.cards.link", "cards link"),
        f"GET {_WALLET}/users/{{userId}}/cards/summary": _reach("wallet.cards.summary", "cards summary"),
        f"POST {_WALLET}/users/{{userId}}/cards/virtuals": _reach(
            "wallet.cards.issue_virtual", "cards issue"
        ),
        f"POST {_WALLET}/users/{{userId}}/linked-cards": _reach(
            "wallet.cards.link_external", "cards link-external"
        ),
        f"GET {_WALLET}/cards/{{cardId}}": _reach("wallet.cards.get", "cards show"),
        f"PATCH {_WALLET}/cards/{{cardId}}": _reach("wallet.cards.update_alias", "cards alias"),
        f"POST {_WALLET}/cards/{{cardId}}/block": _reach("wallet.cards.block", "cards block"),
        f"POST {_WALLET}/cards/{{cardId}}/unblock": _reach("wallet.cards.unblock", "cards unblock"),
        f"POST {_WALLET}/cards/{{cardId}}/activation": _reach("wallet.cards.activate", "cards activate"),
        f"PUT {_WALLET}/cards/{{cardId}}/pin": _reach("wallet.cards.set_pin", "cards set-pin"),
        f"GET {_WALLET}/cards/{{cardId}}/movements": _reach("wallet.cards.movements", "cards movements"),
        f"POST {_WALLET}/cards/{{cardId}}/cvv/view-token": _reach(
            "wallet.cards.cvv_view_token", no_cli=Left.CVV
        ),
        f"GET {_WALLET}/cards/{{cardId}}/cvv": _reach("wallet.cards.cvv", no_cli=Left.CVV),
        f"POST {_WALLET}/cards/{{cardId}}/funds": Reach(
            sdk=("wallet.funds.add", "wallet.funds.withdraw"), cli=("funds add", "funds withdraw")
        ),
        f"POST {_WALLET}/cards/{{cardId}}/transfers": _reach("wallet.transfers.create", "transfers create"),
        f"POST {_WALLET}/cards/{{cardId}}/users/{{authUserId}}/permissions": _reach(
            "wallet.permissions.grant", "permissions grant"
        ),
        f"PATCH {_WALLET}/cards/users/permissions/{{id}}": _reach(
            "wallet.permissions.update", "permissions update"
        ),
        f"GET {_WALLET}/cards/users/{{authUserId}}/permissions": _reach(
            "wallet.permissions.list_for_user", "permissions list --user-id"
        ),
        f"GET {_WALLET}/cards/{{cardId}}/users/permissions": _reach(
            "wallet.permissions.list_for_card", "permissions list --card-id"
        ),
        f"GET {_WALLET}/cards/{{cardId}}/users/{{authUserId}}/permissions": _reach(
            "wallet.permissions.list", "permissions list --card-id"
        ),
    },
)

SUBSCRIPTIONS = Family(
    name="subscriptions",
    prefixes=("/v1/subscriptions",),
    routers=(
        ("", "paysdk.server.routers.subscriptions:router"),
        ("", "paysdk.server.routers.batch_charges:router"),
    ),
    tables=("paysdk.server.subscription_tables:SUBSCRIPTION_RESET_ORDER",),
    # A card verification (D140) is paid like a link: its card kept, its subscription made on approval.
    hooks={
        "card_given": ("paysdk.server.services.subscription_api:remember_card",),
        "card_approved": ("paysdk.server.services.subscription_api:on_verified",),
    },
    sdk_resources=("subscriptions",),
    cli_groups=("subscriptions", "charges"),
    operations={
        "POST /v1/subscriptions/verify-card": _reach(
            "subscriptions.verify_card", "subscriptions verify-card"
        ),
        "DELETE /v1/subscriptions/{subUid}": _reach("subscriptions.cancel", "subscriptions cancel"),
        "PUT /v1/subscriptions": _reach("subscriptions.update_email", "subscriptions update-email"),
        "GET /v1/subscriptions/payment-history": _reach(
            "subscriptions.payment_history", "subscriptions history"
        ),
        "POST /v1/subscriptions/charges/upload-csv": Reach(
            sdk=("subscriptions.charges.upload_csv", "subscriptions.charges.upload_part"),
            cli=("charges upload",),
        ),
    },
    jobs={"renewals": "paysdk.server.services.renewals:run_renewals"},
)

#: The backoffice (CMS) path prefix, as the operation keys below spell it.
_CMS = CMS_PREFIX
BACKOFFICE = Family(
    name="backoffice",
    prefixes=(CMS_PREFIX,),
    routers=(
        (CMS_PREFIX, "paysdk.server.routers.backoffice:router"),
        (CMS_PREFIX, "paysdk.server.routers.cardholders:router"),
    ),
    # Children first: the cardholder batches reference partners (D184, D185).
    tables=(
        "paysdk.server.cardholder_tables:CARDHOLDER_RESET_ORDER",
        "paysdk.server.backoffice_tables:BACKOFFICE_RESET_ORDER",
    ),
    jobs={"cardholder_batch": "paysdk.server.services.cardholders:run_batch"},
    security_schemes={
        "backofficeApplication": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "The backoffice application's access token (POST /cms/rest/app/auth/login, D105).",
        },
        "backofficeUser": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "A backoffice operator's access token (POST /cms/rest/app/users/login, D105).",
        },
    },
    sdk_resources=("backoffice",),
    cli_groups=("backoffice", "cardholders"),
    operations={
        f"POST {_CMS}/app/auth/login": _reach("backoffice.login", "backoffice login"),
        f"POST {_CMS}/app/auth/refresh": _reach(no_sdk=Left.AUTOMATIC_REFRESH, no_cli=Left.AUTOMATIC_REFRESH),
        f"POST {_CMS}/app/users/login": _reach("backoffice.login_user", "backoffice login"),
        f"POST {_CMS}/app/users/refresh": _reach(
            no_sdk=Left.AUTOMATIC_REFRESH, no_cli=Left.AUTOMATIC_REFRESH
        ),
        f"POST {_CMS}/app/partners/{{partnerId}}/cardholders/{{cardholderId}}/cards/association": _reach(
            "backoffice.associate_card", "cardholders associate-card"
        ),
        f"POST {_CMS}/app/partners/{{partnerId}}/cardholders/upload": _reach(
            "backoffice.cardholders.upload", "cardholders upload"
        ),
        # The SDK's iterator, backoffice.cardholders.progress, is no coroutine (it opens the stream when
        # iterated): its waiting twin stands for the operation here (D122).
        f"GET {_CMS}/app/partners/{{partnerId}}/cardholders/batch/{{batchId}}/progress": Reach(
            sdk=("backoffice.cardholders.wait",), cli=("cardholders progress", "cardholders upload")
        ),
        # Our extensions (D450, D451): the created rows' ids, and a cardholder found by externalId/email.
        f"GET {_CMS}/app/partners/{{partnerId}}/cardholders/batch/{{batchId}}/results/pages/{{page}}": Reach(
            sdk=("backoffice.cardholders.results_page", "backoffice.cardholders.results"),
            cli=("cardholders upload", "cardholders progress"),
        ),
        f"GET {_CMS}/app/partners/{{partnerId}}/cardholders/lookup": _reach(
            "backoffice.cardholders.lookup", "cardholders lookup"
        ),
    },
)

TERMINAL = Family(
    name="terminal",
    prefixes=("/terminal-payment",),
    routers=(("", "paysdk.server.routers.terminal:router"),),
    tables=("paysdk.server.terminal_tables:TERMINAL_RESET_ORDER",),
    jobs={
        "settlement": "paysdk.server.services.terminal:run_settlement",
        "terminal_lapse": "paysdk.server.services.terminal:lapse_authorization",
    },
    sdk_resources=("terminal",),
    cli_groups=("terminal",),
    operations={
        "POST /terminal-payment": _reach("terminal.create", "terminal create"),
        "PATCH /terminal-payment/{id}": Reach(
            sdk=("terminal.capture", "terminal.void", "terminal.refund"),
            cli=("terminal capture", "terminal void", "terminal refund"),
        ),
    },
)

WEBHOOKS = Family(
    name="webhooks",
    prefixes=("/webhooks",),
    routers=(("", "paysdk.server.routers.webhooks:router"),),
    # The processor secret survives resets (D193).
    kept_tables=("paysdk.server.webhooks_tables:ProcessorSecretRow",),
    idempotent_posts=False,  # each notification and event carries its own id (D193, D240)
    cli_groups=("sandbox",),  # played by "paysdk sandbox processor" (D193)
    operations={
        "POST /webhooks/settlements": _reach(no_sdk=Left.PROCESSOR_WEBHOOK, cli="sandbox processor settle"),
        "POST /webhooks/processor-feed": _reach(no_sdk=Left.PROCESSOR_WEBHOOK, cli="sandbox processor feed"),
    },
)

RECONCILIATION = Family(
    name="reconciliation",
    prefixes=("/reports",),
    routers=(("", "paysdk.server.routers.reconciliation:router"),),
    tables=("paysdk.server.reconciliation_tables:RECONCILIATION_RESET_ORDER",),
    # A report is computed from the file; only the pages of a long one are kept for reading (D194,
    # D241, D331): the same file sent twice changes nothing else, so no key is needed.
    idempotent_posts=False,
    sdk_resources=("reconciliation",),
    cli_groups=("reconciliation",),
    operations={
        "POST /reports/payfac/conciliation/upload/{affiliation}": _reach(
            "reconciliation.upload", "reconciliation upload"
        ),
        "GET /reports/payfac/conciliation/reports/{reportId}/pages/{page}": _reach(
            "reconciliation.report_page", "reconciliation upload"
        ),
    },
)

ONBOARDING = Family(
    name="onboarding",
    prefixes=("/leads",),
    routers=(("", "paysdk.server.routers.onboarding:router"),),
    tables=("paysdk.server.onboarding_tables:ONBOARDING_RESET_ORDER",),
    sdk_resources=("onboarding",),
    cli_groups=("leads",),
    operations={
        "POST /leads": _reach("onboarding.create_lead", "leads create"),
        "POST /leads/files/upload/{fileName}": _reach("onboarding.upload_document", "leads upload"),
    },
)

CONTROL_PLANE = Family(
    name="control plane",
    prefixes=("/_sandbox",),
    routers=(
        ("", health.router),  # the core's, imported with the registrations: a lazy start serves it (D303)
        ("", "paysdk.server.routers.sandbox_first:router"),  # reset, client create: a suite's first (D621)
        ("", "paysdk.server.routers.sandbox:router"),
        ("", "paysdk.server.routers.sandbox_wallet:router"),
        ("", "paysdk.server.routers.sandbox_subscriptions:router"),
        ("", "paysdk.server.routers.sandbox_backoffice:router"),
        ("", "paysdk.server.routers.sandbox_terminal:router"),
        ("", "paysdk.server.routers.sandbox_processor:router"),
        ("", "paysdk.server.routers.sandbox_onboarding:router"),
        ("", "paysdk.server.routers.sandbox_deprecations:router"),
        ("", "paysdk.server.routers.sandbox_scenarios:router"),  # paysdk trigger (D700)
        ("", "paysdk.server.console.router:router"),  # the browser console (issue 23, D720)
    ),
    tables=("paysdk.server.deprecation_tables:DeprecationRow",),
    idempotent_posts=False,
    public=False,
    # A merchant's suite resets before every test (issue 12): no FastAPI routing over every route (D311).
    fast_lane=("paysdk.server.routers.sandbox_first:reset",),
    sdk_resources=("sandbox",),
    cli_groups=("sandbox",),
    hooks={"seed": ("paysdk.server.seed:install_seed",)},  # merchants, wallet users and cards (D552)
)

#: Every family the server serves, in registration order (see the module docstring).
FAMILIES: tuple[Family, ...] = (
    PAYMENT_LINKS,
    ALTERNATIVE_PAYMENTS,
    CHECKOUT,
    WALLET,
    SUBSCRIPTIONS,
    BACKOFFICE,
    TERMINAL,
    WEBHOOKS,
    RECONCILIATION,
    ONBOARDING,
    CONTROL_PLANE,
)


# --------------------------------------------------------------------------- what the server reads


def under(path: str, prefix: str) -> bool:
    """Whether ``path`` is ``prefix`` or continues it after a ``/`` (``/transactions-hook`` is not under
    ``/transactions``)."""
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


def family_of(path: str, families: Iterable[Family] = FAMILIES) -> Family | None:
    """The family whose prefixes hold ``path`` (the longest prefix wins), ``None`` when no family's do."""
    best: tuple[int, Family] | None = None
    for family in families:
        for prefix in family.prefixes:
            if under(path, prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), family)
    return None if best is None else best[1]


def idempotent_prefixes(families: Iterable[Family] = FAMILIES) -> tuple[frozenset[str], tuple[str, ...]]:
    """The exact paths and the path starts (``prefix/``) under which a ``POST`` honours
    ``Idempotency-Key``."""
    chosen = [p for f in families if f.public and f.idempotent_posts for p in f.prefixes]
    return frozenset(chosen), tuple(p.rstrip("/") + "/" for p in chosen)


_EXACT, _STARTS = idempotent_prefixes()


def honours_idempotency_key(
    method: str, path: str, prefixes: tuple[frozenset[str], tuple[str, ...]] | None = None
) -> bool:
    """Whether a request to ``path`` (a concrete path or a route template) with ``Idempotency-Key`` is made
    idempotent (D17): a ``POST`` under a prefix of a family whose ``idempotent_posts`` is true
    (``prefixes``: :func:`idempotent_prefixes` of the served families; default :data:`FAMILIES`)."""
    if method != "POST":
        return False
    exact, starts = prefixes if prefixes is not None else (_EXACT, _STARTS)
    return path in exact or path.startswith(starts)


def job_handlers(families: Iterable[Family] = FAMILIES) -> dict[str, JobHandler | str]:
    """Job kind -> handler of every family (:func:`check_families` refused duplicates); a handler given
    as a reference stays one (the scheduler imports it when a job of its kind first runs)."""
    return {kind: handler for family in families for kind, handler in family.jobs.items()}


def _tables(entries: Iterable[type[DeclarativeBase] | str]) -> tuple[type[DeclarativeBase], ...]:
    """``entries`` with each reference imported: a table class, or a tuple of them, in order."""
    found: list[type[DeclarativeBase]] = []
    for entry in entries:
        value = resolve(entry)
        found.extend(value if isinstance(value, tuple) else (value,))
    return tuple(found)


def tables_of(family: Family) -> tuple[type[DeclarativeBase], ...]:
    """The tables ``/_sandbox/reset`` empties of ``family``, children first, references imported."""
    return _tables(family.tables)


def kept_tables_of(family: Family) -> tuple[type[DeclarativeBase], ...]:
    """The tables of ``family`` that are created and never emptied, references imported."""
    return _tables(family.kept_tables)


def reset_order(families: Sequence[Family] = FAMILIES) -> tuple[type[DeclarativeBase], ...]:
    """The tables ``/_sandbox/reset`` empties, in order: the latest family's first, the core's last."""
    return (*(table for family in reversed(families) for table in tables_of(family)), *CORE_TABLES)


def schema_tables(families: Sequence[Family] = FAMILIES) -> tuple[type[DeclarativeBase], ...]:
    """Every table the server creates: the core's and each family's (emptied or kept)."""
    return (*CORE_TABLES, *(t for f in families for t in (*tables_of(f), *kept_tables_of(f))))


#: The attribute of a route handler served by the server's parametrized fast lane (D261): set by
#: ``paysdk.server.routers._common.lane``, read by ``create_app``.
LANE_ATTRIBUTE = "__paysdk_lane__"


#: The points where a hook registered in :attr:`Family.hooks` is called, and what it is given:
#:
#: * ``"seed"``: ``(app, seed)``, once at start, by :func:`paysdk.server.boot.serve` given a seed file;
#: * ``"card_given"``: ``(session, tx, card_number)``, when a valid card is given for a pending card
#:   transaction of any kind (a hook acts on its own kinds only), before its outcome;
#: * ``"card_approved"``: ``(session, tx, client, now)``, in the transaction that finished a card
#:   transaction ``approved``.
#:
#: The last two are called by the payments (:mod:`paysdk.server.services.payments`): the subscriptions'
#: card verifications keep their card and create their subscription through them (D551).
HOOKS = frozenset({"seed", "card_given", "card_approved"})

_hooks: dict[str, tuple[Callable[..., Any], ...]] = {}


def hook(name: str, families: Iterable[Family] = FAMILIES) -> tuple[Callable[..., Any], ...]:
    """The functions the families register for the hook ``name`` (one of :data:`HOOKS`), in registration
    order, references imported (a family's module is imported when its hook is first needed; those of
    :data:`FAMILIES` are kept)."""
    if name not in HOOKS:
        raise ValueError(f"no hook is named {name!r}; hooks are {sorted(HOOKS)}")
    if families is FAMILIES and name in _hooks:
        return _hooks[name]
    found = tuple(resolve(f) for family in families for f in family.hooks.get(name, ()))
    if families is FAMILIES:
        _hooks[name] = found
    return found


def routers_of(family: Family) -> tuple[tuple[str, APIRouter], ...]:
    """The family's ``(mount prefix, router)`` pairs, references imported."""
    return tuple((mount, resolve(router)) for mount, router in family.routers)


def fast_lane_of(family: Family) -> tuple[Callable[..., Any], ...]:
    """The family's fast-lane handlers, references imported."""
    return tuple(resolve(handler) for handler in family.fast_lane)


def route_paths(family: Family) -> list[tuple[str, str, APIRoute]]:
    """``(method, path as served, route)`` of every route the family's routers declare, those of routers
    they include too (FastAPI 0.16x keeps included routers lazy: ``iter_route_contexts`` resolves them)."""
    contexts = getattr(fastapi.routing, "iter_route_contexts", None)
    found: list[tuple[str, str, APIRoute]] = []
    for mount, router in routers_of(family):
        routes: list[Any] = list(contexts(router.routes)) if contexts is not None else list(router.routes)
        for route in routes:
            original = getattr(route, "original_route", route)
            if isinstance(original, APIRoute):
                for method in sorted(route.methods or ()):
                    found.append((method, mount + str(route.path), original))
    return found


def check_families(families: Sequence[Family] = FAMILIES, *, routes: bool = True) -> None:
    """Refuse registrations that do not hold together (``ValueError`` naming each problem): called by
    :func:`paysdk.server.app.create_app` before anything is served. ``routes`` false: leave out the
    checks of each route and of each table (they import every router and every table module); a lazily
    loading server runs them when it loads the routers (D303, D613)."""
    problems: list[str] = []
    names: set[str] = set()
    prefixes: dict[str, str] = {}
    kinds: dict[str, str] = {}
    tables: dict[str, str] = {}
    for family in families:
        if family.name in names:
            problems.append(f"two families are named {family.name!r}")
        names.add(family.name)
        if not family.prefixes or not family.routers:
            problems.append(f"{family.name}: a family needs at least one prefix and one router")
        for prefix in family.prefixes:
            if not prefix.startswith("/") or (prefix != "/" and prefix.endswith("/")):
                problems.append(f"{family.name}: prefix {prefix!r} must start with '/' and not end with it")
            if prefix in prefixes:
                problems.append(f"{family.name}: prefix {prefix!r} is registered by {prefixes[prefix]} too")
            prefixes.setdefault(prefix, family.name)
        for method, path, route in route_paths(family) if routes else ():
            if not any(under(path, prefix) for prefix in family.prefixes):
                problems.append(
                    f"{family.name}: route {method} {path} is outside its prefixes {list(family.prefixes)}"
                )
            if route.include_in_schema and not family.public:
                problems.append(f"{family.name}: {method} {path} is documented but the family is not public")
        for kind, handler in family.jobs.items():
            if not (callable(handler) or is_ref(handler)):
                problems.append(f"{family.name}: the handler of job kind {kind!r} is not callable")
            if not kind or len(kind) > 16:
                problems.append(f"{family.name}: job kind {kind!r} must have 1 to 16 characters")
            if kind in kinds:
                problems.append(f"{family.name}: job kind {kind!r} is registered by {kinds[kind]} too")
            kinds.setdefault(kind, family.name)
        for name in family.hooks:
            if name not in HOOKS:
                problems.append(f"{family.name}: no hook is named {name!r} (hooks are {sorted(HOOKS)})")
        for table in (*tables_of(family), *kept_tables_of(family)) if routes else ():
            name = table.__tablename__
            if name in tables or table in CORE_TABLES:
                owner = tables.get(name, "the core")
                problems.append(f"{family.name}: table {name} is registered by {owner} too")
            tables.setdefault(name, family.name)
    registered = {t.__tablename__ for t in schema_tables(families)} if routes else set(Base.metadata.tables)
    for name in sorted(set(Base.metadata.tables) - registered):
        problems.append(
            f"table {name} is declared on Base but no family registers it (never created or reset)"
        )
    if problems:
        raise ValueError("inconsistent API family registrations: " + "; ".join(problems))
