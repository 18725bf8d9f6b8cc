"""The control plane under ``/_sandbox/`` (camelCase JSON, models of :mod:`paysdk.contracts.sandbox`).

``GET /_sandbox/health`` lives in :mod:`paysdk.server.health` (D303). Left out of
``/openapi.json``. Never logged, faulted or idempotent. Errors use the same D1 body as the
public API. ``/pay`` and ``/simulate`` deliver the resulting callback's first attempt before answering,
so tests are deterministic; ``/clock/advance`` runs every job that falls due, in due order, before it
answers.
"""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy.orm import Session
from starlette.responses import Response

from paysdk.contracts.sandbox import (
    ClockAdvance,
    ClockState,
    FaultCreate,
    PayRequest,
    SandboxClientCreate,
    SandboxClientUpdate,
    SimulateRequest,
    TestCard,
    UploadReceipt,
)
from paysdk.server import faults, jobs
from paysdk.server.bodies import read_json_object, validate
from paysdk.server.context import ServerContext, get_context
from paysdk.server.errors import APIProblem, JSONResponse
from paysdk.server.events import FeedFilter, feed_stream
from paysdk.server.routers._transactions import Db
from paysdk.server.services import callbacks, payments, sandbox, transactions, uploads
from paysdk.server.services.test_cards import TEST_CARDS

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox", include_in_schema=False)


def _json(value: Any, status: int = 200) -> Response:
    return JSONResponse(value, status_code=status)


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="python")
    return dumped


@router.post("/reset")
async def reset(request: Request) -> Response:
    """Wipe every client, transaction, callback, job, log entry, fault, idempotency record, the live
    feed's kept events and the clock."""
    context = get_context(request)
    # On the event loop holding the database's lock when SQLite's worker is idle (D311): a trip to a
    # worker thread that sat idle while a suite filled the database costs more than the reset's DELETEs.
    await context.brief(context.db.reset)
    context.events.clear()  # the live feed's kept events went with the request log
    for restore in context.after_reset:  # a seeded server returns to its seed (paysdk.server.seed)
        await context.run(restore)
    return _json({"status": "reset"})


@router.post("/clients")
async def create_client(request: Request, db: Db) -> Response:
    """Create a client; every field optional (defaults in :mod:`paysdk.server.services.sandbox`)."""
    spec = validate(SandboxClientCreate, await read_json_object(request, allow_empty=True))

    return _json(_dump(await db.run(sandbox.create_client, db.session, spec, db.now)), 201)


@router.get("/clients/{slug}")
async def get_client(slug: str, db: Db) -> Response:
    """A client by slug (the hook private key shows as ``****``: only its hash is stored). On a server
    bound to a non-loopback address its tokens and callback header value show as ``****`` too: the
    create answered them; ``POST /_sandbox/clients/{slug}/reveal`` answers them again (D272)."""
    context = db.context
    client = await db.run(sandbox.get_client, db.session, slug)
    if context.control.exposed:
        client = sandbox.masked_view(client)
    return _json(_dump(client))


@router.patch("/clients/{slug}")
async def update_client(slug: str, request: Request, db: Db) -> Response:
    """Change a client's display name (D413; ``displayName: null`` removes it, the hosted checkout shows
    the slug again). Answered like ``GET /_sandbox/clients/{slug}``."""
    context = db.context
    spec = validate(SandboxClientUpdate, await read_json_object(request))
    client = await db.run(sandbox.update_client, db.session, slug, spec)
    if context.control.exposed:
        client = sandbox.masked_view(client)
    return _json(_dump(client))


@router.post("/clients/{slug}/reveal")
async def reveal_client(slug: str, db: Db) -> Response:
    """A client by slug with its tokens and callback header value in full, whatever the bind (the
    control token guards it like every control call; the hook private key stays ``****``, D272)."""
    client = await db.run(sandbox.get_client, db.session, slug)
    return _json(_dump(client))


def _clock_state(session: Session, context: ServerContext) -> dict[str, Any]:
    return _dump(
        ClockState(now=context.clock.now(session), offset_seconds=context.clock.offset_seconds(session))
    )


@router.get("/clock")
async def get_clock(db: Db) -> Response:
    """The virtual time and its offset from the wall clock."""
    return _json(await db.run(_clock_state, db.session, db.context))


@router.post("/clock/advance")
async def advance_clock(request: Request, db: Db) -> Response:
    """Move the virtual clock forward; every job due on the way has run when this answers."""
    context = db.context
    body = validate(ClockAdvance, await read_json_object(request))
    micro = int((body.seconds * 1_000_000).to_integral_value())
    ran = await context.scheduler.advance(timedelta(microseconds=micro))
    state = await db.run(_clock_state, db.session, context)
    return _json({**state, "jobsRun": ran})


@router.post("/transactions/{uid}/pay")
async def pay(uid: str, request: Request, db: Db) -> Response:
    """Pay a payment link with a test card, headlessly (the checkout page's outcome, except that a
    decline here is final: ``declined`` and its callback, D414)."""
    context = db.context
    body = validate(PayRequest, await read_json_object(request))
    payment = await db.run(
        payments.pay_with_card, db.session, context.clock, uid, body.card_number, body.three_ds_result
    )
    await context.scheduler.run_due()
    return _json(_dump(payment.result))


@router.post("/transactions/{uid}/simulate")
async def simulate(uid: str, request: Request, db: Db) -> Response:
    """A rail reports the payment ``paid``, or the transaction ``expired``; answers a ``PayResult`` (D60)."""
    context = db.context
    body = validate(SimulateRequest, await read_json_object(request))
    result = await db.run(payments.simulate_rail, db.session, context.clock, uid, body.outcome, None)
    await context.scheduler.run_due()
    return _json(_dump(result))


@router.get("/transactions/{uid}")
async def get_transaction(uid: str, db: Db) -> Response:
    """A transaction as the server holds it."""
    return _json(_dump(await db.run(_transaction_view, db.session, uid)))


def _transaction_view(session: Session, uid: str) -> Any:
    tx, client = transactions.load(session, uid)
    return transactions.sandbox_view(tx, client)


@router.get("/callbacks")
async def list_callbacks(db: Db, uid: str | None = None) -> Response:
    """Every callback delivery attempt, oldest first (``?uid=`` filters by transaction)."""
    if uid is not None and not transactions.valid_uid(uid):
        return _json([])
    rows = await db.run(callbacks.attempts, db.session, uid)
    return _json([_dump(row) for row in rows])


_JOB_STATUSES = ("pending", "running", "done", "failed")


@router.get("/jobs")
async def list_jobs(db: Db, status: str | None = None, kind: str | None = None, limit: int = 200) -> Response:
    """The server's timed jobs, newest first: kind, ref, status, attempts, last error, due time (virtual),
    lease owner and lease end (wall clock), interval of a recurring job (D125-D127). ``?status=``,
    ``?kind=`` filter; ``limit`` 1..1000. Transaction expiries have no job row and are not listed."""
    if not 1 <= limit <= 1000:
        raise APIProblem.invalid_field("limit", "must be between 1 and 1000")
    if status is not None and status not in _JOB_STATUSES:
        raise APIProblem.invalid_field("status", "must be one of " + ", ".join(_JOB_STATUSES))
    rows = await db.run(jobs.listing, db.session, status=status, kind=kind, limit=limit)
    return _json([_dump(row) for row in rows])


@router.get("/requests")
async def list_requests(db: Db, limit: int = 200, path: str | None = None) -> Response:
    """The last public requests (``limit`` 1..1000), secrets masked, oldest first."""
    if not 1 <= limit <= 1000:
        raise APIProblem.invalid_field("limit", "must be between 1 and 1000")
    rows = await db.run(sandbox.request_log, db.session, limit, path)
    return _json([_dump(row) for row in rows])


@router.get("/events")
async def events(
    request: Request, db: Db, path: str | None = None, status: str | None = None, uid: str | None = None
) -> Response:
    """The live feed (Server-Sent Events, :mod:`paysdk.server.events`, decisions D115-D118): request log
    entries, callback attempts and job runs; ``Last-Event-ID`` resumes; a ``stream_cut`` fault drops
    the connection after N events."""
    from paysdk.server.adapters.uvicorn import abort_connection

    context = db.context
    statuses = FeedFilter.parse_status(status)
    if statuses is None:
        raise APIProblem.invalid_field("status", "must be a status like 500 or a class like 4xx (comma list)")
    if path is not None and not path.strip():
        raise APIProblem.invalid_field("path", "must not be empty")
    cut = await db.run(faults.take_stream_fault, db.session, request.method, request.url.path)
    return feed_stream(
        context.events,
        FeedFilter(path=path, status=statuses, uid=uid or None),
        request.headers.get("last-event-id"),
        cut_after=None if cut is None else (cut.after_events or 0),
        abort=functools.partial(abort_connection, request.scope),
    )


@router.post("/faults")
async def create_fault(request: Request, db: Db) -> Response:
    """Inject a fault (latency, error, rate_limit, drop, duplicate_callback)."""
    spec = validate(FaultCreate, await read_json_object(request))

    return _json(_dump(await db.run(faults.create, db.session, spec, db.now)), 201)


@router.get("/faults")
async def list_faults(db: Db) -> Response:
    """Every fault, oldest first, with the uses left."""
    return _json([_dump(fault) for fault in await db.run(faults.list_all, db.session)])


@router.delete("/faults")
async def delete_faults(db: Db) -> Response:
    """Remove every fault."""
    deleted = await db.run(faults.delete_all, db.session)
    return _json({"deleted": deleted})


@router.get("/test-cards")
async def test_cards() -> Response:
    """The test card table (:mod:`paysdk.server.services.test_cards`)."""
    return _json(
        [
            _dump(
                TestCard(
                    number=card.number,
                    brand=card.brand,
                    outcome=card.outcome,
                    description=card.description,
                    extra={"reason": card.reason, "renewal": card.renewal, **card.extra},
                )
            )
            for card in TEST_CARDS
        ]
    )


@router.post("/uploads")
async def upload_sink(request: Request) -> Response:
    """Receive an upload (multipart parts or a raw body) as a stream; answer each part's size and
    SHA-256, keep nothing. Bounded by the upload route bounds (D110); takes faults that name it."""
    parts = await uploads.digest_upload(request.headers.get("content-type"), request.stream())
    return _json(_dump(UploadReceipt(parts=parts)))
