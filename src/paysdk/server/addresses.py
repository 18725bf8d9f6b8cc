"""Where the reference server is, and who may reach it (D90-D92).

:class:`ServerAddresses` holds the server's public address and the hosts it answers:

* The public address (D90): every URL the server hands out (a payment link's ``URL``, the rail pages
  and QR contents of alternative payments, the hosted checkout's form actions and redirects) is built
  on it, never on the request's ``Host`` header. It is ``--public-url`` (``create_app(public_url=)``)
  when given; otherwise the address the request reached the server on: the local address of its
  connection (uvicorn's ``scope["server"]``; ``httpx.ASGITransport`` and Starlette's test client put
  the URL's host and port there, so in-process tests keep ``http://testserver``) and the ASGI root path.
* Allowed hosts (D91): a request whose ``Host`` names another host is answered ``421`` before any
  routing. Allowed: ``localhost``, ``127.0.0.1``, ``[::1]``, the host of the public address, the
  local address of the connection itself (a request to the server's own IP address), and the names
  given with ``--allowed-host`` (``*`` allows every host). A request without ``Host`` (HTTP/1.0) is
  allowed: a browser always sends one. This is what stops DNS rebinding: a page on
  ``attacker.example`` rebound to ``127.0.0.1`` still sends ``Host: attacker.example``.
* The control plane (D92): a ``/_sandbox`` request whose ``Origin`` is present and not the server's own
  is ``403``; one that carries a body without ``Content-Type: application/json`` is ``415``. A web
  page can send neither a JSON content type nor a foreign-origin request without a CORS preflight,
  which the control plane never answers. Upload routes (:func:`paysdk.server.bodies.is_upload_route`,
  the sink ``POST /_sandbox/uploads``) take ``multipart/form-data`` or ``application/octet-stream``
  instead (D111): a browser sends ``Origin`` with every cross-origin POST, so the ``403`` still keeps
  web pages out, and the sink has no effect to forge.

The server's own origins (:meth:`ServerAddresses.own_origin`): the public address's origin, and the
origin of the address the request was sent to (``scheme://Host``, the ``Host`` being allowed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import Scope

from paysdk._environment import CHECKOUT_PREFIX
from paysdk.server.bodies import UPLOAD_CONTENT_TYPES, is_upload_route
from paysdk.server.control_token import CONSOLE_PREFIX
from paysdk.server.errors import APIProblem

__all__ = ["LOOPBACK_HOSTS", "ServerAddresses", "is_control_plane"]

#: The loopback names every server answers.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
_CONTROL = "/_sandbox"
_JSON = b"application/json"
_FORM = b"application/x-www-form-urlencoded"
_CACHE_MAX = 256
_NETLOC = re.compile(r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?")
_NOT_IN_PATH = frozenset(" \t\r\n\"'<>;,\\`")


def is_control_plane(path: str) -> bool:
    """``/_sandbox`` and everything under it."""
    return path == _CONTROL or path.startswith(_CONTROL + "/")


def _host_name(raw: bytes) -> bytes:
    """The host of a ``Host`` value, lower-case, without the port (``[::1]:8000`` -> ``[::1]``)."""
    if raw.startswith(b"["):
        end = raw.find(b"]")
        return raw[: end + 1].lower() if end > 0 else raw.lower()
    return raw.partition(b":")[0].lower()


def _allowed_name(name: str) -> bytes:
    """An ``--allowed-host`` entry as the ``Host`` header spells it: ``*``, a name (IDNA-encoded), an
    IPv4 address or an IPv6 address (brackets added when missing); never a scheme, port or path."""
    text = name.strip().lower()
    if text == "*":
        return b"*"
    if text.startswith("[") and text.endswith("]"):
        bare = text[1:-1]
    elif text.count(":") >= 2:
        bare, text = text, f"[{text}]"
    else:
        bare = text
    if not bare or any(char in bare for char in "/?#@[] \t\r\n") or (":" in bare and bare == text):
        raise ValueError(f"allowed host {name!r} is not a host name (give it without scheme, port or path)")
    try:
        return text.encode("ascii") if text.isascii() else text.encode("idna")
    except UnicodeError:
        raise ValueError(f"allowed host {name!r} is not a host name") from None


def _public_url(url: str) -> str:
    """``--public-url`` checked: ``http(s)://host[:port][/path]``, no query, fragment or credentials; the
    host a name or an IP address, the path plain (it goes into HTML and a CSP header)."""
    text = url.strip().rstrip("/")
    if not text.isascii():
        raise ValueError(f"public URL {url!r}: give the host in its ASCII (punycode) form")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  (raises ValueError for a port out of range)
    except ValueError as exc:
        raise ValueError(f"public URL {url!r} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"public URL {url!r} must be an http:// or https:// address with a host")
    if parts.query or parts.fragment or parts.username is not None or parts.password is not None:
        raise ValueError(f"public URL {url!r} must have no query, fragment or credentials")
    if not _NETLOC.fullmatch(parts.netloc) or any(char in _NOT_IN_PATH for char in parts.path):
        raise ValueError(f"public URL {url!r} has characters a host or a plain path cannot have")
    return text


def _origin(base: str) -> bytes:
    parts = urlsplit(base)
    return f"{parts.scheme}://{parts.netloc}".lower().encode("latin-1")


class ServerAddresses:
    """The public address and the allowed hosts of one server (module docstring; D90-D92).

    ``public_url``: the address URLs are built on (default: the address each request reached).
    ``allowed_hosts``: host names answered besides the loopback names and the public address's host
    (``*``: every host). Raises ``ValueError`` naming a malformed value.
    """

    def __init__(self, public_url: str | None = None, allowed_hosts: Iterable[str] = ()) -> None:
        self.public_url = _public_url(public_url) if public_url is not None else None
        names = {_allowed_name(name) for name in allowed_hosts}
        self.any_host = b"*" in names
        names.discard(b"*")
        names.update(name.encode("ascii") for name in LOOPBACK_HOSTS)
        self._public_origin: bytes | None = None
        if self.public_url is not None:
            self._public_origin = _origin(self.public_url)
            names.add(_host_name(self._public_origin.partition(b"://")[2]))
        #: Allowed host names as the ``Host`` header spells them (lower-case, no port).
        self.hosts: frozenset[bytes] = frozenset(names)
        self._bases: dict[tuple[object, ...], tuple[str, bytes]] = {}
        #: Raw ``Host`` values seen and found in :attr:`hosts` (with their ports): one set lookup per request.
        self._seen: set[bytes] = set()

    # -- the public address

    def _derived(self, scope: Scope) -> tuple[str, bytes]:
        """The base address a request reached (no public URL): its connection's local address."""
        server = scope.get("server")
        scheme = str(scope.get("scheme", "http"))
        root = str(scope.get("app_root_path", scope.get("root_path", "")))
        key = (scheme, tuple(server) if server is not None else None, root)
        known = self._bases.get(key)
        if known is None:
            host, port = (str(server[0]), server[1]) if server is not None else ("localhost", None)
            if ":" in host:
                host = f"[{host}]"
            default = {"http": 80, "https": 443}.get(scheme)
            netloc = host if port is None or port == default else f"{host}:{port}"
            base = f"{scheme}://{netloc}{root}".rstrip("/")
            known = (base, _origin(base))
            if len(self._bases) >= _CACHE_MAX:
                self._bases.clear()
            self._bases[key] = known
        return known

    def base_url(self, scope: Scope) -> str:
        """The base address (no trailing slash) every URL handed out is built on."""
        return self.public_url if self.public_url is not None else self._derived(scope)[0]

    def webview_url(self, scope: Scope) -> str:
        """``{webview_url}``: the base address + ``/checkout``."""
        return self.base_url(scope) + CHECKOUT_PREFIX

    def public_origin(self, scope: Scope) -> str:
        """The origin (``scheme://host[:port]``) of :meth:`base_url`."""
        if self._public_origin is not None:
            return self._public_origin.decode("latin-1")
        return self._derived(scope)[1].decode("latin-1")

    # -- hosts and origins

    def host_allowed(self, scope: Scope, host: bytes | None) -> bool:
        """Whether the server answers ``host`` (the raw ``Host`` value; ``None``: no ``Host``)."""
        if host is None or self.any_host or host in self._seen:
            return True
        name = _host_name(host)
        if name in self.hosts:
            if len(self._seen) >= _CACHE_MAX:
                self._seen.clear()
            self._seen.add(bytes(host))
            return True
        server = scope.get("server")  # the connection's own address: the request names the server itself
        if server is None:
            return False
        own = str(server[0])
        return name == (f"[{own}]" if ":" in own else own).lower().encode("latin-1", "replace")

    def own_origin(self, scope: Scope, origin: bytes, host: bytes | None) -> bool:
        """Whether ``origin`` (an ``Origin`` value) is the server's own: the public address's origin,
        or that of the address the request was sent to (``host``: its allowed ``Host``)."""
        origin = origin.lower()
        if origin == (self._public_origin or self._derived(scope)[1]):
            return True
        if host is None:
            return False
        return origin == str(scope.get("scheme", "http")).encode() + b"://" + host.lower()

    # -- the ASGI check

    def refusal(self, scope: Scope) -> APIProblem | None:
        """The check of an HTTP request before routing (synchronous: the hot path awaits nothing for a
        request that passes): its host (``421``), and on the control plane its ``Origin`` (``403``) and
        body type (``415``). ``None`` when the request may go on; else the problem to answer."""
        host = None
        for key, value in scope["headers"]:
            if key == b"host":
                host = value
                break
        if host is not None and host not in self._seen and not self.host_allowed(scope, host):
            shown = (host or b"").decode("latin-1")[:100]
            return APIProblem(
                421,
                None,
                f"This server does not answer for host {shown!r}: use its own address, "
                "or start it with --allowed-host.",
                [("Host", "not a host this server answers")],
            )
        path = scope["path"]
        if not path.startswith(_CONTROL) or not is_control_plane(path):
            return None
        return self._control_problem(scope, host)

    def _control_problem(self, scope: Scope, host: bytes | None) -> APIProblem | None:
        origin = content_type = None
        has_body = False
        for key, value in scope["headers"]:
            if key == b"origin":
                origin = value
            elif key == b"content-type":
                content_type = value
            elif key == b"content-length":
                has_body = has_body or value.strip() != b"0"
            elif key == b"transfer-encoding":
                has_body = True
        if origin is not None and not self.own_origin(scope, origin, host):
            return APIProblem(
                403,
                None,
                "The control plane refuses requests from other origins (web pages).",
                [("Origin", "must be this server's own origin")],
            )
        media = None if content_type is None else content_type.partition(b";")[0].strip().lower()
        if has_body and is_upload_route(scope["method"], scope["path"]):
            if media in UPLOAD_CONTENT_TYPES:
                return None
            return APIProblem(
                415,
                None,
                "This route takes uploads only: send multipart/form-data or application/octet-stream.",
                [("Content-Type", "must be multipart/form-data or application/octet-stream")],
            )
        if has_body and media == _FORM and scope["path"].startswith(CONSOLE_PREFIX + "/"):
            return None  # the console's HTML forms (D722): it checks Origin / Sec-Fetch-Site itself
        if has_body and media != _JSON:
            return APIProblem(
                415,
                None,
                "The control plane takes JSON bodies only: send Content-Type: application/json.",
                [("Content-Type", "must be application/json")],
            )
        return None
