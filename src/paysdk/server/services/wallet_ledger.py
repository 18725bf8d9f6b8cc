"""The fast path of the wallet ledger: ``POST /cards/{cardId}/funds`` in Core, in group commits (D256-D259).

The rules are those of :func:`paysdk.server.services.wallet_funds.funds` (D40-D43), written once: the
guarded updates are built from :func:`.wallet_balance.debit_rule` and :func:`.wallet_balance.credit_rule`
and a refusal is named by :func:`.wallet_balance.funds_refused`, as on the ordinary path; only the way to
the database differs:

* One conditional statement decides and applies: ``UPDATE wallet_cards SET balance = balance + :d WHERE
  id = :card AND client_id = :client AND type <> 'linked' AND <the rule holds> RETURNING <the card>``. A
  withdrawal's rule is ``status = 'active' AND balance - pending_debits >= :a`` (pending debits
  respected); an add's is ``balance + :a <= MAX_UNITS``. No row back means nothing changed, and the
  refusal is then told apart by reading the card (``7301`` not found or another merchant's, ``7307``
  linked, ``7302`` not active, ``7303`` insufficient funds, ``7304`` beyond the maximum balance).
  The movement is written in the same transaction with the ``balance`` the statement returned as its
  ``balanceAfter``: a card's balance is always the sum of its movements.
* No ORM session, no read-modify-write: the token's session row and the clock offset are read (once per
  batch) with small Core statements (:class:`paysdk.server.hotpath.Statement`, compiled once, run on
  the DBAPI cursor on SQLite; the guarded update on PostgreSQL too), and the signature of a token already
  seen is not verified again (:data:`paysdk.server.services.wallet_tokens.VERIFIED`, D257).
* Group commit (D258): every fund operation is one call of a group commit
  (:class:`paysdk.server.hotpath.LockingGroupCommit`, :mod:`paysdk.server.ledger_batches`), on SQLite and
  on PostgreSQL alike, so the operations that arrive together are applied in arrival order in ONE
  transaction (one ``COMMIT``, one ``fsync``), each in its own savepoint when they must run one by one;
  each caller gets its own answer or its own error, and a failing operation rolls back alone. The
  movement inserts are collected and written together at the end of the batch (one multi-row ``INSERT``).
* Anything out of the ordinary (no bearer, a token that does not verify, the server's key not yet
  loaded) returns :data:`SLOW`: the router then serves the request the ordinary way
  (:data:`paysdk.server.routers._bearer.WalletDb` + :func:`.wallet_funds.funds`), which gives the exact
  refusal (``7102``, ``7106``, ``7107``...).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.engine import Connection

from paysdk import _jwt
from paysdk.contracts.wallet import ACCESS_TOKEN_TYP, Card, FundsRequest, FundsResult, Movement, WalletCode
from paysdk.server.context import ServerContext
from paysdk.server.errors import APIProblem
from paysdk.server.hotpath import Statement, batch_cached
from paysdk.server.services import wallet_tokens
from paysdk.server.services.transactions import virtual_now
from paysdk.server.services.wallet_balance import credit_rule, debit_rule, funds_refused
from paysdk.server.services.wallet_common import (
    from_units,
    new_id,
    to_units,
    valid_id,
    wallet_problem,
)
from paysdk.server.wallet_tables import WalletCardRow, WalletMovementRow, WalletSessionRow

__all__ = ["SLOW", "Slow", "fund"]


class Slow:
    """The marker :func:`fund` returns when the request must be served the ordinary way."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "SLOW"


SLOW: Final = Slow()

_CARDS = cast(Table, WalletCardRow.__table__)
_MOVEMENTS = cast(Table, WalletMovementRow.__table__)
_SESSIONS = cast(Table, WalletSessionRow.__table__)
_FIELD = "Authorization"

_SESSION = Statement(
    select(
        _SESSIONS.c.kind,
        _SESSIONS.c.client_id,
        _SESSIONS.c.merchant,
        _SESSIONS.c.user_id,
        _SESSIONS.c.family_id,
        _SESSIONS.c.revoked_reason,
    ).where(_SESSIONS.c.id == bindparam("sid"))
)
_CARD = Statement(
    select(_CARDS.c.client_id, _CARDS.c.type, _CARDS.c.status).where(_CARDS.c.id == bindparam("card"))
)
#: What the guarded update answers: the card as it is after the operation.
_RETURNED = (
    _CARDS.c.balance,
    _CARDS.c.pending_debits,
    _CARDS.c.pending_credits,
    _CARDS.c.status,
    _CARDS.c.type,
    _CARDS.c.currency,
    _CARDS.c.masked_pan,
    _CARDS.c.holder_id,
    _CARDS.c.merchant,
    _CARDS.c.alias,
    _CARDS.c.created_at,
)
#: The card is the caller's merchant's and holds money here (not linked): checked by the update itself.
_OURS = (
    _CARDS.c.id == bindparam("card"),
    _CARDS.c.client_id == bindparam("client"),
    _CARDS.c.type != "linked",
)
_CREDIT = (
    update(_CARDS)
    .where(*_OURS, credit_rule(bindparam("units")))
    .values(balance=_CARDS.c.balance + bindparam("units"))
    .returning(*_RETURNED)
)
_DEBIT = (
    update(_CARDS)
    .where(*_OURS, *debit_rule(bindparam("units")))
    .values(balance=_CARDS.c.balance - bindparam("units"))
    .returning(*_RETURNED)
)
_MOVEMENT_COLUMNS = (
    "id",
    "card_id",
    "type",
    "direction",
    "amount",
    "balance_after",
    "currency",
    "reference",
    "counterpart_card_id",
    "transfer_id",
    "created_at",
)
_INSERT_MOVEMENT = Statement(insert(_MOVEMENTS), _MOVEMENT_COLUMNS)


#: The guarded updates, run on the DBAPI cursor (:meth:`Statement.first`), their returned values processed
#: as SQLAlchemy would (aware UTC datetimes).
_CREDIT_STATEMENT = Statement(_CREDIT)
_DEBIT_STATEMENT = Statement(_DEBIT)


@dataclass(frozen=True, slots=True)
class _Caller:
    client_id: int
    is_application: bool


def _principal(connection: Connection, context: ServerContext, now: datetime, token: str) -> _Caller | Slow:
    """What :func:`paysdk.server.services.wallet_tokens.authenticate` checks, in Core; :data:`SLOW` when
    the token does not verify with the cached key (the ordinary path then names the exact refusal)."""
    keys = wallet_tokens.cached_server_keys(context)
    if keys is None:
        return SLOW
    try:
        claims = wallet_tokens.verified_claims(token, ACCESS_TOKEN_TYP, keys)
    except _jwt.JWTError:
        return SLOW
    wallet_tokens.check_claims(claims, context, now, "access", _FIELD)
    sid = claims["sid"]
    rows = batch_cached(connection, ("wallet_session", sid), lambda: _SESSION.rows(connection, {"sid": sid}))
    if not rows:
        raise wallet_tokens.invalid_token("The token names no session.", _FIELD)
    kind, client_id, merchant, user_id, family_id, revoked = rows[0]
    if (
        family_id != claims["fam"]
        or kind != claims["kind"]
        or merchant != claims["merchant"]
        or (user_id or merchant) != claims["sub"]
    ):
        raise wallet_tokens.invalid_token("The token names no session.", _FIELD)
    if revoked is not None:
        raise wallet_problem(WalletCode.TOKEN_REVOKED, "The token has been revoked.", _FIELD, "revoked")
    return _Caller(int(client_id), kind in ("application", "backoffice_app"))


def _not_found() -> APIProblem:
    return wallet_problem(WalletCode.CARD_NOT_FOUND, "Card not found.", "cardId", "not found")


def fund(
    connection: Connection, context: ServerContext, token: str | None, card_id: str, body: FundsRequest
) -> FundsResult | Slow:
    """``POST /cards/{cardId}/funds`` (application token): an atomic add or a guarded withdrawal, in the
    order of checks of :func:`.wallet_funds.funds`; :data:`SLOW` to be served the ordinary way."""
    if not token:
        return SLOW
    now = virtual_now(connection, context.clock)
    caller = _principal(connection, context, now, token)
    if isinstance(caller, Slow):
        return SLOW
    if not caller.is_application:
        raise wallet_problem(
            WalletCode.WRONG_TOKEN_TYPE,
            "This endpoint needs the application token.",
            "Authorization",
            "wrong token type",
        )
    if not valid_id(card_id):
        raise _not_found()
    units = to_units(body.amount)
    params = {"card": card_id, "client": caller.client_id, "units": units}
    adding = body.operation == "add"
    returned = (_CREDIT_STATEMENT if adding else _DEBIT_STATEMENT).first(connection, params)
    if returned is None:  # nothing changed: say why, in the ordinary path's order of checks
        found = _CARD.rows(connection, {"card": card_id})
        if not found or found[0][0] != caller.client_id:
            raise _not_found()
        _client, kind, status = found[0]
        if kind == "linked":
            raise wallet_problem(
                WalletCode.CARD_NOT_FUNDABLE,
                "A linked third-party card holds no funds in the wallet.",
                "cardId",
            )
        raise funds_refused(body.operation, status)
    type_name, direction = ("fund", "credit") if adding else ("withdrawal", "debit")
    (
        balance,
        pending_debits,
        pending_credits,
        status,
        type_,
        currency,
        masked_pan,
        holder_id,
        merchant,
        alias,
        created_at,
    ) = returned
    movement_id = new_id("mov")
    _INSERT_MOVEMENT.insert(
        connection,
        {
            "id": movement_id,
            "card_id": card_id,
            "type": type_name,
            "direction": direction,
            "amount": units,
            "balance_after": balance,
            "currency": currency,
            "reference": body.reference,
            "counterpart_card_id": None,
            "transfer_id": None,
            "created_at": now,
        },
    )
    card = Card(
        card_id=card_id,
        masked_pan=masked_pan,
        type=type_,
        status=status,
        currency=currency,
        balance=from_units(balance),
        available_balance=from_units(balance - pending_debits),
        pending_debits=from_units(pending_debits),
        pending_credits=from_units(pending_credits),
        holder_id=holder_id,
        merchant=merchant,
        alias=alias,
        created_at=created_at,
    )
    movement = Movement(
        movement_id=movement_id,
        card_id=card_id,
        type=type_name,
        direction=direction,
        amount=from_units(units),
        balance_after=from_units(balance),
        currency=currency,
        reference=body.reference,
        counterpart_card_id=None,
        created_at=now,
    )
    return FundsResult(card=card, movement=movement)
