"""Receive paysdk merchant callbacks with FastAPI.

Run it::

    export PAYSDK_CALLBACK_HEADER_VALUE=<the value registered with the operator>  # "new,old" to rotate
    uvicorn --factory examples.callback_receiver_fastapi:create_app --port 8080

Environment: ``PAYSDK_CALLBACK_HEADER_VALUE`` (required; comma-separated during a rotation),
``PAYSDK_CALLBACK_HEADER_NAME`` (default ``X-Callback-Token``), ``PAYSDK_CALLBACK_DB`` (the SQLite file
of processed event ids; default ``callbacks.sqlite3`` in the user data directory, e.g.
``~/.local/share/paysdk/`` on Linux, never the working directory). The SQLite store is shared by every
uvicorn worker on the host. Each processed payment and suspended subscription (the ``subsCallback``) is
logged at INFO on the ``callback_receiver`` logger, to stderr beside uvicorn's own lines; a kind this SDK
version does not know is acknowledged and logged with its keys.

The header is checked before the body is read, and the body is read with a cap while it streams
(``read_verified_body``): an unauthenticated or oversized request costs the receiver nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import platformdirs
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from paysdk.callbacks import (
    DEFAULT_HEADER_NAME,
    AcceptedValues,
    AsyncHandler,
    CallbackReceiver,
    CallbackResult,
    PaymentCallback,
    SQLiteDedupStore,
    SubscriptionCallback,
    UnknownCallback,
    read_verified_body,
)

logger = logging.getLogger("callback_receiver")


def default_db_path() -> Path:
    """``PAYSDK_CALLBACK_DB``, else ``callbacks.sqlite3`` in the user data directory (created)."""
    configured = os.environ.get("PAYSDK_CALLBACK_DB", "").strip()
    if configured:
        return Path(configured).expanduser()
    directory = Path(platformdirs.user_data_dir("paysdk"))
    directory.mkdir(parents=True, exist_ok=True)
    return directory / "callbacks.sqlite3"


def configure_logging() -> None:
    """Show this example's INFO lines under uvicorn, which configures only its own loggers."""
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


async def record_payment(payload: PaymentCallback) -> None:
    """Your business logic. Runs once per event; raise to have the service retry later."""
    logger.info("%s %s: %s %s", payload.reference, payload.status, payload.amount, payload.currency)


async def record_suspension(callback: SubscriptionCallback) -> None:
    """A subscription was suspended (all its charge attempts declined): stop the service it pays for."""
    logger.info("subscription %s %s: %s", callback.sub_uid, callback.status, callback.reason)


async def record_unknown(callback: UnknownCallback) -> None:
    """A kind this SDK version does not know: acknowledged (never refused), its keys logged."""
    logger.info("callback of unknown kind %s: keys %s", callback.kind, sorted(callback.data))


def create_app(
    *,
    header_value: AcceptedValues | None = None,
    header_name: str | None = None,
    db_path: str | Path | None = None,
    handler: AsyncHandler = record_payment,
) -> FastAPI:
    """Build the app; arguments left out are read from the environment (see the module docstring)."""
    if header_value is None:
        configured = os.environ.get("PAYSDK_CALLBACK_HEADER_VALUE", "")
        header_value = [value.strip() for value in configured.split(",") if value.strip()]
        if not header_value:
            raise RuntimeError("set PAYSDK_CALLBACK_HEADER_VALUE to the registered callback header value")
    configure_logging()
    store = SQLiteDedupStore(db_path or default_db_path())
    receiver = CallbackReceiver(
        header_name or os.environ.get("PAYSDK_CALLBACK_HEADER_NAME", DEFAULT_HEADER_NAME),
        header_value,
        store=store,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()

    app = FastAPI(title="paysdk callback receiver", lifespan=lifespan)
    app.state.receiver = receiver

    @app.post("/callbacks/paysdk")
    async def receive_callback(request: Request) -> JSONResponse:
        # The header first, then the raw bytes with a cap (64 KiB): a wrong header is 401 and an
        # oversized body 413, both before the body is held in memory. Raw bytes, not a parsed model:
        # parse_payload keeps amounts exact (Decimal).
        body = await read_verified_body(request, receiver)
        if isinstance(body, CallbackResult):
            result = body
        else:
            result = await receiver.ahandle(
                request.headers, body, handler, on_subscription=record_suspension, on_unknown=record_unknown
            )
        return JSONResponse(result.response_body(), status_code=result.status_code)

    return app


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(create_app(), host="127.0.0.1", port=int(os.environ.get("PORT", "8080")))
