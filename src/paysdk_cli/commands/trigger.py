"""``paysdk trigger``: run a named scenario against the reference server and print what it caused.

The server runs the scenario (``client.sandbox.trigger``, :mod:`paysdk.server.services.scenarios`), so a
built-in and a user's own file (``--file``, JSON, or YAML when PyYAML is installed) run the same way.
The table lists, in order, each step and the events it caused (callback attempts with their status,
emails), then the ids the run made; ``-o json`` prints the whole report. A step that failed exits 1
naming it (D704).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import OutputFormat, emit, error, info
from paysdk_cli.commands.sandbox._common import wire, wire_list

__all__ = ["REPORT_COLUMNS", "app", "read_scenario_file", "trigger"]

#: The table of a run: the step, what happened (a step or an event it caused), and its result.
REPORT_COLUMNS = ["step", "what", "result"]
#: The largest scenario file read.
_MAX_FILE = 1_000_000


def read_scenario_file(path: Path) -> dict[str, Any]:
    """The scenario document in ``path``: JSON, or YAML (``.yaml``/``.yml``, needs PyYAML). A file that
    cannot be read or parsed is a :class:`CLIError` naming it (exit 2), never a traceback."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(_MAX_FILE + 1)
    except OSError as exc:
        raise CLIError(
            f"--file {path}: cannot be read ({exc.strerror or type(exc).__name__})", ExitCode.USAGE
        ) from None
    if len(raw) > _MAX_FILE:
        raise CLIError(f"--file {path}: larger than 1 MB", ExitCode.USAGE)
    if path.suffix.lower() in (".yaml", ".yml"):
        document = _yaml(path, raw)
    else:
        from paysdk import _json

        try:
            document = _json.loads(raw)
        except ValueError as exc:
            raise CLIError(f"--file {path}: not valid JSON ({_first_line(exc)})", ExitCode.USAGE) from None
    if not isinstance(document, dict):
        raise CLIError(f"--file {path}: a scenario is an object (name, title, steps ...)", ExitCode.USAGE)
    return document


def _yaml(path: Path, raw: bytes) -> Any:
    try:
        import yaml
    except ImportError:
        raise CLIError(
            f"--file {path}: reading YAML needs PyYAML (pip install pyyaml), or write the scenario as JSON",
            ExitCode.USAGE,
        ) from None
    try:
        return yaml.safe_load(raw.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise CLIError(f"--file {path}: not valid YAML ({_first_line(exc)})", ExitCode.USAGE) from None


def _first_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def _rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    events = report.get("events", [])
    for step in report.get("steps", []):
        result = step["summary"] if step["ok"] else f"FAILED: {step.get('error')}"
        rows.append({"step": step["index"], "what": step["name"], "result": result})
        for event in events:
            if event["step"] == step["index"]:
                rows.append({"step": "", "what": f"  {event['kind']}", "result": event["summary"]})
    for name, value in report.get("ids", {}).items():
        rows.append({"step": "id", "what": name, "result": value})
    return rows


def trigger(
    ctx: typer.Context,
    scenario: Annotated[
        str | None, typer.Argument(help="A built-in scenario's name (see --list).", show_default=False)
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the built-in scenarios and exit.")] = False,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file", help="Run your own scenario file (JSON, or YAML with PyYAML).", dir_okay=False
        ),
    ] = None,
    callback_url: Annotated[
        str | None,
        typer.Option("--callback-url", help="Your callback receiver (default: the server's built-in one)."),
    ] = None,
    sandbox_client: Annotated[
        str | None,
        typer.Option(
            "--sandbox-client",
            help="Send the run's callbacks where this sandbox client's go, with its header (what "
            "`paysdk callbacks listen --sandbox-client SLUG` checks).",
        ),
    ] = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", help="A scenario parameter, NAME=VALUE (repeatable).")
    ] = None,
) -> None:
    """Run a named scenario and print, in order, what it caused.

    The reference server runs it: each step, every callback attempt and email it caused, then the ids
    it made. Exit 1 names the step whose expectation failed; -o json prints the whole report."""
    st = state(ctx)
    chosen = sum(bool(x) for x in (list_, scenario, file))
    if chosen != 1:
        raise CLIError("give one of: a SCENARIO name, --file PATH, or --list", ExitCode.USAGE)
    parameters: dict[str, str] = {}
    for item in param or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CLIError(f"--param {item!r}: write NAME=VALUE", ExitCode.USAGE)
        parameters[name] = value
    document = read_scenario_file(file) if file is not None else None
    with open_client(st, token_required=False) as sdk:
        if list_:
            listed = wire_list(sdk.sandbox.scenarios())
            if st.output is OutputFormat.json:
                emit(st.output, listed)
            else:
                emit(st.output, listed, columns=["name", "title"], keep=["name", "title"], title="Scenarios")
            return
        if sandbox_client is not None:
            like = sdk.sandbox.reveal_client(sandbox_client)
            if like.callback_url is None and callback_url is None:
                raise CLIError(f"--sandbox-client {sandbox_client}: it has no callback URL", ExitCode.USAGE)
            callback_url = callback_url or like.callback_url
            parameters.setdefault("callbackHeaderName", like.callback_header_name)
            parameters.setdefault("callbackHeaderValue", like.callback_header_value)
        target: Any = document if document is not None else scenario
        report = wire(sdk.sandbox.trigger(target, callback_url=callback_url, parameters=parameters))
    if st.output is OutputFormat.json:
        emit(st.output, report)
    else:
        title = f"{report['title']} ({report['scenario']})"
        emit(st.output, _rows(report), columns=REPORT_COLUMNS, keep=REPORT_COLUMNS, title=title)
    if not report["ok"]:
        error(str(report["error"]))
        raise typer.Exit(ExitCode.ERROR)
    if st.output is not OutputFormat.json:
        info(f"{report['scenario']}: every step passed")


app = new_app(group=False)
app.command("trigger")(trigger)
