"""A reference-server process for the multi-process job tests (``test_server_jobs_processes.py``).

``python jobs_worker.py DATABASE_URL PORT LEASE_SECONDS [hang]``: the real app (``create_app``, uvicorn,
its ticker every 50 ms) with two test job kinds besides the families':

* ``test_count``: an external wait of 5 ms, then one row in ``job_effects`` (ref, this runner's lease
  owner) written in the transaction that completes the job;
* ``test_hang``: like ``test_count``, except that with ``hang`` it never returns (the test kills the
  process while it holds the job).

With ``PAYSDK_TEST_RENEWAL_PAUSE=<seconds>`` in its environment, each batch of the renewal run takes that
much longer (inside its transaction) and holds 500 subscriptions, so a test can kill the process in the
middle of a run however fast this machine charges.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import sqlalchemy
import uvicorn
from sqlalchemy.orm import Session

from paysdk.server import create_app
from paysdk.server.clock import Clock
from paysdk.server.jobs import ClaimedJob
from paysdk.server.services import renewals

EFFECTS = sqlalchemy.Table(
    "job_effects",
    sqlalchemy.MetaData(),
    sqlalchemy.Column("id", sqlalchemy.Integer, primary_key=True, autoincrement=True),
    sqlalchemy.Column("ref", sqlalchemy.String(64)),
    sqlalchemy.Column("runner", sqlalchemy.String(64)),
    sqlalchemy.Column("at", sqlalchemy.String(40)),
)


def effect(context: Any, job: ClaimedJob, clock: Clock) -> Callable[[Session], None]:
    """What a test job writes, in the transaction that completes it."""

    def write(session: Session) -> None:
        session.execute(
            EFFECTS.insert().values(
                ref=job.ref, runner=context.scheduler.owner, at=clock.now(session).isoformat()
            )
        )

    return write


def _slow_renewal_batches(pause: float) -> None:
    batch = renewals._batch_or_retry

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(pause)
        return batch(*args, **kwargs)

    renewals._batch_or_retry = slow
    renewals.BATCH_SIZE = 500


def main() -> None:
    url, port, lease = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    pause = os.environ.get("PAYSDK_TEST_RENEWAL_PAUSE")
    if pause:
        _slow_renewal_batches(float(pause))
    hang = sys.argv[4:] == ["hang"]

    async def count(context: Any, job: ClaimedJob, clock: Clock) -> Callable[[Session], None]:
        await asyncio.sleep(0.005)  # an external effect that takes a while
        return effect(context, job, clock)

    async def hanging(context: Any, job: ClaimedJob, clock: Clock) -> Callable[[Session], None]:
        if hang:
            await asyncio.Event().wait()
        return effect(context, job, clock)

    app = create_app(
        url,
        tick_interval=0.05,
        job_handlers={"test_count": count, "test_hang": hanging},
        job_lease=timedelta(seconds=lease),
    )
    EFFECTS.create(app.state.paysdk.db.engine, checkfirst=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
