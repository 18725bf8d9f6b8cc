"""Event streams: :class:`AsyncEventStream` (hand-written) and :class:`EventStream` (generated from it).

The shells only do I/O: open the connection, read its bytes, sleep between reconnects. What the bytes
mean, which events to yield, whether and when to reconnect is decided by :mod:`paysdk._sse` (pure).

A stream is an iterator (``for event in stream`` / ``async for event in stream``) and a context
manager; leaving the ``with`` block, ``close()``/``aclose()``, or dropping the stream (``break`` out of
the loop) closes the connection. No read timeout applies between events unless the caller set one;
the connect timeout of the client does.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Generator
from typing import TYPE_CHECKING, Any, Generic, Self, TypeAlias, TypeVar, cast

import httpx
import pydantic

from paysdk._credentials import credential_for, needs_token_manager, recovery_codes
from paysdk._errors import AuthenticationError
from paysdk._pipeline import buffered_response, unexpected_response
from paysdk._sse import (
    ENDED,
    EventDecoder,
    ReconnectDecision,
    ServerSentEvent,
    StreamEnded,
    StreamOperation,
    StreamOutcome,
    StreamProgress,
    answer_problem,
    final_error,
    parse_event,
    reconnect_decision,
    stream_request,
)

if TYPE_CHECKING:
    from paysdk._client import AsyncClient, Client

__all__ = ["AsyncEventStream", "EventStream"]

#: Reconnects are logged here at INFO (the CLI's ``sandbox tail`` shows them as notes on stderr).
LOGGER_NAME = "paysdk.stream"

E = TypeVar("E", bound=ServerSentEvent[Any])
AsyncEventGen: TypeAlias = AsyncGenerator[ServerSentEvent[Any], None]
EventGen: TypeAlias = Generator[ServerSentEvent[Any], None, None]


def log_reconnect(stream: StreamOperation, progress: StreamProgress, decision: ReconnectDecision) -> None:
    """One INFO line per reconnect (metadata only)."""
    logging.getLogger(LOGGER_NAME).info(
        "event stream %s %s: %s; reconnecting in %.1fs (Last-Event-ID %s)",
        stream.op.method.upper(),
        stream.op.path,
        decision.reason,
        decision.delay,
        progress.last_event_id or "-",
    )


def typed_event(stream: StreamOperation, response: httpx.Response, block: Any, attempts: int) -> Any:
    """:func:`paysdk._sse.parse_event`, a known event whose data does not fit its model raising
    :class:`~paysdk.UnexpectedResponseError`."""
    try:
        return parse_event(stream, block)
    except (pydantic.ValidationError, ValueError) as exc:
        problem = f"event {block.event!r} (id {block.id}): {type(exc).__name__}"
        raise unexpected_response(stream.op, response, problem, attempts=attempts) from None


# unasync: begin
class AsyncEventStream(Generic[E]):
    """A Server-Sent Events stream of typed events, for ``asyncio`` code (see the module docstring).

    ``last_event_id`` is the id of the last event received (sent as ``Last-Event-ID`` on reconnect);
    ``reconnects`` counts the connections reopened after a drop.
    """

    def __init__(self, client: AsyncClient, stream: StreamOperation) -> None:
        self._progress = StreamProgress()
        # A static generator: it holds the client and the progress, never the stream object, so dropping
        # the stream (``break``) finalizes the generator, which closes the connection.
        self._events = AsyncEventStream._run(client, stream, self._progress)

    @property
    def last_event_id(self) -> str | None:
        """The id of the last event received (``None`` before any)."""
        return self._progress.last_event_id

    @property
    def reconnects(self) -> int:
        """How many times the connection was reopened."""
        return self._progress.reconnects

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> E:
        return cast(E, await self._events.__anext__())

    async def aclose(self) -> None:
        """Close the connection; the iterator ends."""
        await self._events.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @staticmethod
    async def _run(client: AsyncClient, stream: StreamOperation, progress: StreamProgress) -> AsyncEventGen:
        config = client._config
        secrets = config.secrets()
        # A token-managed credential (a backoffice user token...): a token per connection from the
        # client's manager (refreshed when due), and one recovery after a 401 it can fix (D184, D221).
        credential = credential_for(stream.op.auth)
        tokens = client._token_provider(credential) if needs_token_manager(stream.op.auth) else None
        codes = recovery_codes(credential, None)
        recovered = False
        while True:
            token = None if tokens is None else await tokens.token()
            request = stream_request(stream, config, progress, token)
            outcome: StreamOutcome
            try:
                response = await client._http.send(request, stream=True)
            except httpx.RequestError as exc:
                outcome = exc
            else:
                try:
                    if answer_problem(response) is not None:
                        body = b""  # an error answer: read for its message, at most max_response_bytes
                        async for chunk in response.aiter_bytes():
                            body += chunk
                            if len(body) > config.max_response_bytes:
                                break
                        outcome = buffered_response(response, body[: config.max_response_bytes])
                    else:
                        progress.opened = True
                        recovered = False
                        decoder = EventDecoder(stream.policy.max_event_bytes)
                        try:
                            async for chunk in response.aiter_bytes():
                                for block in decoder.feed(chunk):
                                    accepted = progress.accept(block)
                                    if accepted is not None:
                                        yield typed_event(stream, response, accepted, progress.reconnects + 1)
                            outcome = ENDED
                        except httpx.RequestError as exc:
                            outcome = exc
                finally:
                    await response.aclose()
            if (
                tokens is not None
                and token is not None
                and not recovered
                and isinstance(outcome, httpx.Response)
            ):
                refused = final_error(stream, outcome, attempts=progress.failures + 1, secrets=secrets)
                if isinstance(refused, AuthenticationError) and refused.own_code in codes:
                    recovered = True
                    await tokens.recover(token, refused)
                    continue
            decision = reconnect_decision(
                outcome, progress, config, stream.policy, rng=client._random, now=client._now
            )
            if not decision.reconnect:
                if isinstance(outcome, StreamEnded):
                    return
                error = final_error(stream, outcome, attempts=progress.failures + 1, secrets=secrets)
                raise error from (outcome if isinstance(outcome, Exception) else None)
            progress.failures += 1
            progress.reconnects += 1
            log_reconnect(stream, progress, decision)
            if stream.on_reconnect is not None:
                stream.on_reconnect(progress)
            await client._sleep(decision.delay)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class EventStream(Generic[E]):
    """A Server-Sent Events stream of typed events, for blocking code (see the module docstring).

    ``last_event_id`` is the id of the last event received (sent as ``Last-Event-ID`` on reconnect);
    ``reconnects`` counts the connections reopened after a drop.
    """

    def __init__(self, client: Client, stream: StreamOperation) -> None:
        self._progress = StreamProgress()
        # A static generator: it holds the client and the progress, never the stream object, so dropping
        # the stream (``break``) finalizes the generator, which closes the connection.
        self._events = EventStream._run(client, stream, self._progress)

    @property
    def last_event_id(self) -> str | None:
        """The id of the last event received (``None`` before any)."""
        return self._progress.last_event_id

    @property
    def reconnects(self) -> int:
        """How many times the connection was reopened."""
        return self._progress.reconnects

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> E:
        return cast(E, self._events.__next__())

    def close(self) -> None:
        """Close the connection; the iterator ends."""
        self._events.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @staticmethod
    def _run(client: Client, stream: StreamOperation, progress: StreamProgress) -> EventGen:
        config = client._config
        secrets = config.secrets()
        # A token-managed credential (a backoffice user token...): a token per connection from the
        # client's manager (refreshed when due), and one recovery after a 401 it can fix (D184, D221).
        credential = credential_for(stream.op.auth)
        tokens = client._token_provider(credential) if needs_token_manager(stream.op.auth) else None
        codes = recovery_codes(credential, None)
        recovered = False
        while True:
            token = None if tokens is None else tokens.token()
            request = stream_request(stream, config, progress, token)
            outcome: StreamOutcome
            try:
                response = client._http.send(request, stream=True)
            except httpx.RequestError as exc:
                outcome = exc
            else:
                try:
                    if answer_problem(response) is not None:
                        body = b""  # an error answer: read for its message, at most max_response_bytes
                        for chunk in response.iter_bytes():
                            body += chunk
                            if len(body) > config.max_response_bytes:
                                break
                        outcome = buffered_response(response, body[: config.max_response_bytes])
                    else:
                        progress.opened = True
                        recovered = False
                        decoder = EventDecoder(stream.policy.max_event_bytes)
                        try:
                            for chunk in response.iter_bytes():
                                for block in decoder.feed(chunk):
                                    accepted = progress.accept(block)
                                    if accepted is not None:
                                        yield typed_event(stream, response, accepted, progress.reconnects + 1)
                            outcome = ENDED
                        except httpx.RequestError as exc:
                            outcome = exc
                finally:
                    response.close()
            if (
                tokens is not None
                and token is not None
                and not recovered
                and isinstance(outcome, httpx.Response)
            ):
                refused = final_error(stream, outcome, attempts=progress.failures + 1, secrets=secrets)
                if isinstance(refused, AuthenticationError) and refused.own_code in codes:
                    recovered = True
                    tokens.recover(token, refused)
                    continue
            decision = reconnect_decision(
                outcome, progress, config, stream.policy, rng=client._random, now=client._now
            )
            if not decision.reconnect:
                if isinstance(outcome, StreamEnded):
                    return
                error = final_error(stream, outcome, attempts=progress.failures + 1, secrets=secrets)
                raise error from (outcome if isinstance(outcome, Exception) else None)
            progress.failures += 1
            progress.reconnects += 1
            log_reconnect(stream, progress, decision)
            if stream.on_reconnect is not None:
                stream.on_reconnect(progress)
            client._sleep(decision.delay)


# unasync: generated end
