"""``paysdk sandbox backoffice operator create|list``, ``partner create|list|enroll``: backoffice operators
and partners on the control plane (D185, D200). Operators and partners exist only through here.

A generated operator password is never in a table (D432): ``--show-secrets`` prints it once, on a
labelled line after the table (in the document with ``-o json``, masked there otherwise);
``--save-profile`` keeps it in the profile's secret store with the merchant and the operator's email,
so ``paysdk backoffice login`` then needs nothing else. With neither, a generated password would be
lost: the command refuses before creating anything.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from paysdk_cli import _config
from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, require_merchant, state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import emit, info, mask, printable

__all__ = ["app"]

app = new_app("Backoffice operators and partners: created only here.")  # D185
operator_app = new_app("Backoffice operators (users who log in with email and password).")
partner_app = new_app("Partners: companies of a merchant whose cardholders are managed together.")
app.add_typer(operator_app, name="operator")
app.add_typer(partner_app, name="partner")

_MERCHANT = typer.Option(
    "--merchant", help="Merchant slug (default: the profile's merchant, else its client)."
)


def _wire(model: Any) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return data


@operator_app.command("create")
def operator_create(
    ctx: typer.Context,
    email: Annotated[str, typer.Option("--email", help="The operator's email (the login name).")],
    merchant: Annotated[str | None, _MERCHANT] = None,
    password_stdin: Annotated[
        bool,
        typer.Option("--password-stdin", help="Read the password from standard input (default: generated)."),
    ] = False,
    save_profile: Annotated[
        bool,
        typer.Option(
            "--save-profile",
            help="Keep the merchant, the email and the password in the current profile for "
            "`paysdk backoffice login`.",
        ),
    ] = False,
    show_secrets: Annotated[
        bool,
        typer.Option(
            "--show-secrets",
            help="Print a generated password once: a labelled line after the table, or in -o json.",
        ),
    ] = False,
) -> None:
    """Create a backoffice operator of a merchant; a password is generated unless --password-stdin.

    A generated password is never in the table: --show-secrets prints it once (a labelled line after
    the table, or in -o json), --save-profile keeps it for `paysdk backoffice login`; one of them (or
    --password-stdin) is needed.
    """
    from paysdk_cli._params import read_secret

    st = state(ctx)
    if not (password_stdin or save_profile or show_secrets):
        raise CLIError(
            "a generated password is printed only with --show-secrets: pass --show-secrets, "
            "--save-profile (kept for `paysdk backoffice login`) or --password-stdin",
            ExitCode.USAGE,
        )
    slug = require_merchant(st, merchant)
    password = read_secret("Password", from_stdin=True) if password_stdin else None
    with open_client(st, token_required=False) as sdk:
        operator = sdk.sandbox.backoffice.create_operator(slug, email, password)
    if save_profile:
        from paysdk_cli._backoffice import BACKOFFICE_PASSWORD
        from paysdk_cli._secrets import store_secret

        secret = password if password is not None else operator.password
        assert secret is not None
        where = store_secret(BACKOFFICE_PASSWORD, st.profile, secret)
        _config.update_profile(st.profile, backoffice_merchant=slug, backoffice_operator=operator.email)
        info(f"Saved operator {operator.email!r} and its password ({where}); next: paysdk backoffice login.")
    data = _wire(operator)
    if st.output.value == "json":
        emit(st.output, mask(data, ["password"], show=show_secrets))
        return
    emit(st.output, data, columns=["operatorId", "email", "merchant"], title="Operator")
    if show_secrets and operator.password is not None:
        label = f"Generated password of {operator.email} (shown once)"
        sys.stdout.write(f"\n{printable(label)}: {printable(operator.password)}\n")
        sys.stdout.flush()


@operator_app.command("list")
def operator_list(ctx: typer.Context, merchant: Annotated[str | None, _MERCHANT] = None) -> None:
    """A merchant's operators, oldest first (never a password)."""
    st = state(ctx)
    slug = require_merchant(st, merchant)
    with open_client(st, token_required=False) as sdk:
        operators = sdk.sandbox.backoffice.operators(slug)
    emit(
        st.output,
        [_wire(o) for o in operators],
        columns=["operatorId", "email", "createdAt"],
        title="Operators",
    )


@partner_app.command("create")
def partner_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Option("--name", help="The partner's name (e.g. the employer).")],
    partner_id: Annotated[
        str | None, typer.Option("--partner-id", help="1-64 of A-Z a-z 0-9 _ - (default: generated ptn_...).")
    ] = None,
    merchant: Annotated[str | None, _MERCHANT] = None,
) -> None:
    """Create a partner of a merchant; prints its partnerId (for --partner)."""
    st = state(ctx)
    slug = require_merchant(st, merchant)
    with open_client(st, token_required=False) as sdk:
        partner = sdk.sandbox.backoffice.create_partner(slug, name, partner_id)
    emit(st.output, _wire(partner), columns=["partnerId", "name", "merchant"], title="Partner")


@partner_app.command("list")
def partner_list(ctx: typer.Context, merchant: Annotated[str | None, _MERCHANT] = None) -> None:
    """A merchant's partners, oldest first."""
    st = state(ctx)
    slug = require_merchant(st, merchant)
    with open_client(st, token_required=False) as sdk:
        partners = sdk.sandbox.backoffice.partners(slug)
    emit(st.output, [_wire(p) for p in partners], columns=["partnerId", "name"], title="Partners")


@partner_app.command("enroll")
def partner_enroll(
    ctx: typer.Context,
    partner: Annotated[str, typer.Argument(help="The partner's partnerId.")],
    user_id: Annotated[str, typer.Option("--user-id", help="An existing wallet user of the merchant.")],
    merchant: Annotated[str | None, _MERCHANT] = None,
) -> None:
    """Make an existing wallet user the partner's cardholder (uploads make their own).

    \f
    Decision D200.
    """
    st = state(ctx)
    slug = require_merchant(st, merchant)
    with open_client(st, token_required=False) as sdk:
        enrolled = sdk.sandbox.backoffice.enroll_cardholder(slug, partner, user_id)
    emit(st.output, enrolled, columns=["partnerId", "cardholderId", "merchant"], title="Cardholder")
