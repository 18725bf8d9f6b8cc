"""Building requests: an operation, the client's configuration and the attempt number become an
:class:`httpx.Request`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import httpx

from paysdk import _json
from paysdk._credentials import CredentialValue, apply_credential, credential_for, credential_value
from paysdk._environment import CONTROL_PREFIX, CONTROL_TOKEN_HEADER, Environment
from paysdk._pipeline.operations import IDEMPOTENCY_HEADER, RETRY_COUNT_HEADER, Base, ClientConfig, Operation
from paysdk._secret import Secret

if TYPE_CHECKING:  # paysdk._uploads is imported by the first upload, not by ``import paysdk``
    from paysdk._uploads import UploadBody, UploadStream

__all__ = ["base_url_for", "build_request", "idempotency_key_for", "reveal_secrets", "upload_stream"]


@functools.lru_cache(maxsize=1024)
def _url(text: str) -> httpx.URL:
    """Parsed URLs, cached: parsing costs ~20 us per request and paths repeat (httpx.URL is immutable)."""
    return httpx.URL(text)


def base_url_for(environment: Environment, base: Base) -> str:
    """The address an operation's path is relative to."""
    if base == "wallet":
        return environment.wallet_base_url
    if base == "cms":
        return environment.cms_base_url
    return environment.base_url


def reveal_secrets(value: Any) -> Any:
    """A copy of a JSON-ready structure with every :class:`Secret` replaced by its value."""
    if isinstance(value, Secret):
        return value.reveal()
    if isinstance(value, Mapping):
        return {key: reveal_secrets(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [reveal_secrets(item) for item in value]
    return value


def idempotency_key_for(op: Operation[Any], config: ClientConfig, *, mint: Callable[[], str]) -> str | None:
    """The ``Idempotency-Key`` of one logical call, decided once before the retry loop.

    The caller's key wins and is always sent. Otherwise a key is minted (by ``mint``) only for a
    non-idempotent call to an endpoint that takes part, on an environment that honours keys.
    """
    if op.idempotency_key is not None:
        return op.idempotency_key
    if not op.is_idempotent and op.uses_idempotency_keys and config.environment.honours_idempotency_keys:
        return mint()
    return None


def _is_control_path(path: str) -> bool:
    """Whether ``path`` is on the reference server's control plane (``/_sandbox`` and below)."""
    return path == CONTROL_PREFIX or path.startswith(CONTROL_PREFIX + "/")


def build_request(
    op: Operation[Any],
    config: ClientConfig,
    idempotency_key: str | None,
    *,
    attempt: int = 1,
    credential: CredentialValue | None = None,
) -> httpx.Request:
    """The :class:`httpx.Request` of one attempt.

    Headers: ``Accept``, ``User-Agent`` (``paysdk/<version> python/<version>``), the client's
    ``default_headers``, the call's ``extra_headers`` (they win over those), then ``Content-Type`` for a
    JSON body, the credential ``op.auth`` names
    (:func:`~paysdk._credentials.apply_credential`: the raw merchant token for ``raw``,
    ``Bearer <token>`` for ``bearer`` (D9) and the token-managed kinds, the ``privateKey``/``publicKey``
    body fields for ``hook_keys``), ``Idempotency-Key`` when one was decided, and
    ``X-Paysdk-Retry-Count`` on retries; ``op.headers`` come last, then ``Paysdk-Control-Token`` on a
    control-plane call (``/_sandbox``) when the environment has a control token. ``credential`` is the
    secret the shell obtained (an access token); without it the merchant token or the call's own value
    is used.
    Raises :class:`~paysdk.ValidationError` naming the missing credential (``merchant_token``,
    ``wallet``, ``backoffice``, ...) when it is not there.
    """
    accept = "application/json" if op.response_kind == "json" else "*/*"
    headers: dict[str, str] = {"Accept": accept, "User-Agent": config.user_agent}
    for name, value in config.default_headers:
        headers[name] = value
    if op.extra_headers:  # the call's own headers win over the client's (case-insensitively)
        replaced = {name.lower() for name, _ in op.extra_headers}
        headers = {name: value for name, value in headers.items() if name.lower() not in replaced}
        for name, given in op.extra_headers:
            headers[name] = given.reveal() if isinstance(given, Secret) else given
    spec = credential_for(op.auth)
    if credential is None:
        credential = credential_value(spec, merchant_token=config.merchant_token, call=op.credential)
    body = apply_credential(spec, credential, headers, op.json)
    content: bytes | None = None
    stream: UploadStream | None = None
    if body is not None:
        content = _json.dumps(reveal_secrets(body))
        headers["Content-Type"] = "application/json"
    elif op.upload is not None:
        stream = upload_stream(op.upload, headers)
    if idempotency_key is not None:
        headers[IDEMPOTENCY_HEADER] = idempotency_key
    if attempt > 1:
        headers[RETRY_COUNT_HEADER] = str(attempt - 1)
    if op.headers:
        for extra, given in op.headers.items():
            headers[extra] = given.reveal() if isinstance(given, Secret) else given
    control = config.environment.control_token
    if control is not None and op.base == "base" and _is_control_path(op.path):
        headers[CONTROL_TOKEN_HEADER] = control.reveal()
    timeout = op.timeout or config.timeout
    request = httpx.Request(
        op.method.upper(),
        _url(base_url_for(config.environment, op.base) + op.path),
        params=dict(op.params) if op.params else None,
        headers=headers,
        content=content,
        extensions={"timeout": timeout.as_dict()},
    )
    if stream is not None:
        # Set after construction: httpx adds ``Host`` only to a request built without ``stream=``; the
        # body's length headers are in ``headers`` already, so it adds no ``Content-Length: 0``.
        request.stream = stream
    return request


def upload_stream(body: UploadBody, headers: dict[str, str]) -> UploadStream:
    """The stream of one attempt of an upload, and its ``Content-Type`` and ``Content-Length`` (or
    ``Transfer-Encoding: chunked`` when a source's length is unknown) added to ``headers``. Nothing is
    read here: the stream reads its sources as httpx sends it (:mod:`paysdk._uploads`)."""
    from paysdk._uploads import UploadStream

    headers["Content-Type"] = body.content_type
    length = body.content_length
    if length is None:
        headers["Transfer-Encoding"] = "chunked"
    else:
        headers["Content-Length"] = str(length)
    return UploadStream(body)
