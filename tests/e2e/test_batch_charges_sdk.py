"""Batch CSV charges through the SDK against the REAL reference server (D155-D158): async in process
(ASGITransport) and sync over a uvicorn socket, on SQLite and PostgreSQL.

Subscriptions come from the control plane (D142); the charges table is read through the payment history
and the control plane's view of each subscription, so "never charged twice" is checked on the server's
own records.
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

import httpx
import pytest

import paysdk
from paysdk.contracts.subscriptions import Plan

from .conftest import Maker, call

DECLINE = "4000000000000002"


async def _setup(make: Maker, count: int, card: str = "4242424242424242") -> tuple[Any, Any, Plan, list[str]]:
    sandbox = make()
    merchant = await call(sandbox.sandbox.create_client())
    plan = await call(sandbox.sandbox.plans.create(merchant.slug, "9.99", name="Monthly"))
    created = await call(sandbox.sandbox.subscriptions.create(plan.plan_id, count=count, card_number=card))
    client = make(wallet=paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key))
    client.test_merchant = merchant
    return sandbox, client, plan, list(created.sub_uids)


async def _batch_charges(sandbox: Any, sub_uids: list[str]) -> list[Any]:
    """Every batch charge of these subscriptions, as the server recorded them."""
    found: list[Any] = []
    for sub_uid in sub_uids:
        held = await call(sandbox.sandbox.subscriptions.get(sub_uid))
        found.extend(charge for charge in held.charges if charge.source == "batch")
    return found


def _csv(rows: list[str], header: str = "reference,subscriptionId,amount") -> bytes:
    return ("\r\n".join([header, *rows]) + "\r\n").encode()


@pytest.mark.covers("subscriptions.charges.upload_csv")
async def test_upload_charges_every_row_and_a_second_upload_charges_nothing(
    make: Maker, tmp_path: Path
) -> None:
    sandbox, client, plan, subs = await _setup(make, 3)
    declined = await call(sandbox.sandbox.subscriptions.create(plan.plan_id, card_number=DECLINE))
    subs_all = [*subs, declined.sub_uids[0]]
    text = (
        "\ufeffdescription,reference,subscriptionId,amount,currency\r\n"
        f'"line one\r\nline two",ref-1,{subs[0]},10.00,{plan.currency}\r\n'
        f'"say ""hi""",ref-2,{subs[1]},0.50,\r\n'
        "\r\n"
        f"plain,ref-3,{subs[2]},12,\r\n"
        f"x,ref-4,{declined.sub_uids[0]},1.25,\r\n"
    )
    path = tmp_path / "charges.csv"
    path.write_bytes(text.encode())

    report = await call(client.subscriptions.charges.upload_csv(path))
    assert isinstance(report, paysdk.BatchChargeReport)
    assert report.rows == 4
    assert [(r.row, r.status) for r in report.results] == [
        (2, "charged"),  # a record is one row, line breaks in a quoted cell included (D155)
        (3, "charged"),
        (5, "charged"),  # row 4 is a blank line: skipped, numbered
        (6, "declined"),
    ]
    assert (report.charged, report.declined, report.refused, report.unknown) == (3, 1, 0, 0)
    assert all(r.charge_id and not r.replayed for r in report.results)
    charges = await _batch_charges(sandbox, subs_all)
    assert sorted(c.reference for c in charges) == ["ref-1", "ref-2", "ref-3", "ref-4"]
    assert {c.reference: str(c.amount) for c in charges}["ref-2"] == "0.50"

    # The same file again: every row answers its earlier result, nothing is charged (D157).
    again = await call(client.subscriptions.charges.upload_csv(str(path)))
    assert [(r.row, r.status, r.charge_id) for r in again.results] == [
        (r.row, r.status, r.charge_id) for r in report.results
    ]
    assert again.replayed == 4, (again.results, report.results)
    # A file repeating rows of the earlier one, and a reference reused with other values.
    mixed = _csv([f"ref-3,{subs[2]},12.00", f"ref-1,{subs[0]},99.00", f"ref-5,{subs[0]},2"])
    third = await call(client.subscriptions.charges.upload_csv(io.BytesIO(mixed)))
    assert [(r.row, r.status, r.replayed) for r in third.results] == [
        (2, "charged", True),
        (3, "refused", False),
        (4, "charged", False),
    ]
    assert "reference" in (third.results[1].error or "")
    charges = await _batch_charges(sandbox, subs_all)
    assert sorted(c.reference for c in charges) == ["ref-1", "ref-2", "ref-3", "ref-4", "ref-5"]


@pytest.mark.covers("subscriptions.charges.upload_csv")
async def test_invalid_rows_send_nothing_unless_asked(make: Maker) -> None:
    sandbox, client, _plan, subs = await _setup(make, 2)
    data = _csv([f"ok-1,{subs[0]},5", f"=1+1,{subs[1]},5", f"ok-2,{subs[1]},-3", f"ok-1,{subs[1]},1.234"])
    with pytest.raises(paysdk.CsvValidationError) as caught:
        await call(client.subscriptions.charges.upload_csv(io.BytesIO(data)))
    assert isinstance(caught.value, paysdk.ValidationError)
    assert [(e.row, e.column) for e in caught.value.errors] == [
        (3, "reference"),
        (4, "amount"),
        (5, "amount"),
        (5, "reference"),
    ]
    assert "duplicate of row 2" in caught.value.errors[3].message
    assert await _batch_charges(sandbox, subs) == []

    report = await call(client.subscriptions.charges.upload_csv(io.BytesIO(data), send_valid_rows=True))
    assert [(r.row, r.status) for r in report.results] == [
        (2, "charged"),
        (3, "refused"),
        (4, "refused"),
        (5, "refused"),
    ]
    assert report.results[1].part is None
    assert report.results[0].part == 1
    # Every row named by its cells as read, the refused ones too (D492).
    assert [(r.reference, r.subscription_id) for r in report.results] == [
        ("ok-1", subs[0]),
        ("=1+1", subs[1]),
        ("ok-2", subs[1]),
        ("ok-1", subs[1]),
    ]
    assert [c.reference for c in await _batch_charges(sandbox, subs)] == ["ok-1"]

    with pytest.raises(paysdk.CsvValidationError) as missing:
        await call(client.subscriptions.charges.upload_csv(io.BytesIO(b"reference,amount\r\nr,1\r\n")))
    assert missing.value.field == "subscriptionId"


@pytest.mark.covers(
    "subscriptions.charges.read_csv", "subscriptions.charges.upload_part", "subscriptions.charges.upload_csv"
)
async def test_parts_are_numbered_as_in_the_file(make: Maker) -> None:
    sandbox, client, _plan, subs = await _setup(make, 7)
    rows = [f"p-{i},{sub},1.00" for i, sub in enumerate(subs)]
    rows.insert(3, "")  # a blank line keeps its row number
    data = _csv(rows)
    csv_file = await call(client.subscriptions.charges.read_csv(io.BytesIO(data), part_rows=3))
    assert [(p.index, p.first_row, p.last_row, p.rows) for p in csv_file.parts] == [
        (1, 2, 4, 3),
        (2, 6, 8, 3),
        (3, 9, 9, 1),
    ]
    assert len({p.key for p in csv_file.parts}) == 3
    assert all(p.key.startswith("csv-" + csv_file.sha256[:16]) for p in csv_file.parts)
    second = await call(client.subscriptions.charges.upload_part(csv_file.parts[1]))
    assert isinstance(second, paysdk.BatchPartResult)
    assert [(r.row, r.status, r.reference) for r in second.results] == [
        (6, "charged", "p-3"),
        (7, "charged", "p-4"),
        (8, "charged", "p-5"),
    ]
    report = await call(client.subscriptions.charges.upload_csv(io.BytesIO(data), part_rows=3))
    assert [r.row for r in report.results] == [2, 3, 4, 6, 7, 8, 9]
    assert [r.replayed for r in report.results] == [False, False, False, True, True, True, False]
    assert len(await _batch_charges(sandbox, subs)) == 7


class _LoseAnswers(httpx.AsyncBaseTransport):
    """Forwards to the app, then loses the answer of the first ``count`` uploads (the server acted)."""

    def __init__(self, app: Any, count: int) -> None:
        self.inner = httpx.ASGITransport(app=app)
        self.count = count

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.url.path.endswith("/upload-csv") and self.count > 0:
            self.count -= 1
            await response.aclose()
            raise httpx.ReadError("connection lost before the answer", request=request)
        return response


@pytest.mark.parametrize("honours", [True, False], ids=["keys-honoured", "no-keys"])
async def test_a_lost_answer_is_retried_only_with_keys_and_nothing_is_charged_twice(
    make: Maker, kind: str, honours: bool, request: pytest.FixtureRequest
) -> None:
    sandbox, made, _plan, subs = await _setup(make, 4)
    merchant = made.test_merchant
    environment = dataclasses.replace(make.environment, honours_idempotency_keys=honours)
    wallet = paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key)
    data = _csv([f"d-{i},{sub},3.00" for i, sub in enumerate(subs)])
    client: Any
    if kind == "async-asgi":
        transport = _LoseAnswers(request.getfixturevalue("app"), 1)  # lost AFTER the server charged
        client = paysdk.AsyncClient(environment=environment, wallet=wallet, transport=transport)
    else:  # the server's drop fault: the connection closes without an answer
        await call(sandbox.sandbox.add_fault("drop", route="POST /v1/subscriptions/charges/upload-csv"))
        client = paysdk.Client(environment=environment, wallet=wallet)
    make.made.append(client)

    report = await call(client.subscriptions.charges.upload_csv(io.BytesIO(data), part_rows=2))
    if honours:
        assert [r.status for r in report.results] == ["charged"] * 4
    else:
        assert [r.status for r in report.results] == ["unknown", "unknown", "charged", "charged"]
        assert "may or may not" in (report.results[0].error or "")
    # The rows of a part without an answer are named by their cells as read, as the others (D492).
    assert [(r.reference, r.subscription_id) for r in report.results] == [
        (f"d-{i}", sub) for i, sub in enumerate(subs)
    ]
    charged = await _batch_charges(sandbox, subs)
    expected_first = 2 if (honours or kind == "async-asgi") else 0
    assert len(charged) == expected_first + 2
    assert len({c.reference for c in charged}) == len(charged)  # no row charged twice

    # Sending the whole file again never charges a row twice (D157): every row ends charged once.
    again = await call(client.subscriptions.charges.upload_csv(io.BytesIO(data), part_rows=2))
    assert [r.status for r in again.results] == ["charged"] * 4
    charged = await _batch_charges(sandbox, subs)
    assert sorted(c.reference for c in charged) == ["d-0", "d-1", "d-2", "d-3"]
