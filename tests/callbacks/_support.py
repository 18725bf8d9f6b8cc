"""Helpers shared by the callback tests: valid bodies and a fake clock."""

from __future__ import annotations

import os
import uuid
from decimal import Decimal
from typing import Any

from paysdk._json import dumps

REDIS_URL = os.environ.get("PAYSDK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
TOKEN = "3f1c9a7be2d84c06a5b1e9f0c2d7a4b8"
OLD_TOKEN = "0d9e8c7b6a5f4e3d2c1b0a9f8e7d6c5b"


def payload_dict(**overrides: Any) -> dict[str, Any]:
    """A valid callback body as a dict (wire names), with ``overrides`` applied (``None`` removes)."""
    body: dict[str, Any] = {
        "eventId": f"evt_{uuid.uuid4().hex}",
        "reference": "PL-ABCDEFGHJK",
        "uid": "b4a2c7d0-1111-4222-8333-944455556666",
        "country": "GT",
        "currency": "GTQ",
        "channel": "WhatsApp",
        "status": "approved",
        "amount": Decimal("10.50"),
        "externalId": "order-42",
        "createdAt": "31/01/2025 23:59:58",
        "transactionId": "txn_0123456789abcdef01234567",
        "paymentMethodType": "visa",
    }
    for key, value in overrides.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def make_body(**overrides: Any) -> bytes:
    """A valid callback body as bytes, as the service sends it."""
    return dumps(payload_dict(**overrides))


class FakeClock:
    """Epoch seconds that only move when a test says so."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
