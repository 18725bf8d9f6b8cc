"""Types shared by every API family: currencies, channels, money, the error body, own codes."""

from __future__ import annotations

import functools
import re
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

from paysdk.contracts.codes import OwnCode
from paysdk.contracts.spreadsheet import check_free_text

__all__ = [
    "CHANNEL_DISPLAY_NAMES",
    "E164_MAX_DIGITS",
    "E164_MIN_DIGITS",
    "Channel",
    "ChannelName",
    "Currency",
    "CurrencyCode",
    "DecimalNumber",
    "ErrorBody",
    "ErrorDetail",
    "Money",
    "NoFormula",
    "OwnCode",
    "WireModel",
    "parse_e164",
    "parse_money",
]


class WireModel(BaseModel):
    """Base of every contract model: camelCase on the wire, snake_case in Python, extra keys kept; a
    validation error names the field and the rule, never the value (D382)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        frozen=True,
        ser_json_timedelta="float",
        # A validation error never shows the value it refused (D382): passwords, PINs and tokens are
        # fields of these models, and ``str(error)`` ends up in logs and tracebacks.
        hide_input_in_errors=True,
        # Validators and serializers are built the first time a model is used, not at import: a
        # family's contracts load with its first use (D460), and a program uses a few of their models.
        defer_build=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict (camelCase keys, ``Decimal`` kept exact, unset optionals left out)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="python")

    @classmethod
    def wire_from_checked(cls, **values: Any) -> dict[str, Any]:
        """The wire dict of values the caller has already validated field by field.

        Same keys and values as ``cls(**values).to_wire()`` for such values (a test holds them equal),
        without a second validation pass: the SDK's hot path checks its arguments itself, naming them
        in its errors. ``None`` values are left out; an unknown field name is a ``KeyError``.
        """
        aliases = _wire_names(cls)
        return {aliases[name]: value for name, value in values.items() if value is not None}


@functools.cache
def _wire_names(model: type[WireModel]) -> dict[str, str]:
    return {name: info.alias or name for name, info in model.model_fields.items()}


class Channel(StrEnum):
    """Where the payment link is sent (spec 2.1)."""

    WA = "wa"
    SMS = "sms"
    EMAIL = "email"
    WEB = "web"
    APP = "app"


#: The channel's display name, as the merchant callback reports it (spec 2.4; decision D7).
CHANNEL_DISPLAY_NAMES: dict[str, str] = {
    "wa": "WhatsApp",
    "sms": "SMS",
    "email": "Email",
    "web": "Web",
    "app": "App",
}


#: The channels as literals, for method signatures: a type checker catches a typo (answers use the
#: tolerant models instead). A test keeps them equal to :class:`Channel`.
ChannelName: TypeAlias = Literal["wa", "sms", "email", "web", "app"]


class Currency(StrEnum):
    """Currencies of spec 2.1. All have two minor units (ISO 4217)."""

    GTQ = "GTQ"
    USD = "USD"
    MXN = "MXN"
    CRC = "CRC"
    HNL = "HNL"
    DOP = "DOP"
    COP = "COP"
    SVC = "SVC"


#: The currencies as literals, for method signatures (a test keeps them equal to :class:`Currency`).
CurrencyCode: TypeAlias = Literal["GTQ", "USD", "MXN", "CRC", "HNL", "DOP", "COP", "SVC"]


def parse_amount_text(text: str, *, places: int | None = None, integer_digits: int | None = None) -> Decimal:
    """An amount written as text, a CSV cell or a CLI option: ASCII digits, then optionally a point and
    decimals; nothing else (no sign, spaces, exponent like ``1e3``, ``_`` like ``1_000``, non-ASCII
    digits), where ``Decimal()`` would take them all (D431).

    The one parser of written amounts: the CSV readers (batch charges, reconciliation) and the CLI's
    amount options. ``places``/``integer_digits`` bound the digits when given (the CSVs'); a
    ``ValueError`` says the rule, worded for a field: ``must be digits ...``.
    """
    decimals = "+" if places is None else f"{{1,{places}}}"
    integer = "+" if integer_digits is None else f"{{1,{integer_digits}}}"
    if re.fullmatch(f"[0-9]{integer}(?:\\.[0-9]{decimals})?", text) is None:
        at_most = "decimals" if places is None else f"at most {places} decimals"
        raise ValueError(f"must be digits with {at_most} (no sign, spaces or exponent)")
    return Decimal(text)


def parse_money(value: object, *, places: int = 2, field: str = "amount") -> Decimal:
    """Turn ``value`` into an exact, finite, positive ``Decimal`` with at most ``places`` decimals.

    Accepts ``Decimal``, ``int`` and decimal strings. Refuses ``float`` (it cannot hold money exactly),
    ``bool``, NaN, infinities, zero, negatives and more decimals than ``places``.
    """
    if isinstance(value, bool | float):
        raise ValueError(f"{field} must be a Decimal, int or decimal string, not {type(value).__name__}")
    if isinstance(value, int):
        result = Decimal(value)
    elif isinstance(value, Decimal):
        result = value
    elif isinstance(value, str):
        text = value.strip()
        try:
            result = Decimal(text)
        except ArithmeticError:
            raise ValueError(f"{field} is not a decimal number: {value!r}") from None
    else:
        raise ValueError(f"{field} must be a number, not {type(value).__name__}")
    if not result.is_finite():
        raise ValueError(f"{field} must be finite")
    if result <= 0:
        raise ValueError(f"{field} must be greater than zero")
    exponent = result.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent < -places and result != result.quantize(Decimal(1).scaleb(-places)):
        raise ValueError(f"{field} has more than {places} decimal places")
    if result.adjusted() >= 15:
        raise ValueError(f"{field} is too large")
    return result


#: Digits an E.164 number holds after the ``+``: at most 15 (ITU-T E.164); at least 7, the shortest
#: numbers in international service (a 3-digit country code and a 4-digit subscriber number, as in
#: Saint Helena +290, Niue +683 or Tokelau +690). D525.
E164_MIN_DIGITS = 7
E164_MAX_DIGITS = 15
#: What people type between the digits and :func:`parse_e164` drops: whitespace (any, as no-break spaces
#: pasted from documents), hyphen and the Unicode dashes and minus, dot, parentheses.
_E164_SEPARATORS = re.compile(r"[\s\-\u2010-\u2015\u2212.()]+")
_E164_EXAMPLE = "e.g. +50212345678"


def parse_e164(value: str) -> str:
    """The canonical E.164 form (``+`` and digits only) of a phone number, or ``ValueError`` saying why.

    Dependency-free and pure: separators (whitespace, dashes, dots, parentheses) are dropped; what is left
    must be ``+``, a country code not starting with 0, and 7 to 15 digits in all. Whether the number
    exists for its country is not checked here: the reference server does that (``409 / 5000`` naming
    ``userId``). The SDK, the CLI (through the SDK) and the server apply this same rule (D525, D24).
    """
    text = _E164_SEPARATORS.sub("", value)
    if not text:
        raise ValueError(f"must be a phone number in E.164 form, {_E164_EXAMPLE}")
    if not text.startswith("+"):
        raise ValueError(f"must start with + and the country code (E.164 form, {_E164_EXAMPLE})")
    digits = text[1:]
    if digits and not (digits.isascii() and digits.isdigit()):
        raise ValueError(
            "must be + and digits only (spaces, dashes, dots and parentheses are ignored; "
            f"no letters or extensions), {_E164_EXAMPLE}"
        )
    if not E164_MIN_DIGITS <= len(digits) <= E164_MAX_DIGITS:
        raise ValueError(
            f"must have {E164_MIN_DIGITS} to {E164_MAX_DIGITS} digits after the + (E.164), not {len(digits)}"
        )
    if digits[0] == "0":
        raise ValueError("must not start with +0: country codes start with 1 to 9 (E.164)")
    return text


def _wire_amount(value: object) -> object:
    # Runs before pydantic's own Decimal handling so floats, bools and strings never slip in.
    # Positivity is not checked here: an amount outside the client's range is ownCode 2003, decided
    # by the server against the client's configuration, not a contract (5000) error.
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise ValueError("must be a JSON number")
    result = Decimal(value)
    if not result.is_finite():
        raise ValueError("must be finite")
    exponent = result.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent < -2 and result != result.quantize(Decimal("0.01")):
        raise ValueError("has more than 2 decimal places")
    if result.adjusted() >= 15:
        raise ValueError("is too large")
    return result


#: The JSON schema of every money value on the wire (D18, D130): a JSON number, never a string. Pydantic's
#: own schema of ``Decimal`` is a string when serialised and number-or-string when validated, which is
#: neither what the server sends (:func:`paysdk._json.dumps` writes exact numbers) nor what it accepts.
_NUMBER_SCHEMA = WithJsonSchema({"type": "number"})

#: A transaction amount on the wire: a JSON number, exact, finite, at most 2 decimal places; a string is
#: refused (D3, D45) and the schema says ``number``. (The SDK validates what callers pass with
#: :func:`parse_money`, which also refuses zero and negatives.)
Money = Annotated[Decimal, BeforeValidator(_wire_amount), _NUMBER_SCHEMA]

#: A ``Decimal`` the server sends as an exact JSON number (balances, movement amounts, D18): documented as
#: ``number`` in ``/openapi.json``; parsing stays pydantic's tolerant ``Decimal`` (a number, or a decimal
#: string from another server), so the SDK reads answers as before (D130).
DecimalNumber = Annotated[Decimal, _NUMBER_SCHEMA]


class ErrorDetail(WireModel):
    """One problem with the request: the field (dotted path, or a header/query name) and what is wrong."""

    field: str
    message: str


class ErrorBody(WireModel):
    """The error body every endpoint answers with (decision D1).

    ``ownCode`` is top level and always present (``null`` where the spec gives no code).
    """

    own_code: int | None = Field(default=None)
    message: str
    details: list[ErrorDetail] = Field(default_factory=list)


def _strip(value: str) -> str:
    return value.strip()


NonEmptyStr = Annotated[str, AfterValidator(_strip), Field(min_length=1, max_length=255)]

#: The mark of a free-text field a spreadsheet may later show (names, descriptions, aliases, references):
#: a value a spreadsheet would run as a formula is refused (:mod:`paysdk.contracts.spreadsheet`, D384).
NoFormula = AfterValidator(check_free_text)
