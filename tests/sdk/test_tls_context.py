"""One TLS verification context per process, verifying as httpx's default does (D761)."""

from __future__ import annotations

import shutil
import ssl
from pathlib import Path

import certifi
import pytest

import paysdk
from paysdk._tls import verification_context


def test_the_context_is_made_once_and_verifies_with_certifis_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    context = verification_context()
    assert context is verification_context()
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
    assert len(context.get_ca_certs()) > 50  # certifi's bundle, loaded


def test_ssl_cert_file_gives_its_own_context(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.pem"
    shutil.copy(certifi.where(), bundle)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    mine = verification_context()
    monkeypatch.delenv("SSL_CERT_FILE")
    assert mine is not verification_context()
    assert mine.verify_mode is ssl.CERT_REQUIRED


def test_two_sdk_clients_share_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    made: list[object] = []
    original = paysdk._client.verification_context  # type: ignore[attr-defined]

    def counted() -> ssl.SSLContext:
        context = original()
        made.append(context)
        return context

    monkeypatch.setattr(paysdk._client, "verification_context", counted)
    local = paysdk.Environment.local("http://127.0.0.1:9")
    with paysdk.Client(environment=local) as one, paysdk.Client(environment=local) as two:
        assert one is not two
    assert len(made) == 2
    assert made[0] is made[1]
