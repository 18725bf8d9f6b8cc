"""``paysdk leads``, ``paysdk sandbox lead`` and ``paysdk sandbox deprecations`` against the reference
server on a real socket (D195, D196): a lead to the new client's first payment link, the documents'
refusals as exit codes, and one deprecation notice per operation per run on stderr."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ROOT / "examples" / "documents"
PDF, PNG, JPG = (
    str(DOCUMENTS / name) for name in ("incorporation.pdf", "id-front.png", "proof-of-address.jpg")
)
LEAD = (
    "--legal-name",
    "Tienda Sol S.A.",
    "--tax-id",
    "1234567-8",
    "--contact-name",
    "Ana López",
    "--contact-email",
    "ana@tiendasol.gt",
    "--country",
    "GT",
    "--channel",
    "wa",
    "--channel",
    "web",
    "--currency",
    "GTQ",
)


def _json(*args: str) -> Any:
    result = run_cli("-o", "json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _partner() -> str:
    return str(_json("sandbox", "clients", "create", "--save-profile")["slug"])


def test_lead_documents_approval_and_first_payment_link() -> None:
    _partner()
    lead = _json("leads", "create", *LEAD)
    assert lead["status"] == "submitted"
    assert lead["documentCount"] == 0
    lead_id = lead["leadId"]
    documents = _json("leads", "upload", PDF, PNG, JPG, "--lead", lead_id)
    assert [d["contentType"] for d in documents] == ["application/pdf", "image/png", "image/jpeg"]
    assert documents[0]["size"] == Path(PDF).stat().st_size

    shown = _json("sandbox", "lead", "show", lead_id)
    assert [d["fileName"] for d in shown["documents"]] == [Path(p).name for p in (PDF, PNG, JPG)]
    table = run_cli("-o", "table", "sandbox", "lead", "show", lead_id)
    assert table.exit_code == 0, table.stderr
    assert "submitted" in table.stdout

    slug = f"sol-{uuid.uuid4().hex[:8]}"
    approved = _json(
        "--profile", "sol", "sandbox", "lead", "approve", lead_id, "--slug", slug, "--save-profile"
    )
    assert approved["slug"] == slug
    assert approved["sandboxToken"] == "****"  # masked, yet stored in the profile
    link = _json(
        "--profile",
        "sol",
        "links",
        "create",
        "--amount",
        "25.00",
        "--user-id",
        "+50255555555",
        "--channel",
        "wa",
    )
    assert "/checkout/?orderId=" in link["URL"]
    assert _json("sandbox", "lead", "show", lead_id)["clientSlug"] == slug

    again = run_cli("sandbox", "lead", "approve", lead_id)
    assert again.exit_code == 6, again.stderr
    assert "already approved" in again.stderr


def test_document_refusals_and_reject(tmp_path: Path) -> None:
    _partner()
    lead_id = _json("leads", "create", *LEAD)["leadId"]
    gif = tmp_path / "scan.gif"
    gif.write_bytes(b"GIF89a")
    refused = run_cli("leads", "upload", PDF, str(gif), "--lead", lead_id)
    assert refused.exit_code == 2, refused.stderr  # refused before sending anything
    assert "invalid value for FILE" in refused.stderr
    assert _json("sandbox", "lead", "show", lead_id)["documents"] == []
    disguised = tmp_path / "id.pdf"
    disguised.write_bytes(Path(PNG).read_bytes())
    mismatch = run_cli("leads", "upload", str(disguised), "--lead", lead_id)
    assert mismatch.exit_code == 6, mismatch.stderr
    assert "415" in mismatch.stderr
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    assert run_cli("leads", "upload", str(empty), "--lead", lead_id).exit_code == 6
    unknown = run_cli("leads", "upload", PDF, "--lead", "lead_000000000000000000000000")
    assert unknown.exit_code == 6
    assert "404" in unknown.stderr
    bad_country = run_cli(
        "leads", "create", *LEAD[:-8], "--country", "US", "--channel", "wa", "--currency", "GTQ"
    )
    assert bad_country.exit_code == 2, bad_country.stderr
    assert "country" in bad_country.stderr

    rejected = _json("sandbox", "lead", "reject", lead_id, "--reason", "Tax id does not match")
    assert (rejected["status"], rejected["reason"]) == ("rejected", "Tax id does not match")
    late = run_cli("leads", "upload", PDF, "--lead", lead_id)
    assert late.exit_code == 6


def test_one_deprecation_notice_per_operation_per_run() -> None:
    _partner()
    mark = _json(
        "sandbox",
        "deprecations",
        "set",
        "POST /leads",
        "--sunset",
        "2027-06-01T00:00:00Z",
        "--link",
        "https://docs.example.com/versioning",
    )
    assert mark["operation"] == "POST /leads"
    _json("sandbox", "deprecations", "set", "post /leads/files/upload/{fileName}")
    listed = _json("sandbox", "deprecations", "list")
    assert [m["operation"] for m in listed] == ["POST /leads", "POST /leads/files/upload/{fileName}"]

    created = run_cli("-o", "json", "leads", "create", *LEAD)
    assert created.exit_code == 0, created.stderr
    assert created.stderr.count("Notice: POST /leads is deprecated") == 1
    assert "2027-06-01" in created.stderr
    assert "https://docs.example.com/versioning" in created.stderr
    assert "Notice" not in created.stdout
    lead_id = json.loads(created.stdout)["leadId"]

    # Two uploads in one run: one notice.
    uploaded = run_cli("-o", "json", "leads", "upload", PDF, PNG, "--lead", lead_id)
    assert uploaded.exit_code == 0, uploaded.stderr
    assert uploaded.stderr.count("Notice: POST /leads/files/upload/{fileName} is deprecated") == 1
    # The next run says it again.
    second = run_cli("-o", "json", "leads", "upload", JPG, "--lead", lead_id)
    assert second.stderr.count("Notice:") == 1

    assert _json("sandbox", "deprecations", "clear", "POST /leads")["removed"] == 1
    quiet = run_cli("-o", "json", "leads", "create", *LEAD)
    assert "Notice" not in quiet.stderr
    assert _json("sandbox", "deprecations", "clear")["removed"] == 1
    assert _json("sandbox", "deprecations", "list") == []
    unknown = run_cli("sandbox", "deprecations", "set", "POST /nope")
    assert unknown.exit_code == 6
    assert "operation" in unknown.stderr
