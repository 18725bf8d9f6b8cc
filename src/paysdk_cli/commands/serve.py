"""``paysdk serve``: run the local reference server."""

from __future__ import annotations

import contextlib
import sys
from enum import StrEnum
from typing import Annotated, Any

import typer

from paysdk_cli._app import PaysdkCommand, new_app
from paysdk_cli._errors import CLIError, ExitCode

__all__ = ["app"]


class ServerEnvironment(StrEnum):
    """Which environment the reference server pretends to be (tokens of the other one get 401 / 2007)."""

    sandbox = "sandbox"
    production = "production"


#: The database URLs the reference server runs on; anything else is a usage error before it starts.
DATABASE_SCHEMES = ("sqlite://", "postgresql://", "postgres://", "postgresql+psycopg://")


def _bad_database_url(url: str, problem: str) -> typer.BadParameter:
    # Only the scheme is repeated: the rest of a database URL may hold a password.
    shown = url.split("://", 1)[0] + "://..." if "://" in url else url if "@" not in url else "..."
    return typer.BadParameter(
        f"{shown!r} {problem}: use sqlite:///FILE or postgresql://USER@HOST/DB", param_hint="--db"
    )


def _check_database_url(url: str | None) -> None:
    """A usage error, before anything starts, for a database URL the server cannot use."""
    if url is None:
        return
    url = url.strip()
    if not url.lower().startswith(DATABASE_SCHEMES):
        raise _bad_database_url(url, "is not a database the server supports")
    try:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError
    except ImportError:  # no server extra: serve says so next
        return
    try:
        make_url(url)
    except (ArgumentError, ValueError):
        raise _bad_database_url(url, "is not a valid database URL") from None
    try:
        from paysdk.server.db import IN_MEMORY_REFUSED, is_in_memory_sqlite  # serve imports it next anyway
    except ImportError:  # no server extra: serve says so next
        return
    if is_in_memory_sqlite(url):
        raise _bad_database_url(url, IN_MEMORY_REFUSED)


def _check_address_free(host: str, port: int) -> None:
    """Exit 3 with a clear line when ``host:port`` cannot be listened on (before the server starts)."""
    if port == 0:
        return
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                reason = "the address is already in use (another `paysdk serve`?)"
            else:
                reason = exc.strerror or str(exc)
            raise CLIError(
                f"cannot listen on {host}:{port}: {reason}; pick another port with --port",
                ExitCode.LISTEN,
            ) from None


def _check_seed(path: str | None) -> None:
    """A usage error naming the file, entry and field, before anything starts, for a bad seed file."""
    if path is None:
        return
    from paysdk.contracts.seed import SeedError, read_seed

    try:
        read_seed(path)
    except SeedError as exc:
        raise typer.BadParameter(str(exc), param_hint="--seed") from None


def _stop_on_sigterm() -> None:
    """SIGTERM stops the server as Ctrl-C does: a clean shutdown, exit 0.

    uvicorn handles SIGTERM while it serves and sends it again once it has stopped; this handler turns
    that (or one that arrives during start-up) into the KeyboardInterrupt that ends ``serve`` quietly.
    """
    import signal

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def _show_server_warnings() -> None:
    """The server's warnings (and errors) on stderr, one line each, from its start on: a database file
    other users can read (D362) is said before anything listens."""
    import logging

    from paysdk._logging import enable_stderr_log

    enable_stderr_log(logging.WARNING, ("paysdk.server",))


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


#: The environment variable ``--control-token`` is read from when not given (the SDK and CLI read it too).
CONTROL_TOKEN_ENV = "PAYSDK_CONTROL_TOKEN"


def _control_token(
    host: str, given: str | None, generate: bool, insecure: bool
) -> tuple[str | None, list[str]]:
    """The control token to serve with and the lines to print at start (stderr), or a ``CLIError``
    (exit 2) for a non-loopback ``host`` without a token and without ``--insecure-control-plane`` (D271).
    """
    from paysdk.server.control_token import ControlTokenRefused, startup_control_token

    try:
        return startup_control_token(host, given, generate=generate, insecure=insecure)
    except ControlTokenRefused as exc:
        raise CLIError(str(exc), ExitCode.USAGE) from None


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
    seed: Annotated[
        str | None,
        typer.Option(
            "--seed",
            metavar="FILE",
            help="Load merchants, wallet users, cards and keys from this JSON (or YAML) file at start; "
            "/_sandbox/reset restores it. The database is emptied first. See the testing guide of the "
            "documentation site (paysdk --help names it).",
            show_default=False,
        ),
    ] = None,
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
    upload_limit: Annotated[
        int | None,
        typer.Option(
            "--upload-limit",
            metavar="MIB",
            min=1,
            help="Largest body of an upload route (POST /_sandbox/uploads), in MiB; larger get 413. "
            "Default: 256.",
            show_default=False,
        ),
    ] = None,
    control_token: Annotated[
        str | None,
        typer.Option(
            "--control-token",
            metavar="TOKEN",
            help=f"The token every /_sandbox call must send in Paysdk-Control-Token (default: "
            f"${CONTROL_TOKEN_ENV}; prefer the variable: a command line shows in `ps`). Required on a "
            "non-loopback --host.",
            show_default=False,
        ),
    ] = None,
    generate_control_token: Annotated[
        bool,
        typer.Option(
            "--generate-control-token",
            help="Make a random control token and print it once at start (stderr).",
        ),
    ] = False,
    insecure_control_plane: Annotated[
        bool,
        typer.Option(
            "--insecure-control-plane",
            help="Serve /_sandbox without a token on a non-loopback --host (warned at start).",
        ),
    ] = False,
) -> None:
    """Run the local reference server.

    It serves the API, the hosted checkout and the /_sandbox control plane until Ctrl-C or SIGTERM
    (exit 0). Exit 2: a bad option (an unsupported --db), or a non-loopback --host without a control
    token; exit 3: the address is in use.

    On a non-loopback --host (0.0.0.0, a LAN address) the control plane needs a token: --control-token
    (or PAYSDK_CONTROL_TOKEN), or --generate-control-token; --insecure-control-plane serves it open.

    Point the other commands at it with --base-url http://HOST:PORT (127.0.0.1:8000 is the default).
    """
    # Imported here: `paysdk serve --help` imports nothing of paysdk.
    from paysdk.server.collector import imports_without_collection

    with imports_without_collection():  # the server's imports, collector off (D308)
        _check_seed(seed)
        _check_database_url(db)
        try:
            from paysdk.server import serve as run_server
        except ImportError as exc:
            from paysdk._version import install_hint  # the distribution's name (D420)

            raise CLIError(
                f"the reference server needs the server extra: {install_hint('server')} ({exc})"
            ) from None
    token, notes = _control_token(host, control_token, generate_control_token, insecure_control_plane)
    _check_address_free(host, port)
    for note in notes:
        typer.echo(note, err=True)
    _show_server_warnings()
    _stop_on_sigterm()
    given = {
        "body_timeout": body_timeout,
        "keep_alive_timeout": keep_alive_timeout,
        "upload_limit": None if upload_limit is None else upload_limit << 20,  # MiB -> bytes
    }
    options: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
    if seed is not None:
        options["seed"] = seed
    with contextlib.suppress(KeyboardInterrupt):
        run_server(
            host=host,
            port=port,
            database_url=db,
            environment=environment.value,
            public_url=public_url,
            allowed_hosts=allowed_host or (),
            control_token=token,
            **options,
        )


class _ServeCommand(PaysdkCommand):
    """``serve``: a seed file only the server can refuse (a timezone, a callback URL) is a usage error of
    ``--seed`` too; nothing was started."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ValueError as exc:
            # Only a run that read a seed file can raise SeedError, and that run imported its module:
            # a start without --seed does not import the seed's contracts (issue 12, D306).
            seed_module = sys.modules.get("paysdk.contracts.seed")
            if seed_module is not None and isinstance(exc, seed_module.SeedError):
                raise typer.BadParameter(str(exc), param_hint="--seed") from None
            raise
        except RuntimeError as exc:
            # The database could not be opened before anything listened (a wrong host, port or database
            # name): serve() says so in the driver's words (DatabaseUnavailable), imported by then.
            db_module = sys.modules.get("paysdk.server.db")
            if db_module is not None and isinstance(exc, db_module.DatabaseUnavailable):
                raise CLIError(f"cannot open the database of --db: {exc}") from None
            raise


app = new_app(group=False)
app.command("serve", cls=_ServeCommand)(serve)
