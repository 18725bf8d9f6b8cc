"""Constants and helpers shared by the SDK tests."""

from __future__ import annotations

import paysdk

TOKEN = "c0ffee" + "5a" * 29  # 64 hex characters, like a real merchant token
LOCAL_URL = "http://paysdk.test"


def plain_environment() -> paysdk.Environment:
    """An environment that does not honour idempotency keys (like the real API)."""
    return paysdk.Environment(
        base_url="https://api.example",
        webview_url="https://checkout.example",
        wallet_base_url="https://wallet.example/rest",
        cms_base_url="https://cms.example/cms/rest",
        name="plain",
    )


def keyed_environment() -> paysdk.Environment:
    """The reference server's addresses: idempotency keys honoured."""
    return paysdk.Environment.local(LOCAL_URL)
