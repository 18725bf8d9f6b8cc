"""Scenarios: named flows the reference server runs against itself (``paysdk trigger``, D700-D706).

A scenario is data: a JSON (or YAML) document of ordered steps, validated by :class:`Scenario`. The
server runs it (``POST /_sandbox/scenarios/{name}/run`` for a built-in, ``POST /_sandbox/scenarios/run``
with the document), each step through the server's own HTTP stack, and answers a
:class:`ScenarioReport`: every step's outcome in order, every event the run caused (callback delivery
attempts, emails, jobs), the ids it made, and the step that failed, if one did. ``docs/scenarios.md``
is the format's reference.

Step kinds (the ``kind`` field):

* ``call``: one HTTP request (``method``, ``path``, ``json`` body, ``headers``, ``query``), answered
  with a status in ``status`` (default any 2xx); ``match`` checks fields of the answer, ``save`` keeps
  fields of it as variables;
  (``files`` instead of ``json``: a multipart upload);
* ``pay``: pay a payment link with a test card (``POST /_sandbox/transactions/{uid}/pay``);
* ``login``: a merchant's wallet application login, signed with its signing key (the bearer of the
  subscriptions' batch charges);
* ``advance``: move the virtual clock (every job due on the way runs: callback retries, renewals,
  settlements);
* ``fault``: inject a fault (the ``POST /_sandbox/faults`` body) or, with ``off: true``, remove every
  fault;
* ``expect``: an event the run caused so far (``event``: ``callback`` or ``email``) whose
  fields ``match``; at least ``count`` of them, else the run fails naming the step.

Strings anywhere in a step may hold ``${name}``: a parameter or a saved variable.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from paysdk.contracts.common import WireModel

__all__ = [
    "NAME_PATTERN",
    "AdvanceStep",
    "CallStep",
    "ExpectStep",
    "FaultStep",
    "LoginStep",
    "PayStep",
    "Scenario",
    "ScenarioEvent",
    "ScenarioParameter",
    "ScenarioReport",
    "ScenarioRunRequest",
    "ScenarioStep",
    "ScenarioSummary",
    "StepOutcome",
    "UploadFile",
]

#: A scenario's, a parameter's or a variable's name.
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
_VARIABLE = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"
#: Words a reported variable's name may not hold: a scenario's report never shows a secret.
_SECRET_WORDS = ("token", "secret", "key", "password", "pin", "cvv", "otp", "signature")


class _Strict(WireModel):
    """A scenario file's models refuse unknown fields, so a misspelt one is named in the error."""

    model_config = ConfigDict(extra="forbid")


class _Step(_Strict):
    #: Shown in the report and in a failure ("step 3 'pay the link'"); default: the kind.
    name: str | None = Field(default=None, min_length=1, max_length=120)


class UploadFile(_Strict):
    """One file of a ``call`` step's multipart body."""

    filename: str = Field(min_length=1, max_length=255)
    content: str = Field(max_length=1_000_000)
    content_type: str = Field(default="text/csv", min_length=1, max_length=200)


class LoginStep(_Step):
    """The wallet application login of a merchant (``POST /rest/auth/login``), signed with its Ed25519
    signing key as the SDK signs it (D36); ``save`` keeps fields of the answer (``data.accessToken``)."""

    kind: Literal["login"]
    merchant: str = Field(min_length=1, max_length=200)
    signing_key: str = Field(min_length=1, max_length=200)
    save: dict[str, str] = Field(default_factory=dict)


class CallStep(_Step):
    """One request through the server's whole HTTP stack (auth, idempotency, faults, request log)."""

    kind: Literal["call"]
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    path: str = Field(min_length=1, max_length=2000, pattern=r"^/")
    json_body: Any = Field(default=None, alias="json")
    headers: dict[str, str] = Field(default_factory=dict)
    query: dict[str, str] = Field(default_factory=dict)
    #: The statuses that pass: one, a list, or ``None`` (any 2xx).
    status: int | list[int] | None = None
    #: Dotted paths into the answer (``data.uid``) -> the value each must equal.
    match: dict[str, Any] = Field(default_factory=dict)
    #: A ``multipart/form-data`` body instead of ``json``: form field -> the file (``filename``,
    #: ``content`` as text, ``contentType``).
    files: dict[str, UploadFile] = Field(default_factory=dict)
    #: Variable name -> dotted path into the answer.
    save: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_body(self) -> CallStep:
        if self.files and self.json_body is not None:
            raise ValueError("give json or files, not both")
        return self

    @field_validator("save")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not re.match(_VARIABLE, name):
                raise ValueError(
                    f"variable name {name[:64]!r} must be letters, digits and _ (a letter first)"
                )
        return value


class PayStep(_Step):
    """Pay a payment link headlessly with a test card (``GET /_sandbox/test-cards`` lists them)."""

    kind: Literal["pay"]
    uid: str = Field(min_length=1, max_length=200)
    card: str = Field(min_length=1, max_length=200)
    #: The 3-D Secure challenge's answer, when the card asks for one.
    three_ds: Literal["approve", "fail"] | None = Field(default=None, alias="threeDS")
    #: The transaction status the payment must end in (``approved``, ``declined``, ``pending``).
    expect_status: str | None = None
    save: dict[str, str] = Field(default_factory=dict)


class AdvanceStep(_Step):
    """Move the virtual clock forward by the sum of the given units, or to ``until`` (an ISO date, its
    00:00 UTC, or an ISO date-time; ``${var}`` allowed) plus those units; every job due on the way runs.
    A clock already past ``until`` does not move."""

    kind: Literal["advance"]
    until: str | None = Field(default=None, min_length=1, max_length=100)
    seconds: Decimal = Decimal(0)
    minutes: Decimal = Decimal(0)
    hours: Decimal = Decimal(0)
    days: Decimal = Decimal(0)

    @model_validator(mode="after")
    def _positive(self) -> AdvanceStep:
        total = self.total_seconds
        if total < 0 or total > 400 * 86400 or (total == 0 and self.until is None):
            raise ValueError(
                "the advance (seconds + minutes + hours + days) must be above 0 and at most 400 days, "
                "or give until"
            )
        return self

    @property
    def total_seconds(self) -> Decimal:
        """The whole advance in seconds."""
        return self.seconds + self.minutes * 60 + self.hours * 3600 + self.days * 86400


class FaultStep(_Step):
    """Inject a fault (``fault``: the ``POST /_sandbox/faults`` body) or remove every fault (``off``)."""

    kind: Literal["fault"]
    fault: dict[str, Any] | None = None
    off: bool = False

    @model_validator(mode="after")
    def _one(self) -> FaultStep:
        if (self.fault is None) == (not self.off):
            raise ValueError("give either fault (the fault to inject) or off: true")
        return self


class ExpectStep(_Step):
    """At least ``count`` events of kind ``event`` caused by the run so far whose fields ``match``."""

    kind: Literal["expect"]
    event: Literal["callback", "email"]
    #: Dotted paths into the event's ``data`` (``payload.status``, ``statusCode``) -> the value expected.
    match: dict[str, Any] = Field(default_factory=dict)
    count: int = Field(default=1, ge=0, le=10000)
    #: ``exactly``: the number of matching events must be ``count``, not at least ``count``.
    exactly: bool = False


ScenarioStep = Annotated[
    CallStep | PayStep | LoginStep | AdvanceStep | FaultStep | ExpectStep, Field(discriminator="kind")
]


class ScenarioParameter(_Strict):
    """A value the run is given (``${name}`` in the steps); ``default`` when it is not. A parameter with
    ``required: false`` and no default may be left out: a JSON value that is exactly ``${name}`` is then
    left out of its object (the server's own default applies)."""

    name: str = Field(pattern=_VARIABLE)
    description: str = Field(default="", max_length=500)
    default: str | None = Field(default=None, max_length=2000)
    required: bool = True


class Scenario(_Strict):
    """A scenario file: its name, what it shows, its parameters, its ordered steps and which variables
    the report shows as the ids it made (``ids``: never a secret's name)."""

    name: str = Field(pattern=NAME_PATTERN)
    title: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=4000)
    parameters: list[ScenarioParameter] = Field(default_factory=list, max_length=50)
    steps: list[ScenarioStep] = Field(min_length=1, max_length=500)
    ids: list[str] = Field(default_factory=list, max_length=50)
    #: What the scenario promises, in plain words (the ``--list`` and the docs show it).
    promises: list[str] = Field(default_factory=list, max_length=50)

    @field_validator("ids")
    @classmethod
    def _no_secret(cls, value: list[str]) -> list[str]:
        for name in value:
            if any(word in name.lower() for word in _SECRET_WORDS):
                raise ValueError(f"{name[:64]!r} looks like a secret: a report shows ids, never secrets")
        return value


class ScenarioSummary(WireModel):
    """One scenario of ``GET /_sandbox/scenarios``."""

    name: str
    title: str
    description: str = ""
    parameters: list[ScenarioParameter] = Field(default_factory=list)
    promises: list[str] = Field(default_factory=list)


class ScenarioRunRequest(_Strict):
    """Body of ``POST /_sandbox/scenarios/{name}/run`` (``scenario`` absent) and of
    ``POST /_sandbox/scenarios/run`` (``scenario``: the document to run). ``parameters``: values of the
    scenario's parameters (``callbackUrl``: where the merchant's callbacks go)."""

    parameters: dict[str, str] = Field(default_factory=dict)
    scenario: Scenario | None = None


class ScenarioEvent(WireModel):
    """Something the run caused, in order: a callback delivery attempt (``callback``) or an email
    (``email``). ``step``: the step during which it happened."""

    step: int
    kind: str
    summary: str
    data: dict[str, Any] = Field(default_factory=dict)


class StepOutcome(WireModel):
    """One step's outcome: ``ok``, what it did in a line, and the failure's reason."""

    index: int
    name: str
    kind: str
    ok: bool
    summary: str
    error: str | None = None


class ScenarioReport(WireModel):
    """What a run did: the steps in order (up to the failing one), the events caused, the ids made.

    ``ok`` false: ``failed_step`` names the step that failed and ``error`` says why."""

    scenario: str
    title: str
    ok: bool
    steps: list[StepOutcome]
    events: list[ScenarioEvent]
    ids: dict[str, str] = Field(default_factory=dict)
    failed_step: str | None = None
    error: str | None = None
