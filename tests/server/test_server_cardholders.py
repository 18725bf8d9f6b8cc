"""Bulk cardholder upload and progress, in process (httpx over ASGI) on SQLite and PostgreSQL
(D186-D188, D210-D211). A finished batch's stream replays and closes, so an in-process GET of the
progress returns once the batch (kicked at upload) is done."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from cardholder_kit import (
    HEADER,
    Backoffice,
    cardholders,
    csv_file,
    done,
    failures,
    parse_events,
    person,
    xlsx_file,
)
from fastapi import FastAPI

from paysdk.contracts.sandbox import SandboxClient


@pytest.fixture
async def bo(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> Backoffice:
    return Backoffice(asgi_client, merchant)


def _data(response: httpx.Response) -> dict[str, Any]:
    found: dict[str, Any] = response.json()["data"]
    return found


@pytest.mark.parametrize("kind", ["csv", "xlsx"])
async def test_upload_creates_cardholders_and_cards(bo: Backoffice, db_url: str, kind: str) -> None:
    partner = await bo.partner()
    rows = [person(i, card=i % 2 == 0) for i in range(1, 8)]
    content = csv_file(rows) if kind == "csv" else xlsx_file(rows)
    answer = await bo.upload(partner, content, f"people.{kind}")
    assert answer.status_code == 202, answer.text
    batch = _data(answer)
    assert batch["status"] == "queued"
    assert batch["duplicate"] is False
    assert batch["partnerId"] == partner
    assert batch["fileName"] == f"people.{kind}"
    assert len(batch["fileSha256"]) == 64
    events = await bo.progress(partner, batch["batchId"])
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    assert events[0].event == "progress"
    assert events[0].data["processed"] == 0
    assert events[0].data["total"] == 7
    assert done(events) == {
        "batchId": batch["batchId"],
        "status": "completed",
        "total": 7,
        "processed": 7,
        "created": 7,
        "failed": 0,
        "cardsIssued": 3,
    }
    assert cardholders(db_url, bo.merchant.slug) == {f"u{i}": 1 for i in range(1, 8)}


async def test_every_row_error_kind_is_reported_with_its_row(bo: Backoffice) -> None:
    partner = await bo.partner()
    rows: list[list[object]] = [
        person(1),  # row 2: fine
        ["", "u2", "u2@example.com", "A", "B", "", "", ""],  # 3 externalId required
        ["E3", "u3", "not-mail", "A", "B", "", "", ""],  # 4 email
        ["E4", "u\u202e4", "u4@example.com", "A", "B", "", "", ""],  # 5 username (bidi)
        ["E5", "u5", "u5@example.com", "", "B", "", "", ""],  # 6 firstName
        ["E6", "u6", "u6@example.com", "A", "B" * 101, "", "", ""],  # 7 lastName
        ["E7", "u7", "u7@example.com", "A", "B", "555", "", ""],  # 8 phone
        ["E8", "u8", "u8@example.com", "A", "B", "", "perhaps", ""],  # 9 issueCard
        ["E9", "u9", "u9@example.com", "A", "B", "", "no", "Alias"],  # 10 cardAlias without a card
        ["E10", "u10", "u10@example.com", "A", "B", "", "", "x"],  # 11 cardAlias without a card
        ["", "", "", "", "", "", "", ""],  # 12 blank: skipped, keeps its number
        ["E1", "other", "other@example.com", "A", "B", "", "", ""],  # 13 externalId of row 2
        ["E13", "U1", "x13@example.com", "A", "B", "", "", ""],  # 14 username of row 2 (case folded)
        ["E14", "u14", "U1@EXAMPLE.COM", "A", "B", "", "", ""],  # 15 email of row 2
        ["E15", "u15", "u15@example.com", "A", "B", "+5511999990000", "1", "Payroll"],  # 16 fine
    ]
    answer = await bo.upload(partner, csv_file(rows))
    assert answer.status_code == 202, answer.text
    events = await bo.progress(partner, _data(answer)["batchId"])
    found = failures(events)
    assert {row: field for row, (field, _) in found.items()} == {
        3: "externalId",
        4: "email",
        5: "username",
        6: "firstName",
        7: "lastName",
        8: "phone",
        9: "issueCard",
        10: "cardAlias",
        11: "cardAlias",
        13: "externalId",
        14: "username",
        15: "email",
    }
    assert found[13][1] == found[14][1] == "already exists"
    rowfailed = [e.data for e in events if e.event == "row-failed"]
    assert {d["row"]: d["externalId"] for d in rowfailed}[3] is None
    assert {d["row"]: d["externalId"] for d in rowfailed}[4] == "E3"
    assert done(events)["created"] == 2
    assert done(events)["failed"] == 12
    assert done(events)["total"] == 14


async def test_same_file_again_is_the_same_batch_and_an_edited_file_adds_only_new_rows(
    bo: Backoffice, db_url: str
) -> None:
    partner = await bo.partner()
    first_rows = [person(i) for i in range(1, 6)]
    first = await bo.upload(partner, csv_file(first_rows))
    assert first.status_code == 202
    batch = _data(first)["batchId"]
    await bo.progress(partner, batch)
    again = await bo.upload(partner, csv_file(first_rows), "renamed.csv")
    assert again.status_code == 200, again.text
    assert _data(again)["batchId"] == batch
    assert _data(again)["duplicate"] is True
    edited = await bo.upload(partner, csv_file([*first_rows, person(6), person(7)]))
    assert edited.status_code == 202
    events = await bo.progress(partner, _data(edited)["batchId"])
    assert done(events)["created"] == 2
    assert done(events)["failed"] == 5
    assert set(failures(events).values()) == {("externalId", "already exists")}
    assert cardholders(db_url, bo.merchant.slug) == {f"u{i}": 1 for i in range(1, 8)}
    # The same file for another partner is a new batch; its rows' usernames exist for the merchant.
    other = await bo.partner()
    elsewhere = await bo.upload(other, csv_file(first_rows))
    assert elsewhere.status_code == 202
    events = await bo.progress(other, _data(elsewhere)["batchId"])
    assert {field for field, _ in failures(events).values()} == {"username"}


async def test_concurrent_duplicate_uploads_never_make_a_cardholder_twice(
    bo: Backoffice, db_url: str
) -> None:
    partner = await bo.partner()
    rows = [person(i) for i in range(1, 301)]
    same = csv_file(rows)
    # The same file twice at once, and two different files holding the same rows.
    variants = [same, same, csv_file(list(reversed(rows))), xlsx_file(rows)]
    names = ["a.csv", "a.csv", "b.csv", "c.xlsx"]
    answers = await asyncio.gather(*(bo.upload(partner, v, n) for v, n in zip(variants, names, strict=True)))
    assert all(a.status_code in (200, 202) for a in answers), [a.text for a in answers]
    batches = {_data(a)["batchId"] for a in answers}
    assert len(batches) == 3
    totals = [done(await bo.progress(partner, b)) for b in batches]
    assert sum(t["created"] for t in totals) == 300
    assert sum(t["failed"] for t in totals) == 600
    assert cardholders(db_url, bo.merchant.slug) == {f"u{i}": 1 for i in range(1, 301)}


async def test_last_event_id_resumes_without_loss_or_repeat(bo: Backoffice) -> None:
    partner = await bo.partner()
    rows = [person(i) if i % 7 else ["", "x", "y", "", "", "", "", ""] for i in range(1, 1500)]
    answer = await bo.upload(partner, csv_file(rows))
    batch = _data(answer)["batchId"]
    everything = await bo.progress(partner, batch)
    assert len(everything) > 10
    for cut in (1, 5, len(everything) - 1):
        rest = await bo.progress(partner, batch, last_event_id=cut)
        assert [e.id for e in rest] == list(range(cut + 1, everything[-1].id + 1))
        assert everything[:cut] + rest == everything
    # Past the end of a finished batch: nothing, and the stream closes.
    assert await bo.progress(partner, batch, last_event_id=everything[-1].id) == []
    # The query form, for clients that cannot set the header.
    query = await bo.client.get(
        f"/cms/rest/app/partners/{partner}/cardholders/batch/{batch}/progress",
        params={"lastEventId": 3},
        headers={"Authorization": f"Bearer {await bo.token()}"},
    )
    assert parse_events(query.text) == everything[3:]
    assert query.text.startswith("retry: 1000\n\n")


@pytest.mark.parametrize(
    ("content", "name", "field", "fragment"),
    [
        (b"externalId,username\n", "people.csv", "email", "missing"),
        (b"externalId,username,email,firstName,lastName,nickname\n", "people.csv", "nickname", "unknown"),
        (b"", "people.csv", "file", "empty"),
        (csv_file([]), "people.csv", "file", "no data rows"),
        (b"PK\x03\x04garbage-not-a-workbook", "people.xlsx", "file", "xlsx"),
        (csv_file([person(1)]), "people.xlsx", "file", "xlsx"),
        (xlsx_file([person(1)]), "people.csv", "file", "UTF-8"),
        (csv_file([person(1)]), "people.txt", "file", ".csv or .xlsx"),
        (b"\xff\xfe" + csv_file([person(1)]), "people.csv", "file", "UTF-8"),
        (csv_file([[*person(1)[:3], "A" * (10 << 20), "B"]]), "people.csv", "file", "row 2"),
        (csv_file([person(1)]) + b'E2,"unterminated\n', "people.csv", "file", "CSV"),
    ],
)
async def test_file_faults_are_400_and_make_no_batch(
    bo: Backoffice, content: bytes, name: str, field: str, fragment: str
) -> None:
    partner = await bo.partner()
    answer = await bo.upload(partner, content, name)
    assert answer.status_code == 400, answer.text
    problem = answer.json()
    assert problem["ownCode"] is None
    assert problem["details"][0]["field"] == field, problem
    assert fragment in problem["details"][0]["message"] or fragment in problem["message"], problem


async def test_wrong_partner_batch_and_tokens(
    bo: Backoffice, asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    partner = await bo.partner()
    answer = await bo.upload(partner, csv_file([person(1)]))
    batch = _data(answer)["batchId"]
    await bo.progress(partner, batch)
    # Unknown partner, another merchant's partner: 404 naming partnerId, nothing stored.
    missing = await bo.upload("ptn_nobody", csv_file([person(2)]))
    assert missing.status_code == 404
    assert missing.json()["details"][0]["field"] == "partnerId"
    other = Backoffice(asgi_client, await merchant_factory())
    foreign_partner = await other.partner()
    foreign = await bo.upload(foreign_partner, csv_file([person(3)]))
    assert foreign.status_code == 404
    # Another partner's batch (same merchant, or another merchant's operator): 404 naming batchId/partnerId.
    second = await bo.partner()
    wrong = await bo.progress_raw(second, batch)
    assert wrong.status_code == 404
    assert wrong.json()["details"][0]["field"] == "batchId"
    stranger = await other.progress_raw(partner, batch)
    assert stranger.status_code == 404
    assert stranger.json()["details"][0]["field"] == "partnerId"
    # No token, a bad Last-Event-ID.
    anonymous = await asgi_client.post(
        f"/cms/rest/app/partners/{partner}/cardholders/upload",
        files={"file": ("a.csv", csv_file([person(4)]))},
    )
    assert anonymous.status_code == 401
    bad = await bo.client.get(
        f"/cms/rest/app/partners/{partner}/cardholders/batch/{batch}/progress",
        headers={"Authorization": f"Bearer {await bo.token()}", "Last-Event-ID": "abc"},
    )
    assert bad.status_code == 400
    assert bad.json()["details"][0]["field"] == "Last-Event-ID"


async def test_uploaded_cardholders_are_the_partners_for_card_association(bo: Backoffice) -> None:
    partner = await bo.partner()
    answer = await bo.upload(partner, csv_file([person(1, card=True)], header=HEADER))
    events = await bo.progress(partner, _data(answer)["batchId"])
    assert done(events)["cardsIssued"] == 1


async def test_heartbeat_while_queued_and_a_runner_that_lost_the_batch_rolls_back(
    bo: Backoffice, app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D188's heartbeat (short here) on a batch nobody runs yet; then two runners on one batch (a lease
    taken over): the one whose cursor is stale raises LeaseLost and writes nothing, the other resumes at
    the stored cursor, and every row is tried exactly once."""
    from paysdk.server.jobs import ClaimedJob, LeaseLost
    from paysdk.server.services import cardholders as service

    monkeypatch.setattr(service, "kick", lambda context: None)
    monkeypatch.setattr(service, "CHUNK_ROWS", 25)
    context = app.state.paysdk
    partner = await bo.partner()
    answer = await bo.upload(partner, csv_file([person(i) for i in range(1, 101)]))
    batch = _data(answer)["batchId"]

    stream = service.event_stream(context, batch, 0, heartbeat=0.2, poll=0.05)
    assert await anext(stream) == b"retry: 1000\n\n"
    assert (await anext(stream)).startswith(b"id: 1\nevent: progress\n")
    assert await asyncio.wait_for(anext(stream), 5) == b": heartbeat\n\n"
    await stream.aclose()

    now = await context.run(context.clock.now)
    stale = await context.run(service._load, batch, now)
    assert stale is not None
    await asyncio.to_thread(service._open_rows, stale)
    assert await context.run(service._process_chunk, stale, context.clock) is False  # rows 2-26
    stale.next_row = 2  # as if this runner had not seen its own chunk commit: its cursor is stale
    job = ClaimedJob(id=None, kind=service.JOB_KIND, ref=batch, due_at=now)
    await service.run_batch(context, job, context.clock)  # the runner that took over finishes it
    with pytest.raises(LeaseLost):
        await context.run(service._process_chunk, stale, context.clock)
    stale.spool.close()
    events = await bo.progress(partner, batch)
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    assert done(events)["processed"] == 100
    assert done(events)["created"] == 100
    processed = [e.data["processed"] for e in events if e.event == "progress"]
    assert processed == [0, 25, 50, 75, 100]


async def test_a_formula_cell_refuses_the_whole_file_in_csv_and_xlsx(bo: Backoffice, db_url: str) -> None:
    """D210: a text cell starting with ``=`` (CSV injection, leading blanks ignored) refuses the whole
    file at upload: ``400`` naming the column and the row, no batch, no cardholder."""
    partner = await bo.partner()
    for kind in ("csv", "xlsx"):
        for cells, field in (
            ([*person(2, prefix=kind)[:3], " =HYPERLINK(1)", "B"], "firstName"),
            ([*person(2, prefix=kind), "=1+1"], "file"),  # beyond the header
        ):
            rows = [person(1, prefix=kind), cells, person(3, prefix=kind)]
            content = csv_file(rows) if kind == "csv" else xlsx_file(rows)
            answer = await bo.upload(partner, content, f"f.{kind}")
            assert answer.status_code == 400, answer.text
            [detail] = answer.json()["details"]
            assert detail["field"] == field
            assert detail["message"].startswith("row 3: a formula is not accepted"), detail
    assert cardholders(db_url, bo.merchant.slug) == {}


async def test_results_pages_and_lookup_answer_only_the_partners_rows(bo: Backoffice) -> None:
    """D450, D451 over HTTP: the results of a batch in row order; the lookup takes exactly one of
    externalId and email and finds only the partner's cardholders; the 404s name their field."""
    partner, other = await bo.partner(), await bo.partner()
    answer = await bo.upload(partner, csv_file([person(1, card=True), person(2)], header=HEADER))
    batch = _data(answer)["batchId"]
    await bo.progress(partner, batch)  # to the end
    auth = {"Authorization": f"Bearer {await bo.token()}"}
    base = f"/cms/rest/app/partners/{partner}/cardholders"

    page = await bo.client.get(f"{base}/batch/{batch}/results/pages/1", headers=auth)
    assert page.status_code == 200, page.text
    results = _data(page)
    assert (results["status"], results["created"], results["page"], results["pages"]) == (
        "completed",
        2,
        1,
        1,
    )
    assert [(e["row"], e["externalId"]) for e in results["entries"]] == [(2, "E1"), (3, "E2")]
    assert results["entries"][0]["cardId"] is not None
    assert "cardId" not in results["entries"][1]  # no card: left out, as every unset optional (D30)

    for suffix, field in (("2", "page"), ("x", "page"), ("0", "page")):
        past = await bo.client.get(f"{base}/batch/{batch}/results/pages/{suffix}", headers=auth)
        assert past.status_code == 404, past.text
        assert field in past.text
    foreign = await bo.client.get(
        f"/cms/rest/app/partners/{other}/cardholders/batch/{batch}/results/pages/1", headers=auth
    )
    assert foreign.status_code == 404
    assert "batchId" in foreign.text

    found = await bo.client.get(f"{base}/lookup", params={"externalId": "E2"}, headers=auth)
    assert found.status_code == 200, found.text
    assert _data(found)["cardholderId"] == results["entries"][1]["cardholderId"]
    by_email = await bo.client.get(f"{base}/lookup", params={"email": "U1@Example.com"}, headers=auth)
    assert _data(by_email)["externalId"] == "E1"
    for params in ({}, {"externalId": "E1", "email": "u1@example.com"}):
        bad = await bo.client.get(f"{base}/lookup", params=params, headers=auth)
        assert bad.status_code == 400, bad.text
        assert "externalId" in bad.text
    elsewhere = await bo.client.get(
        f"/cms/rest/app/partners/{other}/cardholders/lookup", params={"externalId": "E1"}, headers=auth
    )
    assert elsewhere.status_code == 404  # another partner's cardholder is not found
    assert "externalId" in elsewhere.text
    unauthenticated = await bo.client.get(f"{base}/lookup", params={"externalId": "E1"})
    assert unauthenticated.status_code == 401
