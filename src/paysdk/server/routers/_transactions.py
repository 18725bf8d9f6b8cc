"""The database work of a request, and the credentials it runs under, as FastAPI dependencies (D570).

A route declares what it needs as a parameter, and FastAPI hands it over:

* :data:`Db`: :class:`Transactions` with no credentials (the control plane, the hosted pages' helpers);
* :data:`MerchantToken`: the raw ``Authorization`` header of the merchant routes (:class:`Credentials`,
  checked by the service inside its transaction, D9, D20);
* :func:`credentialed` builds the dependency of a bearer-token surface: :class:`Transactions` whose
  every transaction verifies the token first (the wallet's and the backoffice's aliases live with their
  routers, :mod:`paysdk.server.routers._bearer`).

A handler then calls the service in one transaction, naming the transaction's own values with the
stand-ins :attr:`Transactions.session`, :attr:`~Transactions.now` and :attr:`~Transactions.caller`::

    async def list_cards(user_id: UserId, db: WalletDb) -> Response:
        return data(await db.run(cards.list_cards, db.session, db.caller, user_id))

**Why not a session held by a ``yield`` dependency.** On SQLite every transaction runs on the
database's single worker thread holding its lock (:class:`paysdk.server.db.Database`); a session opened
before the handler and committed after it would hold that lock across the handler's ``await``\\s (every
other request's database work would wait on them), or let another request's statements into it. So the
transaction is one call on the worker: :meth:`Transactions.run` opens it, verifies the credentials,
runs the service, and commits (or rolls back when it raises) before it returns, so the commit always
precedes the answer and a failed commit is the request's error, never a 500 after a 200.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any, Generic, ParamSpec, TypeVar, cast

from fastapi import Depends
from sqlalchemy.orm import Session
from starlette.requests import Request

from paysdk.server.auth import Credentials
from paysdk.server.context import ServerContext, get_context
from paysdk.server.routers._common import bearer, credentials

__all__ = [
    "Db",
    "MerchantToken",
    "Transactions",
    "Verify",
    "credentialed",
    "merchant_token",
    "transactions",
]

P = ParamSpec("P")
T = TypeVar("T")
C = TypeVar("C")

#: How a surface verifies its bearer token: ``verify(session, context, now, token) -> caller``, raising
#: the surface's ``401`` problem (e.g. :func:`paysdk.server.services.wallet_tokens.authenticate`).
Verify = Callable[[Session, ServerContext, datetime, str | None], C]


class _StandIn:
    """What :attr:`Transactions.session` (``now``, ``caller``) is outside :meth:`Transactions.run`."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<the transaction's {self.name}>"

    def __getattr__(self, attribute: str) -> Any:
        raise RuntimeError(
            f"db.{self.name} stands for the {self.name} of a transaction: pass it as an argument of "
            f"db.run(...), which replaces it (it has no .{attribute} of its own)"
        )


_SESSION = _StandIn("session")
_NOW = _StandIn("now")
_CALLER = _StandIn("caller")


class Transactions(Generic[C]):
    """The database work of one request: :meth:`run` runs a service in one transaction (module
    docstring). ``C``: what the verified credentials give (``None`` without credentials)."""

    __slots__ = ("_token", "_verify", "context")

    def __init__(
        self, context: ServerContext, token: str | None = None, verify: Verify[C] | None = None
    ) -> None:
        #: The app's :class:`~paysdk.server.context.ServerContext` (clock, environment, addresses).
        self.context = context
        self._token = token
        self._verify = verify

    @property
    def session(self) -> Session:
        """Stands for the transaction's ORM session in the arguments of :meth:`run`."""
        return cast(Session, _SESSION)

    @property
    def now(self) -> datetime:
        """Stands for the virtual clock's time, read in the transaction, in the arguments of :meth:`run`."""
        return cast(datetime, _NOW)

    @property
    def caller(self) -> C:
        """Stands for who the credentials speak for, verified first in the transaction, in the arguments
        of :meth:`run`."""
        return cast(C, _CALLER)

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` in ONE transaction on the database's worker, the credentials verified
        first (a bad token is the surface's ``401`` and ``fn`` does not run); the stand-ins
        :attr:`session`, :attr:`now` and :attr:`caller` among the arguments are replaced by the
        transaction's values. Committed when ``fn`` returns, rolled back when it raises
        (:meth:`paysdk.server.context.ServerContext.run`); raise
        :class:`~paysdk.server.errors.APIProblem` for an error answer, or return it from a service that
        must commit first (:func:`~paysdk.server.routers._common.raise_problem`)."""
        return await self.context.run(self._call, fn, args, kwargs)

    def _call(
        self, session: Session, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> T:
        context, verify = self.context, self._verify
        given = (*args, *kwargs.values())
        now: datetime | None = None
        caller: Any = None
        if verify is not None:
            now = context.clock.now(session)
            caller = verify(session, context, now, self._token)
        else:
            if any(value is _CALLER for value in given):
                raise RuntimeError("db.caller: this route's transactions take no credentials")
            if any(value is _NOW for value in given):
                now = context.clock.now(session)
        values = {id(_SESSION): session, id(_NOW): now, id(_CALLER): caller}
        return fn(
            *[values.get(id(value), value) for value in args],
            **{key: values.get(id(value), value) for key, value in kwargs.items()},
        )


async def transactions(request: Request) -> Transactions[None]:
    """The dependency of :data:`Db`: the request's :class:`Transactions`, no credentials."""
    return Transactions(get_context(request))


#: A route's database work without credentials.
Db = Annotated[Transactions[None], Depends(transactions)]


def credentialed(verify: Verify[C]) -> Callable[[Request], Awaitable[Transactions[C]]]:
    """The dependency of a bearer-token surface: :class:`Transactions` verifying the ``Authorization``
    bearer (``Bearer `` optional; a non-ASCII value counts as absent, D20) with ``verify`` first in each
    transaction. Reads the header only, so ``/openapi.json`` gains no parameter (the route's ``auth``
    documents the security requirement)."""

    async def dependency(request: Request) -> Transactions[C]:
        return Transactions(get_context(request), bearer(request), verify)

    return dependency


async def merchant_token(request: Request) -> Credentials:
    """The dependency of :data:`MerchantToken`: the raw ``Authorization`` header (bytes, D9, D20)."""
    return credentials(request)


#: The merchant token of a merchant route (checked by its service, inside its transaction).
MerchantToken = Annotated[Credentials, Depends(merchant_token)]
