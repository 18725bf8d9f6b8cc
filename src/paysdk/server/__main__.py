"""Run the reference server.

``python -m paysdk.server [--host 127.0.0.1] [--port 8000] [--db URL] [--environment sandbox|production]
[--public-url URL] [--allowed-host HOST ...] [--body-timeout 30] [--keep-alive-timeout 5]``
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from paysdk.server.app import KEEP_ALIVE_TIMEOUT
from paysdk.server.bodies import BODY_TIMEOUT

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
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from paysdk.server.app import serve

    serve(
        args.host,
        args.port,
        args.db,
        args.environment,
        args.public_url,
        args.allowed_host,
        body_timeout=args.body_timeout,
        keep_alive_timeout=args.keep_alive_timeout,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
