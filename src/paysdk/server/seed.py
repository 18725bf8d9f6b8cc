"""Loading a seed (:mod:`paysdk.contracts.seed`) into the reference server, and restoring it on reset.

:func:`install_seed` expands the seed once (every token, key, id and password hash it leaves out is
generated then, so they stay the same across resets), empties the database, writes the seed in one
transaction, and registers a reset hook: ``POST /_sandbox/reset`` then leaves the seeded state, not an
empty server. A seed the server refuses (an unknown timezone, a callback URL it does not accept) raises
:class:`~paysdk.contracts.seed.SeedError` naming the entry and field; nothing is left written.
"""

from __future__ import annotations

import base64
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import nacl.signing
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from paysdk import _jwt
from paysdk.contracts.seed import SeedError, SeedFile, SeedMerchant, read_seed
from paysdk.contracts.wallet import email_key, username_key
from paysdk.server.auth import hook_keys_digest, sha256_hex
from paysdk.server.core_tables import ClientRow
from paysdk.server.errors import APIProblem
from paysdk.server.families import reset_order
from paysdk.server.passwords import hash_secret
from paysdk.server.services import sandbox, wallet_balance, wallet_cards
from paysdk.server.services.wallet_common import new_id, to_units
from paysdk.server.wallet_tables import WalletUserRow

if TYPE_CHECKING:
    from fastapi import FastAPI

    from paysdk.server.context import ServerContext

__all__ = ["SeededMerchant", "SeededState", "expand_seed", "install_seed", "write_seed"]


@dataclass(frozen=True)
class SeededMerchant:
    """A seeded merchant with every credential fixed (given by the seed or generated once)."""

    entry: SeedMerchant
    sandbox_token: str = field(repr=False)
    production_token: str = field(repr=False)
    hook_private_key: str = field(repr=False)
    hook_public_key: str
    signing_private_key: str | None = field(repr=False)
    signing_public_key: str | None


@dataclass(frozen=True)
class SeededState:
    """The expanded seed: what every reset restores. ``user_ids``/``card_ids`` follow the seed's order."""

    seed: SeedFile
    merchants: dict[str, SeededMerchant]
    user_ids: list[str]
    password_hashes: list[str] = field(repr=False)
    card_ids: list[str]

    def merchant(self, slug: str) -> SeededMerchant:
        """The seeded merchant ``slug`` (``KeyError`` if the seed has none)."""
        return self.merchants[slug]


def expand_seed(seed: SeedFile) -> SeededState:
    """Fix every value the seed leaves to the server (tokens, keys, ids, password hashes)."""
    merchants: dict[str, SeededMerchant] = {}
    for entry in seed.merchants:
        private = entry.signing_private_key
        public = entry.signing_public_key
        if public is None:
            signing = (
                nacl.signing.SigningKey(base64.b64decode(private))
                if private is not None
                else nacl.signing.SigningKey.generate()
            )
            private = base64.b64encode(bytes(signing)).decode("ascii")
            public = _jwt.public_key_b64(signing)
        merchants[entry.slug] = SeededMerchant(
            entry=entry,
            sandbox_token=entry.sandbox_token or secrets.token_hex(32),
            production_token=entry.production_token or secrets.token_hex(32),
            hook_private_key=entry.hook_private_key or str(uuid.uuid4()),
            hook_public_key=entry.hook_public_key or str(uuid.uuid4()),
            signing_private_key=private,
            signing_public_key=public,
        )
    return SeededState(
        seed=seed,
        merchants=merchants,
        user_ids=[user.id or new_id("usr") for user in seed.users],
        password_hashes=[hash_secret(user.password) for user in seed.users],
        card_ids=[card.id or new_id("crd") for card in seed.cards],
    )


def _problem(exc: APIProblem, where: str) -> SeedError:
    field_name = exc.details[0][0] if exc.details else None
    message = exc.details[0][1] if exc.details else exc.message
    return SeedError(f"{where}.{field_name}: {message}" if field_name else f"{where}: {message}")


def write_seed(session: Session, state: SeededState, now: datetime) -> None:
    """Write the expanded seed into an empty database (one transaction: ``session``'s)."""
    clients: dict[str, ClientRow] = {}
    for index, entry in enumerate(state.seed.merchants):
        seeded = state.merchants[entry.slug]
        try:
            sandbox.create_client(session, entry.client_create(seeded.signing_public_key), now)
        except APIProblem as exc:
            raise _problem(exc, f"merchants[{index}]") from None
        row = session.scalars(select(ClientRow).where(ClientRow.slug == entry.slug)).one()
        row.sandbox_token = seeded.sandbox_token
        row.sandbox_token_sha256 = sha256_hex(seeded.sandbox_token)
        row.production_token = seeded.production_token
        row.production_token_sha256 = sha256_hex(seeded.production_token)
        row.hook_public_key = seeded.hook_public_key
        row.hook_keys_sha256 = hook_keys_digest(seeded.hook_private_key, seeded.hook_public_key)
        clients[entry.slug] = row
    session.flush()
    for index, user in enumerate(state.seed.users):
        client = clients[user.merchant]
        profile = (
            user.profile.model_dump(by_alias=True, exclude_none=True, mode="json") if user.profile else {}
        )
        session.add(
            WalletUserRow(
                id=state.user_ids[index],
                client_id=client.id,
                merchant=client.slug,
                username=user.username,
                username_key=username_key(user.username),
                email=email_key(user.email),
                password_hash=state.password_hashes[index],
                profile=profile,
                created_at=now,
            )
        )
    session.flush()
    for index, card in enumerate(state.seed.cards):
        client = clients[card.merchant]
        if card.currency.value not in client.currencies:
            raise SeedError(
                f"cards[{index}].currency: {card.currency.value} is not a currency of {client.slug!r}"
            )
        holder = state.seed.holder_index(card)
        kind = card.type or ("virtual" if holder is not None else "physical")
        status = card.status or ("active" if holder is not None else "inactive")
        card_row = wallet_cards.new_card(
            client,
            now,
            type_=kind,
            status=status,
            currency=card.currency.value,
            holder=None if holder is None else state.user_ids[holder],
            alias=card.alias,
        )
        card_row.id = state.card_ids[index]
        units = to_units(card.balance)
        card_row.balance = units
        session.add(card_row)
        if units:
            wallet_balance.record_movement(
                session,
                card_row,
                now,
                type_="fund",
                direction="credit",
                amount=units,
                balance_after=units,
                reference="seed",
            )
    session.flush()


def _load(context: ServerContext, state: SeededState, session: Session) -> None:
    write_seed(session, state, context.clock.now(session))


def install_seed(app: FastAPI, seed: SeedFile | str | Path) -> SeededState:
    """Empty the app's database, load ``seed`` (a checked seed or a file's path) and make every reset
    restore it. Returns the expanded seed. Raises :class:`~paysdk.contracts.seed.SeedError`."""
    context: ServerContext = app.state.paysdk
    checked = seed if isinstance(seed, SeedFile) else read_seed(seed)
    state = expand_seed(checked)

    def restore(session: Session) -> None:
        _load(context, state, session)

    def empty_and_restore(session: Session) -> None:  # one transaction: a refused seed leaves all as it was
        for table in reset_order(context.db.families):
            session.execute(delete(table))
        restore(session)

    context.call(empty_and_restore)
    context.after_reset.append(restore)
    return state
