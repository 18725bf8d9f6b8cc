"""A user's own scenario (docs/scenarios.md), shared by the engine's, the SDK's, the CLI's and the plugin
fixture's tests: a merchant with a callback URL, a payment link, a payment with a test card, and an
expected ``approved`` callback (step 4) that a declining card makes fail."""

from __future__ import annotations

from typing import Any


def card_flow(
    name: str,
    *,
    card: str = "${card}",
    merchant: dict[str, str] | None = None,
    optional: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The scenario document ``name``: its card a parameter (default 4242...: approved) unless ``card``
    is given; ``merchant``: more fields of the merchant's create (``${...}`` parameters allowed);
    ``optional``: more parameters, not required."""
    parameters: list[dict[str, Any]] = [{"name": "callbackUrl"}]
    parameters += [{"name": each, "required": False} for each in optional]
    if card == "${card}":
        parameters.append({"name": "card", "default": "4242424242424242"})
    return {
        "name": name,
        "title": f"{name} (a user's scenario)",
        "parameters": parameters,
        "ids": ["uid"],
        "steps": [
            {
                "kind": "call",
                "path": "/_sandbox/clients",
                "json": {"callbackUrl": "${callbackUrl}", **(merchant or {})},
                "status": 201,
                "save": {"merchant": "slug", "merchantToken": "sandboxToken"},
            },
            {
                "kind": "call",
                "name": "a link",
                "path": "/transactions",
                "headers": {"Authorization": "${merchantToken}"},
                "json": {
                    "amount": 5,
                    "userId": "+50212345678",
                    "channel": "wa",
                    "client": "${merchant}",
                    "ads": [],
                },
                "save": {"uid": "uid"},
            },
            {"kind": "pay", "name": "pay", "uid": "${uid}", "card": card},
            {
                "kind": "expect",
                "name": "approved",
                "event": "callback",
                "match": {"payload.status": "approved"},
            },
        ],
    }
