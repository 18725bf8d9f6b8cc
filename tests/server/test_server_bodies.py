"""``parse_json_object`` walks a body's strings and nesting only when they could hold something to refuse
(a ``\\u`` escape, or more brackets than MAX_DEPTH): these cases sit on both sides of that shortcut."""

from __future__ import annotations

import json
from typing import Any

import pytest

from paysdk.server.bodies import MAX_DEPTH, parse_json_object
from paysdk.server.errors import APIProblem


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("raw", "status", "field"),
    [
        (b'{"userId": "+502\\u000055555555"}', 409, "userId"),  # NUL, only reachable through an escape
        (b'{"a": {"b": "x\\u0000"}}', 409, "a.b"),
        (b'{"k\\u0000": 1}', 409, "body"),  # in a key
        (b'{"userId": "\\ud800"}', 400, "body"),  # a lone surrogate
        (json.dumps({"x": _nested(MAX_DEPTH)}).encode(), 409, "x" + ".0" * MAX_DEPTH),
    ],
)
def test_what_the_walk_refuses(raw: bytes, status: int, field: str) -> None:
    with pytest.raises(APIProblem) as caught:
        parse_json_object(raw)
    assert caught.value.status == status
    assert caught.value.details[0][0] == field


@pytest.mark.parametrize(
    "raw",
    [
        b'{"userId": "+50255555555", "ads": []}',  # no escape, few brackets: no walk
        json.dumps({"x": _nested(MAX_DEPTH - 1)}).encode(),  # as deep as allowed
        b'{"note": "' + b"[" * (MAX_DEPTH + 5) + b'"}',  # many brackets, all in a string: walked, fine
        b'{"note": "caf\\u00e9 \\\\u0000"}',  # escapes, none a NUL or a surrogate: walked, fine
    ],
)
def test_what_passes(raw: bytes) -> None:
    assert isinstance(parse_json_object(raw), dict)


def test_the_upload_bounds_are_the_contracts_limits() -> None:
    """One number per upload route: what the layer enforces (and /openapi.json states) is the limit the
    contract and the route's own reader name (D391)."""
    from paysdk.contracts.onboarding import MAX_DOCUMENT_BYTES
    from paysdk.contracts.reconciliation import MAX_FILE_BYTES
    from paysdk.server.bodies import UPLOAD_ROUTE_LIMITS
    from paysdk.server.services.batch_charges import MAX_CSV_BYTES

    assert UPLOAD_ROUTE_LIMITS == {
        ("POST", "/v1/subscriptions/charges/upload-csv"): MAX_CSV_BYTES,
        ("POST", "/leads/files/upload/{fileName}"): MAX_DOCUMENT_BYTES,
        ("POST", "/reports/payfac/conciliation/upload/{affiliation}"): MAX_FILE_BYTES,
    }
