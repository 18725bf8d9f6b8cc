"""The reconciliation upload of issue 20 (item 8; D331) through the SDK against the real reference
server (async in process, sync over a socket; SQLite and PostgreSQL): 99,999 rows with 4 errors each
and a matched row, about 800 KB. The server answered 37.5 MB of report, past the SDK's 16 MiB answer
cap, so the call failed with default settings. Now every answer is at most a page, and the SDK, with
default settings, returns the whole report.

The exchanges of this module are not checked against ``/openapi.json`` (400,000 entries take the
checker minutes): ``test_reconciliation_sdk.py`` checks the same operations with a report of two pages.
"""

from __future__ import annotations

import httpx
import pytest

import paysdk
from paysdk.contracts.reconciliation import PAGE_ENTRIES

from .conftest import Maker, call
from .test_processor_webhooks import Raw
from .test_reconciliation_sdk import _multipart, _settled, invalid_rows, raw

pytestmark = pytest.mark.heavy  # minutes of subprocesses: run first (tests/conftest.py)

__all__ = ["raw"]

#: Rows with 4 errors each; with the matched row, the 100,000 data rows a file may hold.
LONG_ROWS = 99_999


@pytest.fixture
def server_recorder() -> None:
    """No conformance recording here (module docstring)."""
    return None


@pytest.mark.covers("reconciliation.upload", "reconciliation.report_page")
async def test_the_100k_row_upload_is_bounded_and_read_whole(make: Maker, raw: Raw) -> None:
    """D331: the answer is the first page and the counts (not the 37.5 MB of every entry), each page
    answer is below 1 MiB, and the SDK reads the other pages with default settings and returns the
    whole report."""
    s = await _settled(make)
    content = invalid_rows(s, LONG_ROWS)
    assert 790_000 < len(content) < 810_000
    upload = f"/reports/payfac/conciliation/upload/{s['affiliation']}"
    raw.http.timeout = httpx.Timeout(120)
    answer = await _multipart(raw, upload, content, {"Authorization": s["token"]})
    assert answer.status_code == 200, answer.text[:300]
    assert len(answer.content) < 1 << 20
    first = answer.json()
    entries = 4 * LONG_ROWS + 1 + 2  # the errors, the matched row, two payments of the day not named
    pages = -(-entries // PAGE_ENTRIES)
    assert first["counts"] == {
        "matched": 1,
        "missing": 2,
        "unknown": 0,
        "amountMismatch": 0,
        "invalid": 4 * LONG_ROWS,
        "invalidRows": LONG_ROWS,
    }
    assert (first["pages"], first["rows"]) == (pages, LONG_ROWS + 1)
    assert [m["row"] for m in first["matched"]] == [LONG_ROWS + 2]
    assert len(first["invalid"]) == PAGE_ENTRIES - 1
    report_id = first["reportId"]
    auth = {"Authorization": s["token"]}
    base = f"/reports/payfac/conciliation/reports/{report_id}/pages/"
    last = await call(raw.http.get(base + str(pages), headers=auth))
    assert last.status_code == 200, last.text[:300]
    assert len(last.content) < 1 << 20
    assert [m["paymentId"] for m in last.json()["missing"]] == sorted([s["refunded"].id, s["missing"].id])

    # The SDK, default settings (a 16 MiB answer cap): the whole report, every entry once, in order.
    report = await call(s["client"].reconciliation.upload(s["affiliation"], content))
    assert report.complete
    assert report.report_id != report_id  # the same file makes another stored report
    assert len(report.invalid) == 4 * LONG_ROWS
    assert [item.row for item in report.invalid[::4]] == list(range(2, LONG_ROWS + 2))
    assert {item.field for item in report.invalid[:4]} == {
        "settlementDate",
        "paymentId",
        "amount",
        "currency",
    }
    assert [m.row for m in report.matched] == [LONG_ROWS + 2]
    assert len(report.missing) == 2
    assert not report.all_matched
    page = await call(s["client"].reconciliation.report_page(report.report_id, 2))
    assert isinstance(page, paysdk.ReconciliationReportPage)
    assert (page.page, page.pages, len(page.invalid)) == (2, pages, PAGE_ENTRIES)
    assert page.invalid[0] == report.invalid[PAGE_ENTRIES - 1]
    alone = await call(s["client"].reconciliation.upload(s["affiliation"], content, whole=False))
    assert not alone.complete
    assert (len(alone.invalid), alone.counts, alone.pages) == (PAGE_ENTRIES - 1, report.counts, pages)
