"""The private sse-starlette hooks of :mod:`paysdk.server.adapters.sse_starlette` against the installed
sse-starlette (D630, D632): a failure names the hook and the version, so an sse-starlette upgrade that
moves or renames them is seen at once instead of silently bringing back the process-wide exit signal
(every stream of a process ending once any of its servers stopped, D604) or the cost of a cancel scope
per write. The regression over a real socket is
``tests/server/test_server_event_streams.py::test_a_stream_ignores_sse_starlettes_process_wide_exit_flag``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
import sse_starlette
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette import sse as upstream
from starlette.types import Message

from paysdk.server.adapters.sse_starlette import EXIT_SIGNAL_HOOK, SEND_HOOK, ServerWatchedResponse

VERSION = f"sse-starlette {getattr(sse_starlette, '__version__', '?')}"
SCOPE = {"type": "http", "method": "GET"}
#: Generous: nothing here measures time.
DEADLINE = 30.0


def test_the_exit_signal_hook_is_a_static_coroutine_without_parameters() -> None:
    hook = inspect.getattr_static(EventSourceResponse, EXIT_SIGNAL_HOOK, None)
    where = f"{VERSION}: EventSourceResponse.{EXIT_SIGNAL_HOOK}"
    assert isinstance(hook, staticmethod), f"{where} is gone or no longer a staticmethod"
    assert inspect.iscoroutinefunction(hook.__func__), f"{where} is no longer a coroutine function"
    assert not inspect.signature(hook.__func__).parameters, f"{where} takes parameters now"
    assert isinstance(inspect.getattr_static(ServerWatchedResponse, EXIT_SIGNAL_HOOK), staticmethod)


def test_the_send_hook_takes_send_and_message() -> None:
    hook = inspect.getattr_static(EventSourceResponse, SEND_HOOK, None)
    where = f"{VERSION}: EventSourceResponse.{SEND_HOOK}"
    assert inspect.iscoroutinefunction(hook), f"{where} is gone or no longer a coroutine function"
    assert list(inspect.signature(hook).parameters) == ["self", "send", "message"], f"{where} changed"
    status = getattr(upstream, "AppStatus", None)
    assert hasattr(status, "should_exit"), f"{VERSION}: sse_starlette.sse.AppStatus.should_exit is gone"


async def _events() -> AsyncIterator[bytes]:
    yield b"retry: 1000\n\n"
    await anyio.sleep_forever()


async def _answer(response: EventSourceResponse, *, pings: int) -> tuple[list[bytes], bool]:
    """Run ``response`` in process until ``pings`` heartbeats were written, or it ended: the body
    written, and whether it ended by itself."""
    written: list[bytes] = []
    enough = asyncio.Event()

    async def receive() -> Message:
        await anyio.sleep_forever()
        raise AssertionError  # pragma: no cover

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body":
            written.append(message["body"])
            if sum(body.startswith(b": heartbeat") for body in written) >= pings:
                enough.set()

    running = asyncio.ensure_future(response(dict(SCOPE), receive, send))
    waiting = asyncio.ensure_future(enough.wait())
    done, _ = await asyncio.wait({running, waiting}, timeout=DEADLINE, return_when=asyncio.FIRST_COMPLETED)
    ended = running in done
    for task in (running, waiting):
        task.cancel()
    await asyncio.gather(running, waiting, return_exceptions=True)
    return written, ended


def _heartbeat() -> ServerSentEvent:
    return ServerSentEvent(comment="heartbeat", sep="\n")


@pytest.fixture
def exit_flag_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """sse-starlette's process-wide flag as any uvicorn server of the process that handled an exit
    leaves it."""
    monkeypatch.setattr(upstream.AppStatus, "should_exit", True)


@pytest.mark.usefixtures("exit_flag_set")
async def test_upstream_ends_every_answer_once_the_flag_is_set() -> None:
    """Why the hook is overridden: with the flag set, sse-starlette's own answer ends at once. If this
    fails, sse-starlette no longer listens that way: review the adapter (it may be needed no more)."""
    response = EventSourceResponse(_events(), ping=0.01, ping_message_factory=_heartbeat)
    written, ended = await _answer(response, pings=2)
    assert ended, f"{VERSION}: an answer outlived AppStatus.should_exit"
    assert written.count(b": heartbeat\n\n") < 2


@pytest.mark.usefixtures("exit_flag_set")
async def test_the_override_keeps_answers_going_with_the_flag_set() -> None:
    """The answer awaits the overridden hook (not a copy taken elsewhere): it pings on."""
    response = ServerWatchedResponse(_events(), ping=0.01, ping_message_factory=_heartbeat)
    written, ended = await _answer(response, pings=2)
    assert not ended, f"{VERSION}: EventSourceResponse no longer awaits self.{EXIT_SIGNAL_HOOK}()"
    assert written[0] == b"retry: 1000\n\n"
    assert written.count(b": heartbeat\n\n") >= 2


async def test_writes_without_a_send_timeout_take_no_cancel_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write (the events and the pings) goes through the overridden hook: with sse-starlette's
    cancel scope made to fail, the answer still writes both."""

    def no_scope(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{VERSION}: a write bypassed EventSourceResponse.{SEND_HOOK}")

    monkeypatch.setattr(anyio, "move_on_after", no_scope)  # sse-starlette calls anyio.move_on_after
    response = ServerWatchedResponse(_events(), ping=0.01, ping_message_factory=_heartbeat)
    written, ended = await _answer(response, pings=2)
    assert not ended
    assert written[0] == b"retry: 1000\n\n"
    assert written.count(b": heartbeat\n\n") >= 2


async def test_a_send_timeout_is_still_sse_starlettes() -> None:
    """With a send timeout, a write that takes longer fails as sse-starlette makes it fail."""
    response = ServerWatchedResponse(_events(), ping=0.01, send_timeout=0.01)

    async def receive() -> Message:
        await anyio.sleep_forever()
        raise AssertionError  # pragma: no cover

    async def stuck(message: Message) -> None:
        if message["type"] == "http.response.body":
            await anyio.sleep_forever()

    with pytest.raises(upstream.SendTimeoutError):
        with anyio.fail_after(DEADLINE):
            await response(dict(SCOPE), receive, stuck)
