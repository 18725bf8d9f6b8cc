"""The pure reading of deprecation headers (D196, D253) and the warning's shape, without a server."""

from __future__ import annotations

import pickle
import warnings
from datetime import UTC, datetime

import httpx
import pytest

import paysdk
from paysdk._deprecation import deprecation_from, warn_once
from paysdk.contracts.onboarding import document_type, sniff_document


def test_rfc_9745_and_8594_headers() -> None:
    headers = httpx.Headers(
        {
            "Deprecation": "@1767225600",
            "Sunset": "Tue, 01 Jun 2027 00:00:00 GMT",
            "Link": '<https://a.example/x>; rel="alternate", <https://docs.example/d>; rel="deprecation"',
            "Paysdk-Deprecated-Operation": "POST /leads/files/upload/{fileName}",
        }
    )
    warning = deprecation_from("post", "/leads/files/upload/a.pdf", headers)
    assert warning is not None
    assert warning.operation == "POST /leads/files/upload/{fileName}"
    assert warning.deprecated_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert warning.sunset == datetime(2027, 6, 1, tzinfo=UTC)
    assert warning.link == "https://docs.example/d"
    assert str(warning) == (
        "POST /leads/files/upload/{fileName} is deprecated since 2026-01-01; it will be removed on "
        "2027-06-01 (see https://docs.example/d)"
    )
    assert isinstance(warning, DeprecationWarning)
    copy = pickle.loads(pickle.dumps(warning))
    assert (copy.operation, copy.sunset) == (warning.operation, warning.sunset)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"deprecation": "false"}, None),
        ({"deprecation": "?0"}, None),
        ({"deprecation": "true"}, ("GET /x/1", None, None)),
        ({"deprecation": "@not-a-number", "sunset": "soon"}, ("GET /x/1", None, None)),
        (
            {"deprecation": "@0", "sunset": "Tue, 01 Jun 2027 00:00:00 GMT", "link": "<u>; rel=next"},
            ("GET /x/1", datetime(1970, 1, 1, tzinfo=UTC), None),
        ),
    ],
)
def test_other_servers_and_malformed_values(headers: dict[str, str], expected: object) -> None:
    warning = deprecation_from("GET", "/x/1", headers)
    if expected is None:
        assert warning is None
        return
    assert warning is not None
    assert (warning.operation, warning.deprecated_at, warning.link) == expected


def test_warn_once_per_operation() -> None:
    seen: set[str] = set()
    headers = {"deprecation": "@1767225600", "paysdk-deprecated-operation": "POST /leads"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_once(seen, "POST", "/leads", headers)
        warn_once(seen, "POST", "/leads", headers)
        warn_once(seen, "POST", "/leads", {})
    assert [w.category for w in caught] == [paysdk.PaysdkDeprecationWarning]
    assert caught[0].filename == __file__
    assert seen == {"POST /leads"}


def test_document_types_by_name_and_leading_bytes() -> None:
    assert document_type("a.PDF") == "application/pdf"
    assert document_type("photo.jpeg") == document_type("photo.jpg") == "image/jpeg"
    assert document_type("scan.gif") is None
    assert document_type(".pdf") is None
    assert document_type("pdf") is None
    assert sniff_document(b"%PDF-1.7\n") == "application/pdf"
    assert sniff_document(b"\x89PNG\r\n\x1a\n") == "image/png"
    assert sniff_document(b"\xff\xd8\xff\xe0") == "image/jpeg"
    assert sniff_document(b"\x89PNG") is None
    assert sniff_document(b"GIF89a") is None
