"""When the scheduled charge process runs (D145): one recurring job, queued with the first subscription.

Apart from :mod:`paysdk.server.services.renewals` (which re-exports these names) because creating a
subscription queues the job (:mod:`paysdk.server.services.subscriptions`) and the charge process charges
through the subscriptions service: each imports this module, neither the other back (no import cycle).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session

from paysdk.server import jobs

__all__ = ["EVERY", "JOB_KIND", "JOB_REF", "ensure_schedule", "first_run_at"]

#: The job kind of the charge process (D145).
JOB_KIND = "renewals"
#: The one job's ref: one schedule for every client.
JOB_REF = "schedule"
#: Virtual time between two runs.
EVERY = timedelta(hours=12)


def first_run_at(now: datetime) -> datetime:
    """The first 00:00 or 12:00 UTC strictly after the virtual time ``now``."""
    utc = now.astimezone(UTC)
    start = utc.replace(hour=0, minute=0, second=0, microsecond=0)
    while start <= utc:
        start += EVERY
    return start


def ensure_schedule(session: Session, now: datetime) -> bool:
    """Queue the recurring charge process unless it is queued already (in the caller's transaction, the
    one creating a subscription); whether it was queued now."""
    return jobs.ensure_recurring(session, JOB_KIND, JOB_REF, first_run_at(now), EVERY, now)
