"""``/openapi.json`` reads as plain Markdown prose for an API user (D483): no description or summary
anywhere in it cites a decision id or shows the reST of the docstrings it comes from (roles, ``::``
literal-block markers, double backticks), and nothing but that prose differs from what FastAPI and the
server-wide layer generate."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import paysdk.server.openapi as server_openapi
import paysdk.server.openapi_text as server_openapi_text
from paysdk.server import create_app
from paysdk.server.openapi_text import plain_descriptions, plain_text

SQLITE = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
#: What an API user must not read in the document's prose.
FORBIDDEN = {
    "a decision id": re.compile(r"\bD\d{1,3}\b"),
    "a reST role": re.compile(r":(?:[a-z]+:)?[a-z]+:`"),
    "a '::' literal-block marker": re.compile(r"::[ \t]*(?:\n|$)"),
    "a double backtick": re.compile(r"``"),
}
_METHODS = ("get", "put", "post", "delete", "patch")


def prose(node: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """``(JSON pointer, text)`` of every string ``description`` and ``summary`` in ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{where}/{key}"
            if key in ("description", "summary") and isinstance(value, str):
                yield here, value
            else:
                yield from prose(value, here)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from prose(item, f"{where}/{index}")


@SQLITE
async def test_every_description_and_summary_is_plain_markdown(asgi_client: httpx.AsyncClient) -> None:
    response = await asgi_client.get("/openapi.json")
    assert response.status_code == 200
    document = response.json()
    texts = list(prose(document))
    operations = [
        item[method] for item in document["paths"].values() for method in _METHODS if method in item
    ]
    assert len(operations) >= 60
    assert all(operation["summary"] and operation["description"] for operation in operations)
    assert len(texts) > 2 * len(operations)  # the walk reaches responses, parameters and schemas too
    found = [
        f"{where}: {name}: {text!r}"
        for where, text in texts
        for name, pattern in FORBIDDEN.items()
        if pattern.search(text)
    ]
    assert not found, "\n".join(found)


@SQLITE
async def test_descriptions_keep_whole_sentences(asgi_client: httpx.AsyncClient) -> None:
    document = (await asgi_client.get("/openapi.json")).json()
    paths = document["paths"]
    create = paths["/api/v1/integrations/transactions"]["post"]
    assert create["description"] == (
        "Create a transaction to be paid on a rail; `expireAt` is epoch milliseconds."
    )
    progress = paths["/cms/rest/app/partners/{partnerId}/cardholders/batch/{batchId}/progress"]["get"]
    assert progress["description"] == (
        "The batch's events after `Last-Event-ID`, from the database: any process serves them."
    )
    login = paths["/rest/users/login"]["post"]["description"]
    assert login.endswith("lock the username\n(`429 / 7108` with `Retry-After`).")
    # What the docstring keeps for engineers after its \f is not in the document.
    funds = paths["/rest/cards/{cardId}/funds"]["post"]["description"]
    assert funds == "Atomic add, or a withdrawal guarded by the available balance (`422 / 7303`)."
    assert document["info"]["description"].startswith("Reference server")
    assert "Every public POST honours `Idempotency-Key` (24 h)." in document["info"]["description"]
    schemas = document["components"]["schemas"]
    assert schemas["ProcessResult"]["description"].endswith("(the customer quotes `data` at the bank).")
    assert schemas["ErrorBody"]["description"].startswith("The error body every endpoint answers with.\n\n")
    # A model's raw __doc__ (a request body's description) is dedented: no line Markdown shows as code.
    body = paths["/transactions"]["post"]["requestBody"]["description"]
    assert body == (
        "Body of `POST /transactions` (spec 2.1).\n\nRequired: `amount`, `userId`, `channel`, "
        "`client`. `ads` defaults to `[]`;\n`currency` defaults to the client's first configured currency."
    )


def test_only_the_prose_differs_from_the_generated_document(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Operation ids, parameters, schemas and responses are what they were without the rewrite."""

    def build(name: str) -> dict[str, Any]:
        application = create_app(f"sqlite:///{tmp_path / name}", start_ticker=False)
        try:
            return application.openapi()
        finally:
            application.state.paysdk.db.dispose()

    plain = build("plain.db")
    monkeypatch.setattr(server_openapi_text, "plain_descriptions", lambda document: None)
    monkeypatch.setattr(server_openapi, "_DOCUMENTS", {})  # generated afresh, not the first app's (D760)
    raw = build("raw.db")
    assert raw != plain

    def skeleton(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                key: "<prose>"
                if key in ("description", "summary") and isinstance(value, str)
                else skeleton(value)
                for key, value in node.items()
            }
        if isinstance(node, list):
            return [skeleton(item) for item in node]
        return node

    assert skeleton(plain) == skeleton(raw)
    assert [where for where, _ in prose(plain)] == [where for where, _ in prose(raw)]


@pytest.mark.parametrize(
    ("source", "plain"),
    [
        (
            "Paid on a rail; ``expireAt`` is epoch milliseconds (D10).",
            "Paid on a rail; `expireAt` is epoch milliseconds.",
        ),
        ("Store it as a batch and queue its job (D186, D187).", "Store it as a batch and queue its job."),
        ("In batched commits (D256-D258) at once.", "In batched commits at once."),
        ("The dismiss answer (HTTP 200, decision D13).", "The dismiss answer (HTTP 200)."),
        ("Errors: `{...}` (spec-decisions D1).", "Errors: `{...}`."),
        ("After ``Last-Event-ID`` (D188), from the database.", "After `Last-Event-ID`, from the database."),
        ("text/event-stream (D188): events", "text/event-stream: events"),
        ("Locked (``429 / 7108`` with ``Retry-After``, D381).", "Locked (`429 / 7108` with `Retry-After`)."),
        (
            "Lifetimes (5.3.3; defaults 15 min and 12 h, D184).",
            "Lifetimes (5.3.3; defaults 15 min and 12 h).",
        ),
        ("Body (spec 2.3; required fields: decision D3).", "Body (spec 2.3)."),
        ("The secret (D193; GET /_sandbox/processor).", "The secret (GET /_sandbox/processor)."),
        ("Sent (D39: the same whether or not it exists).", "Sent (the same whether or not it exists)."),
        ("A row (D241:\n``reason`` says which).", "A row (`reason` says which)."),
        ("Quoted at the bank. Decision D11.", "Quoted at the bank."),
        (
            "Ten (1,000 rows) and 5,000 (``(page - 1) * 5,000``).",
            "Ten (1,000 rows) and 5,000 (`(page - 1) * 5,000`).",
        ),
        (":class:`~paysdk.Secret` and :meth:`Client.close`", "`Secret` and `Client.close()`"),
        (
            ":func:`the fund <paysdk.fund>` or :py:data:`paysdk.\n    PAGE_ENTRIES`",
            "`the fund` or `paysdk.PAGE_ENTRIES`",
        ),
        ("Body.\n\n    Required: ``amount``.\n    ", "Body.\n\nRequired: `amount`."),
        (
            "For example::\n\n    a = f(1)\n      b\n\nThen.",
            "For example:\n\n```\na = f(1)\n  b\n```\n\nThen.",
        ),
        ("Run it ::\n\n    paysdk serve", "Run it\n\n```\npaysdk serve\n```"),
        ("Alone:\n\n::\n\n    x = 1\n\nNext.", "Alone:\n\n```\nx = 1\n```\n\nNext."),
        ("Fenced:\n\n```\n``as is`` (D1)\n```", "Fenced:\n\n```\n``as is`` (D1)\n```"),
    ],
)
def test_plain_text(source: str, plain: str) -> None:
    assert plain_text(source) == plain


def test_plain_descriptions_leave_examples_defaults_and_enumerations() -> None:
    node: dict[str, Any] = {
        "description": "A (D1) ``x``.",
        "properties": {
            "description": {"type": "string", "default": "``d`` (D2)", "description": "Its text (D3)."},
            "kind": {"enum": ["(D4)"], "const": "``c``", "example": {"description": "(D5)"}},
        },
        "examples": {"one": {"summary": "One (D6).", "value": {"summary": "(D7)"}}},
    }
    plain_descriptions(node)
    assert node == {
        "description": "A `x`.",
        "properties": {
            "description": {"type": "string", "default": "``d`` (D2)", "description": "Its text."},
            "kind": {"enum": ["(D4)"], "const": "``c``", "example": {"description": "(D5)"}},
        },
        "examples": {"one": {"summary": "One.", "value": {"summary": "(D7)"}}},
    }
