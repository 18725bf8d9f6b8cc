"""The plugin's ``paysdk_trigger`` fixture (D706): a scenario run on the session's server, its callbacks
delivered to the test's ``paysdk_callbacks`` inbox (which verifies the header), a failed run failing
the test with the step named."""

from __future__ import annotations

import pytest

from paysdk.contracts.callbacks import PaymentCallback, SubscriptionCallback
from paysdk.testing import CallbackInbox
from paysdk.testing.pytest_plugin import ScenarioTrigger
from scenario_examples import card_flow


def test_a_built_in_delivers_its_callbacks_to_the_test_inbox(
    paysdk_trigger: ScenarioTrigger, paysdk_callbacks: CallbackInbox
) -> None:
    report = paysdk_trigger("subscription-suspended")
    assert report.ok
    [delivery] = paysdk_callbacks.deliveries
    assert delivery.accepted  # the inbox checked the merchant's header: the run gave it the inbox's value
    assert isinstance(delivery.payload, SubscriptionCallback)
    assert delivery.payload.sub_uid == report.ids["subUid"]
    assert delivery.payload.status == "inactive"
    sent = [e.data["notifyEvent"] for e in report.events if e.kind == "email"]
    assert sent == ["subPayProblem", "subPayProblem", "subPayProblem", "subscriptionSuspended"]


def test_a_failed_run_fails_the_test_naming_the_step(
    paysdk_trigger: ScenarioTrigger, paysdk_callbacks: CallbackInbox
) -> None:
    document = card_flow(
        "fixture-flow",
        card="4000000000000002",
        merchant={"callbackHeaderValue": "${callbackHeaderValue}"},
        optional=("callbackHeaderValue",),
    )
    with pytest.raises(pytest.fail.Exception, match=r"fixture-flow: step 4 'approved' failed"):
        paysdk_trigger(document)
    report = paysdk_trigger(document, check=False)
    assert report.failed_step == "step 4 'approved'"
    declined = [d.payload for d in paysdk_callbacks.deliveries if d.accepted]
    assert [p.status for p in declined if isinstance(p, PaymentCallback)] == ["declined", "declined"]
