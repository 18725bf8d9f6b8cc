"""The FastAPI example, in process through httpx.ASGITransport."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from paysdk.callbacks import MAX_BODY_BYTES, CallbackPayload

from ._support import OLD_TOKEN, TOKEN, make_body

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "callback_receiver_fastapi.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("callback_receiver_fastapi", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def test_duplicate_post_is_acknowledged_but_processed_once(example: ModuleType, tmp_path: Path) -> None:
    processed: list[CallbackPayload] = []

    async def handler(payload: CallbackPayload) -> None:
        processed.append(payload)

    app = example.create_app(header_value=[TOKEN, OLD_TOKEN], db_path=tmp_path / "cb.db", handler=handler)
    transport = httpx.ASGITransport(app=app)
    body = make_body(eventId="evt_example")
    async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as client:
        headers = {"Content-Type": "application/json", "X-Callback-Token": TOKEN}
        first = await client.post("/callbacks/paysdk", content=body, headers=headers)
        second = await client.post("/callbacks/paysdk", content=body, headers=headers)
        rotated = await client.post(
            "/callbacks/paysdk", content=make_body(), headers={"x-callback-token": OLD_TOKEN}
        )
        wrong = await client.post("/callbacks/paysdk", content=make_body(), headers={"X-Callback-Token": "x"})
        bad = await client.post("/callbacks/paysdk", content=b"{", headers=headers)

    assert first.status_code == 200
    assert first.json() == {"outcome": "processed", "eventId": "evt_example"}
    assert second.status_code == 200
    assert second.json()["outcome"] == "duplicate"
    assert rotated.status_code == 200
    assert wrong.status_code == 401
    assert TOKEN not in wrong.text
    assert bad.status_code == 400
    assert bad.json()["message"].startswith("body:")
    assert next(p.event_id for p in processed) == "evt_example"
    assert len(processed) == 2  # evt_example once, plus the rotated-token event


async def test_failing_handler_answers_5xx_and_the_retry_is_processed(
    example: ModuleType, tmp_path: Path
) -> None:
    calls: list[str] = []

    async def flaky(payload: CallbackPayload) -> None:
        calls.append(payload.event_id)
        if len(calls) == 1:
            raise RuntimeError("ledger unavailable")

    app = example.create_app(header_value=TOKEN, db_path=tmp_path / "cb.db", handler=flaky)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    body = make_body(eventId="evt_retry")
    headers = {"X-Callback-Token": TOKEN}
    async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as client:
        assert (await client.post("/callbacks/paysdk", content=body, headers=headers)).status_code == 500
        assert (await client.post("/callbacks/paysdk", content=body, headers=headers)).status_code == 200
        assert (await client.post("/callbacks/paysdk", content=body, headers=headers)).status_code == 200
    assert calls == ["evt_retry", "evt_retry"]


def test_header_value_comes_from_the_environment(
    example: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PAYSDK_CALLBACK_HEADER_VALUE", raising=False)
    with pytest.raises(RuntimeError, match="PAYSDK_CALLBACK_HEADER_VALUE"):
        example.create_app(db_path=tmp_path / "cb.db")
    monkeypatch.setenv("PAYSDK_CALLBACK_HEADER_VALUE", f"{TOKEN}, {OLD_TOKEN}")
    monkeypatch.setenv("PAYSDK_CALLBACK_DB", str(tmp_path / "env.db"))
    app = example.create_app()
    assert "2 secret(s)" in repr(app.state.receiver)
    assert TOKEN not in repr(app.state.receiver)


class Counted:
    """An endless async body of 64 KiB chunks that counts what the receiver pulled."""

    def __init__(self) -> None:
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            self.pulled += 1
            yield b" " * 65536


async def _post(app: object, content: Counted, headers: dict[str, str]) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as client:
        return await client.post("/callbacks/paysdk", content=content, headers=headers)


async def test_a_huge_body_without_the_header_is_401_unread(example: ModuleType, tmp_path: Path) -> None:
    app = example.create_app(header_value=TOKEN, db_path=tmp_path / "cb.db")
    content = Counted()
    response = await _post(app, content, {"Content-Length": str(1 << 30)})
    assert response.status_code == 401
    assert content.pulled == 0
    wrong = Counted()
    response = await _post(app, wrong, {"X-Callback-Token": "wrong"})  # chunked, no length
    assert response.status_code == 401
    assert wrong.pulled == 0


async def test_an_oversized_body_with_the_header_is_413_and_read_no_further(
    example: ModuleType, tmp_path: Path
) -> None:
    processed: list[CallbackPayload] = []
    app = example.create_app(header_value=TOKEN, db_path=tmp_path / "cb.db", handler=processed.append)
    declared = Counted()
    response = await _post(app, declared, {"X-Callback-Token": TOKEN, "Content-Length": str(1 << 30)})
    assert response.status_code == 413
    assert response.json()["message"] == f"body: larger than {MAX_BODY_BYTES} bytes"
    assert declared.pulled == 0
    streamed = Counted()
    response = await _post(app, streamed, {"X-Callback-Token": TOKEN})
    assert response.status_code == 413
    # Memory stays bounded: reading stopped at the chunk that crossed the cap.
    assert streamed.pulled == MAX_BODY_BYTES // 65536 + 1
    assert processed == []


def test_the_store_defaults_to_the_user_data_directory(
    example: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PAYSDK_CALLBACK_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    assert example.default_db_path() == tmp_path / "data" / "paysdk" / "callbacks.sqlite3"
    monkeypatch.setenv("PAYSDK_CALLBACK_DB", "~/elsewhere.sqlite3")
    assert example.default_db_path() == Path("~/elsewhere.sqlite3").expanduser()
    # Under uvicorn (tests/e2e/test_examples.py): the file lands there and the log line shows.
