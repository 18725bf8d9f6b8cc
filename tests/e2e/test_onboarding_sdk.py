"""Merchant onboarding through the SDK against the REAL reference server (D195, D250-D252): async in
process (ASGITransport) and over a socket, sync over a socket, on SQLite and PostgreSQL.

The end to end path: a partner submits a lead, attaches a pdf, a png and a jpg, the control plane
approves it, and a NEW client built with the new client's sandbox token creates its first payment link.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

import paysdk
from paysdk.contracts.onboarding import MAX_DOCUMENT_BYTES, MAX_DOCUMENTS, Lead, LeadDocument

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ROOT / "examples" / "documents"
PDF, PNG, JPG = (
    DOCUMENTS / "incorporation.pdf",
    DOCUMENTS / "id-front.png",
    DOCUMENTS / "proof-of-address.jpg",
)
AnyClient = paysdk.Client | paysdk.AsyncClient

BUSINESS = {"legal_name": "Tienda Sol S.A.", "trade_name": "Tienda Sol", "tax_id": "1234567-8"}
CONTACT = {"name": "Ana López", "email": "ana@tiendasol.gt", "phone": "+50255555555"}


async def call(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


@pytest.fixture(params=["async-asgi", "async-socket", "sync-socket"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Maker:
    def __init__(self, kind: str, request: pytest.FixtureRequest) -> None:
        self.kind, self.request = kind, request
        self.made: list[AnyClient] = []
        if kind == "async-asgi":
            self.environment = paysdk.Environment.local("http://testserver")
        else:
            self.environment = paysdk.Environment.local(request.getfixturevalue("live_server"))

    def __call__(self, token: str | None = None) -> Any:
        client: AnyClient
        if self.kind == "async-asgi":
            app: FastAPI = self.request.getfixturevalue("app")
            transport = httpx.ASGITransport(app=app)
            client = paysdk.AsyncClient(token, environment=self.environment, transport=transport)
        elif self.kind == "async-socket":
            client = paysdk.AsyncClient(token, environment=self.environment)
        else:
            client = paysdk.Client(token, environment=self.environment)
        self.made.append(client)
        return client


@pytest.fixture
async def make(kind: str, db_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Maker]:
    maker = Maker(kind, request)
    yield maker
    for client in maker.made:
        if isinstance(client, paysdk.AsyncClient):
            await client.aclose()
        else:
            client.close()


def _field(error: paysdk.APIError) -> str:
    """The field the error's first detail names (D1)."""
    details = error.body.get("details") if isinstance(error.body, dict) else None
    return str(details[0]["field"]) if details else ""


async def _partner(make: Maker) -> tuple[Any, Any]:
    sandbox = make()
    partner = await call(sandbox.sandbox.create_client())
    return sandbox, make(partner.sandbox_token)


async def _lead(client: Any) -> Lead:
    lead: Lead = await call(
        client.onboarding.create_lead(
            business=BUSINESS,
            contact=CONTACT,
            country="GT",
            channels=["wa", "web"],
            currencies=["GTQ", "USD"],
        )
    )
    return lead


@pytest.mark.covers(
    "onboarding.create_lead",
    "onboarding.upload_document",
    "sandbox.leads.get",
    "sandbox.leads.approve",
    "payment_links.create",
)
async def test_from_lead_to_first_payment_link(make: Maker) -> None:
    sandbox, partner = await _partner(make)
    lead = await _lead(partner)
    assert lead.status == "submitted"
    assert lead.lead_id.startswith("lead_")
    assert len(lead.lead_id) == 5 + 24
    assert lead.business.legal_name == "Tienda Sol S.A."
    assert lead.contact.email == "ana@tiendasol.gt"
    assert (lead.country, lead.channels, lead.currencies, lead.documents) == (
        "GT",
        ["wa", "web"],
        ["GTQ", "USD"],
        [],
    )

    uploaded = []
    for path, content_type in ((PDF, "application/pdf"), (PNG, "image/png"), (JPG, "image/jpeg")):
        document = await call(partner.onboarding.upload_document(lead.lead_id, path))
        assert isinstance(document, LeadDocument)
        data = path.read_bytes()
        assert (document.file_name, document.content_type, document.size) == (
            path.name,
            content_type,
            len(data),
        )
        assert document.sha256 == hashlib.sha256(data).hexdigest()
        assert document.lead_id == lead.lead_id
        assert document.document_id.startswith("doc_")
        uploaded.append(document)
    # bytes with a file name, and an open file object
    with PDF.open("rb") as handle:
        uploaded.append(
            await call(partner.onboarding.upload_document(lead.lead_id, handle, file_name="deed.PDF"))
        )
    uploaded.append(
        await call(partner.onboarding.upload_document(lead.lead_id, PNG.read_bytes(), "id-back.png"))
    )
    assert uploaded[-2].file_name == "deed.PDF"
    assert uploaded[-2].content_type == "application/pdf"

    held = await call(sandbox.sandbox.leads.get(lead.lead_id))
    assert held.documents == uploaded
    assert held.status == "submitted"
    assert held.client_slug is None

    new = await call(sandbox.sandbox.leads.approve(lead.lead_id, slug=f"sol-{lead.lead_id[-8:]}"))
    assert new.slug == f"sol-{lead.lead_id[-8:]}"
    assert (new.channels, new.currencies, new.country) == (["wa", "web"], ["GTQ", "USD"], "GT")
    assert len(new.sandbox_token) == 64
    assert new.signing_private_key
    decided = await call(sandbox.sandbox.leads.get(lead.lead_id))
    assert (decided.status, decided.client_slug) == ("approved", new.slug)
    assert decided.decided_at is not None
    # The new client is a client like any other: the control plane knows it...
    assert (await call(sandbox.sandbox.get_client(new.slug))).slug == new.slug

    # ... and its sandbox token works with the rest of the SDK: its first payment link.
    merchant = make(new.sandbox_token)
    link = await call(
        merchant.payment_links.create(amount="25.00", user_id="+50255555555", channel="web", client=new.slug)
    )
    assert link.uid
    assert link.url
    paid = await call(sandbox.sandbox.pay(link.uid, "4242424242424242"))
    assert paid.status == "approved"
    # A channel the lead did not ask for is not the new client's.
    with pytest.raises(paysdk.ConflictError):
        await call(
            merchant.payment_links.create(
                amount="25.00", user_id="+50255555555", channel="sms", client=new.slug
            )
        )


@pytest.mark.covers("sandbox.leads.reject", "sandbox.leads.approve", "onboarding.upload_document")
async def test_a_decided_lead_is_decided_once_and_takes_no_documents(make: Maker) -> None:
    sandbox, partner = await _partner(make)
    lead = await _lead(partner)
    rejected = await call(sandbox.sandbox.leads.reject(lead.lead_id, "Tax id does not match the deed."))
    assert (rejected.status, rejected.reason) == ("rejected", "Tax id does not match the deed.")
    with pytest.raises(paysdk.ConflictError) as approving:
        await call(sandbox.sandbox.leads.approve(lead.lead_id))
    assert _field(approving.value) == "leadId"
    with pytest.raises(paysdk.ConflictError):
        await call(sandbox.sandbox.leads.reject(lead.lead_id, "again"))
    with pytest.raises(paysdk.ConflictError) as late:
        await call(partner.onboarding.upload_document(lead.lead_id, PDF))
    assert "rejected" in late.value.message

    approved = await _lead(partner)
    await call(sandbox.sandbox.leads.approve(approved.lead_id))
    with pytest.raises(paysdk.ConflictError):
        await call(sandbox.sandbox.leads.approve(approved.lead_id))
    with pytest.raises(paysdk.NotFoundError):
        await call(sandbox.sandbox.leads.get("lead_000000000000000000000000"))
    with pytest.raises(paysdk.NotFoundError):
        await call(sandbox.sandbox.leads.approve("lead_000000000000000000000000"))


@pytest.mark.covers("onboarding.upload_document", "onboarding.create_lead")
async def test_wrong_type_oversized_empty_and_too_many_documents_are_clear_4xx(
    make: Maker, tmp_path: Path
) -> None:
    sandbox, partner = await _partner(make)
    lead = await _lead(partner)
    # The name says pdf, the bytes are a png: 415 naming file.
    with pytest.raises(paysdk.APIError) as mismatch:
        await call(partner.onboarding.upload_document(lead.lead_id, PNG.read_bytes(), "id.pdf"))
    assert (mismatch.value.status_code, _field(mismatch.value)) == (415, "file")
    assert "image/png" in mismatch.value.message
    # Not a document at all: 415.
    with pytest.raises(paysdk.APIError) as text:
        await call(partner.onboarding.upload_document(lead.lead_id, b"hello, not a picture", "note.jpg"))
    assert text.value.status_code == 415
    # Content-Type forced to another type than the name's: 415.
    forced = paysdk.FileUpload(PDF, filename="deed.pdf", content_type="image/png")
    with pytest.raises(paysdk.APIError) as wrong_type:
        await call(partner.onboarding.upload_document(lead.lead_id, forced))
    assert (wrong_type.value.status_code, _field(wrong_type.value)) == (415, "file")
    # Another extension: refused before sending, naming the argument.
    with pytest.raises(paysdk.ValidationError) as extension:
        await call(partner.onboarding.upload_document(lead.lead_id, b"GIF89a", "scan.gif"))
    assert extension.value.field == "file_name"
    # Empty: 400 naming file.
    with pytest.raises(paysdk.BadRequestError) as empty:
        await call(partner.onboarding.upload_document(lead.lead_id, b"", "empty.pdf"))
    assert _field(empty.value) == "file"
    # One byte over 10 MiB: 413.
    big = tmp_path / "big.pdf"
    big.write_bytes(b"%PDF-1.4\n" + b"0" * (MAX_DOCUMENT_BYTES - 8))
    with pytest.raises(paysdk.ValidationError) as oversized:  # known size: refused before sending
        await call(partner.onboarding.upload_document(lead.lead_id, big))
    assert oversized.value.field == "file"
    if make.kind == "async-asgi":  # a stream of unknown size: the server's 413 (over a socket the server
        # closes the connection mid-body, D110, and the answer is lost as a connection error)
        chunks = iter([b"%PDF-1.4\n", b"0" * MAX_DOCUMENT_BYTES])
        with pytest.raises(paysdk.APIError) as streamed:
            await call(partner.onboarding.upload_document(lead.lead_id, chunks, "stream.pdf"))
        assert streamed.value.status_code == 413
    # Exactly 10 MiB is taken.
    exact = tmp_path / "exact.pdf"
    exact.write_bytes(b"%PDF-1.4\n" + b"0" * (MAX_DOCUMENT_BYTES - 9))
    assert (await call(partner.onboarding.upload_document(lead.lead_id, exact))).size == MAX_DOCUMENT_BYTES
    assert len((await call(sandbox.sandbox.leads.get(lead.lead_id))).documents) == 1  # nothing else stuck

    # The 21st document: 409 naming leadId.
    for index in range(MAX_DOCUMENTS - 1):
        await call(partner.onboarding.upload_document(lead.lead_id, PNG.read_bytes(), f"page-{index}.png"))
    with pytest.raises(paysdk.ConflictError) as full:
        await call(partner.onboarding.upload_document(lead.lead_id, PNG.read_bytes(), "one-more.png"))
    assert _field(full.value) == "leadId"
    assert str(MAX_DOCUMENTS) in full.value.message
    assert len((await call(sandbox.sandbox.leads.get(lead.lead_id))).documents) == MAX_DOCUMENTS

    # Another partner's lead, or an unknown one: the same 404 naming leadId.
    other = make((await call(sandbox.sandbox.create_client())).sandbox_token)
    for client, lead_id in ((other, lead.lead_id), (partner, "lead_000000000000000000000000")):
        with pytest.raises(paysdk.NotFoundError) as unknown:
            await call(client.onboarding.upload_document(lead_id, PDF))
        assert _field(unknown.value) == "leadId"


@pytest.mark.covers("onboarding.create_lead")
async def test_bad_leads_name_the_field(make: Maker) -> None:
    _, partner = await _partner(make)
    good: dict[str, Any] = {
        "business": BUSINESS,
        "contact": CONTACT,
        "country": "GT",
        "channels": ["wa"],
        "currencies": ["GTQ"],
    }
    for change, field in (
        ({"country": "US"}, "country"),
        ({"channels": []}, "channels"),
        ({"channels": ["wa", "wa"]}, "channels"),
        ({"currencies": ["EUR"]}, "currencies.0"),
        ({"business": {"legal_name": "X"}}, "business.tax_id"),
        ({"contact": {"name": "Ana", "email": "not an email"}}, "contact.email"),
        ({"contact": {"name": "Ana", "email": "a@b.gt", "phone": "555"}}, "contact.phone"),
    ):
        with pytest.raises(paysdk.ValidationError) as refused:
            await call(partner.onboarding.create_lead(**{**good, **change}))
        assert refused.value.field == field, (change, refused.value)
    # The server refuses the same, naming the wire field (409 / 5000).
    environment = make.environment
    assert environment is not None
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=make.request.getfixturevalue("app"))
        if make.kind == "async-asgi"
        else None,
        base_url=environment.base_url,
    ) as raw:
        token = partner._config.merchant_token.reveal()
        body = {"business": {"legalName": "X", "taxId": "1"}, "contact": {"name": "A", "email": "a@b.gt"}}
        answer = await raw.post(
            "/leads",
            json={**body, "country": "GT", "channels": ["fax"], "currencies": ["GTQ"]},
            headers={"Authorization": token},
        )
        assert answer.status_code == 409, answer.text
        assert answer.json()["ownCode"] == 5000
        assert answer.json()["details"][0]["field"] == "channels.0"
        answer = await raw.post("/leads", content=b"{nope", headers={"Authorization": token})
        assert answer.status_code == 400
        answer = await raw.post("/leads", json=body)
        assert answer.status_code == 401
    with pytest.raises(paysdk.AuthenticationError):
        await call(make("0" * 64).onboarding.create_lead(**good))


async def test_the_upload_route_refuses_by_name_type_lead_and_token(
    app: FastAPI, asgi_client: httpx.AsyncClient
) -> None:
    """What the SDK never sends, said to the server directly."""
    async with paysdk.AsyncClient(
        environment=paysdk.Environment.local("http://testserver"), transport=httpx.ASGITransport(app=app)
    ) as sandbox:
        partner = await sandbox.sandbox.create_client()
    token = {"Authorization": partner.sandbox_token}
    created = await asgi_client.post(
        "/leads",
        json={
            "business": {"legalName": "Sol", "taxId": "1-2"},
            "contact": {"name": "Ana", "email": "ana@sol.gt"},
            "country": "SV",
            "channels": ["web"],
            "currencies": ["USD"],
        },
        headers=token,
    )
    assert created.status_code == 201, created.text
    lead_id = created.json()["leadId"]
    pdf = PDF.read_bytes()

    async def upload(
        name: str, content_type: str | None, query: str = f"?leadId={lead_id}", **headers: str
    ) -> httpx.Response:
        sent = {**token, **headers}
        if content_type is not None:
            sent["Content-Type"] = content_type
        return await asgi_client.post(f"/leads/files/upload/{name}{query}", content=pdf, headers=sent)

    ok = await upload("deed.pdf", "application/pdf")
    assert ok.status_code == 201
    assert ok.json()["size"] == len(pdf)
    no_type = await upload("deed.pdf", None)
    assert (no_type.status_code, no_type.json()["details"][0]["field"]) == (415, "file")
    octet = await upload("deed.pdf", "application/octet-stream")
    assert octet.status_code == 415
    gif = await upload("deed.gif", "image/gif")
    assert gif.status_code == 415
    assert ".pdf" in gif.json()["message"]
    no_extension = await upload("deed", "application/pdf")
    assert no_extension.status_code == 415
    no_lead = await upload("deed.pdf", "application/pdf", query="")
    assert (no_lead.status_code, no_lead.json()["ownCode"], no_lead.json()["details"][0]["field"]) == (
        409,
        5000,
        "leadId",
    )
    unknown = await upload("deed.pdf", "application/pdf", query="?leadId=lead_x")
    assert (unknown.status_code, unknown.json()["details"][0]["field"]) == (404, "leadId")
    no_token = await asgi_client.post(
        f"/leads/files/upload/deed.pdf?leadId={lead_id}",
        content=pdf,
        headers={"Content-Type": "application/pdf"},
    )
    assert no_token.status_code == 401
    declared = await upload("deed.pdf", "application/pdf", **{"Content-Length": str(MAX_DOCUMENT_BYTES + 1)})
    assert declared.status_code == 413
    shown = await asgi_client.get(f"/_sandbox/leads/{lead_id}")
    assert [doc["fileName"] for doc in shown.json()["documents"]] == ["deed.pdf"]  # nothing else was kept
