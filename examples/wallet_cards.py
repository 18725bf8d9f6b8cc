"""The wallet as an issuer's backend: log in with the application's Ed25519 key, issue two cards to a
cardholder, fund one (4 decimal places, exact), see an overdraw refused, and move money between them.

    export PAYSDK_BASE_URL=http://127.0.0.1:8000          # paysdk serve
    export PAYSDK_WALLET_MERCHANT=my-store
    export PAYSDK_WALLET_PRIVATE_KEY=...                 # base64 seed: signingPrivateKey of the client
    export PAYSDK_WALLET_USER_ID=...                     # a cardholder (paysdk sandbox users create)
    python examples/wallet_cards.py
"""

from __future__ import annotations

import os
from decimal import Decimal

import paysdk

credentials = paysdk.WalletCredentials(
    merchant=os.environ["PAYSDK_WALLET_MERCHANT"], private_key=os.environ["PAYSDK_WALLET_PRIVATE_KEY"]
)
user_id = os.environ["PAYSDK_WALLET_USER_ID"]

# The application token is obtained lazily (signed login), refreshed before it expires, and kept in
# the token store: a FileTokenStore or RedisTokenStore lets several processes share one token pair.
with paysdk.Client(wallet=credentials) as client:
    main = client.wallet.cards.issue_virtual(user_id, alias="main")
    savings = client.wallet.cards.issue_virtual(user_id, alias="savings")
    funded = client.wallet.funds.add(main.card_id, Decimal("100.0001"), reference="top-up-1")
    print(f"funded {funded.card.masked_pan}: balance {funded.card.balance}")

    try:
        client.wallet.funds.withdraw(main.card_id, Decimal("500"))
    except paysdk.InsufficientFundsError as exc:
        print(f"overdraw refused: HTTP {exc.status_code} ownCode {exc.own_code}")

    transfer = client.wallet.transfers.create(main.card_id, savings.card_id, Decimal("40.0001"))
    debit, credit = transfer.debit, transfer.credit
    print(f"transfer {transfer.transfer_id}: main {debit.balance_after}, savings {credit.balance_after}")
