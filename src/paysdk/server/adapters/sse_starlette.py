"""The server's one reach into sse-starlette's private parts (D530, D630).

Written against sse-starlette 3.3 to 3.7.0 (``pyproject.toml``: ``sse-starlette>=3.3,<3.8``).
``tests/server/test_adapter_sse_starlette.py`` fails, naming the hook and the installed version, when a
private part used here is gone or changed. No other module overrides or reads sse-starlette's private
parts (``tests/foundation/test_private_hooks.py``).

Hooks:

- ``EventSourceResponse._listen_for_exit_signal``: a ``staticmethod`` coroutine function without
  parameters that returns when sse-starlette decides the process shuts down; its response awaits it (as
  ``self._listen_for_exit_signal()``, from ``_listen_for_exit_signal_with_grace``, a task of every
  answer) and then sets the answer's ``shutdown_event`` and ends the answer. sse-starlette decides from
  ``AppStatus.should_exit``, a class attribute its patch of uvicorn's ``Server.handle_exit`` sets when any
  uvicorn server of the process handles an exit, and that nothing ever resets: once set, every later
  stream of the process (a second server, an embedding, the next test) would end at once (D604).
  :class:`ServerWatchedResponse` overrides the hook to never return: the server's own
  :class:`~paysdk.server.sse.StreamRegistry` watches each stream's own server instead (D602), and the
  answer's ``shutdown_event`` is then set by the stream itself.
- ``EventSourceResponse._send_with_timeout(self, send, message)``: every write of an answer (its events
  from ``_stream_response``, its pings from ``_ping``) goes through it; it wraps each write in an anyio
  cancel scope (``anyio.move_on_after(self.send_timeout)``) even when there is no send timeout, which
  was most of the answer's own cost of a write (D632: 500 streams woken at once spend ~20 us each in
  it). :class:`ServerWatchedResponse` sends directly when ``send_timeout`` is ``None`` (as every stream
  of the server), and defers to sse-starlette otherwise.

This module imports sse-starlette: it is loaded with the first stream (as :mod:`paysdk.server.sse`),
never when the server starts.
"""

from __future__ import annotations

import anyio
from sse_starlette import EventSourceResponse
from starlette.types import Message, Send

__all__ = ["EXIT_SIGNAL_HOOK", "SEND_HOOK", "ServerWatchedResponse"]

#: The names of the hooks :class:`ServerWatchedResponse` overrides (the adapter's test looks them up).
EXIT_SIGNAL_HOOK = "_listen_for_exit_signal"
SEND_HOOK = "_send_with_timeout"


class ServerWatchedResponse(EventSourceResponse):
    """sse-starlette's :class:`~sse_starlette.EventSourceResponse` deaf to its process-wide exit signal,
    whose writes without a send timeout skip the cancel scope (module docstring): the subclass ends it
    when its own server stops."""

    @staticmethod
    async def _listen_for_exit_signal() -> None:
        """Never returns: the stream's own server is watched elsewhere (module docstring)."""
        await anyio.sleep_forever()

    async def _send_with_timeout(self, send: Send, message: Message) -> None:
        """One write of the answer: directly when there is no send timeout (module docstring)."""
        if self.send_timeout is None:
            await send(message)
            return
        await super()._send_with_timeout(send, message)
