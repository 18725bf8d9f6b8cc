"""The scenario engine (``paysdk trigger``; D700-D706): runs a :class:`~paysdk.contracts.scenarios.Scenario`
against this server and reports what it caused.

* **One engine, on the server**: the SDK (``client.sandbox.trigger``), the CLI (``paysdk trigger``) and
  the pytest fixture (``paysdk_trigger``) all call ``POST /_sandbox/scenarios/...``, so a user's own
  file runs exactly like a built-in.
* **Every step is an HTTP request through the server's whole ASGI stack** (host guard, control token,
  request log, faults, idempotency, the routes' own validation): the engine holds an
  ``httpx.ASGITransport`` over the app serving the run, with the run's own ``Host`` and control token.
  It never writes a row itself, so nothing a scenario does can differ from what a merchant's program or
  the control plane would do.
* **Callbacks are never faked**: they are queued by the payments, renewals and the rest as always and
  delivered by :mod:`paysdk.server.services.callbacks` (attempts, retries on the virtual clock, the same
  ``eventId`` on every attempt) to the merchant's callback URL. The engine only *reads* what happened:
  after each step, the callback attempts and emails recorded since the run began (ids above the ones the
  run started from) for the run's merchants (made during the run, or named by its variables: another
  merchant's traffic on a shared sandbox is not the run's), in order, become the report's events.
* **Built-ins are data**: ``paysdk/server/scenarios/*.json``, validated with the same model as a user's
  file (:func:`builtins`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from importlib import resources
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from sqlalchemy import Select, func, or_, select
from sqlalchemy.orm import Session

from paysdk import _json
from paysdk.contracts.scenarios import (
    AdvanceStep,
    CallStep,
    ExpectStep,
    FaultStep,
    LoginStep,
    PayStep,
    Scenario,
    ScenarioEvent,
    ScenarioReport,
    ScenarioStep,
    ScenarioSummary,
    StepOutcome,
)
from paysdk.server.context import ServerContext
from paysdk.server.core_tables import CallbackAttemptRow, CallbackEventRow, ClientRow
from paysdk.server.wallet_tables import WalletOutboxRow

if TYPE_CHECKING:
    import httpx

__all__ = ["SINK_PATH", "ScenarioRun", "builtins", "run", "summaries"]

#: The built-in callback receiver a run's merchant gets when no ``callbackUrl`` is given (D702).
SINK_PATH = "/_sandbox/scenarios/sink"

_VARIABLE = re.compile(r"\$\{([A-Za-z][A-Za-z0-9_]*)\}")
#: The longest error text of an answer a failed step quotes.
_QUOTE = 300


class StepFailed(Exception):
    """A step did not do what it says; the message is the reason (the step is named by the caller)."""


@functools.cache
def builtins() -> dict[str, Scenario]:
    """The built-in scenarios, by name, in file order (``paysdk/server/scenarios/NN-name.json``)."""
    folder = resources.files("paysdk.server").joinpath("scenarios")
    found: dict[str, Scenario] = {}
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if entry.name.endswith(".json"):
            scenario = Scenario.model_validate(_json.loads(entry.read_bytes()))
            found[scenario.name] = scenario
    return found


def summaries() -> list[ScenarioSummary]:
    """What ``GET /_sandbox/scenarios`` lists."""
    return [
        ScenarioSummary(
            name=s.name,
            title=s.title,
            description=s.description,
            parameters=s.parameters,
            promises=s.promises,
        )
        for s in builtins().values()
    ]


# ----------------------------------------------------------------------------------------- variables


def _substitute(value: Any, variables: Mapping[str, Any]) -> Any:
    """``value`` with every ``${name}`` replaced; a string that is one ``${name}`` takes its value as is."""
    if isinstance(value, str):
        whole = _VARIABLE.fullmatch(value)
        if whole is not None:
            return _lookup(whole.group(1), variables)
        return _VARIABLE.sub(lambda m: _text(_given(_lookup(m.group(1), variables))), value)
    if isinstance(value, list):
        return [_substitute(item, variables) for item in value]
    if isinstance(value, dict):
        replaced = {key: _substitute(item, variables) for key, item in value.items()}
        return {key: item for key, item in replaced.items() if item is not _LEFT_OUT}
    return value


#: The value of an optional parameter that was not given (its ``${name}`` leaves its key out).
_LEFT_OUT = object()


def _lookup(name: str, variables: Mapping[str, Any]) -> Any:
    if name not in variables:
        raise StepFailed(f"${{{name}}} is neither a parameter nor a variable saved by an earlier step")
    return variables[name]


def _given(value: Any) -> Any:
    return "" if value is _LEFT_OUT else value


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


_MISSING = object()


def _path(document: Any, dotted: str) -> Any:
    """The value at ``a.b.0.c`` in ``document`` (``_MISSING`` when there is none)."""
    current = document
    for part in dotted.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return _MISSING
    return current


def _same(found: Any, wanted: Any) -> bool:
    if isinstance(found, bool) or isinstance(wanted, bool):
        return found is wanted or (found == wanted and type(found) is type(wanted))
    if isinstance(found, (int, Decimal)) and isinstance(wanted, (int, Decimal)):
        return Decimal(found) == Decimal(wanted)
    if isinstance(found, (int, Decimal)) and isinstance(wanted, str):
        return str(found) == wanted
    return bool(found == wanted)


def _mismatches(document: Any, match: Mapping[str, Any]) -> list[str]:
    wrong: list[str] = []
    for dotted, wanted in match.items():
        found = _path(document, dotted)
        if found is _MISSING:
            wrong.append(f"{dotted} is absent (expected {_json_text(wanted)})")
        elif not _same(found, wanted):
            wrong.append(f"{dotted} is {_json_text(found)} (expected {_json_text(wanted)})")
    return wrong


def _json_text(value: Any) -> str:
    try:
        return _json.dumps(value).decode("utf-8")[:120]
    except (TypeError, ValueError):
        return str(value)[:120]


# ------------------------------------------------------------------------------------------ the run


@dataclass
class ScenarioRun:
    """One run's state: its variables, what it has seen, its report so far."""

    scenario: Scenario
    variables: dict[str, Any]
    client: httpx.AsyncClient
    #: Headers the control-plane requests carry (the run's control token).
    control_headers: dict[str, str]
    context: ServerContext
    last_attempt: int = 0
    last_email: int = 0
    #: The newest merchant before the run: the run's own events are those of merchants made after it
    #: and of merchants its variables name (a parameter holding an existing merchant's slug).
    client_mark: int = 0
    steps: list[StepOutcome] = field(default_factory=list)
    events: list[ScenarioEvent] = field(default_factory=list)


def _high_water(session: Session) -> tuple[int, int, int]:
    attempt = session.scalar(select(func.max(CallbackAttemptRow.id))) or 0
    email = session.scalar(select(func.max(WalletOutboxRow.id))) or 0
    client = session.scalar(select(func.max(ClientRow.id))) or 0
    return int(attempt), int(email), int(client)


def _own_clients(client_mark: int, named: list[str]) -> Select[Any]:
    """The merchants whose events a run reports: made during it, or named by its variables."""
    return select(ClientRow.id).where(or_(ClientRow.id > client_mark, ClientRow.slug.in_(named)))


def _new_events(
    session: Session, after_attempt: int, after_email: int, step: int, client_mark: int, named: list[str]
) -> list[ScenarioEvent]:
    """The callback attempts and emails of the run's merchants recorded since the marks, oldest first
    (another merchant's traffic on a shared sandbox is not the run's)."""
    found: list[tuple[Any, int, ScenarioEvent]] = []
    own = _own_clients(client_mark, named)
    attempts = list(
        session.execute(
            select(CallbackAttemptRow, CallbackEventRow.payload, CallbackEventRow.state)
            .join(CallbackEventRow, CallbackEventRow.event_id == CallbackAttemptRow.event_id)
            .where(CallbackAttemptRow.id > after_attempt, CallbackEventRow.client_id.in_(own))
            .order_by(CallbackAttemptRow.id)
        )
    )
    for row, payload, state in attempts:
        body = _json.loads(payload) if payload else {}
        what = _callback_what(body)
        outcome = str(row.status_code) if row.status_code is not None else (row.error or "no answer")
        outcome = outcome if len(outcome) <= 60 else outcome[:57] + "..."
        tail = f", {state}" if row.final else ""
        if row.next_attempt_at is not None:
            tail = f", next attempt {_moment(row.next_attempt_at)}"
        found.append(
            (
                row.at,
                row.id,
                ScenarioEvent(
                    step=step,
                    kind="callback",
                    summary=f"callback {what} attempt {row.attempt}: {outcome}{tail}",
                    data={
                        "id": row.id,
                        "eventId": row.event_id,
                        "uid": row.uid,
                        "attempt": row.attempt,
                        "statusCode": row.status_code,
                        "error": row.error,
                        "at": row.at,
                        "nextAttemptAt": row.next_attempt_at,
                        "final": row.final,
                        "state": state,
                        "payload": body,
                    },
                ),
            )
        )
    for email in session.scalars(
        select(WalletOutboxRow)
        .where(WalletOutboxRow.id > after_email, WalletOutboxRow.client_id.in_(own))
        .order_by(WalletOutboxRow.id)
    ):
        data: dict[str, Any] = dict(email.data or {})
        label = data.get("notifyEvent") or "email"
        found.append(
            (
                email.at,
                email.id,
                ScenarioEvent(
                    step=step,
                    kind="email",
                    summary=f"email {label} to {email.to}: {email.subject}",
                    data={"id": email.id, "to": email.to, "subject": email.subject, "at": email.at, **data},
                ),
            )
        )
    found.sort(key=lambda item: (_sortable(item[0]), item[2].kind != "email", item[1]))
    return [event for _, _, event in found]


def _moment(value: datetime) -> str:
    """A time as the report shows it: ``2026-11-30 00:00 UTC``."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _sortable(value: Any) -> str:
    return value.replace(tzinfo=None).isoformat() if value is not None else ""


def _callback_what(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    if "subUid" in body:
        return str(body.get("event", "subscription"))
    return str(body.get("status") or "")


async def _observe(run: ScenarioRun, step: int) -> None:
    named = [value for value in run.variables.values() if isinstance(value, str)]
    events = await run.context.run(
        _new_events, run.last_attempt, run.last_email, step, run.client_mark, named
    )
    for event in events:
        if event.kind == "callback":
            run.last_attempt = max(run.last_attempt, int(event.data["id"]))
        else:
            run.last_email = max(run.last_email, int(event.data["id"]))
    run.events.extend(events)


async def _request(
    run: ScenarioRun,
    method: str,
    path: str,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    query: Mapping[str, str] | None = None,
    files: Mapping[str, tuple[str, bytes, str]] | None = None,
) -> tuple[int, Any]:
    import httpx

    sent = dict(headers or {})
    if path.startswith("/_sandbox"):
        sent = {**run.control_headers, **sent}
    content = None
    if body is not None:
        content = _json.dumps(body)
        sent.setdefault("Content-Type", "application/json")
    try:
        response = await run.client.request(
            method, path, content=content, headers=sent, params=dict(query or {}), files=files or None
        )
    except httpx.HTTPError as exc:  # a drop fault, or the app failing
        raise StepFailed(f"{method} {path}: no answer ({type(exc).__name__})") from None
    try:
        answer = _json.loads(response.content) if response.content else None
    except ValueError:
        answer = response.text[:_QUOTE]
    return response.status_code, answer


def _problem_text(answer: Any) -> str:
    if isinstance(answer, dict):
        parts = [str(answer.get("message", ""))]
        errors = answer.get("errors")
        if errors:
            parts.append(_json_text(errors))
        return " ".join(part for part in parts if part)[:_QUOTE]
    return str(answer)[:_QUOTE]


def _save(run: ScenarioRun, answer: Any, save: Mapping[str, str]) -> None:
    for name, dotted in save.items():
        value = _path(answer, dotted)
        if value is _MISSING:
            raise StepFailed(f"the answer has no {dotted} to save as {name}")
        run.variables[name] = value


async def _call(run: ScenarioRun, step: CallStep) -> str:
    path = _text(_substitute(step.path, run.variables))
    status, answer = await _request(
        run,
        step.method,
        path,
        _substitute(step.json_body, run.variables),
        {k: _text(v) for k, v in _substitute(step.headers, run.variables).items()},
        {k: _text(v) for k, v in _substitute(step.query, run.variables).items()},
        {
            field_name: (
                _text(_substitute(upload.filename, run.variables)),
                _text(_substitute(upload.content, run.variables)).encode("utf-8"),
                upload.content_type,
            )
            for field_name, upload in step.files.items()
        },
    )
    wanted = (
        step.status if isinstance(step.status, list) else [step.status] if step.status is not None else None
    )
    if (wanted is None and not 200 <= status < 300) or (wanted is not None and status not in wanted):
        expected = "a 2xx" if wanted is None else " or ".join(str(code) for code in wanted)
        raise StepFailed(
            f"{step.method} {path} answered {status}, expected {expected}: {_problem_text(answer)}"
        )
    wrong = _mismatches(answer, _substitute(step.match, run.variables))
    if wrong:
        raise StepFailed(f"{step.method} {path} answered {status}, but " + "; ".join(wrong))
    _save(run, answer, step.save)
    checked = ", ".join(f"{k}={_json_text(v)}" for k, v in _substitute(step.match, run.variables).items())
    return f"{step.method} {path} -> {status}" + (f" ({checked})" if checked else "")


async def _pay(run: ScenarioRun, step: PayStep) -> str:
    uid = _text(_substitute(step.uid, run.variables))
    card = _text(_substitute(step.card, run.variables))
    body: dict[str, Any] = {"cardNumber": card}
    if step.three_ds is not None:
        body["threeDSResult"] = step.three_ds
    status, answer = await _request(run, "POST", f"/_sandbox/transactions/{uid}/pay", body)
    if status != 200:
        raise StepFailed(f"paying {uid} answered {status}: {_problem_text(answer)}")
    result = answer if isinstance(answer, dict) else {}
    if step.expect_status is not None and result.get("status") != step.expect_status:
        raise StepFailed(
            f"paying {uid} with a card ending {card[-4:]} left it {result.get('status')} "
            f"({result.get('outcome')}), expected {step.expect_status}"
        )
    _save(run, answer, step.save)
    return f"paid with the card ending {card[-4:]}: {result.get('status')} ({result.get('outcome')})"


async def _login(run: ScenarioRun, step: LoginStep) -> str:
    import base64
    import binascii

    import nacl.exceptions
    import nacl.signing

    from paysdk._environment import WALLET_PREFIX
    from paysdk._jwt import sign_merchant

    merchant = _text(_substitute(step.merchant, run.variables))
    try:
        key = nacl.signing.SigningKey(base64.b64decode(_text(_substitute(step.signing_key, run.variables))))
    except (binascii.Error, ValueError, TypeError, nacl.exceptions.CryptoError):
        raise StepFailed(
            "signingKey is not a base64 Ed25519 seed (the merchant's signingPrivateKey)"
        ) from None
    body = {"merchant": merchant, "signature": sign_merchant(key, merchant)}
    status, answer = await _request(run, "POST", f"{WALLET_PREFIX}/auth/login", body)
    if status != 200:
        raise StepFailed(f"the application login of {merchant} answered {status}: {_problem_text(answer)}")
    _save(run, answer, step.save)
    return f"wallet application login of {merchant} -> {status}"


def _duration(seconds: Decimal) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'' if count == 1 else 's'}"
    return str(timedelta(seconds=int(seconds)))


async def _advance(run: ScenarioRun, step: AdvanceStep) -> str:
    seconds = step.total_seconds
    if step.until is not None:
        target = _instant(_text(_substitute(step.until, run.variables)))
        status, answer = await _request(run, "GET", "/_sandbox/clock")
        if status != 200 or not isinstance(answer, dict):
            raise StepFailed(f"reading the clock answered {status}: {_problem_text(answer)}")
        now = datetime.fromisoformat(str(answer["now"]))
        gap = Decimal(str(max((target - now).total_seconds(), 0)))
        seconds += gap.quantize(Decimal("0.000001"))
        if seconds <= 0:
            return f"the clock is already past {target.isoformat()}"
    status, answer = await _request(run, "POST", "/_sandbox/clock/advance", {"seconds": seconds})
    if status != 200:
        raise StepFailed(f"advancing the clock answered {status}: {_problem_text(answer)}")
    ran = answer.get("jobsRun") if isinstance(answer, dict) else None
    now = datetime.fromisoformat(str(answer.get("now")))
    return f"clock +{_duration(seconds)}, now {_moment(now)} ({ran} jobs ran)"


def _instant(text: str) -> datetime:
    """``until``: an ISO date (its 00:00 UTC) or date-time (UTC when it names no offset)."""
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), time(0), tzinfo=UTC)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise StepFailed(f"until {text[:40]!r} is not an ISO date or date-time") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


async def _fault(run: ScenarioRun, step: FaultStep) -> str:
    if step.off:
        status, answer = await _request(run, "DELETE", "/_sandbox/faults")
        if status != 200:
            raise StepFailed(f"removing the faults answered {status}: {_problem_text(answer)}")
        return f"faults off ({answer.get('deleted') if isinstance(answer, dict) else '?'} removed)"
    body = _substitute(step.fault, run.variables)
    status, answer = await _request(run, "POST", "/_sandbox/faults", body)
    if status != 201:
        raise StepFailed(f"the fault was refused ({status}): {_problem_text(answer)}")
    return f"fault {answer.get('kind')} on ({answer.get('route')}, {answer.get('count')} uses)"


def _expect(run: ScenarioRun, step: ExpectStep) -> str:
    match = _substitute(step.match, run.variables)
    hits = [e for e in run.events if e.kind == step.event and not _mismatches(e.data, match)]
    enough = len(hits) == step.count if step.exactly else len(hits) >= step.count
    wanted = ", ".join(f"{k}={_json_text(v)}" for k, v in match.items()) or "any"
    if not enough:
        quantity = f"exactly {step.count}" if step.exactly else f"at least {step.count}"
        raise StepFailed(
            f"expected {quantity} {step.event} event(s) with {wanted}; the run caused {len(hits)} "
            f"(of {sum(e.kind == step.event for e in run.events)} {step.event} event(s))"
        )
    return f"{len(hits)} {step.event} event(s) with {wanted}"


async def _step(run: ScenarioRun, step: ScenarioStep) -> str:
    if isinstance(step, CallStep):
        return await _call(run, step)
    if isinstance(step, PayStep):
        return await _pay(run, step)
    if isinstance(step, LoginStep):
        return await _login(run, step)
    if isinstance(step, AdvanceStep):
        return await _advance(run, step)
    if isinstance(step, FaultStep):
        return await _fault(run, step)
    return _expect(run, step)


def _label(index: int, step: ScenarioStep) -> str:
    return f"step {index} '{step.name}'" if step.name else f"step {index} ({step.kind})"


async def run(
    context: ServerContext,
    client: httpx.AsyncClient,
    control_headers: dict[str, str],
    scenario: Scenario,
    parameters: Mapping[str, str],
) -> ScenarioReport:
    """Run ``scenario`` with ``parameters`` (unknown ones and missing required ones are a
    :class:`ValueError` naming them) through ``client`` (over this app), step after step, stopping at the
    first step that fails; the report of what happened."""
    declared = {p.name: p for p in scenario.parameters}
    unknown = sorted(set(parameters) - set(declared))
    if unknown:
        raise ValueError(f"parameters.{unknown[0]}: the scenario has no such parameter")
    variables: dict[str, Any] = {}
    for name, parameter in declared.items():
        value = parameters.get(name, parameter.default)
        if value is None and parameter.required:
            raise ValueError(f"parameters.{name}: required by the scenario ({parameter.description})")
        variables[name] = _LEFT_OUT if value is None else value
    attempt_mark, email_mark, client_mark = await context.run(_high_water)
    state = ScenarioRun(
        scenario, variables, client, control_headers, context, attempt_mark, email_mark, client_mark
    )
    failed: str | None = None
    error: str | None = None
    for index, step in enumerate(scenario.steps, start=1):
        name = step.name or step.kind
        try:
            summary = await _step(state, step)
        except (StepFailed, ValidationError) as exc:
            await _observe(state, index)
            failed, error = _label(index, step), f"{_label(index, step)} failed: {exc}"
            state.steps.append(
                StepOutcome(index=index, name=name, kind=step.kind, ok=False, summary="", error=str(exc))
            )
            break
        state.steps.append(StepOutcome(index=index, name=name, kind=step.kind, ok=True, summary=summary))
        if not isinstance(step, ExpectStep):
            await _observe(state, index)
    ids = {
        name: _text(state.variables[name])
        for name in scenario.ids
        if name in state.variables and state.variables[name] is not _LEFT_OUT
    }
    return ScenarioReport(
        scenario=scenario.name,
        title=scenario.title,
        ok=failed is None,
        steps=state.steps,
        events=state.events,
        ids=ids,
        failed_step=failed,
        error=error,
    )
