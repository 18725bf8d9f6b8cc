"""Servers the benchmarks measure against, each run by uvicorn in its own process.

- ``stub``: a bare ASGI app that answers ``POST /transactions`` with a fixed payment link, so the
  client-side cost (SDK vs raw httpx) dominates.
- ``starlette``: a bare Starlette endpoint that parses the JSON body and answers, the baseline for the
  reference server's throughput.
- ``reference``: the paysdk reference server on a fresh SQLite file.

:func:`paysdk_serve` runs the ``paysdk serve`` command itself, for the benchmarks that measure a served
process (its RSS, its CPU time). Both wait for readiness with :mod:`paysdk.testing._ready`, as the tests
do. Only ``benchmarks/bench_start.py`` launches and polls on its own: the start is what it times.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from paysdk.testing._ready import ServedProcess, free_port, http_ok, serve_process

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

STUB_BODY = json.dumps(
    {"uid": "0f9e7a52c1d34b4d", "reference": "PL-ABCDEFGHIJ", "URL": "http://x/checkout/?orderId=0f9e"}
).encode()


async def stub_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Answer every request with the fixed payment-link body (drains the request body first)."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(STUB_BODY)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": STUB_BODY})


def as_served(build: Callable[[], Any]) -> Any:
    """``build()`` run the way ``paysdk serve`` runs the server's start: imports and build with the
    collector off, then frozen (D308), and the collector's thresholds set for serving (D769). Both
    factories below get it, so the throughput row compares the servers' code, not collector settings."""
    from paysdk.server.collector import SERVING_THRESHOLDS, imports_without_collection

    with imports_without_collection():
        app = build()
    gc.set_threshold(*SERVING_THRESHOLDS)
    return app


def starlette_app() -> Any:
    """A bare Starlette endpoint doing what a minimal POST /transactions handler must: parse, answer
    (its process set up as ``paysdk serve`` sets up the server's: :func:`as_served`)."""
    return as_served(_starlette_app)


def _starlette_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def create(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse(
            {"uid": "0f9e7a52c1d34b4d", "reference": "PL-ABCDEFGHIJ", "URL": str(body["amount"])}
        )

    return Starlette(routes=[Route("/transactions", create, methods=["POST"])])


#: With two or more CPUs, every server runs on CPU 0 and the load generator on CPU 1 (:func:`pin_load`):
#: the two never take turns on one core, which otherwise moves a sample by tens of percent.
SERVER_CPU, LOAD_CPU = 0, 1


def _pinnable() -> bool:
    return hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2


def _pin(cpu: int) -> Callable[[], None] | None:
    if not _pinnable():
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


@contextmanager
def pin_load() -> Iterator[None]:
    """Run the block (the load generator) on :data:`LOAD_CPU`, then give the process its CPUs back."""
    if not _pinnable():
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {LOAD_CPU})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextmanager
def serve(
    kind: str, *, workers_env: dict[str, str] | None = None, db_url: str | None = None
) -> Iterator[str]:
    """Run the named server with uvicorn in a subprocess; yield its base URL. ``db_url``: the reference
    server's database (default: a fresh SQLite file)."""
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="paysdk-bench-")
    env = dict(os.environ, **(workers_env or {}))
    if kind == "stub":
        target = ["benchmarks._servers:stub_app"]
    elif kind == "starlette":
        target = ["benchmarks._servers:starlette_app", "--factory"]
    elif kind == "reference":
        env["PAYSDK_BENCH_DB"] = db_url or f"sqlite:///{tmp}/bench.db"
        target = ["benchmarks._servers:reference_app", "--factory"]
    else:
        raise ValueError(kind)
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        *target,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    url = f"http://127.0.0.1:{port}"
    with serve_process(
        cmd,
        url=url,
        what=f"the {kind} server",
        env=env,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        preexec_fn=_pin(SERVER_CPU),
    ):
        yield url


@contextmanager
def paysdk_serve(db_url: str) -> Iterator[ServedProcess]:
    """``paysdk serve`` on ``db_url`` (on :data:`SERVER_CPU`), yielded once ``GET /_sandbox/health``
    answers ``200`` (``.url``; ``.process.pid`` for its RSS and CPU time), stopped at the end."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    paysdk = str(Path(sys.executable).with_name("paysdk"))
    with serve_process(
        [paysdk, "serve", "--host", "127.0.0.1", "--port", str(port), "--db", db_url],
        url=url,
        probe=http_ok(url + "/_sandbox/health"),
        what="paysdk serve",
        cwd=Path(__file__).resolve().parent.parent,
        preexec_fn=_pin(SERVER_CPU),
    ) as served:
        yield served


def reference_app() -> Any:
    """The reference server on the benchmark's SQLite file (uvicorn factory). ``PAYSDK_BENCH_DROP``
    (comma-separated class names, unset by ``make bench``) leaves those ASGI layers of
    :mod:`paysdk.server.asgi` out of the app: the ablations of ``benchmarks/bench_layers.py``. Its process
    is set up as ``paysdk serve`` sets up the server's (:func:`as_served`)."""

    def build() -> Any:
        from paysdk.server import create_app

        return create_app(os.environ["PAYSDK_BENCH_DB"])

    app = as_served(build)
    drop = set(filter(None, os.environ.get("PAYSDK_BENCH_DROP", "").split(",")))
    if drop:
        app.user_middleware = [m for m in app.user_middleware if getattr(m.cls, "__name__", "") not in drop]
    return app
