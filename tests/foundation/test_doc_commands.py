"""Every ``paysdk`` command in the code blocks of README.md and docs/*.md works (issue 7.11).

The rules, so that a new doc line is picked up without touching this file:

* **Which lines.** Code blocks tagged ``console``, ``sh``, ``bash``, ``shell`` or untagged. In a
  ``console`` block a command starts with ``$ `` (other lines are sample output); elsewhere a line
  starting with ``paysdk`` (with or without ``$ ``) is one. A trailing ``\\`` continues a line; ``#``
  starts a comment; a comment saying ``exit N`` (or ``exits N``) is the exit code the line must end with
  (default 0).
* **Synopsis or example.** A line with ``[...]``, ``...``, ``A|B`` or ``COMMAND`` is a synopsis. A block
  holding one is a reference block: each of its lines is *parsed* against the real command (typer/click
  introspection: the command path exists, every option named exists on that command, ``A|B`` values
  of a choice option are valid choices, no more arguments than the command takes). Every other block
  is an example, and its lines are *run*.
* **Sessions.** The examples of one file run in order in one session, as a reader following the page
  would: a fresh temporary ``HOME`` (so a fresh config dir, no keyring, the server's default SQLite
  file), and a live reference server on a real socket. ``paysdk serve`` lines start it (in the
  background, whether or not the line ends with ``&``); a file that shows none gets one started for it.
  ``paysdk callbacks listen`` and ``paysdk sandbox tail`` also run in the background; other lines ending
  with ``&`` too. At the end
  the background commands get Ctrl-C (SIGINT) and must exit 0, as the docs promise. A block preceded by the
  HTML comment ``<!-- doc-test: new session -->`` starts a new session (for independent sections).
* **Ports.** The doc's ports (``--port 8000``, ``http://127.0.0.1:9000/...``) are mapped to free ports,
  one per doc port and session, and ``PAYSDK_BASE_URL`` points at the doc's default address so mapped.
* **Placeholders** (``<uid>``, ``UID``, ``CARD_ID``, ``CHARGE_ID``, ...: :data:`PLACEHOLDERS`,
  :data:`PLACEHOLDER_WORD`) are filled from the JSON printed by earlier lines of the session; one with no
  earlier value fails the test.
* **Other commands** run in process (``CliRunner``) against the live server. Their stdin is a terminal,
  as the reader's is, and a hidden prompt gets :data:`DOC_PASSWORD`; stdout is a pipe, so they print
  JSON. ``--open`` records the URL instead of opening a browser.
* **Callbacks.** When a session ran ``callbacks listen``, every callback the server queued for it must
  be delivered (2xx) and printed by the listener before the session ends.

:data:`PARSE_ONLY` is the explicit list of example lines that are parsed but not run (each with why).
"""

from __future__ import annotations

import contextlib
import enum
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import typing
import webbrowser
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import keyring
import pytest
import typer
from keyring.backends import fail
from typer.testing import CliRunner

from paysdk.testing._ready import NotReady, free_port, http_ok, wait_ready
from paysdk_cli._context import CLIENT_OPTIONS
from paysdk_cli._state import DEFAULT_BASE_URL
from paysdk_cli.main import app

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_LANGUAGES = {"", "console", "sh", "bash", "shell"}
NEW_SESSION = "<!-- doc-test: new session -->"
#: Commands that never end by themselves: always started in the background.
LONG_RUNNING = (("serve",), ("callbacks", "listen"), ("sandbox", "tail"))
#: What a hidden password prompt is answered with (long enough for the wallet's password rules).
DOC_PASSWORD = "doc-test-password-42"

#: Placeholder -> (JSON keys of earlier output it is taken from, which distinct value: 0 first, -1 last).
PLACEHOLDERS: dict[str, tuple[tuple[str, ...], int]] = {
    "UID": (("uid",), -1),
    "CARD_ID": (("cardId",), -1),
    "CARD_A": (("cardId",), 0),
    "CARD_B": (("cardId",), 1),
    "USER_ID": (("userId", "authUserId"), -1),
    "OTHER_USER": (("userId", "authUserId"), 1),
}

#: Any other upper-case word with an underscore (``CHARGE_ID``) or ending in ``ID`` is a placeholder too,
#: taken from the last value printed under its camelCase JSON key (``chargeId``).
PLACEHOLDER_WORD = r"[A-Z]+(_[A-Z0-9]+)+|[A-Z]*ID"


def _json_key(placeholder: str) -> str:
    """``CHARGE_ID`` -> ``chargeId``; ``UID`` -> ``uid``."""
    first, *rest = placeholder.lower().split("_")
    return first + "".join(word.capitalize() for word in rest)


#: Example lines that are parsed (as synopses are) but never run: (file, command as written) -> why.
#: Only for lines that need something outside this test (a real deployment, a secret manager, a
#: browser session). Empty today: every example runs.
PARSE_ONLY: dict[tuple[str, str], str] = {}

#: The reference server the suite starts (``live_server``) runs on SQLite here: the docs are not about
#: the database (the server tests cover PostgreSQL).
db_sqlite = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


# ------------------------------------------------------------------------------------- extraction


@dataclass(frozen=True)
class DocLine:
    """One ``paysdk`` command line of a doc (continuations joined)."""

    path: str
    line: int
    text: str
    tokens: tuple[str, ...]
    background: bool
    exit_code: int

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"

    @property
    def synopsis(self) -> bool:
        return any(
            "[" in token or "]" in token or "|" in token or token.endswith("...") or token == "COMMAND"
            for token in self.tokens
        )


@dataclass(frozen=True)
class DocBlock:
    """A shell code block with at least one ``paysdk`` line."""

    path: str
    line: int
    lines: tuple[DocLine, ...]
    new_session: bool

    @property
    def synopsis(self) -> bool:
        return any(line.synopsis for line in self.lines)


def _split_comment(text: str) -> tuple[str, str]:
    """``(code, comment)``: the first ``#`` outside quotes that starts a word begins the comment."""
    quote: str | None = None
    for index, char in enumerate(text):
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or text[index - 1].isspace()):
            return text[:index], text[index + 1 :]
    return text, ""


def _logical_lines(body: list[tuple[int, str]], console: bool) -> Iterator[tuple[int, str]]:
    pending: tuple[int, str] | None = None
    for number, raw in body:
        text = raw.strip()
        if pending is not None:
            pending = (pending[0], f"{pending[1]} {text}")
        elif console:
            if not text.startswith("$ "):
                continue  # sample output
            pending = (number, text[2:].strip())
        else:
            pending = (number, text.removeprefix("$ ").strip())
        if pending[1].endswith("\\"):
            pending = (pending[0], pending[1][:-1].rstrip())
            continue
        yield pending
        pending = None


def _doc_line(path: str, number: int, text: str) -> DocLine | None:
    code, comment = _split_comment(text)
    if not re.match(r"paysdk(\s|$)", code):
        return None
    tokens = shlex.split(code)
    background = tokens[-1] == "&"
    if background:
        tokens = tokens[:-1]
    expected = re.search(r"\bexits?\s+(\d+)\b", comment)
    return DocLine(path, number, text, tuple(tokens), background, int(expected.group(1)) if expected else 0)


def doc_blocks(path: Path) -> list[DocBlock]:
    """The shell code blocks of ``path`` that hold ``paysdk`` lines."""
    relative = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[DocBlock] = []
    marker = False
    index = 0
    while index < len(lines):
        if lines[index].strip() == NEW_SESSION:
            marker = True
        fence = re.match(r"\s*(`{3,})\s*([\w-]*)", lines[index])
        if fence is None:
            index += 1
            continue
        start, body = index, []
        index += 1
        while index < len(lines) and not lines[index].strip().startswith(fence.group(1)):
            body.append((index + 1, lines[index]))
            index += 1
        index += 1
        language = fence.group(2).lower()
        if language in SHELL_LANGUAGES:
            found = [
                doc_line
                for number, text in _logical_lines(body, console=language == "console")
                if (doc_line := _doc_line(relative, number, text)) is not None
            ]
            if found:
                blocks.append(DocBlock(relative, start + 1, tuple(found), marker))
        marker = False
    return blocks


# ------------------------------------------------------------------------------ synopsis checking


# Typer 0.29 vendors click (``typer._click``): its classes are recognised by their click attributes.


def _is_group(command: Any) -> bool:
    return hasattr(command, "list_commands")


def _option(command: Any, name: str, ctx: Any) -> Any:
    for param in command.get_params(ctx):
        if param.param_type_name == "option" and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _placeholder(word: str) -> bool:
    """An upper-case word (``NAME``, ``CARD_ID``) or ``<name>``: stands for a value."""
    return bool(re.fullmatch(r"[A-Z][A-Z0-9_]*|<[\w-]+>", word))


def check_synopsis(tokens: tuple[str, ...]) -> list[str]:
    """What in ``tokens`` (a ``paysdk`` line) does not match the real commands; empty when all do."""
    root = typer.main.get_command(app)
    ctx = root.context_class(root)
    commands: list[tuple[str, Any]] = [("paysdk", root)]
    words = [token.strip("[]") for token in tokens[1:]]
    problems: list[str] = []
    positional: dict[str, int] = {}
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word in ("", "...", "|"):
            if word == "|" and index < len(words) and not words[index].startswith("-"):
                index += 1  # an alternative value: [--db sqlite:///x | postgresql://...]
            continue
        if word.startswith("-") and word != "-":
            name, has_value, _ = word.partition("=")
            # An unknown option is reported once; the word after it, unless an option, is its value.
            takes_value = index < len(words) and not words[index].startswith("-")
            for alternative in name.split("/"):  # --three-ds/--no-three-ds
                for path, command in commands:
                    param = _option(command, alternative, ctx)
                    if param is None:
                        problems.append(f"`{path}` has no option {alternative}")
                        continue
                    takes_value = not (param.is_flag or param.count)
                    if takes_value and not has_value and index < len(words):
                        problems += _check_choice(path, alternative, param, words[index])
            if takes_value and not has_value:
                index += 1
            continue
        if all(_is_group(command) for _, command in commands):
            if _placeholder(word):
                return problems  # `paysdk ... COMMAND ...`: any command
            chosen: list[tuple[str, Any]] = []
            for path, group in commands:
                for name in word.split("|"):
                    sub = group.get_command(ctx, name)
                    if sub is None:
                        problems.append(f"`{path}` has no command {name!r}")
                    else:
                        chosen.append((f"{path} {name}", sub))
            if not chosen:
                return problems
            commands = chosen
            continue
        for path, _ in commands:
            positional[path] = positional.get(path, 0) + 1
    for path, command in commands:
        if _is_group(command):
            problems.append(f"`{path}` is a group: name one of its commands")
            continue
        arguments = [param for param in command.params if param.param_type_name == "argument"]
        allowed = float("inf") if any(arg.nargs < 0 for arg in arguments) else sum(a.nargs for a in arguments)
        if positional.get(path, 0) > allowed:
            problems.append(f"`{path}` takes {allowed} argument(s), the line gives {positional[path]}")
    return problems


def _choices(param: Any) -> list[str] | None:
    """The values an option accepts when it is a choice (an Enum or a Literal), else ``None``."""
    descriptor = getattr(param, "type_descriptor", None)
    pending = [getattr(descriptor, "annotation", None)]
    while pending:
        annotation = pending.pop()
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            return [str(member.value) for member in annotation]
        if typing.get_origin(annotation) is typing.Literal:
            return [str(value) for value in typing.get_args(annotation)]
        pending += [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    return None


def _check_choice(path: str, option: str, param: Any, value: str) -> list[str]:
    choices = _choices(param)
    if choices is None or _placeholder(value) or value == "...":
        return []
    return [
        f"`{path} {option}` has no choice {choice!r} (choices: {', '.join(choices)})"
        for choice in value.split("|")
        if choice not in choices
    ]


# ---------------------------------------------------------------------------------------- running


@dataclass
class Background:
    """A command running in the background, its output in files."""

    line: DocLine
    argv: list[str]
    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path
    port: int | None

    def output(self) -> tuple[str, str]:
        return self.stdout.read_text(errors="replace"), self.stderr.read_text(errors="replace")

    def describe(self) -> str:
        out, err = self.output()
        return f"{self.line.where}\n(run as: {shlex.join(self.argv)})\nstdout:\n{out}\nstderr:\n{err}"


@dataclass
class Ran:
    """One line that ran in process, and what it printed."""

    line: DocLine
    argv: list[str]
    exit_code: int
    stdout: str
    stderr: str


@dataclass
class SessionRecord:
    """What one session ran, for the tests that look closer."""

    ran: list[Ran] = field(default_factory=list)
    listener_events: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, list[str]] = field(default_factory=dict)


class _TerminalRunner(CliRunner):
    """A ``CliRunner`` whose stdin is a terminal, as the doc's reader's is: a hidden prompt is answered
    (with :data:`DOC_PASSWORD`) as typed there. Stdout stays a pipe, so commands print JSON."""

    @contextlib.contextmanager
    def isolation(self, *args: Any, **kwargs: Any) -> Iterator[tuple[io.BytesIO, io.BytesIO, io.BytesIO]]:
        with super().isolation(*args, **kwargs) as streams:
            sys.stdin.isatty = lambda: True  # type: ignore[method-assign]
            yield streams


class Session:
    """One reader's session (see the module docstring)."""

    def __init__(self, directory: Path, shared_server: str | None = None) -> None:
        """``shared_server``: the address of a running reference server this session uses (after a
        reset) instead of starting ``paysdk serve``, for sessions that show no ``paysdk serve`` line."""
        self.directory = directory
        self.shared_server = shared_server
        self.home = directory / "home"
        self.home.mkdir(parents=True)
        self.ports: dict[int, int] = {}
        self.values: dict[str, list[str]] = {}
        self.background: list[Background] = []
        self.server: Background | None = None
        self.record = SessionRecord(values=self.values)
        default_port = int(DEFAULT_BASE_URL.rsplit(":", 1)[1])
        if shared_server is not None:
            self.ports[default_port] = int(shared_server.rsplit(":", 1)[1])
            httpx.post(f"{shared_server}/_sandbox/reset", timeout=30).raise_for_status()
        self.base_url = f"http://127.0.0.1:{self.port(default_port)}"
        self.env = {
            key: value for key, value in os.environ.items() if not key.startswith(("PAYSDK_", "XDG_"))
        }
        self.env.update(
            HOME=str(self.home),
            PAYSDK_BASE_URL=self.base_url,
            PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        )

    def port(self, doc_port: int) -> int:
        if doc_port not in self.ports:
            self.ports[doc_port] = free_port()
        return self.ports[doc_port]

    # -- rewriting

    def _value(self, name: str, line: DocLine) -> str:
        keys, which = PLACEHOLDERS.get(name) or ((_json_key(name),), -1)
        for key in keys:
            found = self.values.get(key, [])
            if len(found) > which if which >= 0 else found:
                return found[which]
        pytest.fail(
            f"{line.where}\nno earlier line printed a value for {name} (JSON key {' or '.join(keys)}); "
            "if it is taken from another key, add it to PLACEHOLDERS",
            pytrace=False,
        )

    def rewrite(self, line: DocLine) -> list[str]:
        """The line's argv with the session's ports and the placeholders' values."""
        argv: list[str] = []
        for index, token in enumerate(line.tokens):
            if index and line.tokens[index - 1] == "--port" and token.isdigit() and token != "0":
                token = str(self.port(int(token)))
            token = re.sub(
                r"(?<=127\.0\.0\.1:|localhost:)(\d+)\b", lambda m: str(self.port(int(m.group(1)))), token
            )
            token = re.sub(
                r"<([\w-]+)>", lambda m: self._value(m.group(1).upper().replace("-", "_"), line), token
            )
            if token in PLACEHOLDERS or re.fullmatch(PLACEHOLDER_WORD, token):
                token = self._value(token, line)
            argv.append(token)
        if argv[1:2] == ["serve"] and "--port" not in argv:
            argv += ["--port", str(self.port(int(DEFAULT_BASE_URL.rsplit(":", 1)[1])))]
        return argv

    # -- running

    def run_line(self, line: DocLine) -> None:
        argv = self.rewrite(line)
        long_running = any(tuple(argv[1 : 1 + len(path)]) == path for path in LONG_RUNNING)
        if argv[1:2] == ["serve"]:
            if self.server is not None:
                self._stop(self.server)
            self.server = self._start(line, argv)
            self._wait_for_server(self.server)
            return
        if self.server is None and self.shared_server is None:  # a command before `paysdk serve`
            self.server = self._start(line, ["paysdk", "serve", "--port", self.base_url.rsplit(":", 1)[1]])
            self._wait_for_server(self.server)
        if long_running or line.background:
            started = self._start(line, argv)
            if argv[1:3] == ["callbacks", "listen"]:
                self._wait_for(started, lambda: "Listening on" in started.output()[1])
            if "tail" in argv and "sandbox" in argv:
                self._wait_for(started, lambda: "Tailing" in started.output()[1])
            return
        self._run_in_process(line, argv)

    def _run_in_process(self, line: DocLine, argv: list[str]) -> None:
        opened: list[str] = []

        def open_url(url: str, *args: Any, **kwargs: Any) -> bool:
            opened.append(url)
            return True

        previous = keyring.get_keyring()
        keyring.set_keyring(fail.Keyring())  # type: ignore[no-untyped-call]
        try:
            with (
                mock.patch.dict(os.environ, self.env, clear=True),
                mock.patch.object(webbrowser, "open", open_url),
            ):
                result = _TerminalRunner().invoke(app, argv[1:], input=f"{DOC_PASSWORD}\n" * 4)
        finally:
            keyring.set_keyring(previous)
            CLIENT_OPTIONS.clear()
        self.record.ran.append(Ran(line, argv, result.exit_code, result.stdout, result.stderr))
        if result.exit_code != line.exit_code:
            pytest.fail(
                f"{line.where}\n(run as: {shlex.join(argv)})\nexit {result.exit_code}, the doc expects "
                f"{line.exit_code}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}",
                pytrace=False,
            )
        with contextlib.suppress(ValueError):
            self._harvest(json.loads(result.stdout))

    def _harvest(self, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, str) and item not in self.values.setdefault(key, []):
                    self.values[key].append(item)
                else:
                    self._harvest(item)
        elif isinstance(value, list):
            for item in value:
                self._harvest(item)

    def _start(self, line: DocLine, argv: list[str]) -> Background:
        count = len(self.background)
        stdout, stderr = self.directory / f"bg{count}.out", self.directory / f"bg{count}.err"
        with stdout.open("wb") as out, stderr.open("wb") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "paysdk_cli", *argv[1:]],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=self.env,
                cwd=self.directory,
            )
        port = int(argv[argv.index("--port") + 1]) if "--port" in argv else None
        started = Background(line, argv, process, stdout, stderr, port)
        self.background.append(started)
        return started

    def _wait_for(self, started: Background, ready: Any) -> None:
        """The suite's one readiness wait (D541): fails naming the command and showing its output."""
        try:
            wait_ready(ready, what=" ".join(started.argv), process=started.process, output=started.describe)
        except NotReady as exc:
            pytest.fail(str(exc), pytrace=False)

    def _wait_for_server(self, server: Background) -> None:
        self._wait_for(server, http_ok(f"http://127.0.0.1:{server.port}/_sandbox/health"))

    def _check_listeners(self) -> None:
        """Every callback queued for a doc's listener was delivered and printed by it."""
        listeners = [bg for bg in self.background if bg.argv[1:3] == ["callbacks", "listen"]]
        if not listeners:
            return
        deadline = time.monotonic() + 30
        while True:
            attempts = httpx.get(f"{self.base_url}/_sandbox/callbacks", timeout=5).json()
            pending = [
                a["eventId"]
                for a in attempts
                if any(f":{bg.port}/" in a["url"] for bg in listeners)
                and not any(
                    b["eventId"] == a["eventId"] and 200 <= (b["statusCode"] or 0) < 300 for b in attempts
                )
            ]
            if not pending:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"callbacks to the doc's listener not delivered: {attempts}", pytrace=False)
            time.sleep(0.1)
        delivered = {a["eventId"] for a in attempts if any(f":{bg.port}/" in a["url"] for bg in listeners)}
        deadline = time.monotonic() + 10
        while True:
            printed = [
                json.loads(text)
                for bg in listeners
                for text in bg.output()[0].splitlines()
                if text.startswith("{")
            ]
            if delivered <= {event["eventId"] for event in printed}:
                break
            if time.monotonic() > deadline:
                pytest.fail(
                    f"the listener did not print {delivered}:\n{listeners[0].describe()}", pytrace=False
                )
            time.sleep(0.05)
        self.record.listener_events += printed

    def _stop(self, started: Background) -> None:
        if started.process.poll() is None:
            started.process.send_signal(signal.SIGINT)
            try:
                started.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                started.process.kill()
                started.process.wait()
                pytest.fail(f"did not stop on Ctrl-C:\n{started.describe()}", pytrace=False)
        if started.process.returncode != 0:
            pytest.fail(
                f"exited {started.process.returncode} on Ctrl-C:\n{started.describe()}", pytrace=False
            )

    def close(self, check: bool = True) -> None:
        try:
            if check:
                self._check_listeners()
        finally:
            # Listeners first, the server last; every process is stopped even when one check fails.
            for started in sorted(self.background, key=lambda bg: bg is self.server):
                try:
                    self._stop(started)
                except BaseException:
                    for other in self.background:
                        if other.process.poll() is None:
                            other.process.kill()
                            other.process.wait()
                    raise


def run_doc(path: Path, directory: Path, shared_server: str) -> list[SessionRecord]:
    """Run the example blocks of ``path`` (see the module docstring); parse its synopses.

    A session that shows no ``paysdk serve`` line runs against ``shared_server`` (reset first), a
    reference server the test started, as the reader was told to start one."""
    problems: list[str] = []
    sessions: list[list[DocLine]] = []
    for block in doc_blocks(path):
        for line in block.lines:
            if block.synopsis or (line.path, line.text) in PARSE_ONLY:
                problems += [f"{line.where}\n  {problem}" for problem in check_synopsis(line.tokens)]
        if block.synopsis:
            continue
        if not sessions or block.new_session:
            sessions.append([])
        sessions[-1] += [line for line in block.lines if (line.path, line.text) not in PARSE_ONLY]
    records: list[SessionRecord] = []
    for number, lines in enumerate(sessions):
        serves = any(line.tokens[1:2] == ("serve",) for line in lines)
        session = Session(directory / f"session{number}", None if serves else shared_server)
        records.append(session.record)
        try:
            for line in lines:
                session.run_line(line)
        except BaseException:
            session.close(check=False)
            raise
        session.close()
    assert not problems, "\n".join(problems)
    return records


_RUNS: dict[Path, list[SessionRecord]] = {}


def runs_of(path: Path, tmp_path_factory: pytest.TempPathFactory, live_server: str) -> list[SessionRecord]:
    """:func:`run_doc` of ``path``, once per test session."""
    if path not in _RUNS:
        _RUNS[path] = run_doc(path, tmp_path_factory.mktemp(path.stem), live_server)
    return _RUNS[path]


# ------------------------------------------------------------------------------------------ tests


@db_sqlite
@pytest.mark.parametrize("path", DOC_FILES, ids=[path.relative_to(ROOT).as_posix() for path in DOC_FILES])
def test_every_doc_command_runs_or_parses(
    path: Path, tmp_path_factory: pytest.TempPathFactory, live_server: str
) -> None:
    runs_of(path, tmp_path_factory, live_server)


def test_the_docs_have_examples_and_synopses_to_check() -> None:
    """The extraction finds what the docs hold (so a parsing slip cannot make the test above vacuous)."""
    blocks = [block for path in DOC_FILES for block in doc_blocks(path)]
    examples = [line for block in blocks if not block.synopsis for line in block.lines]
    synopses = [line for block in blocks if block.synopsis for line in block.lines]
    assert len(examples) >= 20, examples
    assert len(synopses) >= 20, synopses
    assert any(line.tokens[1:3] == ("callbacks", "listen") for line in examples)
    assert {line.path for line in examples} >= {"README.md", "docs/cli.md", "docs/getting-started.md"}
    texts = {(line.path, line.text) for block in blocks for line in block.lines}
    assert set(PARSE_ONLY) <= texts, f"stale PARSE_ONLY entries: {set(PARSE_ONLY) - texts}"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("paysdk sandbox faults add --route R", ""),
        ("paysdk sandbox faults add [--kind error|nope]", "no choice 'nope'"),
        ("paysdk sandbox faults add [--colour red]", "no option --colour"),
        ("paysdk cards show|blok CARD_ID", "no command 'blok'"),
        ("paysdk alt dismiss UID EXTRA [--x]", "takes 1 argument"),
        ("paysdk sandbox [--x]", "is a group"),
        ("paysdk [--profile NAME] [-o table|json] [-v] COMMAND ...", ""),
        ("paysdk serve [--db sqlite:///f.db | postgresql://...] [--environment sandbox|production]", ""),
        ("paysdk sandbox clients create [--three-ds/--no-three-ds] [--channel ...]", ""),
    ],
)
def test_synopsis_check_catches_what_it_must(line: str, problem: str) -> None:
    problems = check_synopsis(tuple(shlex.split(line)))
    if problem:
        assert any(problem in found for found in problems), problems
    else:
        assert problems == []


def test_extraction_joins_continuations_and_reads_exit_codes(tmp_path: Path) -> None:
    doc = tmp_path / "sample.md"
    doc.write_text(
        "```console\n$ paysdk links create --amount 1 \\\n  --channel wa   # a comment\nsample output\n"
        "$ paysdk alt dismiss <uid>   # exits 6\n```\n\n"
        f"{NEW_SESSION}\n```sh\npaysdk sandbox health &\necho not paysdk\n```\n```python\npaysdk x\n```\n"
    )
    first, second = doc_blocks(doc)
    assert [line.tokens for line in first.lines] == [
        ("paysdk", "links", "create", "--amount", "1", "--channel", "wa"),
        ("paysdk", "alt", "dismiss", "<uid>"),
    ]
    assert [line.exit_code for line in first.lines] == [0, 6]
    assert [line.line for line in first.lines] == [2, 5]
    assert not first.new_session
    assert second.new_session
    assert second.lines[0].background


def test_placeholder_words_and_their_json_keys() -> None:
    assert [
        bool(re.fullmatch(PLACEHOLDER_WORD, word)) for word in ("CHARGE_ID", "UID", "CARD_A", "GTQ", "X")
    ] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert [_json_key(name) for name in ("CHARGE_ID", "UID", "PERMISSION_ID")] == [
        "chargeId",
        "uid",
        "permissionId",
    ]


@db_sqlite
def test_readme_cli_lines_end_with_a_delivered_callback(
    tmp_path_factory: pytest.TempPathFactory, live_server: str
) -> None:
    """Issue 7.12: the README's CLI example has the listener print the paid link's callback; issue 23: it
    ends with ``paysdk trigger``, whose flow's callback (three days of refused retries, then one delivery
    with the same eventId, D703) reaches the same listener, verified with the merchant's header."""
    readme = ROOT / "README.md"
    block = next(block for block in doc_blocks(readme) if not block.synopsis)
    assert block.lines[-2].tokens[1:3] == ("sandbox", "pay")
    assert block.lines[-1].tokens[1:3] == ("trigger", "callback-receiver-down")
    (record,) = runs_of(readme, tmp_path_factory, live_server)
    paid = json.loads(record.ran[-2].stdout)
    assert paid["status"] == "approved"
    report = json.loads(record.ran[-1].stdout)
    assert report["ok"] is True
    attempts = [event for event in report["events"] if event["kind"] == "callback"]
    assert [event["data"]["attempt"] for event in attempts] == list(range(1, 17))
    assert [(event["uid"], event["status"]) for event in record.listener_events] == [
        (paid["uid"], "approved"),
        (report["ids"]["uid"], "approved"),
    ]
