"""A hypothesis state machine over the ledger, through the HTTP API in process (D41, D43).

Rules: fund, withdraw, transfer, authorize, capture, refund, clear. Invariants after every step: each
balance equals the sum of its movements and the model's figure, is never negative, keeps at most 4
places; available = balance - pending debits >= 0; transfers conserve the total.
"""

from __future__ import annotations

import base64
import warnings
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import nacl.signing
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from paysdk import _json
from paysdk._jwt import sign_merchant
from paysdk.server import create_app

with warnings.catch_warnings():  # starlette's note about its httpx dependency
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

AMOUNTS = st.integers(min_value=1, max_value=600_000).map(lambda units: Decimal(units).scaleb(-4))
CARDS = st.integers(min_value=0, max_value=2)


class Ledger(RuleBasedStateMachine):
    """The model: per card balance, pending debits and credits; charges and refunds in flight."""

    client: ClassVar[TestClient]
    charges = Bundle("charges")
    refunds = Bundle("refunds")

    def _post(self, path: str, payload: Any = None, auth: bool = True) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"} if auth else {}
        if payload is not None:
            headers["Content-Type"] = "application/json"  # the control plane takes JSON only (D92)
        response = self.client.post(
            path, content=_json.dumps(payload) if payload is not None else b"", headers=headers
        )
        return response.status_code, _json.loads(response.content)

    @initialize()
    def setup(self) -> None:
        status, merchant = self._post("/_sandbox/clients", {}, auth=False)
        assert status == 201
        key = nacl.signing.SigningKey(base64.b64decode(merchant["signingPrivateKey"]))
        self.token = ""
        status, login = self._post(
            "/rest/auth/login",
            {"merchant": merchant["slug"], "signature": sign_merchant(key, merchant["slug"])},
            False,
        )
        assert status == 200
        self.token = login["data"]["accessToken"]
        slug = merchant["slug"]
        status, user = self._post(
            "/_sandbox/users",
            {"merchant": slug, "username": "u", "email": f"u@{slug}.test", "password": "12345678"},
            auth=False,
        )
        assert status == 201
        self.cards: list[str] = []
        for _ in range(3):
            status, card = self._post(f"/rest/users/{user['authUserId']}/cards/virtuals", {})
            assert status == 201
            self.cards.append(card["data"]["cardId"])
        self.balance = {card: Decimal(0) for card in self.cards}
        self.pending = {card: Decimal(0) for card in self.cards}
        self.credits = {card: Decimal(0) for card in self.cards}
        self.external = Decimal(0)  # money that entered (+) or left (-) the wallet

    def _available(self, card: str) -> Decimal:
        return self.balance[card] - self.pending[card]

    @rule(index=CARDS, amount=AMOUNTS)
    def fund(self, index: int, amount: Decimal) -> None:
        card = self.cards[index]
        status, _ = self._post(f"/rest/cards/{card}/funds", {"operation": "add", "amount": amount})
        assert status == 200
        self.balance[card] += amount
        self.external += amount

    @rule(index=CARDS, amount=AMOUNTS)
    def withdraw(self, index: int, amount: Decimal) -> None:
        card = self.cards[index]
        status, answer = self._post(f"/rest/cards/{card}/funds", {"operation": "withdraw", "amount": amount})
        if amount <= self._available(card):
            assert status == 200, answer
            self.balance[card] -= amount
            self.external -= amount
        else:
            assert (status, answer["ownCode"]) == (422, 7303)

    @rule(source=CARDS, dest=CARDS, amount=AMOUNTS)
    def transfer(self, source: int, dest: int, amount: Decimal) -> None:
        src, dst = self.cards[source], self.cards[dest]
        status, answer = self._post(f"/rest/cards/{src}/transfers", {"toCardId": dst, "amount": amount})
        if src == dst:
            assert (status, answer["ownCode"]) == (400, 7306)
        elif amount <= self._available(src):
            assert status == 201, answer
            self.balance[src] -= amount
            self.balance[dst] += amount
        else:
            assert (status, answer["ownCode"]) == (422, 7303)

    @rule(target=charges, index=CARDS, amount=AMOUNTS)
    def authorize(self, index: int, amount: Decimal) -> Any:
        card = self.cards[index]
        status, answer = self._post(f"/_sandbox/cards/{card}/charges", {"amount": amount}, auth=False)
        if amount <= self._available(card):
            assert status == 201, answer
            self.pending[card] += amount
            return ("authorized", answer["chargeId"], card, amount)
        assert (status, answer["ownCode"]) == (422, 7303)
        return None

    @rule(target=charges, charge=consumes(charges))
    def capture(self, charge: Any) -> Any:
        if charge is None or charge[0] != "authorized":
            return charge
        _, charge_id, card, amount = charge
        status, answer = self._post(f"/_sandbox/charges/{charge_id}/capture", auth=False)
        assert status == 200, answer
        self.pending[card] -= amount
        self.balance[card] -= amount
        self.external -= amount
        return ("captured", charge_id, card, amount)

    @rule(target=refunds, charge=consumes(charges), data=st.data())
    def refund(self, charge: Any, data: st.DataObject) -> Any:
        if charge is None or charge[0] != "captured":
            return None
        _, charge_id, card, amount = charge
        part = data.draw(
            st.integers(min_value=1, max_value=int(amount * 10_000)).map(lambda u: Decimal(u).scaleb(-4))
        )
        status, answer = self._post(f"/_sandbox/charges/{charge_id}/refunds", {"amount": part}, auth=False)
        assert status == 201, answer
        self.credits[card] += part
        return (answer["refundId"], card, part)

    @rule(refund=consumes(refunds))
    def clear(self, refund: Any) -> None:
        if refund is None:
            return
        refund_id, card, amount = refund
        status, answer = self._post(f"/_sandbox/refunds/{refund_id}/clear", auth=False)
        assert status == 200, answer
        self.credits[card] -= amount
        self.balance[card] += amount
        self.external += amount

    @invariant()
    def ledger_holds(self) -> None:
        if not hasattr(self, "cards"):
            return
        headers = {"Authorization": f"Bearer {self.token}"}
        total = Decimal(0)
        for card in self.cards:
            state = _json.loads(self.client.get(f"/rest/cards/{card}", headers=headers).content)["data"]
            moves = _json.loads(self.client.get(f"/rest/cards/{card}/movements", headers=headers).content)[
                "data"
            ]
            signed = sum(
                (m["amount"] if m["direction"] == "credit" else -m["amount"] for m in moves), Decimal(0)
            )
            balance = state["balance"]
            assert balance == signed == self.balance[card]
            assert balance >= 0
            assert balance == balance.quantize(Decimal("0.0001"))
            assert state["pendingDebits"] == self.pending[card]
            assert state["pendingCredits"] == self.credits[card]
            assert state["availableBalance"] == balance - state["pendingDebits"] >= 0
            if moves:
                assert moves[-1]["balanceAfter"] == balance
            total += balance
        assert total == self.external


@pytest.mark.heavy
def test_ledger_state_machine(tmp_path: Path) -> None:
    app = create_app(f"sqlite:///{tmp_path / 'ledger.db'}", start_ticker=False)
    try:
        Ledger.client = TestClient(app)
        run_state_machine_as_test(
            Ledger,
            settings=settings(
                max_examples=25,
                stateful_step_count=20,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
                database=None,
            ),
        )
    finally:
        app.state.paysdk.db.dispose()
