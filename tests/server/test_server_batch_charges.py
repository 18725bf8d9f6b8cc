"""``POST /v1/subscriptions/charges/upload-csv`` on the reference server, in process, SQLite and
PostgreSQL (D155-D157): malformed files are a clear 400 naming ``file`` or the column, malformed rows a
row-numbered ``refused`` result, never a 5xx; no row is ever charged twice (checked on the charges table).
"""

from __future__ import annotations

import secrets
from decimal import Decimal
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session
from wallet.kit import Kit, bearer, body, dumps

from paysdk.server.subscription_tables import BatchRowRow, SubscriptionChargeRow, SubscriptionRow

PATH = "/v1/subscriptions/charges/upload-csv"
JSON_TYPE = {"Content-Type": "application/json"}


class Batch:
    """A merchant with a plan, subscriptions and an application token."""

    def __init__(self, client: httpx.AsyncClient, app: FastAPI, kit: Kit, plan: dict[str, Any]) -> None:
        self.client, self.app, self.kit, self.plan = client, app, kit, plan
        self.token = ""

    async def subscriptions(self, count: int = 1, card: str = "4242424242424242") -> list[str]:
        response = await self.client.post(
            "/_sandbox/subscriptions",
            content=dumps({"planId": self.plan["planId"], "count": count, "cardNumber": card}),
            headers=JSON_TYPE,
        )
        assert response.status_code in (200, 201), response.text
        uids: list[str] = body(response)["subUids"]
        return uids

    async def upload(
        self, content: bytes, *, key: str | None = None, name: str = "file", token: str | None = None
    ) -> httpx.Response:
        headers = bearer(token if token is not None else self.token)
        if key is not None:
            headers["Idempotency-Key"] = key
        # A fixed boundary, as the SDK's (D158): the same part is the same body, whatever sends it.
        headers["Content-Type"] = "multipart/form-data; boundary=test-boundary"
        framed = (
            b'--test-boundary\r\nContent-Disposition: form-data; name="' + name.encode() + b'"; '
            b'filename="charges.csv"\r\nContent-Type: text/csv\r\n\r\n'
            + content
            + b"\r\n--test-boundary--\r\n"
        )
        return await self.client.post(PATH, content=framed, headers=headers)

    def db(self, fn: Any) -> Any:
        return self.app.state.paysdk.call(fn)

    def charges(self) -> list[tuple[str, str]]:
        """``(reference, status)`` of every batch charge in the charges table."""

        def read(session: Session) -> list[tuple[str, str]]:
            rows = session.execute(
                select(SubscriptionChargeRow.reference, SubscriptionChargeRow.status).where(
                    SubscriptionChargeRow.source == "batch"
                )
            ).all()
            return sorted((str(ref), str(status)) for ref, status in rows)

        result: list[tuple[str, str]] = self.db(read)
        return result


async def _batch(client: httpx.AsyncClient, app: FastAPI, merchant_factory: Any) -> Batch:
    merchant = await merchant_factory()
    kit = Kit(client, merchant)
    response = await client.post(
        "/_sandbox/plans",
        content=dumps({"client": merchant.slug, "amount": Decimal("9.99"), "name": "Monthly"}),
        headers=JSON_TYPE,
    )
    assert response.status_code in (200, 201), response.text
    batch = Batch(client, app, kit, body(response))
    batch.token = await kit.app()
    return batch


@pytest.fixture
async def batch(asgi_client: httpx.AsyncClient, app: FastAPI, merchant_factory: Any) -> Batch:
    return await _batch(asgi_client, app, merchant_factory)


def _csv(*rows: str, header: str = "subscriptionId,amount,reference") -> bytes:
    return ("\n".join([header, *rows]) + "\n").encode()


def _problem(response: httpx.Response, status: int, field: str) -> str:
    assert response.status_code == status, response.text
    answer = body(response)
    assert answer["ownCode"] is None
    assert answer["details"][0]["field"] == field, answer
    message: str = answer["details"][0]["message"]
    return message


def _results(response: httpx.Response) -> list[tuple[int, str, str | None]]:
    assert response.status_code == 200, response.text
    answer = body(response)
    assert answer["success"] is True
    assert answer["message"]
    return [(item["row"], item["status"], item.get("error")) for item in answer["data"]["results"]]


async def test_file_errors_name_the_file_or_the_column_and_charge_nothing(batch: Batch) -> None:
    (sub,) = await batch.subscriptions()
    junk = b"\xff\xfe\x00" + secrets.token_bytes(4096)  # never UTF-8, whatever the random bytes
    assert "UTF-8" in _problem(await batch.upload(junk), 400, "file")
    latin = "subscriptionId,amount,reference,description\n" + f"{sub},1,r1,café\n"
    assert "UTF-8" in _problem(await batch.upload(latin.encode("latin-1")), 400, "file")
    _problem(await batch.upload(b""), 400, "file")
    _problem(await batch.upload(b"subscriptionId,amount,reference\n"), 400, "file")  # no rows
    _problem(await batch.upload(_csv(f"{sub},1", header="subscriptionId,amount")), 400, "reference")
    _problem(
        await batch.upload(_csv(f"{sub},1,r,x", header="subscriptionId,amount,reference,note")), 400, "note"
    )
    _problem(
        await batch.upload(_csv(f"{sub},1,r,1", header="subscriptionId,amount,reference,amount")),
        400,
        "amount",
    )
    _problem(await batch.upload(_csv(f"{sub},1,r"), name="other"), 400, "file")  # no part named file
    plain = await batch.client.post(PATH, content=_csv(f"{sub},1,r"), headers=bearer(batch.token))
    _problem(plain, 400, "file")  # not multipart
    assert batch.charges() == []


def smuggling_csv(hidden_sub: str, visible_sub: str) -> bytes:
    """A quoted description past the csv module's field limit (131,072 characters) hiding the line
    ``<hidden_sub>,7.77,hidden,...`` (issue 20)."""
    return (
        "subscriptionId,amount,reference,description\n"
        + f'{visible_sub},1.00,visible,"'
        + "x" * 140_000
        + f"\n{hidden_sub},7.77,hidden,smuggled\n"
        + 'tail"\n'
        + f"{visible_sub},2.00,after,\n"
    ).encode()


async def test_a_csv_parse_error_refuses_the_whole_file_and_nothing_is_charged(batch: Batch) -> None:
    """D320: the hidden line is never a row; the 400 names the row and column; nothing is charged, and a
    multi-megabyte line or a quote followed by text is refused the same way."""
    hidden, visible = await batch.subscriptions(2)
    message = _problem(await batch.upload(smuggling_csv(hidden, visible)), 400, "description")
    assert "row 2" in message
    assert "field limit" in message
    line = _csv(f"{visible},1,ok", f"{visible},1," + "r" * (4 << 20))
    assert "row 3" in _problem(await batch.upload(line), 400, "reference")
    quote = _csv(f"{visible},1,ok", f'{visible},1,"r"x')
    assert "row 3" in _problem(await batch.upload(quote), 400, "reference")
    assert batch.charges() == []


async def test_malformed_multipart_framing_names_the_file_and_charges_nothing(batch: Batch) -> None:
    (sub,) = await batch.subscriptions(1)
    csv_part = b'--b\r\nContent-Disposition: form-data; name="file"\r\n\r\n' + _csv(f"{sub},1,r1") + b"\r\n"
    bodies = {
        "no Content-Disposition": b"--b\r\nX-Other: 1\r\n\r\nabc\r\n" + csv_part + b"--b--\r\n",
        "two parts named file": csv_part + csv_part + b"--b--\r\n",
        "ends before the closing boundary": csv_part,
        "more than 16 parts": b"".join(
            b'--b\r\nContent-Disposition: form-data; name="x"\r\n\r\n1\r\n' for _ in range(17)
        )
        + csv_part
        + b"--b--\r\n",
    }
    for words, content in bodies.items():
        headers = {**bearer(batch.token), "Content-Type": "multipart/form-data; boundary=b"}
        response = await batch.client.post(PATH, content=content, headers=headers)
        assert words in _problem(response, 400, "file"), words
    boundless = {**bearer(batch.token), "Content-Type": "multipart/form-data"}
    _problem(await batch.client.post(PATH, content=csv_part, headers=boundless), 400, "Content-Type")
    assert batch.charges() == []


async def test_malformed_rows_are_refused_by_row_and_column_never_a_5xx(batch: Batch) -> None:
    sub, other_plan_sub = await batch.subscriptions(2)
    huge = "9" * 2000  # a cell past 1,024 characters (a csv parse error refuses the file: D320)
    content = _csv(
        f"{sub},10.00,ok-1",
        f"{sub},5,=1+1",  # a formula as the reference
        f"{sub},-5,neg",
        f"{sub},1.234,three",
        f"{sub},{huge},big",
        "sub_unknown,1,unknown",
        f"{sub},2,ok-1",  # duplicate of row 2
        f"{sub},1e3,exp",
        f"{sub},0.00,zero",
        f"{other_plan_sub},3,ok-2",
    )
    response = await batch.upload(content)
    results = _results(response)
    assert [(row, status) for row, status, _ in results] == [
        (2, "charged"),
        (3, "refused"),
        (4, "refused"),
        (5, "refused"),
        (6, "refused"),
        (7, "refused"),
        (8, "refused"),
        (9, "refused"),
        (10, "refused"),
        (11, "charged"),
    ]
    errors = {row: error or "" for row, _, error in results}
    assert errors[3].startswith("reference:")
    assert errors[4].startswith("amount:")
    assert errors[5].startswith("amount:")
    assert errors[6].startswith("amount:")
    assert "1,024" in errors[6]
    assert errors[7].startswith("subscriptionId:")
    assert "unknown" in errors[7]
    assert errors[8] == "reference: duplicate of row 2"
    assert errors[9].startswith("amount:")
    assert errors[10].startswith("amount:")
    assert batch.charges() == [("ok-1", "approved"), ("ok-2", "approved")]


async def test_other_clients_inactive_and_wrong_currency_are_refused(
    batch: Batch, asgi_client: httpx.AsyncClient, app: FastAPI, merchant_factory: Any
) -> None:
    other = await _batch(asgi_client, app, merchant_factory)
    (theirs,) = await other.subscriptions()
    mine, cancelled, inactive = await batch.subscriptions(3)
    assert (
        await asgi_client.delete(f"/v1/subscriptions/{cancelled}", headers=bearer(batch.token))
    ).status_code == 200

    def suspend(session: Session) -> None:
        session.execute(
            update(SubscriptionRow).where(SubscriptionRow.sub_uid == inactive).values(status="inactive")
        )

    batch.db(suspend)
    wrong = "EUR" if batch.plan["currency"] != "EUR" else "USD"
    content = _csv(
        f"{theirs},1,theirs,",
        f"{cancelled},1,cancelled,",
        f"{inactive},1,inactive,",
        f"{mine},1,wrong-currency,{wrong}",
        f"{mine},1,right-currency,{batch.plan['currency'].lower()}",
        header="subscriptionId,amount,reference,currency",
    )
    results = _results(await batch.upload(content))
    assert [status for _, status, _ in results] == ["refused", "refused", "refused", "refused", "charged"]
    assert "unknown" in (results[0][2] or "")  # another client's subscription is unknown to this one
    assert "cancelled" in (results[1][2] or "")
    assert "inactive" in (results[2][2] or "")
    assert (results[3][2] or "").startswith("currency:")
    assert batch.charges() == [("right-currency", "approved")]
    # A refused row leaves no trace: once fixed, it is charged (D157).
    fixed = _csv(f"{mine},1,wrong-currency")
    assert [status for _, status, _ in _results(await batch.upload(fixed))] == ["charged"]


async def test_a_file_again_or_rows_again_are_never_charged_twice(batch: Batch) -> None:
    subs = await batch.subscriptions(2)
    declined = (await batch.subscriptions(1, card="4000000000000002"))[0]
    text = (
        "\ufeffreference,amount,subscriptionId,description\r\n"
        f'a-1,10.00,{subs[0]},"multi\r\nline, with ""quotes"""\r\n'
        f"a-2,1,{subs[1]},\r\n"
        f"a-3,1,{declined},\r\n"
    )
    first = _results(await batch.upload(text.encode()))
    assert [(row, status) for row, status, _ in first] == [(2, "charged"), (3, "charged"), (4, "declined")]
    again = await batch.upload(text.encode())
    data = body(again)["data"]
    assert data["replayed"] == 3
    assert data["charged"] == 2
    assert data["declined"] == 1
    assert all(item["replayed"] for item in data["results"])
    repeat = _csv(f"{subs[1]},1.00,a-2", f"{subs[0]},3,a-4", f"{subs[1]},7,a-1")
    results = _results(await batch.upload(repeat))
    assert [(row, status) for row, status, _ in results] == [(2, "charged"), (3, "charged"), (4, "refused")]
    assert "already used" in (results[2][2] or "")
    assert batch.charges() == [
        ("a-1", "approved"),
        ("a-2", "approved"),
        ("a-3", "declined"),
        ("a-4", "approved"),
    ]

    def stored(session: Session) -> int:
        return int(session.scalar(select(func.count()).select_from(BatchRowRow)) or 0)

    assert batch.db(stored) == 4


async def test_five_thousand_rows_are_accepted_and_one_more_refused_whole(batch: Batch) -> None:
    subs = await batch.subscriptions(10)
    rows = [f"{subs[i % 10]},1.00,r-{i}" for i in range(5001)]
    refused = await batch.upload(_csv(*rows))
    assert "5,000" in _problem(refused, 400, "file")
    assert batch.charges() == []
    accepted = body(await batch.upload(_csv(*rows[:5000])))["data"]
    assert accepted["rows"] == 5000
    assert accepted["charged"] == 5000
    assert accepted["results"][-1]["row"] == 5001
    assert len(batch.charges()) == 5000


async def test_a_keyed_part_is_replayed_and_its_key_is_bound_to_its_body(batch: Batch) -> None:
    (sub,) = await batch.subscriptions()
    content = _csv(f"{sub},2.50,k-1")
    first = await batch.upload(content, key="csv-abc-1")
    assert first.status_code == 200
    assert "idempotent-replayed" not in first.headers
    second = await batch.upload(content, key="csv-abc-1")
    assert second.headers.get("idempotent-replayed") == "true"
    assert second.content == first.content
    other = await batch.upload(_csv(f"{sub},2.50,k-2"), key="csv-abc-1")
    _problem(other, 422, "Idempotency-Key")
    assert batch.charges() == [("k-1", "approved")]


async def test_auth_and_body_bound(batch: Batch) -> None:
    (sub,) = await batch.subscriptions()
    assert (await batch.upload(_csv(f"{sub},1,x"), token="nope")).status_code == 401
    user = await batch.client.post(
        PATH, files={"file": ("c.csv", _csv(f"{sub},1,x"), "text/csv")}, headers={}
    )
    assert user.status_code == 401
    big = b"subscriptionId,amount,reference\n" + b"x" * (16 * 1024 * 1024)
    _problem(await batch.upload(big), 413, "body")
    assert batch.charges() == []


async def test_two_uploads_of_the_same_rows_at_once_charge_each_row_once(batch: Batch) -> None:
    import asyncio

    subs = await batch.subscriptions(5)
    content = _csv(*(f"{sub},4.00,same-{index}" for index, sub in enumerate(subs)))
    first, second = await asyncio.gather(batch.upload(content), batch.upload(content))
    answers = [body(first)["data"], body(second)["data"]]
    assert sorted(answer["replayed"] for answer in answers) == [0, 5]
    ids = [[item["chargeId"] for item in answer["results"]] for answer in answers]
    assert ids[0] == ids[1]
    assert batch.charges() == [(f"same-{index}", "approved") for index in range(5)]
