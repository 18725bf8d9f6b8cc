"""Client-side argument checks shared by the resource builders (pure).

Every check raises :class:`paysdk.ValidationError` naming the argument, before any request is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import pydantic

from paysdk._errors import ValidationError
from paysdk._secret import Secret
from paysdk.contracts.common import Channel, Currency, parse_e164, parse_money

__all__ = [
    "check_ads",
    "check_amount",
    "check_channel",
    "check_currency",
    "check_custom_keys",
    "check_email",
    "check_optional_str",
    "check_phone",
    "check_secret",
    "check_str",
    "check_username",
    "path_segment",
    "validation_error_from",
]

_CHANNELS = ", ".join(c.value for c in Channel)
_CURRENCIES = ", ".join(c.value for c in Currency)


def check_amount(value: object, field: str = "amount") -> Decimal:
    """An exact, finite, positive amount with at most 2 decimals (``Decimal``, ``int`` or decimal string)."""
    try:
        return parse_money(value, field=field)
    except ValueError as exc:
        raise ValidationError(field, str(exc).removeprefix(f"{field} ").strip()) from None


def check_phone(value: object, field: str = "user_id") -> str:
    """A phone number in E.164 form, returned canonical (``+`` and digits, separators dropped).

    The shape only (:func:`paysdk.contracts.common.parse_e164`: ``+``, a country code not starting with 0,
    7 to 15 digits); whether the number exists for its country is the server's check, answered as
    ``409 / 5000`` naming ``userId`` (:class:`paysdk.InvalidFieldError`). Decisions D24, D525.
    """
    if not isinstance(value, str):
        raise ValidationError(field, "must be a phone number in E.164 form (a str), e.g. +50212345678")
    try:
        return parse_e164(value)
    except ValueError as exc:
        raise ValidationError(field, str(exc)) from None


def check_channel(value: object, field: str = "channel") -> Channel:
    """One of the channels of spec 2.1."""
    if isinstance(value, str):
        try:
            return Channel(value)
        except ValueError:
            pass
    raise ValidationError(field, f"must be one of {_CHANNELS}")


def check_currency(value: object, field: str = "currency") -> Currency | None:
    """One of the currencies of spec 2.1, or ``None`` (the client's first configured currency)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return Currency(value)
        except ValueError:
            pass
    raise ValidationError(field, f"must be one of {_CURRENCIES}")


def check_str(value: object, field: str, *, max_length: int = 255) -> str:
    """A non-empty string (surrounding spaces removed) of at most ``max_length`` characters."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, "must be a non-empty string")
    text = value.strip()
    if len(text) > max_length:
        raise ValidationError(field, f"must be at most {max_length} characters")
    return text


def check_username(value: object, field: str = "username") -> str:
    """A wallet username (D96): :func:`check_str`, without invisible or bidirectional characters."""
    from paysdk.contracts.wallet import validate_username  # the wallet's contracts: not every family's (D460)

    return _contract_check(validate_username, check_str(value, field), field)


def check_email(value: object, field: str = "email") -> str:
    """An email address of the form the server takes (D96, :func:`paysdk.contracts.wallet.validate_email`)."""
    from paysdk.contracts.wallet import validate_email  # the wallet's contracts: not every family's (D460)

    return _contract_check(validate_email, check_str(value, field), field)


def _contract_check(check: Callable[[str], str], text: str, field: str) -> str:
    try:
        return check(text)
    except ValueError as exc:
        raise ValidationError(field, str(exc)) from None


def check_optional_str(value: object, field: str, *, max_length: int = 255) -> str | None:
    """``None``, or a string of at most ``max_length`` characters."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(field, "must be a string")
    if len(value) > max_length:
        raise ValidationError(field, f"must be at most {max_length} characters")
    return value


def check_secret(value: object, field: str) -> Secret:
    """A non-empty ``str`` or :class:`~paysdk.Secret`, kept as a ``Secret``."""
    text = value.reveal() if isinstance(value, Secret) else value
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(field, "must be a non-empty str or paysdk.Secret")
    return Secret(text.strip())


def check_ads(value: object) -> list[Any]:
    """``ads`` is reserved (spec 2.1): ``None`` is sent as ``[]``."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise ValidationError("ads", "must be a list")
    return list(value)


def check_custom_keys(value: object, field: str = "custom_keys") -> dict[str, Any] | None:
    """``None`` or a mapping with string keys (sent as the JSON object ``customKeys``)."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValidationError(field, "must be a dict with string keys")
    return dict(value)


def path_segment(value: object, field: str) -> str:
    """A non-empty identifier, percent-encoded for use as one path segment."""
    return quote(check_str(value, field), safe="")


_SNAKE = {"userId": "user_id", "externalId": "external_id", "customKeys": "custom_keys"}


def validation_error_from(exc: pydantic.ValidationError) -> ValidationError:
    """The first problem of a contract-model error, as a :class:`ValidationError` (values never echoed)."""
    errors = exc.errors()
    if not errors:  # pragma: no cover - pydantic always reports at least one
        return ValidationError("body", "invalid")
    first = errors[0]
    loc = [str(part) for part in first["loc"]]
    name = _SNAKE.get(loc[0], loc[0]) if loc else "body"
    field = ".".join([name, *loc[1:]])
    return ValidationError(field, str(first["msg"]))
