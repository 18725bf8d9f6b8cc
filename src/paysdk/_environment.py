"""Where the API lives: the four addresses of the spec, and whether idempotency keys are honoured."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from paysdk._errors import ValidationError
from paysdk._secret import Secret

__all__ = ["Environment"]

_ENV_VARS = {
    "base_url": "PAYSDK_BASE_URL",
    "webview_url": "PAYSDK_WEBVIEW_URL",
    "wallet_base_url": "PAYSDK_WALLET_BASE_URL",
    "cms_base_url": "PAYSDK_CMS_BASE_URL",
}

#: Values of ``PAYSDK_IDEMPOTENCY`` (case-insensitive) and what they declare.
_FLAG_VALUES = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}

#: The environment variable the control token (:attr:`Environment.control_token`) is read from.
CONTROL_TOKEN_ENV = "PAYSDK_CONTROL_TOKEN"
#: The request header the SDK sends the control token in, on every ``/_sandbox`` call.
CONTROL_TOKEN_HEADER = "Paysdk-Control-Token"
#: The path prefix of the reference server's control plane.
CONTROL_PREFIX = "/_sandbox"

#: Path prefixes the reference server (``paysdk serve``) uses for the three non-base addresses.
CHECKOUT_PREFIX = "/checkout"
WALLET_PREFIX = "/rest"
CMS_PREFIX = "/cms/rest"


@dataclass(frozen=True, slots=True)
class Environment:
    """The four addresses of one deployment of the API.

    The real sandbox and production addresses are not published in the spec, so they are given by you
    (arguments, or the ``PAYSDK_*`` environment variables through :meth:`from_env`). For the local
    reference server, :meth:`local` derives all four from one address.

    ``honours_idempotency_keys`` says whether the deployment is known to honour an ``Idempotency-Key``
    header on POST. Only then does the SDK retry a POST whose bytes may have reached the server; the
    spec shows no such support for the real API, so it is ``False`` unless you say otherwise.

    ``control_token`` is the reference server's control token (``paysdk serve --control-token``, needed
    when it listens on a non-loopback address): the SDK sends it in the ``Paysdk-Control-Token`` header
    on every control-plane call (``client.sandbox``, paths under ``/_sandbox``) and nowhere else. It is a
    :class:`~paysdk.Secret` (a ``str`` given is wrapped): never in a repr, a log line or an error, and
    not part of equality.
    """

    base_url: str
    webview_url: str
    wallet_base_url: str
    cms_base_url: str
    name: str = "custom"
    honours_idempotency_keys: bool = False
    control_token: Secret | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("base_url", "webview_url", "wallet_base_url", "cms_base_url"):
            value = getattr(self, name)
            if not _is_http_url(value):
                raise ValidationError(name, f"must be an http(s) URL, got {value!r}")
            object.__setattr__(self, name, value.rstrip("/"))
        object.__setattr__(self, "control_token", _control_token(self.control_token))

    @classmethod
    def local(
        cls,
        url: str = "http://127.0.0.1:8000",
        *,
        name: str = "local",
        control_token: str | Secret | None = None,
    ) -> Environment:
        """The addresses of a reference server (``paysdk serve``) listening at ``url``.

        The reference server honours idempotency keys, so POSTs are retried safely against it.
        ``control_token``: the server's control token (default: ``$PAYSDK_CONTROL_TOKEN``, if set), sent
        on every control-plane call; a server on a non-loopback address refuses those calls without it.
        """
        root = url.rstrip("/")
        if control_token is None:
            control_token = os.environ.get(CONTROL_TOKEN_ENV) or None
        return cls(
            base_url=root,
            webview_url=root + CHECKOUT_PREFIX,
            wallet_base_url=root + WALLET_PREFIX,
            cms_base_url=root + CMS_PREFIX,
            name=name,
            honours_idempotency_keys=True,
            control_token=_control_token(control_token),
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Environment:
        """Build an environment from ``PAYSDK_BASE_URL`` and friends (``environ``: default ``os.environ``).

        ``PAYSDK_BASE_URL`` is required; the three other addresses (``PAYSDK_WEBVIEW_URL``,
        ``PAYSDK_WALLET_BASE_URL``, ``PAYSDK_CMS_BASE_URL``) default to the reference server's paths
        under it, as for :meth:`local`. Idempotency-key support is declared only by
        ``PAYSDK_IDEMPOTENCY=1`` (or ``true``/``yes``; ``0``/``false``/``no`` say no): an address alone
        says nothing about the deployment behind it, so a POST that may have arrived is not re-sent.
        ``PAYSDK_ENVIRONMENT`` names it (default ``"custom"``), ``PAYSDK_CONTROL_TOKEN`` is the reference
        server's control token (:attr:`control_token`). A missing ``PAYSDK_BASE_URL`` or a bad
        value raises :class:`~paysdk.ValidationError` naming the variable.
        """
        env = os.environ if environ is None else environ
        base = env.get(_ENV_VARS["base_url"])
        if not base:
            raise ValidationError(
                _ENV_VARS["base_url"],
                "not set: set it (e.g. http://127.0.0.1:8000 for `paysdk serve`) "
                "or pass environment=paysdk.Environment(...)",
            )
        for var in _ENV_VARS.values():
            value = env.get(var)
            if value and not _is_http_url(value):
                raise ValidationError(var, f"must be an http(s) URL, got {value!r}")
        derived = cls.local(base)
        values = {field: env.get(var) or getattr(derived, field) for field, var in _ENV_VARS.items()}
        return cls(
            **values,
            name=env.get("PAYSDK_ENVIRONMENT") or "custom",
            honours_idempotency_keys=_idempotency_flag(env.get("PAYSDK_IDEMPOTENCY")),
            control_token=_control_token(env.get(CONTROL_TOKEN_ENV) or None),
        )


def _control_token(value: object) -> Secret | None:
    """A control token as a :class:`~paysdk.Secret` (``None`` stays ``None``); an empty one is refused."""
    if value is None:
        return None
    if not isinstance(value, str | Secret):
        raise ValidationError("control_token", "must be a str or paysdk.Secret")
    token = value if isinstance(value, Secret) else Secret(value)
    stripped = token.reveal().strip()
    if not stripped or any(ord(ch) < 0x20 or ord(ch) > 0x7E for ch in stripped):
        raise ValidationError("control_token", "must be non-empty printable ASCII")
    return token if stripped == token.reveal() else Secret(stripped)


def _is_http_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


def _idempotency_flag(value: str | None) -> bool:
    """``PAYSDK_IDEMPOTENCY``: unset or empty is ``False``; anything but the known values is refused."""
    if not value:
        return False
    flag = _FLAG_VALUES.get(value.strip().lower())
    if flag is None:
        raise ValidationError("PAYSDK_IDEMPOTENCY", f"must be 1 or 0 (true/false, yes/no), got {value!r}")
    return flag
