"""Create a payment link and print its hosted-checkout address (sync client).

Run against the local reference server::

    paysdk serve &
    export PAYSDK_BASE_URL=http://127.0.0.1:8000
    export PAYSDK_MERCHANT_TOKEN=...   # from `paysdk sandbox clients create -o json --show-secrets`
    export PAYSDK_CLIENT=my-store
    python examples/quickstart.py
"""

from __future__ import annotations

import os
import sys
from decimal import Decimal

import paysdk


def main() -> int:
    # Environment.from_env() reads PAYSDK_BASE_URL; the token comes from PAYSDK_MERCHANT_TOKEN.
    with paysdk.Client() as client:
        try:
            link = client.payment_links.create(
                amount=Decimal("125.50"),
                user_id="+50255550123",
                channel="wa",
                client=os.environ["PAYSDK_CLIENT"],
                external_id="order-1001",
            )
        except paysdk.APIError as exc:
            print(f"the API refused: {exc}", file=sys.stderr)
            return 1
        except paysdk.APIConnectionError as exc:
            print(f"could not reach the API: {exc}", file=sys.stderr)
            return 1
    print(f"uid={link.uid} reference={link.reference}")
    print(f"checkout={link.url}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
