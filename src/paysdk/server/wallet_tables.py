"""Storage of the wallet (spec 2.5, 4.3, 5.3; decisions D33-D44), on the ``Base`` of :mod:`.db`.

Decisions kept here:

* Balances, pending debits/credits and movement amounts are scaled integers (``x 10000``, D18): a
  wallet amount has at most 4 decimal places, so the stored integer is exact. Never ``float``.
* Debits are guarded in the database: ``UPDATE wallet_cards SET balance = balance - :a WHERE id = :id
  AND balance - pending_debits >= :a`` (see :mod:`paysdk.server.services.wallet_cards`).
* Secrets are stored hashed where they only need checking (passwords and PINs with scrypt, OTP codes,
  reset tokens, CVV view tokens and linking tokens with SHA-256); the server's own signing key (one per
  environment, D33) and a card's CVV (which the wallet must be able to show, D44) are stored as they are.
* A token session (``sid``) and its refresh family (``fam``) are one row of ``wallet_sessions``; a
  logout (D38), a reuse (D35) or a password reset revokes the row, and every token naming it stops
  working. Access-token verification reads that row by primary key (one indexed query).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from paysdk.server.core_tables import Base

__all__ = [
    "WALLET_RESET_ORDER",
    "WalletCardRow",
    "WalletChargeRow",
    "WalletClientKeyRow",
    "WalletCvvTokenRow",
    "WalletLinkingTokenRow",
    "WalletLoginFailureRow",
    "WalletMovementRow",
    "WalletOtpRow",
    "WalletOutboxRow",
    "WalletPermissionRow",
    "WalletRefreshTokenRow",
    "WalletRefundRow",
    "WalletResetTokenRow",
    "WalletServerKeyRow",
    "WalletSessionRow",
    "WalletUserRow",
]


class WalletServerKeyRow(Base):
    """The Ed25519 key the server signs wallet JWTs with: one per environment, generated once (D33).

    Not wiped by ``/_sandbox/reset`` so the JWKS stays stable for the life of the database.
    """

    __tablename__ = "wallet_server_keys"

    environment: Mapped[str] = mapped_column(String(16), primary_key=True)
    seed_b64: Mapped[str] = mapped_column(String(64))
    kid: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]


class WalletClientKeyRow(Base):
    """A client's wallet settings: its registered Ed25519 public key (D36) and user-token lifetimes (D34)."""

    __tablename__ = "wallet_client_keys"

    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"), primary_key=True)
    public_key_b64: Mapped[str] = mapped_column(String(64))
    key_id: Mapped[str] = mapped_column(String(64))
    keys_expire_at: Mapped[datetime | None] = mapped_column(nullable=True)
    user_access_ttl: Mapped[int] = mapped_column(Integer)
    user_refresh_ttl: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime]


class WalletUserRow(Base):
    """A cardholder (wallet user) of one merchant; ``id`` is the ``authUserId``."""

    __tablename__ = "wallet_users"
    __table_args__ = (
        UniqueConstraint("client_id", "username", name="uq_wallet_users_username"),
        UniqueConstraint("client_id", "email", name="uq_wallet_users_email"),
        # The canonical form (D96) is unique per client.
        Index("uq_wallet_users_username_key", "client_id", "username_key", unique=True),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    merchant: Mapped[str] = mapped_column(String(64))
    username: Mapped[str] = mapped_column(String(255))
    #: ``username_key(username)`` (D96), unique per client; always set.
    username_key: Mapped[str | None] = mapped_column(String(255), nullable=True)
    email: Mapped[str] = mapped_column(String(255))
    password_hash: Mapped[str] = mapped_column(String(255))
    profile: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime]


class WalletSessionRow(Base):
    """One login: session ``sid`` and its refresh family ``fam`` (D33, D35, D38)."""

    __tablename__ = "wallet_sessions"
    __table_args__ = (Index("ix_wallet_sessions_user", "user_id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    family_id: Mapped[str] = mapped_column(String(40), unique=True)
    environment: Mapped[str] = mapped_column(String(16))
    kind: Mapped[str] = mapped_column(String(16))  # application | user
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    merchant: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    revoked_reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    created_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None] = mapped_column(nullable=True)


class WalletRefreshTokenRow(Base):
    """One issued refresh token (by ``jti``); ``used_at`` marks it rotated (single use, D35)."""

    __tablename__ = "wallet_refresh_tokens"
    __table_args__ = (Index("ix_wallet_refresh_session", "session_id"),)

    jti: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("wallet_sessions.id", ondelete="CASCADE"))
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime]


class WalletOtpRow(Base):
    """A one-time code (D39): SHA-256 of ``salt:code``, 10 minutes, 5 wrong tries, single use."""

    __tablename__ = "wallet_otps"
    __table_args__ = (Index("ix_wallet_otps_user", "user_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("wallet_users.id", ondelete="CASCADE"))
    purpose: Mapped[str] = mapped_column(String(255))
    code_sha256: Mapped[str] = mapped_column(String(64))
    salt: Mapped[str] = mapped_column(String(32))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(16), default="live")  # live | used | dead | superseded
    expires_at: Mapped[datetime]
    created_at: Mapped[datetime]


class WalletLoginFailureRow(Base):
    """Wrong passwords in a row for one login name (D381): a wallet username or a backoffice email in its
    canonical form, of one client, whether or not a user has it. ``locked_until`` (virtual clock) is set
    at every fifth failure; a successful login deletes the row."""

    __tablename__ = "wallet_login_failures"
    __table_args__ = (
        UniqueConstraint("kind", "client_id", "login_key", name="uq_wallet_login_failures_login"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16))  # user | backoffice_user
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    login_key: Mapped[str] = mapped_column(String(255))
    failures: Mapped[int] = mapped_column(Integer, default=0)
    locked_until: Mapped[datetime | None] = mapped_column(nullable=True)


class WalletResetTokenRow(Base):
    """A password-reset token from an OTP verification (D39): SHA-256 only, 15 minutes, single use."""

    __tablename__ = "wallet_reset_tokens"

    token_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("wallet_users.id", ondelete="CASCADE"))
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime]


class WalletOutboxRow(Base):
    """An email the sandbox would have sent (``GET /_sandbox/outbox``)."""

    __tablename__ = "wallet_outbox"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    to: Mapped[str] = mapped_column(String(255), index=True)
    subject: Mapped[str] = mapped_column(String(255))
    body: Mapped[str] = mapped_column(Text)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    at: Mapped[datetime]


class WalletCardRow(Base):
    """A card. Money columns are ``x 10000`` integers; ``available = balance - pending_debits`` (D43)."""

    __tablename__ = "wallet_cards"
    __table_args__ = (Index("ix_wallet_cards_holder", "holder_id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    merchant: Mapped[str] = mapped_column(String(64))
    holder_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    type: Mapped[str] = mapped_column(String(16))  # physical | virtual | linked
    status: Mapped[str] = mapped_column(String(16))  # active | blocked | inactive
    currency: Mapped[str] = mapped_column(String(3))
    balance: Mapped[int] = mapped_column(BigInteger, default=0)
    pending_debits: Mapped[int] = mapped_column(BigInteger, default=0)
    pending_credits: Mapped[int] = mapped_column(BigInteger, default=0)
    masked_pan: Mapped[str] = mapped_column(String(32))
    cvv: Mapped[str | None] = mapped_column(String(4), nullable=True)
    pin_hash: Mapped[str | None] = mapped_column(String(255), nullable=True)
    alias: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime]


class WalletMovementRow(Base):
    """One change of a card's balance; ``balance_after`` is the card's balance right after it."""

    __tablename__ = "wallet_movements"
    __table_args__ = (Index("ix_wallet_movements_card", "card_id", "seq"),)

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(40), unique=True)
    card_id: Mapped[str] = mapped_column(ForeignKey("wallet_cards.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(16))
    direction: Mapped[str] = mapped_column(String(8))
    amount: Mapped[int] = mapped_column(BigInteger)
    balance_after: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    reference: Mapped[str | None] = mapped_column(String(255), nullable=True)
    counterpart_card_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    transfer_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    created_at: Mapped[datetime]


class WalletPermissionRow(Base):
    """Permissions granted to an authorized user on one card (D40): one record per (card, user)."""

    __tablename__ = "wallet_permissions"
    __table_args__ = (
        UniqueConstraint("card_id", "user_id", name="uq_wallet_permissions_card_user"),
        Index("ix_wallet_permissions_user", "user_id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    card_id: Mapped[str] = mapped_column(ForeignKey("wallet_cards.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(ForeignKey("wallet_users.id", ondelete="CASCADE"))
    permissions: Mapped[list[Any]] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class WalletCvvTokenRow(Base):
    """A CVV view token (D44): SHA-256 only, bound to card and user, 60 seconds, single use."""

    __tablename__ = "wallet_cvv_tokens"

    token_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    card_id: Mapped[str] = mapped_column(ForeignKey("wallet_cards.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(String(40))
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None] = mapped_column(nullable=True)


class WalletLinkingTokenRow(Base):
    """A third party's temporary card token (``POST /_sandbox/linking-tokens``): 10 minutes, single use."""

    __tablename__ = "wallet_linking_tokens"

    token_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    pan_last4: Mapped[str] = mapped_column(String(4))
    expiry: Mapped[str] = mapped_column(String(5))
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime]


class WalletChargeRow(Base):
    """A simulated card payment (D43); ``amount`` is held as a pending debit while ``authorized``."""

    __tablename__ = "wallet_charges"
    __table_args__ = (Index("ix_wallet_charges_card", "card_id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    card_id: Mapped[str] = mapped_column(ForeignKey("wallet_cards.id", ondelete="CASCADE"))
    amount: Mapped[int] = mapped_column(BigInteger)
    captured_amount: Mapped[int] = mapped_column(BigInteger, default=0)
    refunded_amount: Mapped[int] = mapped_column(BigInteger, default=0)
    status: Mapped[str] = mapped_column(String(24))
    merchant_name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    captured: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]


class WalletRefundRow(Base):
    """A refund of a captured charge: a pending credit until cleared (D43)."""

    __tablename__ = "wallet_refunds"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    charge_id: Mapped[str] = mapped_column(ForeignKey("wallet_charges.id", ondelete="CASCADE"))
    card_id: Mapped[str] = mapped_column(ForeignKey("wallet_cards.id", ondelete="CASCADE"))
    amount: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16))  # pending | cleared
    created_at: Mapped[datetime]


#: Deletion order for ``/_sandbox/reset`` (children first; before ``clients``). The server keys stay.
WALLET_RESET_ORDER: tuple[type[Base], ...] = (
    WalletRefundRow,
    WalletChargeRow,
    WalletCvvTokenRow,
    WalletPermissionRow,
    WalletMovementRow,
    WalletCardRow,
    WalletLinkingTokenRow,
    WalletRefreshTokenRow,
    WalletSessionRow,
    WalletResetTokenRow,
    WalletOtpRow,
    WalletLoginFailureRow,
    WalletOutboxRow,
    WalletUserRow,
    WalletClientKeyRow,
)
