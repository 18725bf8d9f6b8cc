"""The baseline of the start-time benchmark (``benchmarks/bench_start.py``): a bare FastAPI app with a
SQLAlchemy engine on the same database as the reference server, run by the same uvicorn with the same
options. It does, honestly, what the reference server's start and first real request do at their least:

* at start: one table created (a no-op on an existing database) and a ``/_sandbox/health`` route that
  reads it;
* its first real answer, ``POST /_sandbox/clients``: a pydantic model validates the JSON body, one row is
  inserted in a transaction (two random secrets, like a merchant's tokens), and a pydantic model of the
  row is answered (``201``), all through FastAPI's own body and response-model handling.

``uvicorn benchmarks._bare_app:create_app --factory`` (the database from ``PAYSDK_BENCH_DB``).
"""

from __future__ import annotations

import os
import secrets

from fastapi import FastAPI
from pydantic import BaseModel, Field
from sqlalchemy import Integer, MetaData, String, Table, create_engine, insert, select
from sqlalchemy.schema import Column
from starlette.responses import JSONResponse, Response

__all__ = ["create_app"]


class ClientIn(BaseModel):
    """The body of the bare app's insert."""

    slug: str | None = Field(default=None, min_length=1, max_length=64)
    display_name: str | None = Field(default=None, alias="displayName", max_length=200)


class ClientOut(BaseModel):
    """Its answer."""

    id: int
    slug: str
    display_name: str = Field(alias="displayName")
    sandbox_token: str = Field(alias="sandboxToken")
    production_token: str = Field(alias="productionToken")


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
    clients = Table(
        "bare_clients",
        metadata,
        Column("id", Integer, primary_key=True),
        Column("slug", String(64), nullable=False),
        Column("display_name", String(200), nullable=False),
        Column("sandbox_token", String(64), nullable=False),
        Column("production_token", String(64), nullable=False),
    )
    metadata.create_all(engine)
    app = FastAPI()

    @app.get("/_sandbox/health")
    def health() -> Response:
        with engine.connect() as connection:
            rows = connection.execute(select(health_table.c.id)).all()
        return JSONResponse({"status": "ok", "rows": len(rows)})

    @app.post("/_sandbox/clients", status_code=201, response_model=ClientOut, response_model_by_alias=True)
    def create_client(body: ClientIn) -> ClientOut:
        slug = body.slug or f"merchant-{secrets.token_hex(4)}"
        values = {
            "slug": slug,
            "display_name": body.display_name or slug,
            "sandbox_token": secrets.token_hex(32),
            "production_token": secrets.token_hex(32),
        }
        with engine.begin() as connection:
            row_id = connection.execute(insert(clients).values(**values).returning(clients.c.id)).scalar_one()
        return ClientOut.model_validate({"id": row_id, **values}, by_name=True)

    return app
