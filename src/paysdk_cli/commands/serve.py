"""``paysdk serve``: run the local reference server."""

from __future__ import annotations

import contextlib
from enum import StrEnum
from typing import Annotated

import typer

from paysdk_cli._app import new_app
from paysdk_cli._errors import CLIError

__all__ = ["app"]


class ServerEnvironment(StrEnum):
    """Which environment the reference server pretends to be (tokens of the other one get 401 / 2007)."""

    sandbox = "sandbox"
    production = "production"


def _checked_address(value: str | list[str] | None) -> str | list[str] | None:
    """``--public-url`` / ``--allowed-host`` checked as the server will (a clear usage error if malformed)."""
    if not value:
        return value
    try:
        from paysdk.server.addresses import ServerAddresses
    except ImportError:  # no server extra: the command says so itself
        return value
    try:
        if isinstance(value, str):
            ServerAddresses(public_url=value)
        else:
            ServerAddresses(allowed_hosts=value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    return value


def serve(
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="TCP port.", min=0, max=65535)] = 8000,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Database URL (sqlite:///file.db or postgresql+psycopg://...). "
            "Default: the server's SQLite file.",
            show_default=False,
        ),
    ] = None,
    environment: Annotated[
        ServerEnvironment, typer.Option("--environment", help="sandbox or production.")
    ] = ServerEnvironment.sandbox,
    public_url: Annotated[
        str | None,
        typer.Option(
            "--public-url",
            metavar="URL",
            help="The address links, QR codes and checkout forms point at (e.g. http://localhost:8000). "
            "Default: the address a request reached the server on, never its Host header.",
            show_default=False,
            callback=_checked_address,
        ),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            metavar="HOST",
            help="Another host name to answer (repeatable; '*' answers any). Always answered: localhost, "
            "127.0.0.1, [::1] and the --public-url host; other Host headers get 421.",
            show_default=False,
            callback=_checked_address,
        ),
    ] = None,
) -> None:
    """Run the local reference server.

    It serves the API, the hosted checkout and the /_sandbox control plane until Ctrl-C.

    Point the other commands at it with --base-url http://HOST:PORT (127.0.0.1:8000 is the default).
    """
    try:
        from paysdk.server import serve as run_server
    except ImportError as exc:
        raise CLIError(
            f"the reference server needs the server extra: pip install 'paysdk[server]' ({exc})"
        ) from None
    with contextlib.suppress(KeyboardInterrupt):
        run_server(
            host=host,
            port=port,
            database_url=db,
            environment=environment.value,
            public_url=public_url,
            allowed_hosts=allowed_host or (),
        )


app = new_app(group=False)
app.command("serve")(serve)
