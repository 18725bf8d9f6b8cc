"""What every wallet service and router shares: own-code errors, exact money, ids, bodies (D30, D31, D41).

* Errors carry a wallet own code with the HTTP status of :data:`WALLET_CODE_STATUS` (D31); a ``401``
  also carries ``WWW-Authenticate: Bearer``.
* Bodies are read raw and parsed with :func:`paysdk._json.loads` (:mod:`paysdk.server.bodies`). On the
  wallet a malformed body (not UTF-8 JSON, ``NaN``, ``1e400``, not an object, NUL characters) is
  ``400 / 7001`` naming ``body``, and a contract violation ``400 / 7001`` naming each field, because a
  wallet error always carries a wallet code (D30). A present but unusable amount (a string, a boolean,
  ``null``, zero, negative, more than 4 places, too large) is ``400 / 7304`` naming the field; a missing
  one ``400 / 7001``.
* Money: ``Decimal`` with at most 4 places, stored ``x 10000`` as an integer (:func:`to_units`,
  :func:`from_units`); a balance never exceeds :data:`MAX_UNITS`.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable, Mapping
from datetime import date
from decimal import Decimal
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from paysdk.contracts.wallet import WALLET_CODE_STATUS, WalletCode
from paysdk.server.bodies import parse_json_object
from paysdk.server.errors import APIProblem, problem_from_validation

__all__ = [
    "AMOUNT_FIELDS",
    "MAX_UNITS",
    "SCALE",
    "from_units",
    "new_id",
    "parse_date",
    "parse_wallet_body",
    "sha256_hex",
    "to_units",
    "valid_id",
    "valid_slug",
    "wallet_problem",
]

M = TypeVar("M", bound=BaseModel)

#: Stored money is ``amount x SCALE`` (4 decimal places, D18).
SCALE = 10_000
_PLACES = Decimal("0.0001")
#: Largest balance (and pending total) a card may hold, in stored units (< 2**63).
MAX_UNITS = 10**18
#: Body fields holding a wallet amount: invalid values are ``7304``, not ``7001``.
AMOUNT_FIELDS = frozenset({"amount"})
_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_WWW = {"WWW-Authenticate": 'Bearer realm="paysdk-wallet"'}


def wallet_problem(
    code: WalletCode,
    message: str,
    field: str | None = None,
    field_message: str | None = None,
    details: Iterable[tuple[str, str]] = (),
) -> APIProblem:
    """An error answer with a wallet own code and its status (D31)."""
    status = WALLET_CODE_STATUS[code]
    found = list(details)
    if field is not None:
        found.insert(0, (field, field_message or message.rstrip(".")))
    return APIProblem(status, int(code), message, found, headers=_WWW if status == 401 else None)


def to_units(amount: Decimal) -> int:
    """``Decimal("10.5")`` -> ``105000``; the amount must have at most 4 places (checked before)."""
    scaled = amount * SCALE
    integral = scaled.to_integral_exact()
    if integral != scaled:
        raise ValueError("more than 4 decimal places")
    return int(integral)


def from_units(units: int) -> Decimal:
    """``105000`` -> ``Decimal("10.5000")`` (always 4 places)."""
    return Decimal(units).scaleb(-4).quantize(_PLACES)


def new_id(prefix: str) -> str:
    """A random id such as ``crd_3f9a...`` (24 hex characters)."""
    return f"{prefix}_{secrets.token_hex(12)}"


def valid_id(text: str) -> bool:
    """An id of the wallet's form (letters, digits, ``_``, ``-``; at most 40): anything else is unknown."""
    return bool(_ID.match(text))


def valid_slug(text: str) -> bool:
    """A merchant slug's form (see :func:`paysdk.server.services.sandbox.valid_slug`)."""
    return bool(_SLUG.match(text))


def sha256_hex(text: str) -> str:
    """Hex SHA-256 of UTF-8 ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_date(value: str | None, field: str, *, required: bool) -> date | None:
    """A ``YYYY-MM-DD`` query value; ``400 / 7001`` naming ``field`` when invalid or missing (if required)."""
    if value is None or value == "":
        if required:
            raise wallet_problem(WalletCode.VALIDATION_ERROR, f"{field} is required.", field, "is required")
        return None
    if not _DATE.match(value):
        raise wallet_problem(
            WalletCode.VALIDATION_ERROR, f"{field} must be a date YYYY-MM-DD.", field, "must be YYYY-MM-DD"
        )
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise wallet_problem(
            WalletCode.VALIDATION_ERROR, f"{field} is not a valid date.", field, "is not a valid date"
        ) from None


def _as_wallet(problem: APIProblem) -> APIProblem:
    if problem.status == 413:
        return problem
    return APIProblem(400, int(WalletCode.VALIDATION_ERROR), problem.message, problem.details)


def parse_wallet_body(model: type[M], raw: bytes, *, allow_empty: bool = False) -> M:
    """Parse and validate a wallet request body (see the module docstring for the errors)."""
    try:
        data = parse_json_object(raw, allow_empty=allow_empty)
    except APIProblem as problem:
        raise _as_wallet(problem) from None
    return validate_wallet(model, data)


def validate_wallet(model: type[M], data: Mapping[str, Any]) -> M:
    """Validate ``data`` with a contract model; field errors are ``400 / 7001`` (amounts ``7304``)."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        errors = list(exc.errors())
    amount_errors = [
        error
        for error in errors
        if error.get("loc") and str(error["loc"][0]) in AMOUNT_FIELDS and error.get("type") != "missing"
    ]
    if amount_errors:
        problem = problem_from_validation(amount_errors, status=400, own_code=int(WalletCode.INVALID_AMOUNT))
        raise APIProblem(
            400,
            int(WalletCode.INVALID_AMOUNT),
            "Invalid amount: a number greater than 0 with at most 4 decimal places is required.",
            problem.details,
        )
    raise problem_from_validation(errors, status=400, own_code=int(WalletCode.VALIDATION_ERROR))
