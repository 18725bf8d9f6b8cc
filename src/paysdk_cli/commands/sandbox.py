"""``paysdk sandbox``: the reference server's control plane (``/_sandbox/``), for tests and demos."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from paysdk_cli import _config
from paysdk_cli._app import new_app
from paysdk_cli._context import State, open_client, state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import OutputFormat, emit, emit_event, info, mask, warn
from paysdk_cli._params import parse_amount
from paysdk_cli.commands import sandbox_backoffice, sandbox_processor, sandbox_terminal
from paysdk_cli.commands import sandbox_deprecations as _sandbox_deprecations
from paysdk_cli.commands import sandbox_onboarding as _sandbox_onboarding

if TYPE_CHECKING:
    from paysdk.contracts.common import CurrencyCode

__all__ = ["CALLBACK_COLUMNS", "CALLBACK_KEEP", "CLIENT_SECRETS", "JOB_COLUMNS", "REQUEST_COLUMNS", "app"]

app = new_app(
    "Control plane of the local reference server.\n\n"
    "Clients, clock, test payments, callbacks, requests and faults (under /_sandbox/)."
)
clients_app = new_app("Merchant clients (slug, range, rails, callback, tokens).")
clock_app = new_app("The virtual clock that drives expiry and callback retries.")
transactions_app = new_app("Transactions as the server holds them.")
faults_app = new_app("Fault injection: latency, errors, rate limits, drops, duplicates.")
app.add_typer(clients_app, name="clients")
app.add_typer(clock_app, name="clock")
app.add_typer(transactions_app, name="transactions")
app.add_typer(faults_app, name="faults")
users_app = new_app("Wallet users (cardholders) of a merchant.")
cards_app = new_app("Wallet stock cards: issued physical cards no one holds yet.")
linking_tokens_app = new_app("Linking tokens for external cards, as a third party's tokenization hands out.")
charges_app = new_app("Card payments on wallet cards: authorize, capture, refund, clear a refund.")
app.add_typer(users_app, name="users")
app.add_typer(cards_app, name="cards")
app.add_typer(linking_tokens_app, name="linking-tokens")
app.add_typer(charges_app, name="charges")
app.add_typer(sandbox_backoffice.app, name="backoffice")
plan_app = new_app("Subscription plans: amount, interval, term and retry settings.")  # D141
subscriptions_app = new_app("Subscriptions in bulk, for tests and benchmarks.")  # D142
app.add_typer(plan_app, name="plan")
app.add_typer(subscriptions_app, name="subscriptions")
app.add_typer(sandbox_terminal.app, name="terminal")
app.add_typer(sandbox_processor.app, name="processor")
app.add_typer(_sandbox_onboarding.app, name="lead")
app.add_typer(_sandbox_deprecations.app, name="deprecations")

#: Wire names of a sandbox client's secrets: never in a table, masked in JSON unless --show-secrets.
CLIENT_SECRETS = (
    "sandboxToken",
    "productionToken",
    "hookPrivateKey",
    "callbackHeaderValue",
    "signingPrivateKey",
)
#: The table columns of `sandbox callbacks` and `sandbox requests`, the most useful first.
#: ``sandbox callbacks`` is one line per delivery at 80 columns (D435): the transaction, the attempt and
#: its result (the HTTP status, or the error's class: the whole error and the eventId are in -o json).
CALLBACK_COLUMNS = ["uid", "try", "result", "at", "final", "nextAttemptAt"]
CALLBACK_KEEP = ["uid", "try", "result"]
REQUEST_COLUMNS = ["method", "path", "statusCode", "at"]
#: The table columns of `sandbox jobs`.
JOB_COLUMNS = ["id", "kind", "ref", "status", "attempts", "dueAt", "lastError", "leaseOwner"]
_CLIENT_COLUMNS = [
    "slug",
    "displayName",
    "amountMin",
    "amountMax",
    "channels",
    "currencies",
    "paymentMethods",
    "country",
    "timezone",
    "callbackUrl",
    "callbackHeaderName",
    "callbackHeaderValue",
    "threeDS",
    "sandboxToken",
    "productionToken",
    "hookPublicKey",
    "hookPrivateKey",
    "signingPublicKey",
    "signingPrivateKey",
    "keysExpireAt",
]


class ThreeDS(StrEnum):
    """How the 3-D Secure challenge of a 3DS test card is answered."""

    approve = "approve"
    fail = "fail"


class Outcome(StrEnum):
    """Outcome of a rail payment simulated by the server."""

    paid = "paid"
    expired = "expired"


class FaultKind(StrEnum):
    """Kinds of fault the reference server can inject."""

    latency = "latency"
    error = "error"
    rate_limit = "rate_limit"
    drop = "drop"
    duplicate_callback = "duplicate_callback"
    stream_cut = "stream_cut"


def _wire(model: Any) -> dict[str, Any]:
    data: dict[str, Any] = model.to_wire()
    return data


def _wire_list(models: Any) -> list[dict[str, Any]]:
    return [_wire(model) for model in models]


def _show_client(st: State, client: Any, show_secrets: bool) -> None:
    if show_secrets and st.output is OutputFormat.table:
        warn("--show-secrets only applies to -o json; tables never show secrets")
    data = mask(_wire(client), CLIENT_SECRETS, show=show_secrets and st.output is OutputFormat.json)
    emit(st.output, data, columns=_CLIENT_COLUMNS, title=f"Client {client.slug}")


_SHOW_SECRETS = typer.Option(
    "--show-secrets",
    help="With -o json, print the tokens, hook private key, callback header value and signing key.",
)
#: ``clients show``: the server keeps no hook private key nor signing key (answered once, at creation).
_SHOW_STORED_SECRETS = typer.Option(
    "--show-secrets",
    help="With -o json, print the tokens and the callback header value (the hook private key and the "
    "signing key are answered only by `clients create`).",
)


@app.command("health")
def health(ctx: typer.Context) -> None:
    """Check that the reference server is up (status, environment, database, virtual now)."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.health()
    emit(st.output, _wire(result), title="Health")


@app.command("reset")
def reset(
    ctx: typer.Context,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (needed without a terminal).")
    ] = False,
) -> None:
    """Delete every client, transaction, callback, fault and the clock offset.

    On a terminal it asks first; without one (a script, CI) it refuses unless --yes is given.
    """
    from paysdk_cli._params import stdin_is_terminal

    st = state(ctx)
    if not yes:
        if not stdin_is_terminal():
            raise CLIError(
                f"sandbox reset erases every client and transaction at {st.base_url}: "
                "pass --yes to confirm without a terminal",
                ExitCode.USAGE,
            )
        if not typer.confirm(f"Erase every client, transaction and callback at {st.base_url}?", err=True):
            raise CLIError("reset cancelled: nothing was erased", ExitCode.ERROR)
    with open_client(st, token_required=False) as sdk:
        sdk.sandbox.reset()
    info(f"Reset the reference server at {st.base_url}.")


@clients_app.command("create")
def clients_create(
    ctx: typer.Context,
    slug: Annotated[str | None, typer.Option("--slug", help="Client slug (default: generated).")] = None,
    display_name: Annotated[
        str | None,
        typer.Option(
            "--display-name", help="What the hosted checkout calls the merchant (default: the slug)."
        ),
    ] = None,
    amount_min: Annotated[
        str | None, typer.Option("--amount-min", help="Smallest amount, e.g. 1.00.")
    ] = None,
    amount_max: Annotated[str | None, typer.Option("--amount-max", help="Largest amount.")] = None,
    channel: Annotated[
        list[str] | None, typer.Option("--channel", help="Enabled channel, repeatable.")
    ] = None,
    currency: Annotated[
        list[str] | None, typer.Option("--currency", help="Currency, repeatable; the first is the default.")
    ] = None,
    payment_method: Annotated[
        list[str] | None, typer.Option("--payment-method", help="Enabled rail, repeatable (e.g. akisiQR).")
    ] = None,
    country: Annotated[str | None, typer.Option("--country", help="Two-letter country code.")] = None,
    timezone: Annotated[str | None, typer.Option("--timezone", help="e.g. America/Guatemala.")] = None,
    callback_url: Annotated[
        str | None, typer.Option("--callback-url", help="Where the server POSTs callbacks.")
    ] = None,
    callback_header_name: Annotated[
        str | None, typer.Option("--callback-header-name", help="Callback header name (X-Callback-Token).")
    ] = None,
    three_ds: Annotated[
        bool | None,
        typer.Option(
            "--three-ds/--no-three-ds", help="Enable 3-D Secure for card payments.", show_default=False
        ),
    ] = None,
    save_profile: Annotated[
        bool,
        typer.Option(
            "--save-profile",
            help="Store the sandbox token (as `paysdk login` does), the wallet signing key "
            "(as `paysdk wallet login` does), the slug and the base URL in the current profile.",
        ),
    ] = False,
    show_secrets: Annotated[bool, _SHOW_SECRETS] = False,
) -> None:
    """Create a merchant client. The callback header value is generated by the server.

    Secrets (tokens, hook private key, callback header value, wallet signing key) are never shown in
    a table and are masked in JSON unless --show-secrets; --save-profile keeps the token and the
    signing key without printing them.
    """
    st = state(ctx)
    fields: dict[str, Any] = {
        "slug": slug,
        "display_name": display_name,
        "amount_min": parse_amount(amount_min, "--amount-min") if amount_min is not None else None,
        "amount_max": parse_amount(amount_max, "--amount-max") if amount_max is not None else None,
        "channels": channel or None,
        "currencies": currency or None,
        "payment_methods": payment_method or None,
        "country": country,
        "timezone": timezone,
        "callback_url": callback_url,
        "callback_header_name": callback_header_name,
        "three_ds": three_ds,
    }
    with open_client(st, token_required=False) as sdk:
        client = sdk.sandbox.create_client(**{k: v for k, v in fields.items() if v is not None})
    if save_profile:
        from paysdk_cli.commands.auth import save_token

        where = save_token(st.profile, client.sandbox_token)
        _config.update_profile(st.profile, base_url=st.base_url, client=client.slug, merchant=client.slug)
        info(f"Saved client {client.slug!r} and its sandbox token ({where}) in profile {st.profile!r}.")
        signing_key = getattr(client, "signing_private_key", None)
        if signing_key:
            _save_signing_key(st, signing_key)
    _show_client(st, client, show_secrets)


def _save_signing_key(st: State, signing_key: str) -> None:
    """Keep a generated wallet signing key in the profile's secret store (never printed)."""
    from paysdk_cli._secrets import WALLET_KEY, store_secret

    key_where = store_secret(WALLET_KEY, st.profile, signing_key)
    info(f"Saved its wallet signing key ({key_where}); next: paysdk wallet login.")


@clients_app.command("show")
def clients_show(
    ctx: typer.Context,
    slug: Annotated[str, typer.Argument(help="Client slug.")],
    show_secrets: Annotated[bool, _SHOW_STORED_SECRETS] = False,
) -> None:
    """Show a client's configuration.

    A server on a non-loopback address masks the tokens it answered at creation; --show-secrets (with
    -o json) asks for them in full through the reveal call. The hook private key and the wallet
    signing key are answered only at creation (`paysdk wallet export-key` prints a saved signing key).
    """
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        reveal = show_secrets and st.output is OutputFormat.json
        client = sdk.sandbox.reveal_client(slug) if reveal else sdk.sandbox.get_client(slug)
    _show_client(st, client, show_secrets)


@clients_app.command("update")
def clients_update(
    ctx: typer.Context,
    slug: Annotated[str, typer.Argument(help="Client slug.")],
    display_name: Annotated[
        str | None,
        typer.Option(
            "--display-name", help="What the hosted checkout calls the merchant (default: the slug)."
        ),
    ] = None,
    clear_display_name: Annotated[
        bool,
        typer.Option("--clear-display-name", help="Remove the display name (the checkout shows the slug)."),
    ] = False,
) -> None:
    """Change a client's display name, what its hosted checkout shows the customer."""
    st = state(ctx)
    if (display_name is None) == (not clear_display_name):
        raise CLIError("give --display-name NAME or --clear-display-name (one of them)", ExitCode.USAGE)
    with open_client(st, token_required=False) as sdk:
        client = sdk.sandbox.update_client(slug, display_name=None if clear_display_name else display_name)
    _show_client(st, client, False)


@app.command("control-token")
def control_token(
    ctx: typer.Context,
    token_stdin: Annotated[
        bool, typer.Option("--token-stdin", help="Read the token from standard input instead of a prompt.")
    ] = False,
    clear: Annotated[
        bool, typer.Option("--clear", help="Remove the profile's stored control token.")
    ] = False,
) -> None:
    """Store the reference server's control token in the profile (OS keyring).

    A server started on a non-loopback address (paysdk serve --host 0.0.0.0 --control-token ...) needs
    it on every sandbox call; the CLI sends it in Paysdk-Control-Token. It is read from a hidden prompt,
    or from standard input with --token-stdin; never a command-line argument, never echoed.
    PAYSDK_CONTROL_TOKEN, when set, overrides it.
    """
    import os

    from paysdk_cli._params import read_secret
    from paysdk_cli._secrets import CONTROL_TOKEN, CONTROL_TOKEN_ENV, delete_secret, store_secret

    st = state(ctx)
    if clear:
        removed = delete_secret(CONTROL_TOKEN, st.profile)
        where = ", ".join(removed) if removed else "nowhere (none was stored)"
        info(f"Control token of profile {st.profile!r} removed from {where}.")
        return
    token = read_secret(
        "Control token",
        from_stdin=token_stdin,
        instead=f"--token-stdin (paysdk sandbox control-token --token-stdin < token.txt), or set "
        f"{CONTROL_TOKEN_ENV}",
    ).strip()
    if not token:
        raise CLIError("no control token given", ExitCode.USAGE)
    if any(ord(ch) < 0x21 or ord(ch) > 0x7E for ch in token):
        raise CLIError("the control token must be printable ASCII without spaces", ExitCode.USAGE)
    where = store_secret(CONTROL_TOKEN, st.profile, token)
    info(f"Control token of profile {st.profile!r} stored in {where}.")
    if os.environ.get(CONTROL_TOKEN_ENV):
        warn(f"{CONTROL_TOKEN_ENV} is set and overrides the stored control token while it stays set")


#: Wire names of the answer of ``clients rotate-keys``: the generated private key is a secret.
KEY_SECRETS = ("privateKey",)


def _parse_datetime(text: str, option: str) -> datetime:
    """An ISO 8601 date-time; one without an offset is UTC."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not an ISO 8601 date-time (e.g. 2030-01-31T12:00:00Z)", param_hint=option
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


@clients_app.command("rotate-keys")
def clients_rotate_keys(
    ctx: typer.Context,
    slug: Annotated[str, typer.Argument(help="Client slug.")],
    public_key: Annotated[
        str | None,
        typer.Option(
            "--public-key",
            help="Register this Ed25519 public key (base64, 32 bytes) instead of having one generated.",
        ),
    ] = None,
    expires_at: Annotated[
        str | None,
        typer.Option(
            "--expires-at",
            metavar="DATETIME",
            help="When the new key expires on the virtual clock (ISO 8601; UTC without an offset).",
        ),
    ] = None,
    save_profile: Annotated[
        bool,
        typer.Option(
            "--save-profile",
            help="Store the generated private key in the current profile (as `paysdk wallet login` does).",
        ),
    ] = False,
    show_secrets: Annotated[
        bool, typer.Option("--show-secrets", help="With -o json, print the generated private key.")
    ] = False,
) -> None:
    """Rotate a client's wallet signing key: the old key stops signing logins at once.

    The server generates a new Ed25519 pair (its private key is answered once: never shown in a
    table, masked in JSON unless --show-secrets; --save-profile keeps it without printing it), or
    registers --public-key. Token pairs already issued stay valid until they expire.
    """
    st = state(ctx)
    expiry = _parse_datetime(expires_at, "--expires-at") if expires_at is not None else None
    if save_profile and public_key is not None:
        raise typer.BadParameter(
            "there is no private key to save when you register --public-key", param_hint="--save-profile"
        )
    with open_client(st, token_required=False) as sdk:
        keys = sdk.sandbox.rotate_wallet_keys(slug, public_key, expiry)
    if save_profile and keys.private_key:
        _save_signing_key(st, keys.private_key)
    if show_secrets and st.output is OutputFormat.table:
        warn("--show-secrets only applies to -o json; tables never show secrets")
    data = mask(_wire(keys), KEY_SECRETS, show=show_secrets and st.output is OutputFormat.json)
    emit(
        st.output,
        data,
        columns=["merchant", "keyId", "publicKey", "privateKey", "expiresAt"],
        title=f"Wallet signing key of {keys.merchant}",
    )


@clock_app.command("show")
def clock_show(ctx: typer.Context) -> None:
    """Show the virtual time and its offset from the wall clock."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.clock()
    emit(st.output, _wire(result), title="Clock")


@clock_app.command("advance")
def clock_advance(
    ctx: typer.Context,
    seconds: Annotated[str, typer.Argument(help="Seconds to move the clock forward (e.g. 86400).")],
) -> None:
    """Move the virtual clock forward and run every job that falls due (expiry, callback retries)."""
    st = state(ctx)
    value: Decimal = parse_amount(seconds, "SECONDS")
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.advance_clock(value)
    emit(st.output, _wire(result), title="Clock")


@app.command("pay")
def pay(
    ctx: typer.Context,
    uid: Annotated[str, typer.Argument(help="Payment-link transaction uid.")],
    card: Annotated[
        str,
        typer.Option("--card-number", "--card", help="Test card number (see `paysdk sandbox test-cards`)."),
    ],
    three_ds: Annotated[
        ThreeDS | None, typer.Option("--3ds", help="Answer to a 3-D Secure challenge: approve or fail.")
    ] = None,
) -> None:
    """Pay a payment link with a test card, as the hosted checkout would."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.pay(uid, card.replace(" ", ""), three_ds.value if three_ds else None)
    emit(st.output, _wire(result), title="Payment")


@app.command("simulate")
def simulate(
    ctx: typer.Context,
    uid: Annotated[str, typer.Argument(help="Alternative-payment transaction uid.")],
    outcome: Annotated[Outcome, typer.Option("--outcome", help="paid or expired.")],
) -> None:
    """Simulate the rail's outcome for an alternative payment."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.simulate(uid, outcome.value)
    emit(st.output, _wire(result), title="Simulated")


@transactions_app.command("show")
def transactions_show(
    ctx: typer.Context,
    uid: Annotated[str, typer.Argument(help="Transaction uid.")],
) -> None:
    """Show a transaction: status, amount, client, timestamps."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.transaction(uid)
    emit(st.output, _wire(result), title=f"Transaction {uid}")


@app.command("callbacks")
def callbacks(
    ctx: typer.Context,
    uid: Annotated[str | None, typer.Option("--uid", help="Only this transaction's deliveries.")] = None,
) -> None:
    """List callback delivery attempts, one line each: the transaction, the attempt, its result (the
    HTTP status or the error's class), when, whether it was the last one. -o json has every field
    (eventId, the whole error, the next retry)."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.callbacks(uid)
    records = _wire_list(result)
    if st.output is OutputFormat.json:
        emit(st.output, records)
        return
    rows = [
        {
            **record,
            "try": record.get("attempt"),
            "result": str(record["statusCode"])
            if record.get("statusCode") is not None
            else str(record.get("error") or "-").partition(":")[0],
        }
        for record in records
    ]
    emit(st.output, rows, columns=CALLBACK_COLUMNS, keep=CALLBACK_KEEP, title="Callback attempts")


class JobStatusChoice(StrEnum):
    """The statuses of a job (D126)."""

    pending = "pending"
    running = "running"
    done = "done"
    failed = "failed"


@app.command("jobs")
def jobs(
    ctx: typer.Context,
    status: Annotated[
        JobStatusChoice | None, typer.Option("--status", help="Only jobs in this status.")
    ] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="Only jobs of this kind (callback...).")] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, max=1000, help="At most this many (200).")
    ] = None,
) -> None:
    """List the server's timed jobs (callback rounds, expiries, recurring runs): status, attempts, last
    error, due time and lease owner, newest first."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.jobs(status=None if status is None else status.value, kind=kind, limit=limit)
    emit(st.output, _wire_list(result), columns=JOB_COLUMNS, title="Jobs")


@app.command("requests")
def requests(ctx: typer.Context) -> None:
    """List the public API requests the server received (credentials masked)."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.requests()
    emit(st.output, _wire_list(result), columns=REQUEST_COLUMNS, title="Requests")


def _clock(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if isinstance(value, datetime) else "-" * 19


def _tail_line(event: Any) -> str:
    """One readable line per feed event (``sandbox tail``)."""
    data = event.data
    name = event.event
    if name == "request":
        duration = "-" if data.duration_ms is None else f"{data.duration_ms}ms"
        return f"{_clock(data.at)}  {data.method:<6} {data.path}  {data.status_code}  {duration}"
    if name == "callback":
        outcome = str(data.status_code) if data.status_code is not None else (data.error or "failed")
        after = f"next {_clock(data.next_attempt_at)}" if data.next_attempt_at else ""
        if data.final:
            after = "final"
        head = f"{_clock(data.at)}  callback {data.event_id} uid={data.uid} attempt {data.attempt}"
        return f"{head} -> {outcome}  {after}".rstrip()
    if name == "job":
        duration = "" if data.duration_ms is None else f"  {data.duration_ms}ms"
        return f"{_clock(data.due_at)}  job {data.kind} {data.ref} {data.outcome}{duration}"
    if name == "gap":
        return f"{_clock(None)}  gap: {data.message}"
    return f"{_clock(None)}  {name}: {data}"


def _tail_json(event: Any) -> dict[str, Any]:
    data = event.data
    wire = data.to_wire() if hasattr(data, "to_wire") else data
    return {"id": event.id, "event": event.event, "data": wire}


@app.command("tail")
def tail(
    ctx: typer.Context,
    path: Annotated[
        str | None, typer.Option("--path", help="Only requests to this path prefix, or glob (with *).")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="Only these statuses: 500, 4xx, or a comma list.")
    ] = None,
    uid: Annotated[
        str | None, typer.Option("--uid", help="Only events that mention this transaction, card or event id.")
    ] = None,
) -> None:
    """Follow what the server does, live: requests, callback attempts, job runs (Ctrl-C to stop).

    One line per event (NDJSON with -o json). A dropped connection is reopened where it stopped.
    """
    import logging
    import signal

    st = state(ctx)

    class _Note(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            info(f"note: {record.getMessage()}")

    notes = logging.getLogger("paysdk.stream")
    handler = _Note(logging.INFO)
    notes.addHandler(handler)
    previous_level = notes.level
    notes.setLevel(logging.INFO)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        with open_client(st, token_required=False) as sdk:
            stream = sdk.sandbox.events(path=path, status=status, uid=uid)
            info(f"Tailing {st.base_url}/_sandbox/events. Ctrl-C to stop.")
            with stream:
                for event in stream:
                    emit_event(st.output, _tail_json(event), _tail_line(event))
    except KeyboardInterrupt:
        return
    finally:
        signal.signal(signal.SIGTERM, previous)
        notes.removeHandler(handler)
        notes.setLevel(previous_level)


@faults_app.command("add")
def faults_add(
    ctx: typer.Context,
    kind: Annotated[FaultKind, typer.Option("--kind", help="What to inject.")],
    route: Annotated[
        str, typer.Option("--route", help='"METHOD /path", "/path" or a prefix ending in *.')
    ] = "*",
    count: Annotated[int, typer.Option("--count", min=1, help="How many matching requests or events.")] = 1,
    status: Annotated[int | None, typer.Option("--status", help="HTTP status for kind error (5xx).")] = None,
    latency_ms: Annotated[int | None, typer.Option("--latency-ms", help="Delay for kind latency.")] = None,
    retry_after: Annotated[
        int | None, typer.Option("--retry-after", help="Retry-After seconds for kind rate_limit.")
    ] = None,
    after_events: Annotated[
        int | None,
        typer.Option("--after-events", min=0, help="Events sent before kind stream_cut drops a stream."),
    ] = None,
) -> None:
    """Inject a fault on matching requests (duplicate_callback applies to callback deliveries,
    stream_cut to event streams such as /_sandbox/events)."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        fault = sdk.sandbox.add_fault(
            kind.value,
            route=route,
            count=count,
            status=status,
            latency_ms=latency_ms,
            retry_after=retry_after,
            after_events=after_events,
        )
    emit(st.output, _wire(fault), title="Fault")


@faults_app.command("list")
def faults_list(ctx: typer.Context) -> None:
    """List the active faults and how many uses remain."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.faults()
    emit(
        st.output,
        _wire_list(result),
        columns=["id", "kind", "route", "count", "remaining", "status", "latencyMs", "retryAfter"],
        title="Faults",
    )


@faults_app.command("clear")
def faults_clear(ctx: typer.Context) -> None:
    """Remove every fault."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        sdk.sandbox.clear_faults()
    info("Cleared every fault.")


@app.command("test-cards")
def test_cards(ctx: typer.Context) -> None:
    """List the test card numbers and the outcome each drives."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.test_cards()
    emit(
        st.output,
        _wire_list(result),
        columns=["number", "brand", "outcome", "description"],
        title="Test cards",
    )


@app.command("outbox")
def outbox(
    ctx: typer.Context,
    to: Annotated[str | None, typer.Option("--to", help="Only the emails sent to this address.")] = None,
) -> None:
    """List the emails the sandbox would have sent (one-time codes), newest last."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.outbox(to)
    emit(st.output, _wire_list(result), columns=["at", "to", "subject", "body"], title="Outbox")


def _merchant(st: State, given: str | None) -> str:
    from paysdk_cli._context import require_merchant

    return require_merchant(st, given)


_MERCHANT = typer.Option(
    "--merchant", help="Merchant slug (default: the profile's merchant, else its client)."
)


@users_app.command("create")
def users_create(
    ctx: typer.Context,
    username: Annotated[str, typer.Option("--username", help="Login name.")],
    email: Annotated[str, typer.Option("--email", help="Where one-time codes go (see `sandbox outbox`).")],
    merchant: Annotated[str | None, _MERCHANT] = None,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the password from standard input, not a prompt.")
    ] = False,
) -> None:
    """Create a wallet user of a merchant; prints its userId (for --user-id; authUserId on the wire).

    The password is never an argument.
    """
    from paysdk_cli._params import read_secret
    from paysdk_cli.commands.cards import wire

    st = state(ctx)
    slug = _merchant(st, merchant)
    password = read_secret(
        "Password", from_stdin=password_stdin, confirm=not password_stdin, instead="--password-stdin"
    )
    with open_client(st, token_required=False) as sdk:
        user = sdk.sandbox.create_user(slug, username, email, password)
    emit(
        st.output,
        wire(user),
        columns=["userId", "username", "email", "merchant"],
        title=f"User {user.username}",
    )


@cards_app.command("create")
def cards_create(
    ctx: typer.Context,
    merchant: Annotated[str | None, _MERCHANT] = None,
    currency: Annotated[str, typer.Option("--currency", help="GTQ, USD, ...")] = "GTQ",
    balance: Annotated[
        str | None, typer.Option("--balance", help="Preloaded balance, an exact decimal (default 0).")
    ] = None,
) -> None:
    """Issue a physical stock card (link it with `paysdk cards link CARD_ID --user-id ID`)."""
    st = state(ctx)
    slug = _merchant(st, merchant)
    amount = parse_amount(balance, "--balance") if balance is not None else None
    with open_client(st, token_required=False) as sdk:
        card = sdk.sandbox.create_stock_card(slug, cast("CurrencyCode", currency), amount)
    emit(
        st.output,
        _wire(card),
        columns=["cardId", "maskedPan", "type", "status", "currency", "balance"],
        title=f"Card {card.card_id}",
    )


#: Wire name of a linking token's secret: never in a table, masked in JSON unless --show-secrets.
LINKING_TOKEN_SECRETS = ("token",)


@linking_tokens_app.command("create")
def linking_tokens_create(
    ctx: typer.Context,
    pan: Annotated[str, typer.Option("--pan", help="The external card's number (12-19 digits).")],
    expiry: Annotated[str, typer.Option("--expiry", metavar="MM/YY", help="The card's expiry date.")],
    show_secrets: Annotated[
        bool, typer.Option("--show-secrets", help="With -o json, print the token (for a pipe).")
    ] = False,
) -> None:
    """Create a single-use linking token for an external card (valid 10 minutes).

    The token is a secret: a table never shows it, JSON masks it unless --show-secrets. Hand it to
    `paysdk cards link-external --user-id ID --token-stdin`, e.g.
    `paysdk -o json sandbox linking-tokens create --pan 4111111111111111 --expiry 12/30 --show-secrets
    | jq -r .token | paysdk cards link-external --user-id ID --token-stdin`.
    """
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        token = sdk.sandbox.create_linking_token(pan.replace(" ", ""), expiry.strip())
    if show_secrets and st.output is OutputFormat.table:
        warn("--show-secrets only applies to -o json; tables never show secrets")
    data = mask(_wire(token), LINKING_TOKEN_SECRETS, show=show_secrets and st.output is OutputFormat.json)
    emit(st.output, data, columns=["token", "expiresAt"], title="Linking token")


_CHARGE_COLUMNS = [
    "chargeId",
    "cardId",
    "status",
    "amount",
    "capturedAmount",
    "refundedAmount",
    "createdAt",
    "expiresAt",
]
_REFUND_COLUMNS = ["refundId", "chargeId", "cardId", "status", "amount", "createdAt"]


@charges_app.command("create")
def charges_create(
    ctx: typer.Context,
    card_id: Annotated[str, typer.Argument(help="The card paid with.", metavar="CARD_ID")],
    amount: Annotated[str, typer.Option("--amount", help="Amount, an exact decimal with at most 4 places.")],
    capture: Annotated[
        bool, typer.Option("--capture", help="Capture at once (the balance drops now).")
    ] = False,
) -> None:
    """Authorize a card payment: a pending debit that lowers the available balance.

    Capture it with `sandbox charges capture CHARGE_ID` (or pass --capture); an authorization not
    captured within 7 days (virtual clock) expires and releases the hold.
    """
    from paysdk_cli._params import parse_wallet_amount

    st = state(ctx)
    value = parse_wallet_amount(amount, "--amount")
    with open_client(st, token_required=False) as sdk:
        charge = sdk.sandbox.charge(card_id, value, capture=capture)
    emit(st.output, _wire(charge), columns=_CHARGE_COLUMNS, title=f"Charge {charge.charge_id}")


@charges_app.command("capture")
def charges_capture(
    ctx: typer.Context,
    charge_id: Annotated[str, typer.Argument(help="An authorized charge.", metavar="CHARGE_ID")],
) -> None:
    """Capture an authorization: the held amount leaves the balance."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        charge = sdk.sandbox.capture(charge_id)
    emit(st.output, _wire(charge), columns=_CHARGE_COLUMNS, title=f"Charge {charge.charge_id}")


@charges_app.command("refund")
def charges_refund(
    ctx: typer.Context,
    charge_id: Annotated[str, typer.Argument(help="A captured charge.", metavar="CHARGE_ID")],
    amount: Annotated[
        str | None,
        typer.Option("--amount", help="Refund this much (exact decimal); default: what is left to refund."),
    ] = None,
) -> None:
    """Refund part or all of a captured charge: a pending credit until cleared."""
    from paysdk_cli._params import parse_wallet_amount

    st = state(ctx)
    value = parse_wallet_amount(amount, "--amount") if amount is not None else None
    with open_client(st, token_required=False) as sdk:
        refund = sdk.sandbox.refund(charge_id, value)
    emit(st.output, _wire(refund), columns=_REFUND_COLUMNS, title=f"Refund {refund.refund_id}")


@charges_app.command("clear-refund")
def charges_clear_refund(
    ctx: typer.Context,
    refund_id: Annotated[str, typer.Argument(help="A pending refund.", metavar="REFUND_ID")],
) -> None:
    """Clear a refund: its pending credit reaches the card's balance."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        refund = sdk.sandbox.clear_refund(refund_id)
    emit(st.output, _wire(refund), columns=_REFUND_COLUMNS, title=f"Refund {refund.refund_id}")


# ------------------------------------------------------------------ subscriptions (D141, D142)


class Interval(StrEnum):
    """A plan's billing interval unit."""

    day = "day"
    week = "week"
    month = "month"
    year = "year"


_PLAN_COLUMNS = [
    "planId",
    "client",
    "name",
    "amount",
    "currency",
    "interval",
    "intervalCount",
    "term",
    "dailyAttempts",
    "intervalAttempt",
    "graceDays",
    "createdAt",
]
#: What `sandbox subscription SUB_UID` shows above its charges (JSON has every field).
_SUBSCRIPTION_COLUMNS = [
    "subUid",
    "status",
    "planId",
    "client",
    "email",
    "card",
    "timezone",
    "anchorDate",
    "nextRenewalDate",
    "period",
    "attempts",
    "nextAttemptAt",
    "endsOn",
    "createdAt",
    "cancelledAt",
    "endedAt",
]


@plan_app.command("create")
def plan_create(
    ctx: typer.Context,
    amount: Annotated[
        str, typer.Option("--amount", help="Amount of each period, an exact decimal (e.g. 9.99).")
    ],
    client: Annotated[
        str | None, typer.Option("--client", help="Client slug (default: the profile's).")
    ] = None,
    plan_id: Annotated[
        str | None, typer.Option("--plan-id", help="The plan's id (default: generated).")
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="A name for people.")] = None,
    currency: Annotated[str | None, typer.Option("--currency", help="Default: the client's first.")] = None,
    interval: Annotated[Interval, typer.Option("--interval", help="Period unit.")] = Interval.month,
    interval_count: Annotated[int, typer.Option("--interval-count", help="Units per period.")] = 1,
    term: Annotated[
        int | None,
        typer.Option("--term", help="Number of periods of a fixed-term plan (default: open-ended)."),
    ] = None,
    daily_attempts: Annotated[
        int, typer.Option("--daily-attempts", help="Attempts per renewal before suspension (1-24).")
    ] = 3,
    interval_attempt: Annotated[
        int, typer.Option("--interval-attempt", help="Hours between attempts (default 24).")
    ] = 24,
    grace_days: Annotated[
        int | None, typer.Option("--grace-days", help="Days after the renewal date retries may take.")
    ] = None,
) -> None:
    """Create a subscription plan (the public API has no plan calls)."""
    from paysdk_cli._context import require_client_slug

    st = state(ctx)
    slug = require_client_slug(st, client)
    value = parse_amount(amount)
    with open_client(st, token_required=False) as sdk:
        plan = sdk.sandbox.plans.create(
            slug,
            value,
            plan_id=plan_id,
            name=name,
            currency=cast("CurrencyCode | None", currency),
            interval=interval.value,
            interval_count=interval_count,
            term=term,
            daily_attempts=daily_attempts,
            interval_attempt=interval_attempt,
            grace_days=grace_days,
        )
    emit(st.output, _wire(plan), columns=_PLAN_COLUMNS, title=f"Plan {plan.plan_id}")


@plan_app.command("show")
def plan_show(
    ctx: typer.Context, plan_id: Annotated[str, typer.Argument(help="The plan's planId.", metavar="PLAN_ID")]
) -> None:
    """Show one plan."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        plan = sdk.sandbox.plans.get(plan_id)
    emit(st.output, _wire(plan), columns=_PLAN_COLUMNS, title=f"Plan {plan.plan_id}")


@subscriptions_app.command("create")
def subscriptions_create(
    ctx: typer.Context,
    plan_id: Annotated[str, typer.Option("--plan-id", help="The plan.")],
    count: Annotated[int, typer.Option("--count", help="How many (1-100000).")] = 1,
    email: Annotated[str | None, typer.Option("--email", help="Their notification email.")] = None,
    card: Annotated[
        str, typer.Option("--card-number", "--card", help="Test card, their default method.")
    ] = "4242424242424242",
    start_date: Annotated[
        str | None,
        typer.Option(
            "--start-date", help="First renewal date, YYYY-MM-DD (default: today in the client's zone)."
        ),
    ] = None,
) -> None:
    """Create active subscriptions at once, without card verification (tests and benchmarks)."""
    from paysdk_cli._params import parse_date

    st = state(ctx)
    start = parse_date(start_date, "--start-date")
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.subscriptions.create(plan_id, count, email, card.replace(" ", ""), start)
    if st.output is OutputFormat.json:
        emit(st.output, _wire(result))
    else:
        emit(st.output, [{"subUid": uid} for uid in result.sub_uids], title=f"{result.count} subscriptions")


@app.command("subscription")
def subscription(
    ctx: typer.Context,
    sub_uid: Annotated[str, typer.Argument(help="The subscription's subUid.", metavar="SUB_UID")],
) -> None:
    """Show one subscription: state, next renewal date, the period's attempts and every charge."""
    from paysdk_cli.commands.subscriptions import CHARGE_COLUMNS, flat

    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.subscriptions.get(sub_uid)
    if st.output is OutputFormat.json:
        emit(st.output, _wire(result))
        return
    data = flat(result)
    emit(st.output, data, columns=_SUBSCRIPTION_COLUMNS, title=f"Subscription {result.sub_uid}")
    sys.stdout.write("\n")
    charges = [flat(charge) for charge in result.charges]
    emit(st.output, charges, columns=CHARGE_COLUMNS, title="Charges")
