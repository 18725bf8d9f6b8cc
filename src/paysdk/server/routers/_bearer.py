"""The bearer-token surfaces' dependencies: the wallet's and the backoffice's :class:`Transactions`.

Each is :class:`~paysdk.server.routers._transactions.Transactions` whose every transaction verifies the
``Authorization`` bearer first (:func:`~paysdk.server.routers._transactions.credentialed`), its
:attr:`~paysdk.server.routers._transactions.Transactions.caller` the verified principal::

    async def list_cards(user_id: UserId, db: WalletDb) -> Response:
        return data(await db.run(cards.list_cards, db.session, db.caller, user_id))
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Depends
from sqlalchemy.orm import Session

from paysdk.server.context import ServerContext
from paysdk.server.routers._transactions import Transactions, credentialed
from paysdk.server.services import backoffice, wallet_tokens
from paysdk.server.services.backoffice import OperatorPrincipal
from paysdk.server.services.wallet_tokens import Principal

__all__ = ["BackofficeApplicationDb", "BackofficeOperatorDb", "WalletApplicationDb", "WalletDb", "wallet_db"]


def _wallet_application(
    session: Session, context: ServerContext, now: datetime, token: str | None
) -> Principal:
    return wallet_tokens.authenticate(session, context, now, token, kind="application")


#: The dependency of :data:`WalletDb` (the funds route's lane calls it itself).
wallet_db = credentialed(wallet_tokens.authenticate)

#: Wallet routes taking the application's or a cardholder's access token (D37, D40).
WalletDb = Annotated[Transactions[Principal], Depends(wallet_db)]

#: Wallet routes taking the application's access token only (a user token is ``401 / 7106``).
WalletApplicationDb = Annotated[Transactions[Principal], Depends(credentialed(_wallet_application))]

#: Backoffice routes taking the backoffice application token (D184).
BackofficeApplicationDb = Annotated[Transactions[Principal], Depends(credentialed(backoffice.app_principal))]

#: Backoffice routes taking a backoffice operator's (user) token (D184).
BackofficeOperatorDb = Annotated[
    Transactions[OperatorPrincipal], Depends(credentialed(backoffice.operator_principal))
]
