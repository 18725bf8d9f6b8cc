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

__all__ = [
    "CLIENT_OPTIONS",
    "State",
    "configure_logging",
    "environment",
    "load_wallet_key",
    "open_client",
    "open_wallet_client",
    "require_client_slug",
    "require_merchant",
    "state",
]

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


_LOGGERS = ("paysdk", "paysdk_cli")


def configure_logging(verbose: bool) -> None:
    """``-v`` (or ``PAYSDK_LOG=debug``/``info``, read as the SDK reads it): debug lines of the SDK and
    the CLI (request metadata, never bodies or secrets) on stderr, through the SDK's own handler.

    Without either, the handler is removed again (it matters when commands run in one process).
    """
    if not verbose and not os.environ.get("PAYSDK_LOG") and "paysdk._logging" not in sys.modules:
        return  # nothing to turn on or off, and ``--help`` stays free of the SDK's imports
    from paysdk._logging import disable_stderr_log, enable_stderr_log, level_from_env

    level = logging.DEBUG if verbose else level_from_env()
    if level is not None:
        enable_stderr_log(level, _LOGGERS)
    else:
        disable_stderr_log(_LOGGERS)


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


def environment(st: State) -> paysdk.Environment:
    """The SDK environment of the profile's address, with the control token the control plane's calls
    send: ``PAYSDK_CONTROL_TOKEN``, else the profile's (``paysdk sandbox control-token``)."""
    import dataclasses

    from paysdk import Environment
    from paysdk_cli._secrets import CONTROL_TOKEN, load_secret

    environ = dict(os.environ)
    environ["PAYSDK_BASE_URL"] = st.base_url
    try:
        env = Environment.from_env(environ)
    except ValueError as exc:
        raise CLIError(f"invalid API address: {exc}", ExitCode.USAGE) from None
    if env.control_token is None:
        stored = load_secret(CONTROL_TOKEN, st.profile)
        if stored is not None:
            import paysdk

            env = dataclasses.replace(env, control_token=paysdk.Secret(stored.value))
    return env


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
    client = paysdk.Client(token, environment(st), **CLIENT_OPTIONS)
    try:
        yield client
    finally:
        client.close()


def require_merchant(st: State, given: str | None = None) -> str:
    """``--merchant``, else the profile's wallet merchant, else its client slug; a usage error otherwise."""
    slug = given or st.settings.get("merchant") or st.settings.get("client")
    if not slug:
        raise CLIError(
            f"no wallet merchant: pass --merchant, or run "
            f"`paysdk --profile {st.profile} wallet login --merchant SLUG`",
            ExitCode.USAGE,
        )
    return slug


def load_wallet_key(st: State) -> tuple[str, str]:
    """The profile's wallet signing key and where it came from; exit 4 with a hint when there is none."""
    from paysdk_cli._secrets import WALLET_KEY, load_secret

    stored = load_secret(WALLET_KEY, st.profile)
    if stored is None:
        raise CLIError(
            f"no wallet signing key for profile {st.profile!r}: run "
            f"`paysdk --profile {st.profile} wallet login --key-file FILE` or set {WALLET_KEY.env}",
            ExitCode.AUTH,
        )
    return stored.value, stored.source


@contextmanager
def open_wallet_client(
    st: State, *, merchant: str | None = None, private_key: str | None = None
) -> Iterator[paysdk.Client]:
    """A :class:`paysdk.Client` with the profile's wallet credentials and its token store, closed after.

    The signing key comes from ``private_key`` or the profile's secret store (``_secrets``); the
    application token pair lives in the SDK's ``FileTokenStore`` at ``_secrets.wallet_token_path``
    (0600, locked across processes, so concurrent invocations reuse one pair and refresh it once).
    The merchant token is used when one is configured, but the wallet does not need it.
    """
    from paysdk_cli._secrets import load_token, wallet_token_path

    slug = require_merchant(st, merchant)
    source = "argument"
    if private_key is None:
        private_key, source = load_wallet_key(st)
    import paysdk

    path = wallet_token_path(st.profile)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    logging.getLogger("paysdk_cli").debug(
        "profile=%s base_url=%s merchant=%s key_source=%s token_store=%s",
        st.profile,
        st.base_url,
        slug,
        source,
        path,
    )
    stored = load_token(st.profile)
    try:
        credentials = paysdk.WalletCredentials(slug, paysdk.Secret(private_key))
    except paysdk.ValidationError as exc:
        if exc.field != "private_key":
            raise
        raise CLIError(
            f"the wallet signing key ({source}) is unusable: {exc.message}",
            ExitCode.USAGE if source == "argument" else ExitCode.AUTH,
        ) from None
    client = paysdk.Client(
        paysdk.Secret(stored.value) if stored is not None else paysdk.Secret(""),
        environment(st),
        wallet=credentials,
        token_store=paysdk.FileTokenStore(path),
        **CLIENT_OPTIONS,
    )
    try:
        yield client
    finally:
        client.close()
