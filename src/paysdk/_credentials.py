"""Named credentials, as pure data and functions: which secret an operation needs, where it comes
from, how it is applied to a request, and what a ``401`` means for it. No I/O.

An :class:`~paysdk._pipeline.Operation` names its credential in ``auth`` (a :data:`CredentialName`).
:data:`CREDENTIALS` says, for each name:

* where the secret comes from (:class:`Source`): the client's merchant token, the call itself (the
  ``/transactions-hook`` key pair travels with each call), or a token manager of the client (the wallet
  and backoffice access tokens: :mod:`paysdk._auth`, single flight across threads, tasks and processes);
* how it is applied (:class:`Placement`): the raw ``Authorization`` header (D9), ``Bearer <token>``, or
  the ``privateKey``/``publicKey`` fields of the JSON body (spec 5.1);
* which ``401`` own codes make its source recover (refresh, or log in again) and the call replay once.

The client shells hold the token managers keyed by credential name; :func:`credential_value` picks the
secret of a credential that needs no manager, :func:`apply_credential` puts a secret into the request.

============== ================ ============ =================================================
name           source           placement    what
============== ================ ============ =================================================
``none``       nothing          nothing      public endpoints, the control plane
``raw``        merchant token   header       ``Authorization: <token>`` (payment links, D9)
``bearer``     merchant token   bearer       ``Authorization: Bearer <token>`` (integrations)
``hook_keys``  the call         body fields  ``privateKey``/``publicKey`` (``/transactions-hook``)
``wallet_app`` token manager    bearer       wallet application token (``/auth/login``)
``wallet_user`` the view's      bearer       a wallet user session (``wallet.as_user(...)``)
``backoffice_app`` manager      bearer       backoffice application token (``/app/auth/login``)
``backoffice_user`` manager     bearer       backoffice user token (``/app/users/login``, 5.3.7)
============== ================ ============ =================================================
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from paysdk._errors import ValidationError
from paysdk._secret import Secret
from paysdk._tokens import RECOVERABLE_CODES

__all__ = [
    "CREDENTIALS",
    "Credential",
    "CredentialName",
    "CredentialValue",
    "HookKeys",
    "Placement",
    "Source",
    "apply_credential",
    "credential_for",
    "credential_secrets",
    "credential_value",
    "missing_credential",
    "needs_token_manager",
    "recovery_codes",
]

#: The credential names an operation may give in ``auth``.
CredentialName: TypeAlias = Literal[
    "none", "raw", "bearer", "hook_keys", "wallet_app", "wallet_user", "backoffice_app", "backoffice_user"
]


class Source(enum.Enum):
    """Where a credential's secret comes from."""

    NONE = "none"  # no credential
    MERCHANT_TOKEN = "merchant_token"  # the client's merchant token (``ClientConfig.merchant_token``)
    CALL = "call"  # the operation itself (``Operation.credential``)
    TOKENS = "tokens"  # a token manager (login, refresh, single flight): the shell obtains it


class Placement(enum.Enum):
    """How a credential's secret is applied to a request."""

    NOTHING = "nothing"
    HEADER = "header"  # ``Authorization: <secret>``
    BEARER = "bearer"  # ``Authorization: Bearer <secret>``
    BODY_KEYS = "body_keys"  # ``privateKey`` and ``publicKey`` fields of the JSON body


@dataclass(frozen=True, slots=True)
class HookKeys:
    """The ``/transactions-hook`` key pair (spec 5.1, 5.2.5): sent in the body, never in a header.
    ``private_key`` is a :class:`~paysdk.Secret`; the repr masks it."""

    private_key: Secret
    public_key: str

    def __repr__(self) -> str:
        return f"HookKeys(private_key='****', public_key={self.public_key!r})"


#: A credential's secret: a token, or the hook key pair.
CredentialValue: TypeAlias = Secret | HookKeys


@dataclass(frozen=True, slots=True)
class Credential:
    """One named credential: its source, its placement, the argument an error names when it is
    missing (``field``, with ``hint`` saying how to configure it), and the ``401`` own codes after
    which its token manager renews the token and the call is replayed once (``recover``)."""

    name: str
    source: Source
    placement: Placement
    field: str = ""
    hint: str = ""
    recover: frozenset[int] = frozenset()


_MERCHANT_HINT = "this call needs the merchant token: pass merchant_token=... or set PAYSDK_MERCHANT_TOKEN"
_BACKOFFICE_APP_HINT = (
    "this call needs backoffice credentials: pass backoffice=paysdk.BackofficeCredentials(merchant, key)"
)
_BACKOFFICE_USER_HINT = (
    "this call needs a backoffice user: pass backoffice=paysdk.BackofficeCredentials(merchant, key, "
    "user=paysdk.BackofficeUser(email, password))"
)

#: Every credential an operation can name.
CREDENTIALS: Final[Mapping[str, Credential]] = {
    credential.name: credential
    for credential in (
        Credential("none", Source.NONE, Placement.NOTHING),
        Credential("raw", Source.MERCHANT_TOKEN, Placement.HEADER, "merchant_token", _MERCHANT_HINT),
        Credential("bearer", Source.MERCHANT_TOKEN, Placement.BEARER, "merchant_token", _MERCHANT_HINT),
        Credential(
            "hook_keys", Source.CALL, Placement.BODY_KEYS, "private_key", "this call needs the hook key pair"
        ),
        Credential(
            "wallet_app",
            Source.TOKENS,
            Placement.BEARER,
            "wallet",
            "this call needs wallet credentials: pass wallet=paysdk.WalletCredentials(merchant, key)",
            RECOVERABLE_CODES,
        ),
        Credential(
            "wallet_user",
            Source.TOKENS,
            Placement.BEARER,
            "wallet",
            "this call needs a wallet user session: use client.wallet.as_user(session)",
            RECOVERABLE_CODES,
        ),
        Credential(
            "backoffice_app",
            Source.TOKENS,
            Placement.BEARER,
            "backoffice",
            _BACKOFFICE_APP_HINT,
            RECOVERABLE_CODES,
        ),
        Credential(
            "backoffice_user",
            Source.TOKENS,
            Placement.BEARER,
            "backoffice",
            _BACKOFFICE_USER_HINT,
            RECOVERABLE_CODES,
        ),
    )
}


def credential_for(name: str) -> Credential:
    """The :class:`Credential` named ``name`` (:class:`~paysdk.ValidationError` ``auth`` when unknown)."""
    credential = CREDENTIALS.get(name)
    if credential is None:
        raise ValidationError("auth", f"unknown credential {name!r}; known: {', '.join(CREDENTIALS)}")
    return credential


def needs_token_manager(name: str) -> bool:
    """Whether the credential ``name`` is an access token that a token manager obtains."""
    return credential_for(name).source is Source.TOKENS


def missing_credential(credential: Credential) -> ValidationError:
    """The error of a call whose credential is not configured (names the argument, never a value)."""
    return ValidationError(credential.field or "auth", credential.hint or "this call needs credentials")


def credential_value(
    credential: Credential, *, merchant_token: Secret | None, call: CredentialValue | None
) -> CredentialValue | None:
    """The secret of a credential that needs no token manager: the merchant token, the call's own
    (``call``), or ``None`` for ``none``. Raises :func:`missing_credential` when it is not there, and
    for a token-managed credential (its shell supplies the token)."""
    source = credential.source
    if source is Source.NONE:
        return None
    value = merchant_token if source is Source.MERCHANT_TOKEN else call if source is Source.CALL else None
    if value is None:
        raise missing_credential(credential)
    return value


def apply_credential(
    credential: Credential, value: CredentialValue | None, headers: dict[str, str], body: Any
) -> Any:
    """Apply ``value`` to a request: set ``headers["Authorization"]`` or add the body fields. Returns the
    body to send (``body`` itself unless fields were added). Secrets are revealed here, nowhere else."""
    placement = credential.placement
    if placement is Placement.NOTHING:
        return body
    if placement is Placement.BODY_KEYS:
        if not isinstance(value, HookKeys):
            raise missing_credential(credential)
        if body is not None and not isinstance(body, Mapping):
            raise ValidationError("body", "body credentials need a JSON object body")
        return {**(body or {}), "privateKey": value.private_key, "publicKey": value.public_key}
    if not isinstance(value, Secret):
        raise missing_credential(credential)
    token = value.reveal()
    headers["Authorization"] = f"Bearer {token}" if placement is Placement.BEARER else token
    return body


def recovery_codes(credential: Credential, narrowed: frozenset[int] | None = None) -> frozenset[int]:
    """The ``401`` own codes after which ``credential``'s token is renewed and the call replayed once.

    ``narrowed`` limits them for one call: a call that carries a token of its own in the body or a
    header (``/users/refresh``, ``/users/logout``) gets 7104/7105 about that token, not its bearer.
    """
    if narrowed is None:
        return credential.recover
    return credential.recover & narrowed


def credential_secrets(value: CredentialValue | None) -> tuple[str, ...]:
    """The secret strings of a credential value, for scrubbing messages."""
    if isinstance(value, Secret):
        return (value.reveal(),)
    if isinstance(value, HookKeys):
        return (value.private_key.reveal(),)
    return ()
