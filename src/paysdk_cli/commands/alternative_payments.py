"""``paysdk alt``: alternative payments on direct rails (``/api/v1/integrations/transactions``, spec 2.3)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, require_client_slug, state
from paysdk_cli._errors import CLIError
from paysdk_cli._output import OutputFormat, emit, info
from paysdk_cli._params import expand_path, parse_amount, parse_json_object, parse_key_values

if TYPE_CHECKING:
    from paysdk.contracts.alternative_payments import RailName
    from paysdk.contracts.common import ChannelName, CurrencyCode

__all__ = ["app"]

app = new_app(
    "Alternative payments on direct rails.\n\n"
    "Create, process on a rail (QR image, URL or bank reference), record an intent, dismiss."
)

_PROCESSOR = typer.Option("--processor", help="Rail identifier, e.g. akisiQR, zigi, pronet.")


@app.command("create")
def create(
    ctx: typer.Context,
    amount: Annotated[str, typer.Option("--amount", help="Amount as a decimal, e.g. 10.50 (exact).")],
    user_id: Annotated[str, typer.Option("--user-id", help="Customer phone in E.164 form.")],
    channel: Annotated[str, typer.Option("--channel", help="wa, sms, email, web or app.")],
    client: Annotated[
        str | None, typer.Option("--client", help="Client slug (default: the profile's client).")
    ] = None,
    currency: Annotated[str | None, typer.Option("--currency", help="GTQ, USD, ...")] = None,
    external_id: Annotated[str | None, typer.Option("--external-id", help="Your reference.")] = None,
    custom_key: Annotated[
        list[str] | None, typer.Option("--custom-key", help="KEY=VALUE, repeatable.", metavar="KEY=VALUE")
    ] = None,
) -> None:
    """Create an alternative payment; prints its uid, the enabled rails and when it expires."""
    st = state(ctx)
    value = parse_amount(amount)
    custom_keys = parse_key_values(custom_key)
    slug = require_client_slug(st, client)
    with open_client(st) as sdk:
        payment = sdk.alternative_payments.create(
            amount=value,
            channel=cast("ChannelName", channel),  # checked by the SDK, naming the option
            client=slug,
            user_id=user_id,
            custom_keys=custom_keys,
            currency=cast("CurrencyCode | None", currency),
            external_id=external_id,
        )
    data = payment.to_wire()
    data["expires"] = payment.expires
    emit(st.output, data, columns=["uid", "paymentMethods", "expires"], title="Alternative payment")


@app.command("process")
def process(
    ctx: typer.Context,
    uid: Annotated[str, typer.Argument(help="Transaction uid.")],
    processor: Annotated[str, _PROCESSOR],
    data_json: Annotated[
        str | None, typer.Option("--data-json", help="The rail's data as a JSON object (default {}).")
    ] = None,
    qr_out: Annotated[
        Path | None,
        typer.Option(
            "--qr-out",
            help="Write the QR code PNG here (QR rails only: akisiQR, quickPayQR).",
            dir_okay=False,
            callback=expand_path,
        ),
    ] = None,
) -> None:
    """Process a transaction on a rail: a QR image, a URL, or a bank reference.

    For QR rails the answer is a PNG data URI; --qr-out writes the decoded PNG to a file. --qr-out is
    checked before the request (a QR rail, a writable file in an existing directory), so a bad path
    never leaves a processed payment behind an error. The table shows the data URI's size only;
    -o json prints it whole.
    """
    st = state(ctx)
    data = parse_json_object(data_json, "--data-json")
    with _qr_file(qr_out, processor) as write_png, open_client(st) as sdk:
        result = sdk.alternative_payments.process(uid, processor=cast("RailName", processor), data=data)
        shown = result.to_wire()
        if write_png is not None and qr_out is not None:
            try:
                png = result.png_bytes()
            except ValueError as exc:
                raise CLIError(f"--qr-out: {exc}") from None
            write_png(png)
            info(f"Wrote {len(png)} bytes of PNG to {qr_out}")
            shown["file"] = str(qr_out)
    if result.type == "base64" and st.output is OutputFormat.table:
        hint = "" if qr_out is not None else "; save it with --qr-out FILE"
        shown["data"] = f"<PNG data URI, {len(result.data)} characters{hint}>"
    emit(st.output, shown, title="Process result")


@contextmanager
def _qr_file(path: Path | None, processor: str) -> Iterator[Callable[[bytes], None] | None]:
    """Check ``--qr-out`` before the API call; yield a function that writes the PNG there atomically.

    The rail must answer an image, ``path`` must not be a directory and its directory must exist and
    take a new file (proved by creating the temporary file the PNG is written to, then renamed over
    ``path``). Refusals are usage errors naming ``--qr-out``. Nothing is left behind on failure.
    """
    if path is None:
        yield None
        return
    from paysdk.contracts.alternative_payments import QR_RAILS

    def refuse(reason: str) -> typer.BadParameter:
        return typer.BadParameter(reason, param_hint="--qr-out")

    if processor not in QR_RAILS:
        raise refuse(
            f"rail {processor!r} does not answer a QR image (QR rails: {', '.join(sorted(QR_RAILS))})"
        )
    if path.is_dir():
        raise refuse(f"{path} is a directory; give a file name such as {path / 'qr.png'}")
    directory = path.parent
    if not directory.is_dir():
        raise refuse(f"directory {directory} does not exist")
    if path.exists() and not os.access(path, os.W_OK):
        raise refuse(f"{path} is not writable")
    temp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        handle = os.fdopen(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb")
    except OSError as exc:
        raise refuse(f"cannot write in {directory}: {exc.strerror or exc}") from None

    def write(png: bytes) -> None:
        handle.write(png)
        handle.close()
        os.replace(temp, path)

    try:
        yield write
    finally:
        handle.close()
        temp.unlink(missing_ok=True)


@app.command("intent")
def intent(
    ctx: typer.Context,
    uid: Annotated[str, typer.Argument(help="Transaction uid.")],
    processor: Annotated[str, _PROCESSOR],
) -> None:
    """Record the rail the customer chose (a payment intent)."""
    st = state(ctx)
    with open_client(st) as sdk:
        result = sdk.alternative_payments.create_payment_intent(uid, processor=cast("RailName", processor))
    emit(st.output, result.to_wire(), title="Payment intent")


@app.command("dismiss")
def dismiss(
    ctx: typer.Context,
    uid: Annotated[str, typer.Argument(help="Transaction uid.")],
) -> None:
    """Dismiss a pending transaction (it becomes dismissed and the callback is sent)."""
    st = state(ctx)
    with open_client(st) as sdk:
        result = sdk.alternative_payments.dismiss(uid)
    emit(st.output, result.to_wire(), title="Dismissed")
