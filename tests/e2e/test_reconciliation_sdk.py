"""Reconciliation through the SDK against the REAL reference server (D194, D241): async in process
(ASGITransport) and sync over a uvicorn socket, on SQLite and PostgreSQL.

Payments are settled by the daily job on the virtual clock (a Monday capture settles on Tuesday), one
is partly refunded after settlement, one stays captured; the file then has matched, amount-mismatch,
unknown, invalid (with row numbers) and missing rows. The same file twice gives the same report and
changes nothing; every exchange is checked against ``/openapi.json``.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from datetime import time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

import paysdk
from paysdk.contracts.reconciliation import PAGE_ENTRIES
from paysdk.server.services.reconciliation import KEPT_REPORTS

from .conftest import Maker, call
from .test_processor_webhooks import Raw
from .test_terminal_sdk import _create, move_to, next_weekday

HEADER = "settlementDate,paymentId,amount,currency"


@pytest.fixture
async def raw(kind: str, request: pytest.FixtureRequest) -> AsyncIterator[Raw]:
    client = Raw(kind, request)
    yield client
    await client.close()


async def _settled(make: Maker) -> dict[str, Any]:
    sandbox = make()
    merchant = await call(sandbox.sandbox.create_client(currencies=["GTQ", "USD"]))
    client = make(merchant_token=merchant.sandbox_token)
    monday = await next_weekday(sandbox, 0, time(10, 0))
    await move_to(sandbox, monday)
    paid = await _create(client, amount="10.00")
    refunded = await _create(client, amount="20.00")
    missing = await _create(client, amount="30.00")
    await move_to(sandbox, monday.replace(hour=23, minute=50))
    late = await _create(client, amount="40.00")  # after the cutoff: Tuesday's batch, settles Wednesday
    await move_to(sandbox, monday + timedelta(days=1, hours=-8))  # Tuesday 02:00: Monday's batch settled
    await call(client.terminal.refund(refunded.id, amount="5.00"))
    day = (monday + timedelta(days=1)).date()
    other = await call(sandbox.sandbox.create_client())
    other_client = make(merchant_token=other.sandbox_token)
    foreign = await _create(other_client, amount="10.00")
    return {
        "token": merchant.sandbox_token,
        "sandbox": sandbox,
        "client": client,
        "other": other_client,
        "day": day.isoformat(),
        "paid": paid,
        "refunded": refunded,
        "missing": missing,
        "late": late,
        "foreign": foreign,
        "affiliation": paid.affiliation,
        "other_affiliation": foreign.affiliation,
    }


def _file(s: dict[str, Any]) -> bytes:
    day = s["day"]
    lines = [
        "\ufeff" + HEADER,
        f"{day},{s['paid'].id},10.00,GTQ",  # 2 matched
        f"{day},{s['refunded'].id},20.00,GTQ",  # 3 amount mismatch: 20.00 captured, 5.00 refunded
        f"{day},tpm_{'9' * 24},1.00,GTQ",  # 4 unknown
        "",  # 5 blank: skipped, numbered
        f"2026-02-30,{s['paid'].id},1.5.0,GTQ",  # 6 invalid twice: date and amount
        f"{day},{s['paid'].id},10.00,GTQ",  # 7 invalid: the payment appears again
        f"{day},{s['late'].id},40.00,GTQ",  # 8 unknown: captured, not settled
        f"{day},{s['foreign'].id},10.00,GTQ",  # 9 unknown: another client's
        f'{day},"{s["paid"].id}",10.00',  # 10 invalid: 3 cells
        f"{day},=HYPERLINK(1),1.00,GTQ",  # 11 invalid: payment id
    ]
    return ("\r\n".join(lines) + "\r\n").encode()


def _check(report: Any, s: dict[str, Any]) -> None:
    assert isinstance(report, paysdk.ReconciliationReport)
    assert report.affiliation == s["affiliation"]
    assert report.rows == 9  # row 5 is blank
    assert [(m.row, m.payment_id) for m in report.matched] == [(2, s["paid"].id)]
    assert [(m.row, m.payment_id, m.expected, m.actual) for m in report.amount_mismatch] == [
        (3, s["refunded"].id, Decimal("15.00"), Decimal("20.00"))
    ]
    assert [(u.row, u.payment_id) for u in report.unknown] == [
        (4, "tpm_" + "9" * 24),
        (8, s["late"].id),
        (9, s["foreign"].id),
    ]
    assert "not settled" in report.unknown[1].reason
    assert [(i.row, i.field) for i in report.invalid] == [
        (6, "settlementDate"),
        (6, "amount"),
        (7, "paymentId"),
        (10, "row"),
        (11, "paymentId"),
    ]
    assert "row 2" in report.invalid[2].message
    assert [(m.payment_id, m.settlement_date.isoformat(), m.amount, m.currency) for m in report.missing] == [
        (s["missing"].id, s["day"], Decimal("30.00"), "GTQ")
    ]
    assert not report.all_matched


async def _states(s: dict[str, Any]) -> list[Any]:
    ids = [s[name].id for name in ("paid", "refunded", "missing", "late", "foreign")]
    return [(await call(s["sandbox"].sandbox.terminal.get(i))).to_wire() for i in ids]


@pytest.mark.covers("reconciliation.upload")
async def test_report_rows_and_the_same_file_twice(make: Maker, tmp_path: Path) -> None:
    s = await _settled(make)
    before = await _states(s)
    path = tmp_path / "settlements.csv"
    path.write_bytes(_file(s))

    first = await call(s["client"].reconciliation.upload(s["affiliation"], path))
    _check(first, s)
    again = await call(s["client"].reconciliation.upload(s["affiliation"], _file(s)))  # bytes this time
    assert again == first  # the same file, the same report (the same fileSha256 too)
    with path.open("rb") as handle:
        handle.read(0)
        assert await call(s["client"].reconciliation.upload(s["affiliation"], handle)) == first
        assert handle.tell() == len(_file(s))  # streamed from its position to the end
    assert await _states(s) == before  # nothing changed

    clean = f"{HEADER}\n{s['day']},{s['paid'].id},10.00,GTQ\n{s['day']},{s['missing'].id},30.00,gtq\n"
    clean += f"{s['day']},{s['refunded'].id},15.00,GTQ\n"
    report = await call(s["client"].reconciliation.upload(s["affiliation"], clean.encode()))
    assert report.all_matched
    assert [m.row for m in report.matched] == [2, 3, 4]
    empty = await call(s["client"].reconciliation.upload(s["affiliation"], (HEADER + "\n").encode()))
    assert (empty.rows, empty.all_matched) == (0, True)


async def test_another_affiliation_and_file_errors(make: Maker, raw: Raw) -> None:
    s = await _settled(make)
    with pytest.raises(paysdk.NotFoundError) as caught:
        await call(s["client"].reconciliation.upload(s["other_affiliation"], _file(s)))
    assert caught.value.body["details"][0]["field"] == "affiliation"
    with pytest.raises(paysdk.ValidationError) as local:
        await call(s["client"].reconciliation.upload("12345", _file(s)))
    assert local.value.field == "affiliation"

    # A quoted cell past the csv module's field limit hiding a matching row (issue 20, D320): a file
    # error naming the row and the column, locally and on the server, never a matched row.
    smuggled = (
        f'{HEADER}\n{s["day"]},"' + "x" * 140_000 + f'\n{s["day"]},{s["paid"].id},10.00,GTQ\n",10.00,GTQ\n'
    ).encode()
    with pytest.raises(paysdk.ValidationError, match="row 2") as hidden:
        await call(s["client"].reconciliation.upload(s["affiliation"], smuggled))
    assert hidden.value.field == "paymentId"

    # A file error is refused before anything is sent (the server's own reader, in the SDK).
    for content, field in (
        (b"settlementDate,paymentId,amount\n", "currency"),
        (b"settlementDate,paymentId,amount,currency,memo\n", "memo"),
        (b"settlementDate,paymentId,paymentId,amount,currency\n", "paymentId"),
        (b"", "file"),
        (HEADER.encode() + b"\n2026-01-05,tpm_1,1.00,GTQ\n\xff\xfe\n", "file"),
    ):
        with pytest.raises(paysdk.ValidationError) as refused:
            await call(s["client"].reconciliation.upload(s["affiliation"], content))
        assert refused.value.field == field

    # The server refuses the same files itself: 400 naming the column, never a 500.
    auth = {"Authorization": s["token"]}
    path = f"/reports/payfac/conciliation/upload/{s['affiliation']}"
    for content, field in (
        (b"settlementDate,paymentId,amount\n", "currency"),
        (b"\xff\xfe,x\n", "file"),
        (smuggled, "paymentId"),
    ):
        response = await _multipart(raw, path, content, auth)
        assert (response.status_code, response.json()["details"][0]["field"]) == (400, field), response.text
        if content is smuggled:
            assert "row 2" in response.json()["details"][0]["message"]
    response = await raw.post(path, b"{}", auth)
    assert (response.status_code, response.json()["details"][0]["field"]) == (400, "file")
    too_big = await _multipart(raw, path, HEADER.encode() + b"\n" + b"x" * (17 << 20), auth)
    assert (too_big.status_code, too_big.json()["details"][0]["field"]) == (413, "body")
    unauthenticated = await _multipart(raw, path, _file(s), {})
    assert unauthenticated.status_code == 401


async def _multipart(raw: Raw, path: str, content: bytes, headers: dict[str, str]) -> httpx.Response:
    boundary = "test-boundary-1"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="r.csv"\r\n'
            f"Content-Type: text/csv\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return await raw.post(
        path, body, {**headers, "Content-Type": f"multipart/form-data; boundary={boundary}"}
    )


def test_report_io_is_streamed(tmp_path: Path) -> None:
    """The shared reader reads a large file record by record (no whole-file list)."""
    from paysdk.contracts.reconciliation import read_reconciliation_csv

    rows = "".join(f"2026-01-05,tpm_{i:024d},1.00,GTQ\n" for i in range(20_000))
    scan = read_reconciliation_csv(io.BytesIO((HEADER + "\n" + rows).encode()))
    assert (scan.rows, len(scan.valid), scan.errors) == (20_000, 20_000, [])


def invalid_rows(s: dict[str, Any], count: int) -> bytes:
    """``count`` rows of 8 bytes with 4 errors each (rows 2 to ``count + 1``), then a row matching the
    paid payment (``count + 2``)."""
    tail = f"{s['day']},{s['paid'].id},10.00,GTQ\n"
    return (HEADER + "\n" + "x,!,-,1\n" * count + tail).encode()


@pytest.mark.covers("reconciliation.upload", "reconciliation.report_page")
async def test_a_report_of_two_pages_is_read_whole_and_the_latest_kept(make: Maker, raw: Raw) -> None:
    """D331: past PAGE_ENTRIES entries the answer is the first page and the counts; upload() reads the
    rest; the pages are the caller's, and a client keeps its latest KEPT_REPORTS reports."""
    s = await _settled(make)
    count = PAGE_ENTRIES // 4 + 1  # 4 errors a row: the entries pass one page
    content = invalid_rows(s, count)
    report = await call(s["client"].reconciliation.upload(s["affiliation"], content))
    entries = 4 * count + 1 + 2  # the errors, the matched row, two payments of the day not named
    assert (report.pages, report.complete, report.all_matched) == (2, True, False)
    assert report.counts.to_wire() == {
        "matched": 1,
        "missing": 2,
        "unknown": 0,
        "amountMismatch": 0,
        "invalid": 4 * count,
        "invalidRows": count,
    }
    assert len(report.invalid) == 4 * count
    assert [item.row for item in report.invalid[::4]] == list(range(2, count + 2))
    assert [m.row for m in report.matched] == [count + 2]
    assert [(m.payment_id, m.amount) for m in report.missing] == sorted(
        [(s["refunded"].id, Decimal("15.00")), (s["missing"].id, Decimal("30.00"))]
    )
    first = await call(s["client"].reconciliation.upload(s["affiliation"], content, whole=False))
    assert (first.complete, len(first.invalid) + len(first.matched), first.counts) == (
        False,
        PAGE_ENTRIES,
        report.counts,
    )
    second = await call(s["client"].reconciliation.report_page(first.report_id, 2))
    assert isinstance(second, paysdk.ReconciliationReportPage)
    assert (second.page, second.pages) == (2, 2)
    assert len(second.invalid) + len(second.missing) == entries - PAGE_ENTRIES
    assert first.invalid + second.invalid == report.invalid

    # 404 naming the page or the report: past the last page, not a number, another client's report.
    auth = {"Authorization": s["token"]}
    base = f"/reports/payfac/conciliation/reports/{first.report_id}/pages/"
    for page, field in (("3", "page"), ("0", "page"), ("x", "page")):
        refused = await call(raw.http.get(base + page, headers=auth))
        assert (refused.status_code, refused.json()["details"][0]["field"]) == (404, field), refused.text
    with pytest.raises(paysdk.NotFoundError) as foreign:
        await call(s["other"].reconciliation.report_page(first.report_id, 1))
    assert foreign.value.body["details"][0]["field"] == "reportId"
    with pytest.raises(paysdk.ValidationError):
        await call(s["client"].reconciliation.report_page(first.report_id, 0))

    # The client's latest 10 reports are kept: the 11th long upload since forgets the first.
    for _ in range(KEPT_REPORTS - 1):
        await call(s["client"].reconciliation.upload(s["affiliation"], content, whole=False))
    assert (await call(s["client"].reconciliation.report_page(first.report_id, 2))).page == 2
    await call(s["client"].reconciliation.upload(s["affiliation"], content, whole=False))
    with pytest.raises(paysdk.NotFoundError):
        await call(s["client"].reconciliation.report_page(first.report_id, 2))
    # A report of one page is not stored: no report id.
    short = await call(s["client"].reconciliation.upload(s["affiliation"], _file(s), whole=False))
    assert (short.pages, short.report_id, short.complete) == (1, None, True)
