"""Wallet ledger throughput (issue 12, D256-D260): concurrent fund operations against the reference server.

* ``1,000`` concurrent fund operations (adds and withdrawals alternating) on ONE hot card, on SQLite and on
  PostgreSQL: operations per second (the median of ``ROUNDS`` rounds of 1,000 on one server), and the
  lost updates over all rounds (``|expected - final balance|`` in units of
  the smallest amount, goal 0). Also checked: every operation answered ``200``, exactly one movement per
  operation, and the card's movements sum to its balance.
* The same ``1,000`` operations spread over ``100`` cards (shown, no goal).

The load generator writes prebuilt HTTP/1.1 requests on raw asyncio keep-alive streams (``CONNECTIONS``
at a time, each request with its own ``Idempotency-Key`` as the SDK sends one) and reads the answers by
``Content-Length``: the SDK's own client costs more CPU per request than the server does, and would
measure itself. The server runs in its own process (``benchmarks._servers.serve``, pinned to CPU 0 on a
2-core machine, the generator on CPU 1).

Run alone: ``python -m benchmarks.bench_ledger`` (``PAYSDK_BENCH_POSTGRES_URL``: an admin URL of a
PostgreSQL server where a scratch database may be created; default the test server's).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import paysdk
from benchmarks._servers import pin_load, serve

PG_ADMIN_URL = os.environ.get("PAYSDK_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
CONNECTIONS = 64
#: Rounds of ``operations`` on the same server; the median round is reported (a shared machine's drift).
ROUNDS = int(os.environ.get("PAYSDK_BENCH_LEDGER_ROUNDS", "3"))
START = Decimal("1000000")
ADD, WITHDRAW = Decimal("1.0001"), Decimal("0.9999")
UNIT = Decimal("0.0001")


@dataclass(frozen=True)
class LedgerRun:
    """The figures of one run."""

    operations: int
    cards: int
    seconds: float  # the median of the rounds
    lost: int  # sum over the cards of |expected - final| in units of 0.0001
    movements_missing: int  # operations without their movement (or extra movements)
    unbalanced: int  # cards whose movements do not sum to their balance

    @property
    def rate(self) -> float:
        """Operations per second."""
        return self.operations / self.seconds


@contextmanager
def postgres_database() -> Iterator[str]:
    """A scratch PostgreSQL database for one run (dropped afterwards)."""
    import psycopg

    name = f"paysdk_bench_{os.getpid()}_{secrets.token_hex(4)}"
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{base}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _fire(host: str, port: int, requests: list[bytes]) -> None:
    """Send ``requests`` one after another on one keep-alive connection; every answer must be 200."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for request in requests:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            payload = await reader.readexactly(length)
            if status != 200:
                raise RuntimeError(f"unexpected {status}: {payload[:300]!r}")
    finally:
        writer.close()


def _request(host: str, port: int, token: str, card_id: str, operation: str, amount: Decimal) -> bytes:
    body = json.dumps({"operation": operation, "amount": float(amount)}).encode()
    return (
        f"POST /rest/cards/{card_id}/funds HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {token}\r\nIdempotency-Key: {uuid.uuid4()}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _run(url: str, operations: int, cards: int) -> LedgerRun:
    host, port_text = url.removeprefix("http://").split(":")
    port = int(port_text)
    env = paysdk.Environment.local(url)
    async with paysdk.AsyncClient(environment=env) as control:
        merchant = await control.sandbox.create_client(slug=f"bench-ledger-{secrets.token_hex(3)}")
        user = await control.sandbox.create_user(
            merchant.slug, "bench-ledger-user", "ledger@example.com", "bench-password"
        )
    assert merchant.signing_private_key is not None
    wallet = paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key)
    async with paysdk.AsyncClient(environment=env, wallet=wallet, max_retries=0) as client:
        token = (await client.wallet.login()).access_token
        ids = []
        for _ in range(cards):
            issued = await client.wallet.cards.issue_virtual(user.user_id)
            await client.wallet.funds.add(issued.card_id, START)
            ids.append(issued.card_id)
        plan = [
            (ids[i % cards], "add" if i % 2 == 0 else "withdraw", ADD if i % 2 == 0 else WITHDRAW)
            for i in range(operations)
        ]
        warm = [_request(host, port, token, ids[0], "add", UNIT) for _ in range(CONNECTIONS)]
        times = []
        with pin_load():
            await asyncio.gather(*(_fire(host, port, [one]) for one in warm))  # connections, caches
            for _ in range(ROUNDS):
                requests = [_request(host, port, token, card, op, amount) for card, op, amount in plan]
                lanes = [requests[i::CONNECTIONS] for i in range(CONNECTIONS)]
                started = time.perf_counter()
                await asyncio.gather(*(_fire(host, port, lane) for lane in lanes if lane))
                times.append(time.perf_counter() - started)
        expected = {card: START for card in ids}
        expected[ids[0]] += CONNECTIONS * UNIT
        for card, op, amount in plan * ROUNDS:
            expected[card] += amount if op == "add" else -amount
        lost = missing = unbalanced = 0
        for card_id in ids:
            final = (await client.wallet.cards.get(card_id)).balance
            movements = await client.wallet.cards.movements(card_id)
            lost += int(abs(expected[card_id] - final) / UNIT)
            wanted = (
                1
                + ROUNDS * sum(1 for card, _, _ in plan if card == card_id)
                + (CONNECTIONS if card_id == ids[0] else 0)
            )
            missing += abs(len(movements) - wanted)
            signed = sum((m.amount if m.direction == "credit" else -m.amount for m in movements), Decimal(0))
            unbalanced += signed != final or movements[-1].balance_after != final
    return LedgerRun(operations, cards, statistics.median(times), lost, missing, unbalanced)


def bench_ledger(database: str, operations: int = 1000, cards: int = 1) -> LedgerRun:
    """One run against a fresh reference server on ``database`` (``sqlite`` or ``postgresql``)."""
    if database == "postgresql":
        with postgres_database() as db_url, serve("reference", db_url=db_url) as url:
            return asyncio.run(_run(url, operations, cards))
    with serve("reference") as url:
        return asyncio.run(_run(url, operations, cards))


def ledger_rows() -> list[tuple[str, str, str, str]]:
    """The rows of ``make bench`` (benchmarks/run.py): name, figures, ratio column, goal."""
    rows = []
    for database, goal in (("sqlite", 1000), ("postgresql", 500)):
        for cards in (1, 100):
            run = bench_ledger(database, cards=cards)
            if run.lost or run.movements_missing or run.unbalanced:
                raise SystemExit(
                    f"ledger {database}/{cards}: lost updates or movements unlike the operations: {run}"
                )
            where = "one card" if cards == 1 else "100 cards"
            name = "SQLite" if database == "sqlite" else "PostgreSQL"
            rows.append(
                (
                    f"1,000 concurrent fund ops, {where}, {name}",
                    f"{run.rate:.0f} ops/s",
                    f"{run.lost} lost",
                    f">= {goal} ops/s, 0 lost" if cards == 1 else "0 lost (rate shown)",
                )
            )
    return rows


if __name__ == "__main__":
    for database in sys.argv[1:] or ["sqlite", "postgresql"]:
        for cards in (1, 100):
            print(database, bench_ledger(database, cards=cards))
