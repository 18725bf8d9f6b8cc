"""The SDK's progress stream behind a load balancer WITHOUT affinity (4.4, D188, D221), on PostgreSQL: two
reference server instances over one database, each with its own ticker (job runner), the upload sent
through the first, and every progress connection sent to the other instance than the previous one (a
round-robin transport, as a balancer without affinity would). A stream cut twice (``stream_cut``, D118)
resumes on the other instance each time: every event once, in order, as an uncut replay gives them;
the affinity warning is logged once; ``wait`` through the balancer gives the same result.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import secrets
from collections.abc import Iterator

import httpx
import pytest

import paysdk
from paysdk.resources.cardholders import AFFINITY_WARNING, BatchDoneEvent
from paysdk.server import create_app
from paysdk.testing._ready import serve_in_thread

pytestmark = pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)

HEADER = "externalId,username,email,firstName,lastName,issueCard"


@pytest.fixture
def two_instances(db_url: str) -> Iterator[tuple[int, int]]:
    with contextlib.ExitStack() as stack:
        ports = []
        for name in ("first", "second"):
            app = create_app(db_url, start_ticker=True, tick_interval=0.2)
            stack.callback(app.state.paysdk.db.dispose)  # after its server stopped (callbacks run last first)
            served = stack.enter_context(serve_in_thread(app, lifespan="on", what=f"the {name} instance"))
            ports.append(served.port)
        yield ports[0], ports[1]


class RoundRobin(httpx.HTTPTransport):
    """Every progress connection to the next instance in turn (no affinity); other calls as addressed."""

    def __init__(self, ports: tuple[int, int]) -> None:
        super().__init__()
        self.turns = itertools.cycle((ports[1], ports[0]))  # the stream starts on the other instance
        self.used: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/progress"):
            port = next(self.turns)
            self.used.append(port)
            request.url = request.url.copy_with(port=port)
        return super().handle_request(request)


def test_a_stream_resumed_on_another_instance_loses_and_repeats_nothing(
    two_instances: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    first, second = two_instances
    environment = paysdk.Environment.local(f"http://127.0.0.1:{first}")
    with paysdk.Client(environment=environment) as sandbox:
        merchant = sandbox.sandbox.create_client()
        password = "operator-" + secrets.token_hex(8)
        operator = sandbox.sandbox.backoffice.create_operator(merchant.slug, "ops@example.com", password)
        partner = sandbox.sandbox.backoffice.create_partner(merchant.slug, "Acme payroll")
    assert operator.email == "ops@example.com"
    assert merchant.signing_private_key is not None
    credentials = paysdk.BackofficeCredentials(
        merchant.slug, merchant.signing_private_key, user=paysdk.BackofficeUser("ops@example.com", password)
    )
    rows = [HEADER] + [
        f"e{n},holder{n},{'bad' if n % 97 == 0 else f'h{n}@example.com'},Ana,Holder,{'yes' if n % 3 else ''}"
        for n in range(1, 1501)
    ]
    data = ("\r\n".join(rows) + "\r\n").encode()

    balancer = RoundRobin((first, second))
    with (
        paysdk.Client(environment=environment, backoffice=credentials) as direct,
        paysdk.Client(environment=environment, backoffice=credentials, transport=balancer) as balanced,
    ):
        batch = direct.backoffice.cardholders.upload(partner.partner_id, data, filename="holders.csv")
        with balanced.backoffice.cardholders.progress(partner.partner_id, batch.batch_id) as live:
            watched = list(live)  # live, on the second instance, while the runners of both process it
        assert isinstance(watched[-1], BatchDoneEvent)
        assert watched[-1].data.created == 1485  # 15 invalid emails (every 97th row)
        reference = list(direct.backoffice.cardholders.progress(partner.partner_id, batch.batch_id))
        assert [(e.id, e.event, e.data) for e in watched] == [(e.id, e.event, e.data) for e in reference]

        for port in (first, second):  # each instance cuts its next stream of this route
            with paysdk.Client(environment=paysdk.Environment.local(f"http://127.0.0.1:{port}")) as control:
                control.sandbox.add_fault("stream_cut", route="/cms/rest/app/partners/*", after_events=3)
        balancer.used.clear()
        with caplog.at_level(logging.INFO, logger="paysdk.stream"):
            stream = balanced.backoffice.cardholders.progress(partner.partner_id, batch.batch_id)
            with stream:
                events = list(stream)
        assert [(e.id, e.event, e.data) for e in events] == [(e.id, e.event, e.data) for e in reference]
        assert stream.reconnects == 2
        assert len(balancer.used) == 3
        assert balancer.used[0] != balancer.used[1] != balancer.used[2]  # each reconnect on the other one
        warned = [
            r.getMessage()
            for r in caplog.records
            if r.name == "paysdk.stream" and r.levelno == logging.WARNING
        ]
        assert warned == [AFFINITY_WARNING]

        result = balanced.backoffice.cardholders.wait(partner.partner_id, batch.batch_id)
        assert (result.created, result.failed, len(result.failed_rows)) == (1485, 15, 15)
