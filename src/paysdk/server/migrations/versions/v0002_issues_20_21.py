"""Issues 20 and 21: a client's display name (D413), password-login failures (D381), stored reconciliation
report pages (D331), the index of a batch's results (D450), saved cards instead of card numbers on
subscriptions and verifications (D351), the numbers turned into what is kept of them, and the stored
emails in the one form of D380 (D472).

Frozen once released: a later change is a new revision. Runs inside the one transaction of
:func:`paysdk.server.migrations.upgrade`; column changes on SQLite go through alembic's batch mode (the
table copied, with foreign keys off for the copy).
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels = None
depends_on = None

#: What a sandbox test card does when charged off-session, as :func:`paysdk.server.services.test_cards.
#: saved_card` said when this revision was written (frozen: a later change of the table does not change
#: what this upgrade made of a stored number): ``number -> (brand, renewal, decline reason)``.
_TEST_CARDS: dict[str, tuple[str, str, str]] = {
    "4242424242424242": ("visa", "approve", "card_declined"),
    "5555555555554444": ("mastercard", "approve", "card_declined"),
    "378282246310005": ("amex", "approve", "card_declined"),
    "4000000000000002": ("visa", "decline", "generic_decline"),
    "4000000000009995": ("visa", "decline", "insufficient_funds"),
    "4000000000000069": ("visa", "decline", "expired_card"),
    "4000002760003184": ("visa", "approve", "card_declined"),
    "4000000000000341": ("visa", "decline", "card_declined"),
    "4000000000000333": ("visa", "decline_first_attempt_of_second_renewal", "card_declined"),
    "4000002500003155": ("visa", "approve", "card_declined"),
}


def saved(number: str) -> tuple[str, str, str, str]:
    """``(brand, last four, renewal, decline reason)`` kept of the stored card ``number`` (D351): a number
    not in the table declines every off-session charge, as :func:`~paysdk.server.services.test_cards.
    saved_card` has it."""
    digits = "".join(ch for ch in number if ch not in " -")
    known = _TEST_CARDS.get(digits)
    if known is not None:
        brand, renewal, reason = known
        return brand, digits[-4:], renewal, reason
    if digits.startswith("4"):
        brand = "visa"
    elif digits[:2] in {"51", "52", "53", "54", "55", "22"}:
        brand = "mastercard"
    elif digits[:2] in {"34", "37"}:
        brand = "amex"
    else:
        brand = "card"
    return brand, digits[-4:], "decline", "card_declined"


_DOMAIN_DOTS = re.compile("[.\u3002\uff61]")


def email_key(email: str) -> str:
    """The one form of an email (D380) as :func:`paysdk.contracts.wallet.email_key` made it when this
    revision was written (frozen): the local part NFKC, case-folded, NFKC; the domain NFKC and case-folded
    label by label, a punycode label decoded. A value without ``@``, or with a label that is not
    punycode, is kept as it is (the earlier version stored it; nothing here refuses it)."""
    if "@" not in email:
        return email
    local, _, domain = unicodedata.normalize("NFKC", email.strip()).rpartition("@")
    labels: list[str] = []
    for label in _DOMAIN_DOTS.split(domain):
        folded = unicodedata.normalize("NFKC", label.casefold())
        if folded.startswith("xn--"):
            try:
                decoded = folded[4:].encode("ascii").decode("punycode")
            except (UnicodeError, ValueError):
                return email
            folded = unicodedata.normalize("NFKC", decoded.casefold())
        labels.append(folded)
    local = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", local).casefold())
    return f"{local}@{'.'.join(labels)}"


#: The columns holding an email the earlier version stored lower-cased or as given.
_EMAIL_COLUMNS = (
    ("wallet_users", "email"),
    ("backoffice_operators", "email"),
    ("wallet_outbox", "to"),
    ("subscriptions", "email"),
    ("subscription_verifications", "email"),
)


def upgrade() -> None:
    """Add the tables, columns and index; fill the saved cards from the numbers, then drop the numbers;
    store every email in its one form (a clash of two addresses that became one fails the upgrade, which
    then changes nothing)."""
    op.add_column("clients", sa.Column("display_name", sa.String(80), nullable=True))
    op.create_table(
        "wallet_login_failures",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("client_id", sa.Integer(), sa.ForeignKey("clients.id", ondelete="CASCADE"), nullable=False),
        sa.Column("login_key", sa.String(255), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("locked_until", sa.DateTime(), nullable=True),
        sa.UniqueConstraint("kind", "client_id", "login_key", name="uq_wallet_login_failures_login"),
    )
    op.create_table(
        "reconciliation_report_pages",
        sa.Column("report_id", sa.String(40), primary_key=True),
        sa.Column("page", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("client_id", sa.Integer(), sa.ForeignKey("clients.id", ondelete="CASCADE"), nullable=False),
        sa.Column("pages", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    op.create_index(
        "ix_reconciliation_report_pages_client", "reconciliation_report_pages", ["client_id", "created_at"]
    )
    op.create_index("ix_cardholder_batch_members_batch_row", "cardholder_batch_members", ["batch_id", "row"])
    _subscriptions()
    _verifications()
    _emails()


def _subscriptions() -> None:
    for name, length in (("card_token", 40), ("card_renewal", 48), ("card_decline_reason", 40)):
        op.add_column("subscriptions", sa.Column(name, sa.String(length), nullable=True))
    bind = op.get_bind()
    table = sa.table(
        "subscriptions",
        sa.column("id", sa.Integer()),
        sa.column("card_number", sa.String()),
        sa.column("card_token", sa.String()),
        sa.column("card_renewal", sa.String()),
        sa.column("card_decline_reason", sa.String()),
    )
    rows = bind.execute(sa.select(table.c.id, table.c.card_number)).all()
    for row_id, number in rows:
        _, _, renewal, reason = saved(number)
        bind.execute(
            table.update()
            .where(table.c.id == row_id)
            .values(
                card_token="pm_" + secrets.token_hex(12), card_renewal=renewal, card_decline_reason=reason
            )
        )
    with op.batch_alter_table("subscriptions") as batch:
        for name, length in (("card_token", 40), ("card_renewal", 48), ("card_decline_reason", 40)):
            batch.alter_column(name, existing_type=sa.String(length), nullable=False)
        batch.drop_column("card_number")


def _verifications() -> None:
    columns = (("card_brand", 16), ("card_last4", 4), ("card_renewal", 48), ("card_decline_reason", 40))
    for name, length in columns:
        op.add_column("subscription_verifications", sa.Column(name, sa.String(length), nullable=True))
    bind = op.get_bind()
    table = sa.table(
        "subscription_verifications",
        sa.column("id", sa.Integer()),
        sa.column("card_number", sa.String()),
        *(sa.column(name, sa.String()) for name, _ in columns),
    )
    rows = bind.execute(
        sa.select(table.c.id, table.c.card_number).where(table.c.card_number.is_not(None))
    ).all()
    for row_id, number in rows:
        brand, last4, renewal, reason = saved(number)
        bind.execute(
            table.update()
            .where(table.c.id == row_id)
            .values(card_brand=brand, card_last4=last4, card_renewal=renewal, card_decline_reason=reason)
        )
    with op.batch_alter_table("subscription_verifications") as batch:
        batch.drop_column("card_number")


def _emails() -> None:
    bind = op.get_bind()
    for table_name, column_name in _EMAIL_COLUMNS:
        table = sa.table(table_name, sa.column("id"), sa.column(column_name, sa.String()))  # ids: int or str
        column = table.c[column_name]
        for row_id, email in bind.execute(sa.select(table.c.id, column).where(column.is_not(None))).all():
            if (key := email_key(email)) != email:
                bind.execute(table.update().where(table.c.id == row_id).values({column_name: key}))
    leads = sa.table("onboarding_leads", sa.column("id", sa.Integer()), sa.column("contact", sa.JSON()))
    for row_id, contact in bind.execute(sa.select(leads.c.id, leads.c.contact)).all():
        given: Any = contact.get("email") if isinstance(contact, dict) else None
        if isinstance(given, str) and (key := email_key(given)) != given:
            bind.execute(leads.update().where(leads.c.id == row_id).values(contact={**contact, "email": key}))


def downgrade() -> None:
    """No downgrade: the card numbers are gone (D351)."""
    raise NotImplementedError("revision 0002 has no downgrade")
