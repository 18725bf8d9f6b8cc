"""The built-in scenarios (``POST /_sandbox/scenarios/{name}/run``, D700-D706), each on SQLite and
PostgreSQL through the app in process, with a real callback receiver on a socket: the events each
promises, the ids it reports, and what the receiver got (the same delivery path as any event)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from server_helpers import attempts, create_link, pay

from conftest import CallbackSink
from paysdk import _json
from scenario_examples import card_flow

JSON_TYPE = {"Content-Type": "application/json"}

BUILT_INS = [
    "payment-approved",
    "payment-declined",
    "three-ds-challenge",
    "subscription-renews",
    "subscription-suspended",
    "terminal-settles",
    "bulk-upload-bad-rows",
    "lead-to-first-payment",
    "callback-receiver-down",
]


async def run(client: httpx.AsyncClient, name: str, **parameters: str) -> dict[str, Any]:
    """Run a built-in; its report (the run must answer 200)."""
    response = await client.post(
        f"/_sandbox/scenarios/{name}/run", content=_json.dumps({"parameters": parameters}), headers=JSON_TYPE
    )
    assert response.status_code == 200, response.text
    report: dict[str, Any] = _json.loads(response.content)
    return report


async def run_document(client: httpx.AsyncClient, document: Any, **parameters: str) -> httpx.Response:
    return await client.post(
        "/_sandbox/scenarios/run",
        content=_json.dumps({"scenario": document, "parameters": parameters}),
        headers=JSON_TYPE,
    )


def passed(report: dict[str, Any]) -> dict[str, Any]:
    assert report["ok"], report["error"]
    assert report["failedStep"] is None
    assert all(step["ok"] for step in report["steps"])
    return report


def callbacks(report: dict[str, Any], uid: str) -> list[dict[str, Any]]:
    return [e["data"] for e in report["events"] if e["kind"] == "callback" and e["data"]["uid"] == uid]


def emails(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [e["data"] for e in report["events"] if e["kind"] == "email"]


async def test_the_list_names_every_built_in_with_its_promises(asgi_client: httpx.AsyncClient) -> None:
    listed = (await asgi_client.get("/_sandbox/scenarios")).json()
    assert [item["name"] for item in listed] == BUILT_INS
    assert all(item["title"] and item["promises"] for item in listed)
    document = (await asgi_client.get("/_sandbox/scenarios/payment-approved")).json()
    assert document["steps"][0]["kind"] == "call"
    missing = await asgi_client.get("/_sandbox/scenarios/nope")
    assert missing.status_code == 404
    assert missing.json()["details"] == [{"field": "name", "message": "not found"}]


@pytest.mark.parametrize(
    ("name", "status", "card"),
    [("payment-approved", "approved", "4242"), ("payment-declined", "declined", "0002")],
)
async def test_a_payment_scenario_delivers_its_callback_to_the_receiver(
    asgi_client: httpx.AsyncClient, callback_sink: CallbackSink, name: str, status: str, card: str
) -> None:
    report = passed(await run(asgi_client, name, callbackUrl=callback_sink.url))
    uid = report["ids"]["uid"]
    assert set(report["ids"]) == {"merchant", "uid"}
    assert f"card ending {card}: {status}" in report["steps"][2]["summary"]
    [attempt] = callbacks(report, uid)
    assert attempt["statusCode"] == 200
    assert attempt["attempt"] == 1
    assert attempt["final"]
    assert attempt["payload"]["status"] == status
    [received] = callback_sink.received
    assert received.json()["uid"] == uid
    assert received.json()["status"] == status
    assert received.headers["x-event-id"] == attempt["eventId"] == received.json()["eventId"]
    shown = (await asgi_client.get(f"/_sandbox/transactions/{uid}")).json()
    assert shown["status"] == status


async def test_three_ds_challenge_waits_then_approves_and_a_failed_one_declines(
    asgi_client: httpx.AsyncClient, callback_sink: CallbackSink
) -> None:
    report = passed(await run(asgi_client, "three-ds-challenge", callbackUrl=callback_sink.url))
    uid, failed = report["ids"]["uid"], report["ids"]["failedUid"]
    assert "pending (three_ds_required)" in report["steps"][2]["summary"]
    [approved] = callbacks(report, uid)
    [declined] = callbacks(report, failed)
    assert approved["payload"]["status"] == "approved"
    assert approved["statusCode"] == 200
    assert declined["payload"]["status"] == "declined"
    assert declined["statusCode"] == 200
    # No callback while the challenge waited: the approved one came during the step that answered it.
    assert next(e["step"] for e in report["events"] if e["data"]["uid"] == uid) == 5
    assert [item.json()["status"] for item in callback_sink.received] == ["approved", "declined"]


async def test_subscription_renews_twice_without_dunning(
    asgi_client: httpx.AsyncClient, callback_sink: CallbackSink
) -> None:
    report = passed(await run(asgi_client, "subscription-renews", callbackUrl=callback_sink.url))
    sub = (await asgi_client.get(f"/_sandbox/subscriptions/{report['ids']['subUid']}")).json()
    assert sub["status"] == "active"
    assert sub["period"] == 2
    assert [charge["chargeId"] for charge in sub["charges"]] == [
        report["ids"]["firstChargeId"],
        report["ids"]["secondChargeId"],
    ]
    assert [charge["status"] for charge in sub["charges"]] == ["approved", "approved"]
    assert emails(report) == []
    assert callback_sink.received == []


async def test_subscription_suspended_sends_every_dunning_email_and_the_subs_callback(
    asgi_client: httpx.AsyncClient, callback_sink: CallbackSink
) -> None:
    report = passed(
        await run(
            asgi_client, "subscription-suspended", callbackUrl=callback_sink.url, email="ana@example.com"
        )
    )
    sub_uid = report["ids"]["subUid"]
    sent = [(m["notifyEvent"], m.get("attempt")) for m in emails(report) if m["subUid"] == sub_uid]
    assert sent == [
        ("subPayProblem", 1),
        ("subPayProblem", 2),
        ("subPayProblem", 3),
        ("subscriptionSuspended", 3),
    ]
    assert all(m["to"] == "ana@example.com" for m in emails(report))
    assert [m.get("nextAttemptAt") is not None for m in emails(report)][:3] == [True, True, False]
    [callback] = callbacks(report, sub_uid)
    assert callback["payload"]["event"] == "subscriptionSuspended"
    assert callback["payload"]["status"] == "inactive"
    assert callback["statusCode"] == 200
    [received] = callback_sink.received
    assert received.json()["subUid"] == sub_uid
    assert received.headers["x-event-id"] == callback["eventId"]
    # The report is in order: the emails of each run before the callback the suspension queued.
    kinds = [e["kind"] for e in report["events"]]
    assert kinds == ["email", "email", "email", "email", "callback"]


async def test_terminal_payment_settles_then_pays_out(asgi_client: httpx.AsyncClient) -> None:
    report = passed(await run(asgi_client, "terminal-settles"))
    ids = report["ids"]
    assert ids["settlementDate"] < ids["payoutDate"]
    statuses = [step["summary"] for step in report["steps"] if step["kind"] == "call"]
    assert 'status="captured"' in statuses[1]
    assert 'status="settled"' in statuses[2]
    assert 'status="paid_out"' in statuses[3]
    shown = (await asgi_client.get(f"/_sandbox/terminal/payments/{ids['paymentId']}")).json()
    assert shown["status"] == "paid_out"


async def test_bulk_upload_charges_one_row_declines_one_and_refuses_four_naming_the_column(
    asgi_client: httpx.AsyncClient,
) -> None:
    report = passed(await run(asgi_client, "bulk-upload-bad-rows"))
    upload = report["steps"][-1]["summary"]
    assert "data.charged=1" in upload
    assert "data.refused=4" in upload
    good = (await asgi_client.get(f"/_sandbox/subscriptions/{report['ids']['goodSub']}")).json()
    declined = (await asgi_client.get(f"/_sandbox/subscriptions/{report['ids']['declineSub']}")).json()
    batch = [c for c in good["charges"] if c["source"] == "batch"]
    assert [(c["chargeId"], c["status"], c["reference"]) for c in batch] == [
        (report["ids"]["chargeId"], "approved", "scenario-ok")
    ]
    assert [(c["status"], c["reference"]) for c in declined["charges"] if c["source"] == "batch"] == [
        ("declined", "scenario-declined")
    ]
    assert not any(word in key.lower() for key in report["ids"] for word in ("key", "token"))


async def test_lead_approved_to_first_payment(
    asgi_client: httpx.AsyncClient, callback_sink: CallbackSink
) -> None:
    report = passed(await run(asgi_client, "lead-to-first-payment", callbackUrl=callback_sink.url))
    ids = report["ids"]
    lead = (await asgi_client.get(f"/_sandbox/leads/{ids['leadId']}")).json()
    assert lead["status"] == "approved"
    assert lead["clientSlug"] == ids["merchant"] != ids["partner"]
    [attempt] = callbacks(report, ids["uid"])
    assert attempt["payload"]["status"] == "approved"
    assert [item.json()["uid"] for item in callback_sink.received] == [ids["uid"]]


async def test_receiver_down_for_three_days_shows_every_retry_then_one_delivery(
    asgi_client: httpx.AsyncClient, callback_sink: CallbackSink
) -> None:
    report = passed(await run(asgi_client, "callback-receiver-down", callbackUrl=callback_sink.url))
    attempts = callbacks(report, report["ids"]["uid"])
    assert [a["attempt"] for a in attempts] == list(range(1, 17))
    assert all(a["statusCode"] is None and "receiver is down" in a["error"] for a in attempts[:15])
    assert all(a["nextAttemptAt"] is not None for a in attempts[:15])
    assert attempts[-1]["statusCode"] == 200
    assert attempts[-1]["final"]
    assert len({a["eventId"] for a in attempts}) == 1
    # The receiver was never reached while down: it got the one delivery, the same event id.
    [received] = callback_sink.received
    assert received.headers["x-event-id"] == attempts[0]["eventId"]
    assert (await asgi_client.get("/_sandbox/faults")).json() == []


async def test_a_run_without_a_callback_url_delivers_to_the_built_in_receiver(
    asgi_client: httpx.AsyncClient,
) -> None:
    report = passed(await run(asgi_client, "payment-approved"))
    [attempt] = callbacks(report, report["ids"]["uid"])
    assert attempt["payload"]["status"] == "approved"
    merchant = (await asgi_client.get(f"/_sandbox/clients/{report['ids']['merchant']}")).json()
    assert merchant["callbackUrl"] == "http://testserver/_sandbox/scenarios/sink"
    sink = await asgi_client.post("/_sandbox/scenarios/sink", content=b"{}", headers=JSON_TYPE)
    assert sink.status_code == 200


USER_SCENARIO = card_flow("my-flow")


async def test_a_user_scenario_runs_the_same_way(
    asgi_client: httpx.AsyncClient, callback_sink: CallbackSink
) -> None:
    response = await run_document(asgi_client, USER_SCENARIO, callbackUrl=callback_sink.url)
    assert response.status_code == 200, response.text
    report = passed(response.json())
    assert report["scenario"] == "my-flow"
    assert set(report["ids"]) == {"uid"}
    assert [item.json()["uid"] for item in callback_sink.received] == [report["ids"]["uid"]]


async def test_an_expectation_that_does_not_come_fails_naming_the_step(
    asgi_client: httpx.AsyncClient, callback_sink: CallbackSink
) -> None:
    """The declining card: the approved callback never comes, the run stops at the expect step."""
    response = await run_document(
        asgi_client, USER_SCENARIO, callbackUrl=callback_sink.url, card="4000000000000002"
    )
    report = response.json()
    assert response.status_code == 200
    assert report["ok"] is False
    assert report["failedStep"] == "step 4 'approved'"
    assert report["error"].startswith("step 4 'approved' failed: expected at least 1 callback")
    assert [step["ok"] for step in report["steps"]] == [True, True, True, False]
    # What did happen is still reported: the declined callback.
    assert [e["data"]["payload"]["status"] for e in report["events"]] == ["declined"]


async def test_a_failing_call_names_its_step_and_stops_the_run(asgi_client: httpx.AsyncClient) -> None:
    document = {
        "name": "broken",
        "title": "Broken",
        "steps": [
            {"kind": "call", "name": "no token", "path": "/transactions", "json": {}},
            {"kind": "advance", "days": 1},
        ],
    }
    report = (await run_document(asgi_client, document)).json()
    assert report["ok"] is False
    assert len(report["steps"]) == 1
    assert report["failedStep"] == "step 1 'no token'"
    assert "POST /transactions answered 401, expected a 2xx" in report["error"]
    unknown = {
        "name": "x",
        "title": "X",
        "steps": [{"kind": "pay", "uid": "${nothing}", "card": "4242424242424242"}],
    }
    report = (await run_document(asgi_client, unknown)).json()
    assert report["failedStep"] == "step 1 (pay)"
    assert "${nothing} is neither a parameter nor a variable" in report["error"]


@pytest.mark.parametrize(
    ("document", "parameters", "field"),
    [
        ({"title": "T", "steps": [{"kind": "advance", "days": 1}]}, {}, "scenario.name"),
        ({"name": "a", "title": "T", "steps": []}, {}, "scenario.steps"),
        ({"name": "a", "title": "T", "steps": [{"kind": "teleport"}]}, {}, "scenario.steps.0"),
        (
            {"name": "a", "title": "T", "steps": [{"kind": "advance", "dayz": 1}]},
            {},
            "scenario.steps.0.advance.dayz",
        ),
        (
            {"name": "a", "title": "T", "steps": [{"kind": "advance", "days": -1}]},
            {},
            "scenario.steps.0.advance",
        ),
        (
            {"name": "a", "title": "T", "ids": ["merchantToken"], "steps": [{"kind": "advance", "days": 1}]},
            {},
            "scenario.ids",
        ),
        (
            {"name": "a", "title": "T", "steps": [{"kind": "advance", "days": 1}]},
            {"nope": "1"},
            "parameters.nope",
        ),
        (
            {
                "name": "a",
                "title": "T",
                "parameters": [{"name": "need"}],
                "steps": [{"kind": "advance", "days": 1}],
            },
            {},
            "parameters.need",
        ),
    ],
)
async def test_a_bad_scenario_is_409_naming_the_field(
    asgi_client: httpx.AsyncClient, document: Any, parameters: dict[str, str], field: str
) -> None:
    response = await run_document(asgi_client, document, **parameters)
    assert response.status_code == 409, response.text
    answer = response.json()
    assert answer["ownCode"] == 5000
    assert answer["details"][0]["field"] == field, answer


async def test_bad_bodies_are_never_a_500(asgi_client: httpx.AsyncClient) -> None:
    for content in (b"{oops", b"[]", b'{"parameters": {"callbackUrl": 5}}'):
        response = await asgi_client.post(
            "/_sandbox/scenarios/payment-approved/run", content=content, headers=JSON_TYPE
        )
        assert 400 <= response.status_code < 500, response.text
    missing = await asgi_client.post("/_sandbox/scenarios/run", content=b"{}", headers=JSON_TYPE)
    assert missing.status_code == 409
    assert missing.json()["details"][0]["field"] == "scenario"
    unknown = await asgi_client.post("/_sandbox/scenarios/nope/run", content=b"{}", headers=JSON_TYPE)
    assert unknown.status_code == 404


def test_every_built_in_is_a_valid_scenario_with_a_callback_url_parameter() -> None:
    from paysdk.server.services.scenarios import builtins

    found = builtins()
    assert list(found) == BUILT_INS
    for scenario in found.values():
        assert [p.name for p in scenario.parameters][:1] == ["callbackUrl"]
        assert scenario.promises
        assert scenario.ids


def test_docs_scenarios_lists_every_built_in_and_its_promises() -> None:
    from pathlib import Path

    from paysdk.server.services.scenarios import builtins

    text = (Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text(encoding="utf-8")
    for scenario in builtins().values():
        assert f"### `{scenario.name}`: {scenario.title}" in text
        assert all(promise in text for promise in scenario.promises), scenario.name


async def test_a_report_shows_no_secret(asgi_client: httpx.AsyncClient, callback_sink: CallbackSink) -> None:
    response = await asgi_client.post(
        "/_sandbox/scenarios/bulk-upload-bad-rows/run",
        content=_json.dumps(
            {"parameters": {"callbackUrl": callback_sink.url, "callbackHeaderValue": "hv-secret-1"}}
        ),
        headers=JSON_TYPE,
    )
    report = response.json()
    assert report["ok"], report["error"]
    merchant = (await asgi_client.post(f"/_sandbox/clients/{report['ids']['merchant']}/reveal")).json()
    assert merchant["callbackHeaderValue"] == "hv-secret-1"
    for secret in (merchant["sandboxToken"], merchant["productionToken"], "hv-secret-1"):
        assert secret not in response.text


async def test_a_report_shows_only_the_runs_own_merchants(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: CallbackSink
) -> None:
    # Another merchant's callback, refused before the run, is retried while the run moves the clock.
    other = await merchant_factory(callback_url="http://127.0.0.1:9/callbacks")
    link = await create_link(asgi_client, other)
    await pay(asgi_client, link["uid"], "4242424242424242")
    before = len(await attempts(asgi_client, link["uid"]))
    report = passed(await run(asgi_client, "subscription-suspended", callbackUrl=callback_sink.url))
    assert len(await attempts(asgi_client, link["uid"])) > before  # it was retried during the run...
    uids = {event["data"].get("uid") for event in report["events"] if event["kind"] == "callback"}
    assert link["uid"] not in uids  # ...and is not the run's event (D708)
    assert uids == {report["ids"]["subUid"]}
