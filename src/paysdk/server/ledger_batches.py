"""Batched commits of the wallet ledger (D258): concurrent fund operations applied in one transaction.

:class:`LedgerBatches` is a :class:`paysdk.server.hotpath.LockingGroupCommit` of its own (one per
server instance, :func:`ledger_batches`) that only fund operations use
(:func:`paysdk.server.services.wallet_ledger.fund`). Everything the group commit guarantees holds: the
operations that arrive together run in arrival order in ONE transaction, each caller awaits the commit
of its batch and gets its own result or its own error, an operation that is refused has written nothing,
and when the batch's collected writes fail the operations run again one by one, each in its own
savepoint, so a failure stays with its own operation.

What it adds is the order of row locks on PostgreSQL. A batch updates several cards; taken in arrival
order, its row locks could cross those of a transfer (which locks its two cards in card-id order, D43)
and deadlock, and PostgreSQL would then abort either transaction: possibly the transfer, a request that
never asked to be batched. So every batch starts by locking all the cards it will touch, in card-id
order (``SELECT ... ORDER BY id FOR UPDATE``, the lock call this module hands the group commit), the same
order as transfers: no cycle can form. On SQLite
the batch holds the database's single write lock and there is nothing to order.

On PostgreSQL a batch of its own, rather than a seat in the server's main group commit (request log,
idempotency keys), keeps a batch's card locks out of those batches: the two run side by side on their
own connections. On SQLite, where one writer holds the whole database, fund operations simply join the
main group commit (:meth:`LedgerBatches.fund`).
"""

from __future__ import annotations

import weakref
from typing import Any, cast

from sqlalchemy import Table, bindparam, select
from sqlalchemy.engine import Connection

from paysdk.contracts.wallet import FundsRequest, FundsResult
from paysdk.server.context import ServerContext
from paysdk.server.hotpath import LockingGroupCommit
from paysdk.server.services import wallet_ledger
from paysdk.server.wallet_tables import WalletCardRow

__all__ = ["LedgerBatches", "ledger_batches"]

_CARDS = cast(Table, WalletCardRow.__table__)
_LOCK = (
    select(_CARDS.c.id)
    .where(_CARDS.c.id.in_(bindparam("ids", expanding=True)))
    .order_by(_CARDS.c.id)
    .with_for_update()
)


def _lock_cards(connection: Connection, ids: list[Any]) -> None:
    """Lock the batch's cards in card-id order (PostgreSQL; SQLite's write lock is already held)."""
    if connection.dialect.name != "sqlite" and ids:
        connection.execute(_LOCK, {"ids": sorted(set(ids))}).all()


class LedgerBatches(LockingGroupCommit):
    """The group commit of fund operations (see the module docstring)."""

    def __init__(self, context: ServerContext) -> None:
        super().__init__(context, _lock_cards, context.group_commit)
        self._server = context

    async def fund(
        self, token: str | None, card_id: str, body: FundsRequest
    ) -> FundsResult | wallet_ledger.Slow:
        """:func:`paysdk.server.services.wallet_ledger.fund` in the next batch; its result or its error;
        :data:`~paysdk.server.services.wallet_ledger.SLOW` when the database's hot path is off.

        On SQLite the operations join the server's main group commit instead (one writer holds the
        database: there is no lock order to keep, and one batch for the request log, the idempotency keys
        and the operations is one ``COMMIT`` fewer per turn)."""
        if not self._server.db.hotpath:
            return wallet_ledger.SLOW
        result: FundsResult | wallet_ledger.Slow = await self.call_keyed(
            card_id, wallet_ledger.fund, self._server, token, card_id, body
        )
        return result


_BATCHES: weakref.WeakKeyDictionary[ServerContext, LedgerBatches] = weakref.WeakKeyDictionary()


def ledger_batches(context: ServerContext) -> LedgerBatches:
    """The :class:`LedgerBatches` of a server instance (made on first use)."""
    batches = _BATCHES.get(context)
    if batches is None:
        batches = _BATCHES[context] = LedgerBatches(context)
    return batches
