"""Receive paysdk merchant callbacks with FastAPI.

Run it::

    export PAYSDK_CALLBACK_HEADER_VALUE=<the value registered with the operator>  # "new,old" to rotate
    uvicorn --factory examples.callback_receiver_fastapi:create_app --port 8080

Environment: ``PAYSDK_CALLBACK_HEADER_VALUE`` (required; comma-separated during a rotation),
``PAYSDK_CALLBACK_HEADER_NAME`` (default ``X-Callback-Token``), ``PAYSDK_CALLBACK_DB`` (SQLite file,
default ``callbacks.sqlite3``). The SQLite store is shared by every uvicorn worker on the host.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from paysdk.callbacks import (
    DEFAULT_HEADER_NAME,
    AcceptedValues,
    AsyncHandler,
    CallbackPayload,
    CallbackReceiver,
    SQLiteDedupStore,
)

logger = logging.getLogger("callback_receiver")


async def record_payment(payload: CallbackPayload) -> None:
    """Your business logic. Runs once per event; raise to have the service retry later."""
    logger.info("%s %s: %s %s", payload.reference, payload.status, payload.amount, payload.currency)


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
    store = SQLiteDedupStore(db_path or os.environ.get("PAYSDK_CALLBACK_DB", "callbacks.sqlite3"))
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
        # The raw bytes, not a parsed model: parse_payload keeps amounts exact (Decimal).
        result = await receiver.ahandle(request.headers, await request.body(), handler)
        return JSONResponse(result.response_body(), status_code=result.status_code)

    return app


if __name__ == "__main__":
    import uvicorn

    logging.basicConfig(level=logging.INFO)
    uvicorn.run(create_app(), host="127.0.0.1", port=int(os.environ.get("PORT", "8080")))
