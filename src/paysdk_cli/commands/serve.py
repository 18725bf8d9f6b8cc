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
    body_timeout: Annotated[
        float | None,
        typer.Option(
            "--body-timeout",
            metavar="SECONDS",
            min=0.001,
            help="Seconds a request body may take to arrive; slower bodies get 408. Default: 30.",
            show_default=False,
        ),
    ] = None,
    keep_alive_timeout: Annotated[
        float | None,
        typer.Option(
            "--keep-alive-timeout",
            metavar="SECONDS",
            min=0.001,
            help="Seconds an idle connection may wait for a request head before it is closed. Default: 5.",
            show_default=False,
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
    timeouts = {"body_timeout": body_timeout, "keep_alive_timeout": keep_alive_timeout}
    with contextlib.suppress(KeyboardInterrupt):
        run_server(
            host=host,
            port=port,
            database_url=db,
            environment=environment.value,
            **{name: value for name, value in timeouts.items() if value is not None},
        )


app = new_app(group=False)
app.command("serve")(serve)
