"""Per-invocation state (profile, base URL, output format, verbosity) and SDK client construction.

The root callback in ``main.py`` stores a :class:`State` in the root context; commands get it with
:func:`state` and build clients with :func:`open_client`. Nothing here imports ``paysdk`` at module level.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._state import OutputFormat, State

if TYPE_CHECKING:
    import paysdk

__all__ = ["CLIENT_OPTIONS", "State", "configure_logging", "open_client", "require_client_slug", "state"]

#: Extra keyword arguments for :class:`paysdk.Client` (a test seam: tests put an httpx mock transport
#: and ``max_retries`` here).
CLIENT_OPTIONS: dict[str, Any] = {}


def state(ctx: typer.Context) -> State:
    """The invocation's :class:`State` (a default one when a sub-app is run on its own, as in tests)."""
    obj = ctx.find_root().obj
    if isinstance(obj, State):
        return obj
    fresh = State(output=OutputFormat.table if sys.stdout.isatty() else OutputFormat.json)
    ctx.find_root().obj = fresh
    return fresh


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time of the record (test runners swap it)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


_LOGGERS = ("paysdk", "paysdk_cli")


def configure_logging(verbose: bool) -> None:
    """``-v``: debug lines of the SDK and the CLI (request metadata, never bodies or secrets) on stderr.

    Without ``-v`` the CLI's handler is removed again (it matters when commands run in one process).
    """
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        ours = [h for h in logger.handlers if isinstance(h, _StderrHandler)]
        if verbose:
            if not ours:
                handler = _StderrHandler()
                handler.setFormatter(logging.Formatter("debug %(name)s: %(message)s"))
                logger.addHandler(handler)
            logger.setLevel(logging.DEBUG)
        elif ours:
            for handler in ours:
                logger.removeHandler(handler)
            logger.setLevel(logging.NOTSET)


def require_client_slug(st: State, given: str | None) -> str:
    """``--client``, else the profile's default client; a usage error when neither is set."""
    slug = given or st.settings.get("client")
    if not slug:
        raise CLIError(
            f"no client slug: pass --client, or store a default with "
            f"`paysdk --profile {st.profile} login --client SLUG`",
            ExitCode.USAGE,
        )
    return slug


def _environment(st: State) -> paysdk.Environment:
    from paysdk import Environment

    environ = dict(os.environ)
    environ["PAYSDK_BASE_URL"] = st.base_url
    try:
        return Environment.from_env(environ)
    except ValueError as exc:
        raise CLIError(f"invalid API address: {exc}", ExitCode.USAGE) from None


@contextmanager
def open_client(st: State, *, token_required: bool = True) -> Iterator[paysdk.Client]:
    """A :class:`paysdk.Client` for the profile's token and address, closed afterwards.

    Without a token (and ``token_required``) this is exit code 4 with a hint to ``paysdk login``.
    The control plane (``paysdk sandbox``) needs no token.
    """
    from paysdk_cli._secrets import TOKEN_ENV, load_token

    stored = load_token(st.profile)
    if stored is None and token_required:
        raise CLIError(
            f"no merchant token for profile {st.profile!r}: run `paysdk --profile {st.profile} login` "
            f"or set {TOKEN_ENV}",
            ExitCode.AUTH,
        )
    import paysdk

    logging.getLogger("paysdk_cli").debug(
        "profile=%s base_url=%s token_source=%s", st.profile, st.base_url, stored.source if stored else None
    )
    token = paysdk.Secret(stored.value) if stored is not None else paysdk.Secret("")
    client = paysdk.Client(token, _environment(st), **CLIENT_OPTIONS)
    try:
        yield client
    finally:
        client.close()
