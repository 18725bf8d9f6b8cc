"""Backoffice credentials of the CLI (spec 4.4, 5.3.5-5.3.7; D105-D107, D184, D201).

For commands acting in the backoffice (``paysdk backoffice ...``, ``paysdk cardholders ...``):

* :func:`open_backoffice_client` ``(st, *, merchant=None, operator=None, private_key=None,
  password=None)`` is a context manager yielding a :class:`paysdk.Client` built with
  :class:`paysdk.BackofficeCredentials` (the application key and the operator's
  :class:`paysdk.BackofficeUser`) and the profile's backoffice ``FileTokenStore``, closed afterwards.
  The SDK picks the token per call (D184), logs in lazily, refreshes single-flight and stores each pair
  before using it. Usage::

      with open_backoffice_client(state(ctx)) as client:
          client.backoffice.associate_card(partner_id, cardholder_id, card_id)

* Where things come from (D201): the merchant and the operator's email from the arguments, else the
  profile (``backoffice_merchant``/``backoffice_operator``, written by ``paysdk backoffice login``);
  the application's Ed25519 key from the wallet's key storage (:data:`paysdk_cli._secrets.WALLET_KEY`:
  ``$PAYSDK_WALLET_PRIVATE_KEY``, the keyring, the 0600 file); the operator's password from
  ``$PAYSDK_BACKOFFICE_PASSWORD``, else the keyring (service ``paysdk-backoffice-password``), else the
  0600 ``credentials.json`` (key ``backoffice_passwords``): :data:`BACKOFFICE_PASSWORD`. The token
  pairs live in ``<config dir>/wallet/<profile>.backoffice.json`` (:func:`backoffice_token_path`).
  Nothing is ever printed.

A missing piece is exit code 4 with a hint to ``paysdk backoffice login``. Nothing here imports
``paysdk`` at module level.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._secrets import SecretKind
from paysdk_cli._state import State

if TYPE_CHECKING:
    import paysdk

__all__ = [
    "BACKOFFICE_PASSWORD",
    "BACKOFFICE_PASSWORD_ENV",
    "backoffice_settings",
    "backoffice_token_path",
    "open_backoffice_client",
]

BACKOFFICE_PASSWORD_ENV = "PAYSDK_BACKOFFICE_PASSWORD"
#: The operator's password, per profile (environment, keyring, 0600 file).
BACKOFFICE_PASSWORD = SecretKind(
    "backoffice password", BACKOFFICE_PASSWORD_ENV, "paysdk-backoffice-password", "backoffice_passwords"
)


def backoffice_token_path(profile: str) -> Path:
    """The backoffice token pairs of ``profile`` (application and operator; the SDK's
    ``FileTokenStore``, 0600, locked across processes)."""
    from paysdk_cli._secrets import _safe, wallet_dir

    return wallet_dir() / f"{_safe(profile)}.backoffice.json"


def backoffice_settings(
    st: State, merchant: str | None = None, operator: str | None = None
) -> tuple[str, str]:
    """The merchant and the operator's email: the arguments, else the profile's; exit 4 otherwise."""
    slug = merchant or st.settings.get("backoffice_merchant")
    email = operator or st.settings.get("backoffice_operator")
    if not slug or not email:
        missing = "merchant" if not slug else "operator"
        raise CLIError(
            f"no backoffice {missing} for profile {st.profile!r}: run "
            f"`paysdk --profile {st.profile} backoffice login --merchant SLUG --operator EMAIL`",
            ExitCode.AUTH,
        )
    return slug, email


def _secret(kind: SecretKind, st: State, hint: str) -> tuple[str, str]:
    from paysdk_cli._secrets import load_secret

    stored = load_secret(kind, st.profile)
    if stored is None:
        raise CLIError(
            f"no {kind.label} for profile {st.profile!r}: run `paysdk --profile {st.profile} "
            f"backoffice login {hint}` or set {kind.env}",
            ExitCode.AUTH,
        )
    return stored.value, stored.source


@contextmanager
def open_backoffice_client(
    st: State,
    *,
    merchant: str | None = None,
    operator: str | None = None,
    private_key: str | None = None,
    password: str | None = None,
) -> Iterator[paysdk.Client]:
    """A :class:`paysdk.Client` with the profile's backoffice credentials (module docstring)."""
    from paysdk_cli._context import CLIENT_OPTIONS, environment
    from paysdk_cli._secrets import WALLET_KEY, load_token

    slug, email = backoffice_settings(st, merchant, operator)
    key_source = "argument"
    if private_key is None:
        private_key, key_source = _secret(WALLET_KEY, st, "--key-file FILE")
    if password is None:
        password, _ = _secret(BACKOFFICE_PASSWORD, st, f"--merchant {slug} --operator {email}")
    import paysdk

    path = backoffice_token_path(st.profile)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    logging.getLogger("paysdk_cli").debug(
        "profile=%s base_url=%s backoffice merchant=%s key_source=%s token_store=%s",
        st.profile,
        st.base_url,
        slug,
        key_source,
        path,
    )
    try:
        credentials = paysdk.BackofficeCredentials(
            slug, paysdk.Secret(private_key), user=paysdk.BackofficeUser(email, paysdk.Secret(password))
        )
    except paysdk.ValidationError as exc:
        usage = key_source == "argument" or exc.field == "email"
        raise CLIError(
            f"the backoffice credentials are unusable: {exc.field} {exc.message}",
            ExitCode.USAGE if usage else ExitCode.AUTH,
        ) from None
    stored = load_token(st.profile)
    client = paysdk.Client(
        paysdk.Secret(stored.value) if stored is not None else paysdk.Secret(""),
        environment(st),
        backoffice=credentials,
        token_store=paysdk.FileTokenStore(path),
        **CLIENT_OPTIONS,
    )
    try:
        yield client
    finally:
        client.close()
