"""Run the reference server.

``python -m paysdk.server [--host 127.0.0.1] [--port 8000] [--db URL] [--environment sandbox|production]``
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

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
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from paysdk.server.app import serve

    serve(args.host, args.port, args.db, args.environment)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
