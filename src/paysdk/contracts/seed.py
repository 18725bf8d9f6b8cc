"""The seed file of the reference server (``paysdk serve --seed FILE``, ``SandboxServer(seed=)``).

A seed lists merchants (sandbox clients), wallet users, cards and keys that the server loads at start
and restores on every ``POST /_sandbox/reset``, so a test suite starts from a known state. JSON, or YAML
when PyYAML is installed (``.yaml``/``.yml``); keys in camelCase or snake_case; unknown keys are
refused (a typo must not silently drop a setting). Numbers are exact (``Decimal``)::

    {
      "merchants": [{"slug": "shop", "sandboxToken": "<64 hex>", "callbackUrl": "http://127.0.0.1:9000/cb"}],
      "users": [{"id": "usr_ana", "merchant": "shop", "username": "ana", "email": "ana@example.com",
                 "password": "correct horse"}],
      "cards": [{"id": "crd_ana", "merchant": "shop", "holder": "ana", "balance": 100.00}]
    }

Values a merchant's tests want to hard-code (tokens, hook keys, the wallet signing key, user and card
ids) may be given; those left out are generated once, when the file is loaded, and stay the same across
resets. :func:`parse_seed` reads and checks a file: every problem names its entry and field
(``users[1].merchant: ...``) in one :class:`SeedError`.
"""

from __future__ import annotations

import base64
import binascii
import importlib
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from paysdk.contracts.common import Currency, DecimalNumber, NoFormula
from paysdk.contracts.sandbox import SandboxClientCreate
from paysdk.contracts.wallet import Email, NewProfile, Username, email_key, username_key

__all__ = ["SeedCard", "SeedError", "SeedFile", "SeedMerchant", "SeedUser", "parse_seed", "read_seed"]

_HEX64 = r"^[0-9a-f]{64}$"
_ID = r"^[A-Za-z0-9_-]{1,40}$"


class SeedError(ValueError):
    """A seed file that cannot be loaded; the message names the file, the entry and the field."""


class _SeedModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        hide_input_in_errors=True,  # passwords are fields (D382)
    )


class SeedMerchant(SandboxClientCreate):
    """A merchant (sandbox client): the fields of ``POST /_sandbox/clients``, and its credentials.

    ``sandbox_token``/``production_token``: 64 lowercase hex characters. ``hook_private_key`` and
    ``hook_public_key``: the hook key pair (given together). ``signing_private_key``: the wallet's
    Ed25519 key (base64 32-byte seed; its public key is derived) or ``signing_public_key`` alone.
    """

    # The fields of ``POST /_sandbox/clients`` come from :class:`SandboxClientCreate` (declared once);
    # a seed refuses unknown keys, and needs the slug its users and cards name.
    model_config = ConfigDict(extra="forbid")

    slug: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    sandbox_token: str | None = Field(default=None, pattern=_HEX64)
    production_token: str | None = Field(default=None, pattern=_HEX64)
    hook_private_key: str | None = Field(default=None, min_length=1, max_length=100)
    hook_public_key: str | None = Field(default=None, min_length=1, max_length=100)
    signing_private_key: str | None = None

    @pydantic.field_validator("signing_private_key")
    @classmethod
    def _seed_bytes(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                raw = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError("must be base64") from None
            if len(raw) != 32:
                raise ValueError("must be a base64 Ed25519 seed of 32 bytes")
        return value

    def client_create(self, signing_public_key: str | None = None) -> SandboxClientCreate:
        """The ``POST /_sandbox/clients`` body of this merchant (``signing_public_key``: the derived key)."""
        fields = self.model_dump(
            exclude={
                "sandbox_token",
                "production_token",
                "hook_private_key",
                "hook_public_key",
                "signing_private_key",
            },
            exclude_none=True,
        )
        if signing_public_key is not None:
            fields["signing_public_key"] = signing_public_key
        return SandboxClientCreate.model_validate(fields)

    def __repr__(self) -> str:  # tokens and keys never show
        return f"SeedMerchant(slug={self.slug!r})"

    __str__ = __repr__


class SeedUser(_SeedModel):
    """A wallet user (cardholder) of ``merchant``; ``id`` optional (``usr_...`` generated otherwise)."""

    merchant: str = Field(min_length=1)
    id: str | None = Field(default=None, pattern=_ID)
    username: Username
    email: Email
    password: str = Field(min_length=8, max_length=1024)
    profile: NewProfile | None = None

    def __repr__(self) -> str:  # the password never shows
        return f"SeedUser(merchant={self.merchant!r}, username={self.username!r})"

    __str__ = __repr__


class SeedCard(_SeedModel):
    """A card of ``merchant``. ``holder``: a seeded user's username or id (none: a stock physical card).

    ``type``: ``virtual`` (default with a holder) or ``physical`` (default without). ``status``: default
    ``active`` for a held card, ``inactive`` for a stock card. ``balance``: at most 4 decimal places,
    recorded as one ``fund`` movement.
    """

    merchant: str = Field(min_length=1)
    id: str | None = Field(default=None, pattern=_ID)
    holder: str | None = Field(default=None, min_length=1)
    type: Literal["virtual", "physical"] | None = None
    status: Literal["active", "inactive", "blocked"] | None = None
    currency: Currency = Currency.GTQ
    balance: DecimalNumber = Decimal(0)
    alias: Annotated[str, Field(min_length=1, max_length=100), NoFormula] | None = None

    @pydantic.field_validator("balance")
    @classmethod
    def _balance(cls, value: Decimal) -> Decimal:
        if not value.is_finite() or value < 0 or value.adjusted() >= 14:
            raise ValueError("must be a number >= 0")
        if value != value.quantize(Decimal("0.0001")):
            raise ValueError("has more than 4 decimal places")
        return value


class SeedFile(_SeedModel):
    """The whole seed: ``merchants``, ``users``, ``cards`` (each optional, default empty)."""

    merchants: list[SeedMerchant] = Field(default_factory=list)
    users: list[SeedUser] = Field(default_factory=list)
    cards: list[SeedCard] = Field(default_factory=list)

    def problems(self) -> list[str]:
        """What does not hold together across entries (unknown merchants, duplicates), one line each."""
        found: list[str] = []
        slugs: set[str] = set()
        for index, merchant in enumerate(self.merchants):
            if merchant.slug in slugs:
                found.append(f"merchants[{index}].slug: {merchant.slug!r} is listed twice")
            slugs.add(merchant.slug)
            if (merchant.hook_private_key is None) != (merchant.hook_public_key is None):
                found.append(
                    f"merchants[{index}].hookPublicKey: give hookPrivateKey and hookPublicKey together"
                )
            if merchant.signing_private_key is not None and merchant.signing_public_key is not None:
                found.append(
                    f"merchants[{index}].signingPublicKey: "
                    "give signingPrivateKey or signingPublicKey, not both"
                )
        names: dict[tuple[str, str], int] = {}
        ids: dict[str, str] = {}  # user id -> merchant
        for index, user in enumerate(self.users):
            if user.merchant not in slugs:
                found.append(f"users[{index}].merchant: no merchant {user.merchant!r} in merchants")
            for field, value in (("username", username_key(user.username)), ("email", email_key(user.email))):
                if (user.merchant, field + ":" + value) in names:
                    found.append(
                        f"users[{index}].{field}: {value!r} is taken by another user of the merchant"
                    )
                names[(user.merchant, field + ":" + value)] = index
            if user.id is not None:
                if user.id in ids:
                    found.append(f"users[{index}].id: {user.id!r} is listed twice")
                ids[user.id] = user.merchant
        card_ids: set[str] = set()
        for index, card in enumerate(self.cards):
            if card.merchant not in slugs:
                found.append(f"cards[{index}].merchant: no merchant {card.merchant!r} in merchants")
            if card.holder is not None and self.holder_index(card) is None:
                found.append(f"cards[{index}].holder: no user {card.holder!r} of merchant {card.merchant!r}")
            if card.holder is None and card.type == "virtual":
                found.append(f"cards[{index}].holder: a virtual card needs a holder")
            if card.id is not None:
                if card.id in card_ids:
                    found.append(f"cards[{index}].id: {card.id!r} is listed twice")
                card_ids.add(card.id)
        return found

    def holder_index(self, card: SeedCard) -> int | None:
        """The index in :attr:`users` of ``card``'s holder (by id, else username), or ``None``."""
        if card.holder is None:
            return None
        for index, user in enumerate(self.users):
            if user.merchant == card.merchant and card.holder in (user.id, user.username):
                return index
        return None


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def parse_seed(data: Any, source: str = "seed") -> SeedFile:
    """Check an already parsed seed document; :class:`SeedError` lists every problem (entry and field)."""
    if not isinstance(data, Mapping):
        raise SeedError(f"{source}: the seed must be an object with merchants, users and cards")
    try:
        seed = SeedFile.model_validate(data)
    except pydantic.ValidationError as exc:
        lines = [f"{_location(error['loc'])}: {error['msg']}" for error in exc.errors(include_url=False)]
        raise SeedError(f"{source}: " + "; ".join(lines)) from None
    problems = seed.problems()
    if problems:
        raise SeedError(f"{source}: " + "; ".join(problems))
    return seed


def _yaml(text: str, source: str) -> Any:
    try:
        yaml: Any = importlib.import_module("yaml")  # PyYAML is optional
    except ImportError:
        raise SeedError(
            f"{source}: reading YAML needs PyYAML (pip install pyyaml), or write the seed as JSON"
        ) from None

    # YAML numbers with a fraction are Decimal (exact money), not float.
    loader_class: Any = type("SeedLoader", (yaml.SafeLoader,), {})

    def decimal(loader: Any, node: Any) -> Any:
        value = loader.construct_scalar(node)
        try:
            return Decimal(str(value).replace("_", ""))
        except ArithmeticError:
            return loader.construct_yaml_float(node)

    loader_class.add_constructor("tag:yaml.org,2002:float", decimal)
    try:
        return yaml.load(text, Loader=loader_class)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as exc:
        raise SeedError(f"{source}: not valid YAML: {exc}") from None


def read_seed(path: str | Path) -> SeedFile:
    """Read and check the seed file at ``path`` (JSON; YAML for ``.yaml``/``.yml``)."""
    from paysdk import _json

    file = Path(path)
    source = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise SeedError(f"{source}: cannot read the seed file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SeedError(f"{source}: the seed file is not UTF-8 text") from None
    if file.suffix.lower() in (".yaml", ".yml"):
        data = _yaml(text, source)
    else:
        try:
            data = _json.loads(text)
        except ValueError as exc:
            raise SeedError(f"{source}: not valid JSON: {exc}") from None
    return parse_seed(data, source)
