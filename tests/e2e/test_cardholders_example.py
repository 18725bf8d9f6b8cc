"""``examples/cardholders_upload.py`` runs against the reference server as CI runs every example (under
``python -X dev -W error::ResourceWarning``, :mod:`tests.e2e.test_examples`), with a live stream."""

from __future__ import annotations

import secrets
from pathlib import Path

import httpx
import pytest

import paysdk

from .test_examples import _run

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def test_cardholders_upload_example(live_server: str, tmp_path: Path) -> None:
    with paysdk.Client(environment=paysdk.Environment.local(live_server)) as sandbox:
        merchant = sandbox.sandbox.create_client()
    assert merchant.signing_private_key is not None
    password = "operator-" + secrets.token_hex(8)
    operator = httpx.post(
        live_server + "/_sandbox/backoffice/operators",
        json={"merchant": merchant.slug, "email": "ops@example.com", "password": password},
        timeout=30,
    )
    assert operator.status_code == 201, operator.text
    partner = httpx.post(
        live_server + "/_sandbox/backoffice/partners",
        json={"merchant": merchant.slug, "name": "Acme payroll"},
        timeout=30,
    )
    assert partner.status_code == 201, partner.text
    rows = ["externalId,username,email,firstName,lastName,issueCard"]
    rows += [f"e{n},holder{n},h{n}@example.com,Ana,Holder,{'yes' if n == 1 else ''}" for n in range(1, 4)]
    rows.append("e4,holder4,not-an-email,Ana,Holder,")
    path = tmp_path / "holders.csv"
    path.write_text("\r\n".join(rows) + "\r\n")
    env = {
        "PAYSDK_BASE_URL": live_server,
        "PAYSDK_BACKOFFICE_MERCHANT": merchant.slug,
        "PAYSDK_WALLET_PRIVATE_KEY": merchant.signing_private_key,
        "PAYSDK_BACKOFFICE_EMAIL": "ops@example.com",
        "PAYSDK_BACKOFFICE_PASSWORD": password,
        "PAYSDK_PARTNER_ID": partner.json()["partnerId"],
    }
    out = _run("cardholders_upload.py", env, str(path)).stdout
    assert "queued" in out
    assert "done: 3 created, 1 failed, 1 cards" in out
    assert "row 5 (e4): email:" in out
    assert password not in out
    assert merchant.signing_private_key not in out
