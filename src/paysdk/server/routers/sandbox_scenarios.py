"""The control plane's scenarios (D700-D706): list the built-ins, run one or a scenario document.

* ``GET /_sandbox/scenarios``: the built-in scenarios (name, title, description, parameters, promises);
* ``GET /_sandbox/scenarios/{name}``: one built-in's whole document (a starting point for your own);
* ``POST /_sandbox/scenarios/{name}/run``: run a built-in with ``{"parameters": {...}}``;
* ``POST /_sandbox/scenarios/run``: run ``{"scenario": {...}, "parameters": {...}}``;
* ``POST /_sandbox/scenarios/sink``: the built-in callback receiver (answers ``200``, keeps nothing): a
  run's ``callbackUrl`` when none is given (D702).

A run answers ``200`` with the :class:`~paysdk.contracts.scenarios.ScenarioReport` whether its steps
passed or not (``ok``, ``failedStep``); a document that is not a scenario is ``409 / 5000`` naming the
field (``scenario.steps.2.kind``), an unknown built-in ``404`` naming ``name``. The engine is
:mod:`paysdk.server.services.scenarios`. Not in ``/openapi.json``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from paysdk.contracts.scenarios import Scenario, ScenarioRunRequest
from paysdk.server.bodies import read_json_object, validate
from paysdk.server.context import get_context
from paysdk.server.control_token import CONTROL_TOKEN_HEADER
from paysdk.server.errors import APIProblem, JSONResponse
from paysdk.server.services import scenarios

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox", include_in_schema=False)


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="python", exclude_none=False)
    return dumped


@router.get("/scenarios")
async def list_scenarios() -> Response:
    """The built-in scenarios, in their documented order."""
    return JSONResponse([_dump(summary) for summary in scenarios.summaries()])


@router.post("/scenarios/sink")
async def sink(request: Request) -> Response:
    """The built-in callback receiver: reads the delivery, answers ``200``, keeps nothing."""
    await request.body()
    return JSONResponse({"received": True})


@router.post("/scenarios/run")
async def run_document(request: Request) -> Response:
    """Run the scenario document in the body's ``scenario``."""
    body = validate(ScenarioRunRequest, await read_json_object(request))
    if body.scenario is None:
        raise APIProblem.invalid_field("scenario", "is required: the scenario document to run")
    return await _run(request, body.scenario, body.parameters)


@router.get("/scenarios/{name}")
async def get_scenario(name: str) -> Response:
    """One built-in scenario's document."""
    return JSONResponse(_dump_scenario(_builtin(name)))


@router.post("/scenarios/{name}/run")
async def run_builtin(name: str, request: Request) -> Response:
    """Run the built-in scenario ``name``."""
    scenario = _builtin(name)
    body = validate(ScenarioRunRequest, await read_json_object(request, allow_empty=True))
    if body.scenario is not None:
        raise APIProblem.invalid_field(
            "scenario", "is for POST /_sandbox/scenarios/run, not a built-in's run"
        )
    return await _run(request, scenario, body.parameters)


def _builtin(name: str) -> Scenario:
    found = scenarios.builtins().get(name)
    if found is None:
        raise APIProblem.not_found("Scenario", "name")
    return found


def _dump_scenario(scenario: Scenario) -> dict[str, Any]:
    dumped: dict[str, Any] = scenario.model_dump(by_alias=True, mode="python", exclude_defaults=True)
    dumped["steps"] = [
        step.model_dump(by_alias=True, mode="python", exclude_defaults=True) | {"kind": step.kind}
        for step in scenario.steps
    ]
    return dumped


async def _run(request: Request, scenario: Scenario, parameters: dict[str, str]) -> Response:
    import httpx

    context = get_context(request)
    base = str(request.base_url).rstrip("/")
    parameters = dict(parameters)
    if any(p.name == "callbackUrl" for p in scenario.parameters) and "callbackUrl" not in parameters:
        default = next(p.default for p in scenario.parameters if p.name == "callbackUrl")
        if default is None:
            parameters["callbackUrl"] = base + scenarios.SINK_PATH
    control = {}
    token = request.headers.get(CONTROL_TOKEN_HEADER)
    if token is not None:
        control[CONTROL_TOKEN_HEADER] = token
    transport = httpx.ASGITransport(app=request.app)
    # No timeout of its own: a step's request runs in this process, bounded by the route it calls.
    async with httpx.AsyncClient(transport=transport, base_url=base, timeout=None) as client:  # noqa: S113
        try:
            report = await scenarios.run(context, client, control, scenario, parameters)
        except ValueError as exc:
            field, _, message = str(exc).partition(": ")
            raise APIProblem.invalid_field(field, message) from None
    return JSONResponse(_dump(report))
