"""The one readiness helper of the suites, the plugin and the benchmarks (``paysdk.testing._ready``): a
server is waited on until it answers; one that dies or never answers fails with its own output."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from typing import Any

import httpx
import pytest

from paysdk.testing import _ready
from paysdk.testing._ready import NotReady, free_port, http_ok, serve_in_thread, serve_process, wait_ready


def test_serve_process_waits_for_a_real_server_then_stops_it() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    cmd = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    with serve_process(cmd, url=url, what="http.server") as served:
        assert httpx.get(url, timeout=30).status_code == 200  # ready means it answers now
        process = served.process
    assert process.poll() is not None  # stopped at the end of the block


def test_a_process_that_exits_fails_at_once_with_its_exit_status_and_output() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('boom on stderr', file=sys.stderr); sys.exit(3)"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with pytest.raises(NotReady) as caught:
        wait_ready(lambda: False, what="the doomed server", process=process, timeout=600)
    message = str(caught.value)
    assert "the doomed server exited with 3 before it was ready" in message
    assert "boom on stderr" in message


def test_a_process_never_ready_fails_after_the_deadline_killed_with_its_output() -> None:
    port = free_port()  # nothing listens there
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; print('still starting', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with pytest.raises(NotReady) as caught:
        wait_ready(http_ok(f"http://127.0.0.1:{port}/"), what="the slow server", process=process, timeout=1)
    message = str(caught.value)
    assert "the slow server was not ready after" in message
    assert "last probe: ConnectError" in message  # a refused connection counted as "not yet"
    assert "still starting" in message
    assert process.poll() is not None  # killed, not left behind


def test_a_server_thread_that_stops_fails_the_wait() -> None:
    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join()
    with pytest.raises(NotReady, match="the threaded server stopped before it was ready"):
        wait_ready(lambda: False, what="the threaded server", alive=thread.is_alive, timeout=600)


def test_http_ok_takes_200_or_with_any_status_any_answer() -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    with serve_process(cmd, url=f"http://127.0.0.1:{port}/"):
        missing = f"http://127.0.0.1:{port}/no-such-file"
        assert http_ok(missing)() is False  # a 404 is an answer, not readiness
        assert http_ok(missing, any_status=True)() is True


async def _hello(scope: dict[str, object], receive: object, send: Any) -> None:
    """A minimal ASGI app: 200 ``hello`` on every request, and a lifespan that records start/stop."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()  # type: ignore[operator]
            if message["type"] == "lifespan.startup":
                LIFESPAN.append("startup")
                await send({"type": "lifespan.startup.complete"})
            else:
                LIFESPAN.append("shutdown")
                await send({"type": "lifespan.shutdown.complete"})
                return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"hello"})


LIFESPAN: list[str] = []


def test_serve_in_thread_answers_as_soon_as_it_yields_and_stops_cleanly() -> None:
    LIFESPAN.clear()
    with serve_in_thread(_hello, lifespan="on", what="hello") as served:
        assert served.url == f"http://127.0.0.1:{served.port}"
        answer = httpx.get(served.url + "/anything", timeout=30)  # no wait of our own: ready means now
        assert (answer.status_code, answer.text) == (200, "hello")
        assert served.thread.is_alive()
        assert LIFESPAN == ["startup"]
    assert not served.thread.is_alive()  # joined: the server has stopped
    assert LIFESPAN == ["startup", "shutdown"]  # its lifespan ended
    with pytest.raises(httpx.ConnectError):  # and the port is closed
        httpx.get(served.url, timeout=5)


def test_serve_in_thread_without_lifespan_and_its_stop_twice() -> None:
    LIFESPAN.clear()
    with serve_in_thread(_hello) as served:
        assert httpx.get(served.url, timeout=30).text == "hello"
        served.stop()  # early, as a test that stops the server itself
        assert not served.thread.is_alive()
    assert LIFESPAN == []  # lifespan off by default: the app's startup never ran


def test_serve_in_thread_fails_at_once_when_the_server_cannot_start() -> None:
    async def broken(scope: dict[str, object], receive: object, send: Any) -> None:
        if scope["type"] == "lifespan":
            raise RuntimeError("no start")  # uvicorn with lifespan "on" exits on a failed startup

    with pytest.raises(NotReady, match="the broken server stopped before it was ready"):  # noqa: SIM117
        with serve_in_thread(broken, lifespan="on", what="the broken server", log_level="critical"):
            pass  # pragma: no cover - never reached


def _block_of(port: int) -> int:
    return (port - _ready.PORT_RANGE[0]) // _ready.PORT_BLOCK


def test_free_port_hands_out_distinct_ports_of_this_processes_block_below_the_ephemeral_range() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(_ready.PORT_RANGE[0] <= port < _ready.PORT_RANGE[1] for port in ports)
    assert {_block_of(port) for port in ports} == {_ready._port_block()}
    for port in ports:  # each is free when handed out (nothing started on it here)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_free_port_skips_a_port_in_use(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", taken))
        holder.listen()
        monkeypatch.setattr(_ready, "_next_port", taken)  # the next one it would hand out
        port = free_port()
    assert port != taken
    assert _block_of(port) == _block_of(taken)


def test_two_workers_of_a_run_never_share_a_port() -> None:
    """xdist workers ``gw0``/``gw1`` (separate processes) take their ports from separate blocks."""
    script = "from paysdk.testing._ready import free_port; print(*[free_port() for _ in range(20)])"
    seen: list[set[int]] = []
    for worker in ("gw0", "gw1"):
        env = {**os.environ, "PYTEST_XDIST_WORKER": worker}
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True, timeout=60
        ).stdout
        seen.append({int(port) for port in out.split()})
    assert not seen[0] & seen[1]
    assert {_block_of(port) for port in seen[0]} == {0}
    assert {_block_of(port) for port in seen[1]} == {1}
