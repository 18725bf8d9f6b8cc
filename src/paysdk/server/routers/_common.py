"""The one idiom of every public router: how a route is declared, reads its input and answers (D131).

**Declaring a route.** Every public route is declared with :func:`route`, which takes what the operation
is (summary), what it reads (the JSON ``body`` model, parsed raw by the service, never by FastAPI), what
it answers (the success ``answer`` model, bare or in the ``{"data": ...}`` envelope of D30, and its
status), which D1 error answers it documents (``errors``: status -> description, from the family's
table) and which credentials it takes (``auth``, one of :data:`AUTH`). :func:`route` returns the keyword
arguments of ``router.get/post/...``; ``/openapi.json`` is built from them (the success model as a
component schema, the body as a request body, the D1 errors, the security requirement), and
:mod:`paysdk.server.openapi` adds what the server-wide layer answers on every operation::

    @router.post("/cards/{cardId}/funds", **route(
        "Add or withdraw funds", auth="wallet", body=FundsRequest, answer=FundsResult,
        envelope=True, errors=only(WALLET_ERRORS, 400, 404, 409, 422)))
    async def funds(request: Request, card_id: CardId) -> Response:
        ...

**Running it.** A handler reads the body raw (``await request.body()``), hands it to the service (which
parses it with the contract model, so errors are D1 bodies naming the field), and runs the database work
in one transaction with the :class:`~paysdk.server.routers._transactions.Transactions` it declares as a
parameter (a FastAPI dependency: ``db: Db``, or a bearer surface's ``db: WalletDb`` whose transactions
verify the token first; ``merchant: MerchantToken`` for the merchant token)::

    async def get_card(card_id: CardId, db: WalletDb) -> Response:
        return data(await db.run(cards.get_card, db.session, db.caller, card_id))

Credentials are read from the raw headers (:func:`credentials`, :func:`bearer`, :func:`header`): a value
that is not ASCII counts as absent (D20), never a 5xx.

The hosted checkout's HTML pages and form posts are declared the same way with :func:`page` and
:func:`form_post` (D132).

**Answering.** A model as it is (:func:`answer`), or in the D30 envelope (:func:`data`); money stays an
exact JSON number (:class:`paysdk.server.errors.JSONResponse`).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, create_model
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from paysdk.contracts.common import ErrorBody
from paysdk.server.auth import Credentials
from paysdk.server.context import get_context
from paysdk.server.errors import APIProblem, JSONResponse
from paysdk.server.families import LANE_ATTRIBUTE  # the core's: create_app reads it (D261)

__all__ = [
    "AUTH",
    "LANE_ATTRIBUTE",
    "MERCHANT_ERRORS",
    "WALLET_ERRORS",
    "AuthKind",
    "answer",
    "base_url",
    "bearer",
    "credentials",
    "data",
    "enveloped",
    "form_post",
    "header",
    "lane",
    "only",
    "page",
    "raise_problem",
    "route",
    "webview_url",
]

T = TypeVar("T")

# ------------------------------------------------------------------------------------ credentials

#: The credentials a route takes (``auth=`` of :func:`route`):
#:
#: * ``merchant``: the merchant token in ``Authorization``, raw or ``Bearer`` (D9);
#: * ``hook-keys``: the key pair in the JSON body (``privateKey``/``publicKey``, D14), no header;
#: * ``wallet-application``: the wallet application's access token (a user token is ``401 / 7106``);
#: * ``wallet``: the application's access token or a cardholder's user access token (D37, D40);
#: * ``signature``: none, the body carries the Ed25519 signature of the merchant slug (D36);
#: * ``none``: no credentials at all.
#: * ``backoffice-application`` / ``backoffice-user``: the backoffice application or user access token on
#:   ``{cms}`` (the other one is ``401 / 7106``, another surface's ``7102``; D184);
AuthKind = Literal[
    "merchant", "hook-keys", "wallet-application", "wallet", "signature", "none",
    "backoffice-application", "backoffice-user",
]  # fmt: skip

#: Per kind: the OpenAPI ``security`` requirement and the description of its ``401`` answer.
AUTH: dict[AuthKind, tuple[list[dict[str, list[str]]] | None, str | None]] = {
    "merchant": (
        [{"merchantToken": []}],
        "No, unknown or non-ASCII credentials (ownCode null), or a token of the other environment (2007).",
    ),
    "hook-keys": ([], "No or an unknown privateKey/publicKey pair in the body (ownCode null, D14)."),
    "wallet-application": (
        [{"walletApplication": []}],
        "Bad, expired, revoked or wrong-type token (7102-7107): this route takes the application token.",
    ),
    "wallet": (
        [{"walletApplication": []}, {"walletUser": []}],
        "Bad, expired, revoked or wrong-type token (7102-7107).",
    ),
    "backoffice-application": (
        [{"backofficeApplication": []}],
        "Bad, expired, revoked or wrong-kind token (7102-7107): this route takes the backoffice application "
        "token (D184).",
    ),
    "backoffice-user": (
        [{"backofficeUser": []}],
        "Bad, expired, revoked or wrong-kind token (7102-7107): this route takes the backoffice user token "
        "(D184).",
    ),
    "signature": ([], None),
    "none": ([], None),
}


def header(request: Request, name: str) -> str | None:
    """A header's value as ASCII text (stripped); ``None`` when absent, empty or not ASCII (D20)."""
    wanted = name.lower().encode("ascii")
    for key, value in request.scope.get("headers", ()):
        if bytes(key).lower() == wanted:
            try:
                text = bytes(value).decode("ascii").strip()
            except UnicodeDecodeError:
                return None
            return text or None
    return None


def bearer(request: Request) -> str | None:
    """The ``Authorization`` bearer token (``Bearer `` prefix optional)."""
    value = header(request, "authorization")
    if value is not None and value[:7].lower() == "bearer ":
        value = value[7:].strip() or None
    return value


def credentials(request: Request) -> Credentials:
    """The raw ``Authorization`` header (bytes, so non-ASCII values can be refused as absent, D20)."""
    for key, value in request.scope.get("headers", ()):
        if key.lower() == b"authorization":
            return Credentials(bytes(value))
    return Credentials(None)


def base_url(request: Request) -> str:
    """The server's public base address (no trailing slash; D90): never the request's ``Host``."""
    return get_context(request).addresses.base_url(request.scope)


def webview_url(request: Request) -> str:
    """``{webview_url}``: the public base address + ``/checkout`` (D90)."""
    return get_context(request).addresses.webview_url(request.scope)


# ---------------------------------------------------------------------------------- fast lanes


def lane(handler: Callable[..., Any], fast: Callable[[Request], Any]) -> None:
    """Serve the route of ``handler`` (which has path parameters) through ``fast(request) -> Response``
    as a fast lane: ``fast`` reads its parameters from ``request.path_params`` and must answer exactly as
    ``handler`` does (:mod:`paysdk.server.hotpath.lanes`, D261)."""
    setattr(handler, LANE_ATTRIBUTE, fast)


def raise_problem(result: T | APIProblem) -> T:
    """Raise a problem a service returned (it committed a state change first); pass anything else."""
    if isinstance(result, APIProblem):
        raise result
    return result


# ------------------------------------------------------------------------------------ answering


def _wire(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True, mode="python")
    if isinstance(value, list):
        return [_wire(item) for item in value]
    return value  # a mapping the router shaped itself


def answer(value: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A model (or a list of models) as it is, in camelCase, unset optionals left out."""
    return JSONResponse(_wire(value), status_code=status, headers=dict(headers or {}))


def data(value: Any, status: int = 200) -> JSONResponse:
    """``{"data": ...}`` (D30): a model, or a list of models, in camelCase."""
    return JSONResponse({"data": _wire(value)}, status_code=status)


def enveloped(value: Any, message: str, status: int = 200) -> JSONResponse:
    """``{"success": true, "message": message, "data": ...}`` (spec 2.6, D139): the subscription answers
    (``envelope="subscription"`` of :func:`route`)."""
    return JSONResponse({"success": True, "message": message, "data": _wire(value)}, status_code=status)


# ---------------------------------------------------------------------------------- declaring

#: D1 error answers of the payment-link and alternative-payment routes.
MERCHANT_ERRORS: dict[int, str] = {
    400: "Malformed JSON body (ownCode null, D20) or amount out of range (ownCode 2003).",
    404: "Unknown transaction uid (ownCode null, D21).",
    409: "Invalid field (5000), wrong client slug (5004), or a state conflict (ownCode null).",
}

#: D1 error answers of the wallet routes (the codes of :class:`paysdk.contracts.wallet.WalletCode`).
WALLET_ERRORS: dict[int, str] = {
    400: "Invalid field (7001, naming it), invalid amount (7304), OTP/reset errors (7202, 7203, 7205-7207).",
    401: "Bad, expired, revoked or wrong-type token (7102-7107); login errors (7101, 7601, 7604, 7616).",
    403: "Missing card permission (7401) or CVV rules (7501, 7502).",
    404: "Unknown user (7201), card (7301) or permission record (7402).",
    409: "Card not active (7302), currency mismatch (7305), not fundable (7307), already linked (7308).",
    422: "Insufficient funds (7303): nothing changed.",
    429: "Too many wrong passwords (7108, with Retry-After) or OTP codes (7204).",
}


#: D1 error answers of the backoffice routes (D183, D184, D189).
BACKOFFICE_ERRORS: dict[int, str] = {
    400: "Malformed body or invalid field (ownCode null, naming it).",
    401: "Bad, expired, revoked or wrong-kind token (7102-7107); login errors (7101, 7601, 7604, 7616).",
    404: "Unknown partner, cardholder or card (ownCode null, naming partnerId, cardholderId or cardId).",
    409: "The card belongs to another cardholder (ownCode null, naming cardId).",
    429: "Too many wrong passwords (7108, with Retry-After).",
}


def only(table: Mapping[int, str], *statuses: int) -> dict[int, str]:
    """The entries of a family's error table for ``statuses``."""
    return {status: table[status] for status in statuses}


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$defs`` references replaced by the definitions (an OpenAPI fragment)."""
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(copy.deepcopy(definitions[ref.removeprefix("#/$defs/")]))
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    result = resolve(schema)
    assert isinstance(result, dict)
    return result


@functools.cache
def _subscription_envelope(model: type[BaseModel], many: bool) -> type[BaseModel]:
    """The ``{"success": true, "message", "data": model}`` model documenting a subscription answer (D139)."""
    from paysdk.contracts.subscriptions import SubscriptionEnvelope  # the subscriptions' routers only

    name = f"{model.__name__}{'List' if many else ''}SubscriptionEnvelope"
    inner: Any = list[model] if many else model  # type: ignore[valid-type]
    envelope: type[BaseModel] = create_model(
        name,
        __base__=SubscriptionEnvelope,
        __doc__=f'``{{"success": true, "message": ..., "data": ...}}`` (spec 2.6, D139): {name}.',
        success=(Literal[True], ...),
        message=(str, ...),
        data=(inner, ...),
    )
    return envelope


@functools.cache
def _envelope(model: type[BaseModel], many: bool) -> type[BaseModel]:
    """The ``{"data": model}`` (or ``{"data": [model]}``) model documenting a D30 answer."""
    name = f"{model.__name__}{'List' if many else ''}Envelope"
    inner: Any = list[model] if many else model  # type: ignore[valid-type]
    envelope: type[BaseModel] = create_model(name, __doc__=f'``{{"data": ...}}`` (D30): {name}.', data=inner)
    return envelope


def route(
    summary: str,
    *,
    auth: AuthKind,
    errors: Mapping[int, str],
    body: type[BaseModel] | None = None,
    body_required: bool = True,
    answer: type[BaseModel] | None = None,
    many: bool = False,
    envelope: bool | Literal["subscription"] = False,
    status: int = 200,
) -> dict[str, Any]:
    """The keyword arguments of ``router.<method>(path, ...)`` declaring a public route (module docstring).

    ``body``: the contract model of the JSON request body (documented in validation mode: what the server
    accepts); ``body_required=False`` when an empty body is taken. ``answer``: the success model, a list
    of it with ``many``, inside ``{"data": ...}`` with ``envelope=True`` (D30), inside ``{"success": true,
    "message", "data"}`` with ``envelope="subscription"`` (spec 2.6, D139; answered by :func:`enveloped`);
    ``status``: its status.
    ``errors``: the D1 error answers (status -> description, see :func:`only`); ``auth`` adds the
    security requirement and its ``401``.
    """
    security, unauthorized = AUTH[auth]
    responses: dict[int | str, dict[str, Any]] = {
        code: {"model": ErrorBody, "description": description} for code, description in errors.items()
    }
    if unauthorized is not None:
        responses.setdefault(401, {"model": ErrorBody, "description": unauthorized})
    kwargs: dict[str, Any] = {"summary": summary, "status_code": status, "responses": responses}
    if answer is not None:
        model: Any
        if envelope == "subscription":
            model = _subscription_envelope(answer, many)
        elif envelope:
            model = _envelope(answer, many)
        else:
            model = list[answer] if many else answer  # type: ignore[valid-type]
        kwargs["response_model"] = model
        kwargs["response_description"] = "Success"
    extra: dict[str, Any] = {"security": security}
    if body is not None:
        schema = _inline(body.model_json_schema(by_alias=True, mode="validation"))
        extra["requestBody"] = {
            "required": body_required,
            "description": body.__doc__ or "",
            "content": {"application/json": {"schema": schema}},
        }
    kwargs["openapi_extra"] = extra
    return kwargs


#: The media type of an HTML page answer.
HTML_PAGE: dict[str, Any] = {"text/html": {"schema": {"type": "string"}}}


def page(summary: str, *, errors: Mapping[int, str]) -> dict[str, Any]:
    """The keyword arguments of a ``GET`` route answering an HTML page (``200``) and the HTML ``errors``
    (status -> description)."""
    responses: dict[int | str, dict[str, Any]] = {
        status: {"description": text, "content": HTML_PAGE} for status, text in errors.items()
    }
    return {"summary": summary, "response_class": HTMLResponse, "responses": responses}


def form_post(
    summary: str, *, fields: Mapping[str, dict[str, Any]], answers: Mapping[int, str], redirect: str
) -> dict[str, Any]:
    """The keyword arguments of an HTML form post (D132): its ``application/x-www-form-urlencoded`` body
    (``fields``: name -> schema, every one required), the ``303`` redirect to ``redirect`` with its
    ``Location``, and the HTML ``answers`` (status -> description). No ``200`` unless ``answers`` has one."""
    responses: dict[int | str, dict[str, Any]] = {
        303: {
            "description": f"Done (or nothing left to do): see {redirect}.",
            "headers": {
                "Location": {
                    "description": f"{redirect[:1].upper()}{redirect[1:]} on the public address (D90).",
                    "required": True,
                    "schema": {"type": "string"},
                }
            },
        },
        **{status: {"description": text, "content": HTML_PAGE} for status, text in answers.items()},
    }
    schema = {"type": "object", "properties": dict(fields), "required": list(fields)}
    return {
        "summary": summary,
        "status_code": 303,
        "response_class": Response,  # no body of its own: each answer is documented above
        "responses": responses,
        "openapi_extra": {
            "requestBody": {
                "required": True,
                "content": {"application/x-www-form-urlencoded": {"schema": schema}},
            }
        },
    }
