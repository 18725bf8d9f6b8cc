"""``client.sandbox.scenarios()`` and ``client.sandbox.trigger(...)`` against the REAL reference server:
async in process and over a socket, sync over a socket, on SQLite and PostgreSQL (D700-D706)."""

from __future__ import annotations

from typing import Any

import pytest

import paysdk
from paysdk.contracts.scenarios import Scenario, ScenarioReport, ScenarioSummary
from scenario_examples import card_flow

from . import test_onboarding_sdk as onboarding
from .test_onboarding_sdk import Maker, call

#: The clients of the onboarding tests: async in process and over a socket, sync over a socket.
kind = onboarding.kind
make = onboarding.make

USER_SCENARIO = card_flow("sdk-flow")


@pytest.mark.covers("sandbox.scenarios", "sandbox.trigger")
async def test_list_and_trigger_a_built_in_and_a_user_scenario(make: Maker, callback_sink: Any) -> None:
    client = make()
    listed = await call(client.sandbox.scenarios())
    assert all(isinstance(item, ScenarioSummary) for item in listed)
    assert "subscription-suspended" in [item.name for item in listed]

    report = await call(client.sandbox.trigger("payment-declined", callback_url=callback_sink.url))
    assert isinstance(report, ScenarioReport)
    assert report.ok
    [event] = [e for e in report.events if e.kind == "callback"]
    assert event.data["payload"]["status"] == "declined"
    assert callback_sink.received[-1].json()["uid"] == report.ids["uid"]

    mine = await call(
        client.sandbox.trigger(Scenario.model_validate(USER_SCENARIO), callback_url=callback_sink.url)
    )
    assert mine.ok
    assert mine.scenario == "sdk-flow"
    failed = await call(
        client.sandbox.trigger(
            USER_SCENARIO, callback_url=callback_sink.url, parameters={"card": "4000000000000002"}
        )
    )
    assert not failed.ok
    assert failed.failed_step == "step 4 'approved'"


@pytest.mark.covers("sandbox.trigger")
async def test_a_bad_scenario_is_refused_before_sending_or_by_the_server(make: Maker) -> None:
    client = make()
    with pytest.raises(paysdk.ValidationError) as local:
        await call(
            client.sandbox.trigger({"name": "x", "title": "X", "steps": [{"kind": "advance", "dayz": 1}]})
        )
    assert "dayz" in local.value.field
    with pytest.raises(paysdk.NotFoundError):
        await call(client.sandbox.trigger("no-such-scenario"))
    with pytest.raises(paysdk.APIError) as remote:
        await call(client.sandbox.trigger("payment-approved", parameters={"nope": "1"}))
    assert remote.value.status_code == 409
    # A call that reached the server, so the covers check counts this test too.
    assert (await call(client.sandbox.trigger("terminal-settles"))).ok
