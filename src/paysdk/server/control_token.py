"""Who may use the control plane (``/_sandbox``) on a shared network: the control token (D270-D276).

Redis's protected mode and Jupyter's tokens are the models. The rule follows the address the server
*binds*, never the caller's (:func:`is_loopback_host`):

* a loopback bind (``127.0.0.0/8``, ``::1``, ``localhost``): nothing changes; a control token is needed
  only when one was given, and then on every control call;
* any other bind (``0.0.0.0``, ``::``, a LAN address) *exposes* the control plane: every control call
  needs the token (``paysdk serve`` refuses to start without one unless ``--insecure-control-plane``),
  and tokens and keys the control plane has answered once are masked when read again, except through
  ``POST /_sandbox/clients/{slug}/reveal`` and ``POST /_sandbox/processor/reveal``.

The token travels in the ``Paysdk-Control-Token`` request header. The server keeps only its SHA-256
digest and compares digests in constant time. A missing header (a token in another header, such as
``Authorization``, counts as missing) is ``401``, a wrong one ``403``, both with the D1 body naming the
header, before anything runs: a refused call changes nothing. ``GET /_sandbox/health`` stays open (a
readiness probe; it answers only ``ok``, the environment, the database backend and the virtual time).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.types import Scope

from paysdk._redact import MASK
from paysdk.server.errors import APIProblem

__all__ = [
    "CONSOLE_PREFIX",
    "CONTROL_TOKEN_ENV",
    "CONTROL_TOKEN_HEADER",
    "ControlPlaneAccess",
    "ControlTokenRefused",
    "control_token_digest",
    "is_loopback_host",
    "mask",
    "startup_control_token",
]

#: The request header the control token travels in.
CONTROL_TOKEN_HEADER = "Paysdk-Control-Token"
#: The environment variable ``paysdk serve``, the SDK and the CLI read the token from.
CONTROL_TOKEN_ENV = "PAYSDK_CONTROL_TOKEN"

_HEADER_KEY = CONTROL_TOKEN_HEADER.lower().encode("ascii")
_CONTROL = "/_sandbox"
#: The browser console (:mod:`paysdk.server.console`, D720): it checks the control token itself (the
#: header, or the session cookie its token form sets) and answers a browser an HTML token form, not JSON.
CONSOLE_PREFIX = "/_sandbox/console"
_SESSION_LABEL = b"paysdk console session"
#: Control paths answered without the token (method, path).
_OPEN = frozenset(
    {
        ("GET", "/_sandbox/health"),
        ("HEAD", "/_sandbox/health"),
        # The scenarios' built-in callback receiver (answers 200, keeps nothing): the server's own
        # callbacks carry the merchant's header, never the control token (D707).
        ("POST", "/_sandbox/scenarios/sink"),
    }
)


def control_token_digest(token: str) -> bytes:
    """The SHA-256 digest of a control token (what the server keeps); ``ValueError`` for an empty one."""
    if not token or not token.strip():
        raise ValueError("the control token must not be empty")
    return hashlib.sha256(token.encode("utf-8")).digest()


def is_loopback_host(host: str) -> bool:
    """Whether binding ``host`` listens on loopback only: ``localhost``, ``127.0.0.0/8``, ``::1``
    (``[::1]`` too). Anything else, ``0.0.0.0``, ``::`` and unknown names included, is exposed."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def mask(value: str | None) -> str | None:
    """A secret as a masked read shows it (``None`` stays ``None``: nothing to hide)."""
    return None if value is None else MASK


@dataclass(frozen=True, slots=True)
class ControlPlaneAccess:
    """The control plane's guard: ``digest`` (SHA-256 of the control token, ``None``: no token) and
    ``exposed`` (bound to a non-loopback address: masked re-reads)."""

    digest: bytes | None = None
    exposed: bool = False

    def __post_init__(self) -> None:
        if self.digest is not None and len(self.digest) != hashlib.sha256().digest_size:
            raise ValueError("control_token_digest must be a SHA-256 digest (32 bytes)")

    @property
    def guarded(self) -> bool:
        """Whether control calls need the token (one was given). An exposed plane without one
        (``--insecure-control-plane``) answers anyone, its re-reads still masked."""
        return self.digest is not None

    def refusal(self, scope: Scope) -> APIProblem | None:
        """``None`` when the request may go on (not a control call, an open one, or the right token);
        else the ``401``/``403`` to answer before anything runs."""
        path: str = scope["path"]
        if not self.guarded or not (path == _CONTROL or path.startswith(_CONTROL + "/")):
            return None
        if path == CONSOLE_PREFIX or path.startswith(CONSOLE_PREFIX + "/"):
            return None  # the console's routes check the token themselves (D720)
        if (scope["method"], path.rstrip("/") or "/") in _OPEN:
            return None
        given = None
        for key, value in scope["headers"]:
            if key == _HEADER_KEY:
                given = value
                break
        if given is None or not given.strip() or self.digest is None:
            return APIProblem(
                401,
                None,
                f"The control plane needs the control token: send it in the {CONTROL_TOKEN_HEADER} header.",
                [(CONTROL_TOKEN_HEADER, "missing")],
            )
        if not hmac.compare_digest(hashlib.sha256(given.strip()).digest(), self.digest):
            return APIProblem(
                403,
                None,
                f"The control token in {CONTROL_TOKEN_HEADER} is not this server's.",
                [(CONTROL_TOKEN_HEADER, "wrong token")],
            )
        return None

    def accepts(self, token: str | bytes | None) -> bool:
        """Whether ``token`` is this server's control token (digests compared in constant time); always
        true on a plane without one."""
        if self.digest is None:
            return True
        if token is None:
            return False
        raw = token.encode("utf-8", "replace") if isinstance(token, str) else token
        if not raw.strip():
            return False
        return hmac.compare_digest(hashlib.sha256(raw.strip()).digest(), self.digest)

    def console_session(self) -> str:
        """The value of the console's session cookie (D720): an HMAC of a fixed label under the token's
        digest, so the cookie proves the token was given without being the token (it is no use in the
        ``Paysdk-Control-Token`` header) and stops working when the server's token changes. Empty on a
        plane without a token."""
        if self.digest is None:
            return ""
        return hmac.new(self.digest, _SESSION_LABEL, hashlib.sha256).hexdigest()

    def accepts_session(self, value: str | None) -> bool:
        """Whether ``value`` (the console's cookie) is :meth:`console_session` (constant time)."""
        if self.digest is None:
            return True
        if not value:
            return False
        return hmac.compare_digest(value.encode("ascii", "replace"), self.console_session().encode("ascii"))


class ControlTokenRefused(ValueError):
    """The server must not start as asked (a usage error, exit 2): the message is one line."""


def startup_control_token(
    host: str,
    given: str | None,
    *,
    generate: bool = False,
    insecure: bool = False,
    environ: Mapping[str, str] | None = None,
) -> tuple[str | None, list[str]]:
    """The control token to serve with, and the lines to print once at start (stderr), as ``paysdk
    serve`` and ``python -m paysdk.server`` decide them (D271).

    ``given`` (``--control-token``) wins over ``$PAYSDK_CONTROL_TOKEN``; ``generate`` makes a random one
    (printed once). A non-loopback ``host`` with no token raises :class:`ControlTokenRefused` naming the
    three ways out, unless ``insecure``, which is warned about; on loopback nothing is required.
    """
    env = os.environ if environ is None else environ
    token = given if given is not None else env.get(CONTROL_TOKEN_ENV) or None
    if token is not None and not token.strip():
        raise ControlTokenRefused("--control-token: must not be empty")
    if generate and token is not None:
        raise ControlTokenRefused(
            f"give either --control-token (or {CONTROL_TOKEN_ENV}) or --generate-control-token, not both"
        )
    lines: list[str] = []
    if generate:
        token = secrets.token_urlsafe(32)
        lines.append(
            f"Control token (shown once; send it in the {CONTROL_TOKEN_HEADER} header, "
            f"or set {CONTROL_TOKEN_ENV}): {token}"
        )
    if token is None and not is_loopback_host(host):
        if not insecure:
            raise ControlTokenRefused(
                f"refusing to serve the control plane (/_sandbox) on the non-loopback address {host} "
                f"without a control token: pass --control-token TOKEN (or set {CONTROL_TOKEN_ENV}), "
                "--generate-control-token, or --insecure-control-plane"
            )
        lines.append(
            f"WARNING: the control plane (/_sandbox) is open to anyone who reaches {host}: it can reset "
            "the database and mint merchants, users and cards (--insecure-control-plane). "
            "Use --control-token or --generate-control-token on a shared network."
        )
    return (token.strip() if token is not None else None), lines
