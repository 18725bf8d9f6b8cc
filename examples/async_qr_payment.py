"""Create an alternative payment, process it on the akisiQR rail and save the QR code (async client).

Environment as for ``quickstart.py``; the PNG goes to the path given as the first argument.
"""

from __future__ import annotations

import asyncio
import os
import sys
from decimal import Decimal
from pathlib import Path

import paysdk


async def main(out: Path) -> int:
    async with paysdk.AsyncClient() as client:
        payment = await client.alternative_payments.create(
            amount=Decimal("80.25"),
            channel="app",
            client=os.environ["PAYSDK_CLIENT"],
            user_id="+50255550123",
            custom_keys={"order": "A-9"},
        )
        rails = ",".join(payment.payment_methods)
        print(f"uid={payment.uid} rails={rails} expires={payment.expires.isoformat()}")
        if "akisiQR" not in payment.payment_methods:
            print("this client has no akisiQR rail", file=sys.stderr)
            return 1
        result = await client.alternative_payments.process(payment.uid, processor="akisiQR")
        await asyncio.to_thread(out.write_bytes, result.png_bytes())
        print(f"qr={out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(Path(sys.argv[1] if len(sys.argv) > 1 else "qr.png"))))
