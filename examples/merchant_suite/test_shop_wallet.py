"""Seeded wallet data: a cardholder and her card from seed.json, reached with the seeded signing key."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

import paysdk
from paysdk.testing import SandboxServer

SEED = json.loads((Path(__file__).parent / "seed.json").read_text(encoding="utf-8"))
SHOP = SEED["merchants"][0]


@pytest.fixture
def wallet(paysdk_server: SandboxServer) -> paysdk.Client:
    credentials = paysdk.WalletCredentials(SHOP["slug"], SHOP["signingPrivateKey"])
    return paysdk_server.client(wallet=credentials)


def test_seeded_card_has_its_balance(wallet: paysdk.Client) -> None:
    with wallet:
        card = wallet.wallet.cards.get("crd_ana_main")
        assert card.balance == Decimal("250.0000")
        assert [c.card_id for c in wallet.wallet.cards.list("usr_ana")] == ["crd_ana_main"]


def test_reset_restores_the_seeded_balance(wallet: paysdk.Client, paysdk_server: SandboxServer) -> None:
    with wallet:
        wallet.wallet.funds.withdraw("crd_ana_main", Decimal("100.0000"))
        assert wallet.wallet.cards.get("crd_ana_main").balance == Decimal("150.0000")
        paysdk_server.reset()
        assert wallet.wallet.cards.get("crd_ana_main").balance == Decimal("250.0000")
