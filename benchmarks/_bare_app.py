"""The baseline of the start-time benchmark (``benchmarks/bench_start.py``): a bare FastAPI app with a
SQLAlchemy engine on the same database as the reference server, one table created at start and a
``/_sandbox/health`` route that reads it, run by the same uvicorn with the same options.

``uvicorn benchmarks._bare_app:create_app --factory`` (the database from ``PAYSDK_BENCH_DB``).
"""

from __future__ import annotations

import os

from fastapi import FastAPI
from sqlalchemy import Integer, MetaData, String, Table, create_engine, select
from sqlalchemy.schema import Column
from starlette.responses import JSONResponse, Response

__all__ = ["create_app"]


def create_app() -> FastAPI:
    """The bare app on ``PAYSDK_BENCH_DB`` (default: SQLite ``bare.db`` in the working directory)."""
    url = os.environ.get("PAYSDK_BENCH_DB", "sqlite:///bare.db")
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    engine = create_engine(url)
    metadata = MetaData()
    health_table = Table(
        "bare_health", metadata, Column("id", Integer, primary_key=True), Column("note", String(20))
    )
    metadata.create_all(engine)
    app = FastAPI()

    @app.get("/_sandbox/health")
    def health() -> Response:
        with engine.connect() as connection:
            rows = connection.execute(select(health_table.c.id)).all()
        return JSONResponse({"status": "ok", "rows": len(rows)})

    return app
