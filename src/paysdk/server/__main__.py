"""Run the reference server.

``python -m paysdk.server [--host 127.0.0.1] [--port 8000] [--db URL] [--environment sandbox|production]
[--public-url URL] [--allowed-host HOST ...] [--body-timeout 30] [--keep-alive-timeout 5]
[--upload-limit 256] [--control-token TOKEN | --generate-control-token] [--insecure-control-plane]``

A non-loopback ``--host`` needs a control token (``--control-token``, ``$PAYSDK_CONTROL_TOKEN`` or
``--generate-control-token``) unless ``--insecure-control-plane`` (D271), as for ``paysdk serve``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from paysdk.server.bodies import BODY_TIMEOUT
from paysdk.server.connections import KEEP_ALIVE_TIMEOUT

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments and serve until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m paysdk.server", description="Run the paysdk reference server."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    parser.add_argument(
        "--db",
        default=None,
        help="sqlite:///path or postgresql://... (default: sandbox.db in the user data directory)",
    )
    parser.add_argument("--environment", choices=("sandbox", "production"), default="sandbox")
    parser.add_argument(
        "--public-url",
        default=None,
        help="the address links and checkout forms point at (default: the address a request reached)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        help="another host name to answer (repeatable; '*': any); localhost and 127.0.0.1 always are",
    )
    parser.add_argument(
        "--body-timeout",
        type=float,
        default=BODY_TIMEOUT,
        help=f"seconds a request body may take, else 408 (default {BODY_TIMEOUT:g})",
    )
    parser.add_argument(
        "--keep-alive-timeout",
        type=float,
        default=KEEP_ALIVE_TIMEOUT,
        help=f"seconds an idle connection may wait for a request head (default {KEEP_ALIVE_TIMEOUT:g})",
    )
    parser.add_argument(
        "--upload-limit",
        type=int,
        default=256,
        metavar="MIB",
        help="largest body of an upload route, in MiB, else 413 (default 256)",
    )
    parser.add_argument(
        "--control-token",
        default=None,
        metavar="TOKEN",
        help="the token /_sandbox calls must send in Paysdk-Control-Token (default: $PAYSDK_CONTROL_TOKEN; "
        "prefer the variable, a command line shows in ps); required on a non-loopback --host",
    )
    parser.add_argument(
        "--generate-control-token",
        action="store_true",
        help="make a random control token and print it once at start (stderr)",
    )
    parser.add_argument(
        "--insecure-control-plane",
        action="store_true",
        help="serve /_sandbox without a token on a non-loopback --host (warned at start)",
    )
    args = parser.parse_args(argv)
    from paysdk.server.addresses import ServerAddresses

    try:
        ServerAddresses(args.public_url, args.allowed_host)
    except ValueError as exc:
        parser.error(str(exc))
    timeouts = {"--body-timeout": args.body_timeout, "--keep-alive-timeout": args.keep_alive_timeout}
    for option, value in timeouts.items():
        if not value > 0:
            parser.error(f"{option}: must be a number of seconds above 0, not {value:g}")
    if args.upload_limit < 1:
        parser.error(f"--upload-limit: must be a number of MiB, 1 or more, not {args.upload_limit}")
    from paysdk.server.control_token import ControlTokenRefused, startup_control_token

    try:
        token, notes = startup_control_token(
            args.host,
            args.control_token,
            generate=args.generate_control_token,
            insecure=args.insecure_control_plane,
        )
    except ControlTokenRefused as exc:
        parser.error(str(exc))
    for note in notes:
        sys.stderr.write(note + "\n")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from sqlalchemy.exc import ArgumentError

    from paysdk.server.boot import serve
    from paysdk.server.db import DatabaseUnavailable

    try:
        serve(
            args.host,
            args.port,
            args.db,
            args.environment,
            args.public_url,
            args.allowed_host,
            body_timeout=args.body_timeout,
            keep_alive_timeout=args.keep_alive_timeout,
            upload_limit=args.upload_limit << 20,
            control_token=token,
        )
    except (ValueError, ArgumentError) as exc:
        # Raised before anything listens: the database URL (unparsable, unsupported, in memory: D771).
        # Their messages name the dialect or an in-memory URL, never a password.
        parser.error(f"--db: {exc}")
    except DatabaseUnavailable as exc:  # before anything listens: the driver's words, no traceback
        parser.exit(1, f"{parser.prog}: error: cannot open the database of --db: {exc}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
