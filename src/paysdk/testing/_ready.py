"""Wait for a server to be ready: one helper for the test suites, the plugin and the benchmarks.

A server started in a subprocess (``paysdk serve``, ``paysdk callbacks listen``, uvicorn) or in a thread
is waited on until a readiness probe answers, never for a fixed time: the deadline
(:data:`READY_TIMEOUT`, 120 s, or ``$PAYSDK_READY_TIMEOUT``) only bounds a server that will never
come up, so a machine under load (load average 8 on two cores) slows a start-up down without
failing it. When the server dies or the deadline passes, the error names what was waited for, the
exit status and the process's own output (stdout and stderr), so the cause is in the test report.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any, Literal

import httpx

from paysdk._tls import verification_context

__all__ = [
    "READY_TIMEOUT",
    "NotReady",
    "ServedProcess",
    "ServedThread",
    "bound_socket",
    "free_port",
    "http_ok",
    "serve_in_thread",
    "serve_process",
    "wait_ready",
]

#: How long a start-up may take before it counts as failed (seconds): generous, as a bound on a
#: server that will never come up, not as a measure of a slow one.
READY_TIMEOUT = float(os.environ.get("PAYSDK_READY_TIMEOUT", "120"))


class NotReady(AssertionError):
    """The server exited, or did not become ready before the deadline; the message has its output."""


def http_ok(url: str, *, any_status: bool = False, timeout: float = 5.0) -> Callable[[], bool]:
    """A readiness probe: ``GET url`` answers 200 (with ``any_status``: answers at all, say a 405 of
    an endpoint that takes POST only)."""

    def probe() -> bool:
        status = httpx.get(url, timeout=timeout, verify=verification_context()).status_code
        return any_status or status == 200

    return probe


def _collect_output(process: subprocess.Popen[Any]) -> str:
    """The output of a process that has exited or is killed now (pipes read to the end)."""
    if process.poll() is None:
        process.kill()
    try:
        out, err = process.communicate(timeout=10)
    except (subprocess.TimeoutExpired, ValueError, OSError):  # pipes read elsewhere or closed
        return "(output not available)"
    parts = []
    for name, text in (("stdout", out), ("stderr", err)):
        if text:
            decoded = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
            parts.append(f"--- {name} ---\n{decoded.rstrip()}")
    return "\n".join(parts) or "(no output)"


def wait_ready(
    ready: Callable[[], object],
    *,
    what: str,
    process: subprocess.Popen[Any] | None = None,
    alive: Callable[[], bool] | None = None,
    output: Callable[[], str] | None = None,
    timeout: float | None = None,
    interval: float = 0.05,
) -> float:
    """Call ``ready()`` until it returns a true value; return the seconds it took.

    A probe that raises a connection error (:class:`httpx.TransportError`, :class:`OSError`) counts as
    "not yet". ``process``: the subprocess serving (its exit fails the wait at once; on failure it is
    killed and its piped output reported). ``alive``: the same for a server in a thread. ``output``:
    what to report instead of the process's pipes (when the caller reads them itself). Raises
    :class:`NotReady` after ``timeout`` (default :data:`READY_TIMEOUT`).
    """
    limit = READY_TIMEOUT if timeout is None else timeout
    started = time.monotonic()
    last_error = ""
    while True:
        try:
            if ready():
                return time.monotonic() - started
        except (httpx.TransportError, OSError) as exc:
            last_error = f"{type(exc).__name__}: {exc}"
        exited = process is not None and process.poll() is not None
        dead = exited or (alive is not None and not alive())
        elapsed = time.monotonic() - started
        if dead or elapsed > limit:
            if dead:
                status = f"exited with {process.returncode}" if process is not None else "stopped"
                reason = f"{what} {status} before it was ready ({elapsed:.1f} s)"
            else:
                reason = f"{what} was not ready after {elapsed:.1f} s"
            if last_error:
                reason += f"; last probe: {last_error}"
            if output is not None:
                reason += "\n" + output()
            elif process is not None:
                reason += "\n" + _collect_output(process)
            raise NotReady(reason)
        time.sleep(interval)


class ServedProcess:
    """A server subprocess started by :func:`serve_process`: ``.process``, ``.url``, ``.output()``."""

    def __init__(self, process: subprocess.Popen[bytes], url: str, log: IO[bytes]) -> None:
        self.process = process
        self.url = url
        self._log = log

    def output(self) -> str:
        """Everything the process wrote so far (stdout and stderr, interleaved)."""
        self._log.flush()
        return Path(self._log.name).read_bytes().decode(errors="replace")


@contextmanager
def serve_process(
    cmd: Sequence[str],
    *,
    url: str,
    probe: Callable[[], object] | None = None,
    what: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float | None = None,
    stop_timeout: float = 15.0,
    **popen: Any,
) -> Iterator[ServedProcess]:
    """Start ``cmd``, wait until ``probe`` (default: ``url`` answers at all) passes, yield, stop it.

    The process's stdout and stderr go to a temporary file (no pipe to fill up), reported in full
    when it fails to start. At the end it gets SIGTERM, then SIGKILL after ``stop_timeout`` seconds.
    ``popen``: further :class:`subprocess.Popen` arguments (``preexec_fn``...).
    """
    with tempfile.NamedTemporaryFile(prefix="paysdk-served-", suffix=".log") as log:
        process = subprocess.Popen(  # noqa: S603 (the caller's own command, as for Popen)
            list(cmd),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            **popen,
        )
        served = ServedProcess(process, url, log)
        try:
            wait_ready(
                probe or http_ok(url, any_status=True),
                what=what or " ".join(str(part) for part in cmd[:4]),
                process=process,
                output=lambda: "--- output ---\n" + served.output().rstrip(),
                timeout=timeout,
            )
            yield served
        finally:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=stop_timeout)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


class ServedThread:
    """An app served by :func:`serve_in_thread`: ``.url`` (``http://127.0.0.1:<port>``), ``.port``,
    ``.server`` (the :class:`uvicorn.Server`), ``.thread``; :meth:`stop` ends it (the context manager
    does)."""

    def __init__(self, server: Any, thread: threading.Thread, sock: socket.socket) -> None:
        self.server = server
        self.thread = thread
        self.socket = sock
        self.port: int = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self, timeout: float = 30.0) -> None:
        """Ask uvicorn to exit, wait for its thread (at most ``timeout`` seconds), close the socket.
        Stopping twice is harmless."""
        self.server.should_exit = True
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(timeout=timeout)
        self.socket.close()


#: The ports :func:`free_port` hands out: ``[20000, 32768)``, below the ranges the systems pick a
#: ``bind(0)``'s port and an outgoing connection's from (Linux 32768-60999, macOS and Windows
#: 49152-65535), in blocks of :data:`PORT_BLOCK`, one block per process.
PORT_RANGE = (20_000, 32_768)
PORT_BLOCK = 500
_ports = threading.Lock()
_next_port: int | None = None


def _port_block() -> int:
    """This process's block: its pytest-xdist worker's number (``gw3``: 3), so two workers of a run never
    share one; another process (the controller, a plain run, a benchmark) takes one of the last four by
    its pid."""
    blocks = (PORT_RANGE[1] - PORT_RANGE[0]) // PORT_BLOCK
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and worker[2:].isdigit() and int(worker[2:]) < blocks - 4:
        return int(worker[2:])
    return blocks - 1 - os.getpid() % 4


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port of ``host`` for a server this process is about to start (a subprocess, a thread), or
    where nothing may listen (a refused connection).

    A port found by binding port 0 and closing the socket is the system's next free port for anyone: a
    test worker starting its own server, or any outgoing connection, could be given it before the server
    binds it; a suite of parallel workers that start servers met that ("address already in use", or a
    readiness probe answered by another worker's server). These ports come from this process's own
    block of :data:`PORT_RANGE`, taken in turn (from an offset its pid picks), each checked free by a
    bind at the time. Where a socket can be kept until the server takes it, :func:`bound_socket` (or
    port 0 passed to the server) is better still."""
    global _next_port
    low = PORT_RANGE[0] + _port_block() * PORT_BLOCK
    with _ports:
        if _next_port is None:
            _next_port = low + (os.getpid() * 37) % PORT_BLOCK
        for _ in range(PORT_BLOCK):
            port = _next_port
            _next_port = low + (port + 1 - low) % PORT_BLOCK
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                try:
                    probe.bind((host, port))
                except OSError:
                    continue
            return port
    raise OSError(f"no free port left in {low}-{low + PORT_BLOCK - 1} on {host}")


def bound_socket(host: str = "127.0.0.1") -> socket.socket:
    """A TCP socket bound to a free port of ``host`` (not listening yet: uvicorn listens on it).
    Named TCP (``IPPROTO_TCP``) so asyncio sets ``TCP_NODELAY`` on the connections it accepts (D401)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    return sock


@contextmanager
def serve_in_thread(
    app: Any,
    *,
    lifespan: Literal["auto", "on", "off"] = "off",
    log_level: str = "warning",
    what: str = "the server",
    stop_timeout: float = 30.0,
    **config: Any,
) -> Iterator[ServedThread]:
    """Serve the ASGI ``app`` with uvicorn in a daemon thread on a free port of 127.0.0.1, wait until it
    accepts connections (:func:`wait_ready` on ``server.started``, failing at once if the thread dies),
    yield a :class:`ServedThread`, then stop it (``should_exit``, join the thread, close the socket).

    ``lifespan``: ``"on"`` runs the app's lifespan (the reference server's ticker); ``config``: further
    :class:`uvicorn.Config` options (``access_log`` is off unless given). The socket is bound before the
    thread starts, so the port is known and no other process can take it in between.
    """
    import uvicorn  # the server's dependency: imported by the tests that serve, not by the SDK

    config.setdefault("access_log", False)
    server = uvicorn.Server(uvicorn.Config(app, lifespan=lifespan, log_level=log_level, **config))
    sock = bound_socket()

    def run() -> None:
        # uvicorn ends a failed start with sys.exit: the thread then just ends (the wait reports it).
        with suppress(SystemExit):
            server.run(sockets=[sock])

    thread = threading.Thread(target=run, daemon=True, name=what)
    served = ServedThread(server, thread, sock)
    thread.start()
    try:
        wait_ready(lambda: server.started, what=what, alive=thread.is_alive)
        yield served
    finally:
        served.stop(stop_timeout)
