"""scripts/unasync.py: the generated sync code is current, and a stale block is detected."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "unasync.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("paysdk_unasync_script", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )


def test_generated_code_is_current() -> None:
    result = run("--check")
    assert result.returncode == 0, result.stderr


def test_every_async_file_is_covered() -> None:
    unasync = load_script()
    names = {path.relative_to(ROOT).as_posix() for path in unasync.discover(ROOT)}
    assert {
        "src/paysdk/_client.py",
        "src/paysdk/resources/payment_links.py",
        "src/paysdk/resources/alternative_payments.py",
        "src/paysdk/resources/sandbox.py",
        "src/paysdk/resources/wallet.py",
        "src/paysdk/_auth.py",
        "src/paysdk/_token_stores.py",
        "src/paysdk/callbacks/_redis.py",
    } <= names


def test_stale_block_detected_and_fixed(tmp_path: Path) -> None:
    copy = tmp_path / "_client.py"
    shutil.copy(ROOT / "src" / "paysdk" / "_client.py", copy)
    text = copy.read_text()
    copy.write_text(text.replace('"""Close the connection pool', '"""Close (edited) the connection pool', 1))
    stale = run("--check", str(copy))
    assert stale.returncode == 1
    assert "stale" in stale.stderr
    assert '+        """Close (edited) the connection pool' in stale.stderr
    fixed = run(str(copy))
    assert fixed.returncode == 0
    assert run("--check", str(copy)).returncode == 0
    assert 'def close(self) -> None:\n        """Close (edited) the connection pool' in copy.read_text()


def test_hand_edit_of_generated_block_detected(tmp_path: Path) -> None:
    copy = tmp_path / "sandbox.py"
    shutil.copy(ROOT / "src" / "paysdk" / "resources" / "sandbox.py", copy)
    text = copy.read_text()
    head, marker, tail = text.partition("# unasync: generated begin")
    copy.write_text(head + marker + tail.replace("health = Endpoint(", "healthz = Endpoint(", 1))
    assert run("--check", str(copy)).returncode == 1


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("async def f(self) -> None:", "def f(self) -> None:"),
        ("    return await self._client._request(op)", "    return self._client._request(op)"),
        ("async with AsyncClient() as c:", "with Client() as c:"),
        ("async for x in y:", "for x in y:"),
        ("await asyncio.sleep(delay)", "time.sleep(delay)"),
        ("await self._http.aclose()", "self._http.close()"),
        ("async def __aenter__(self): ...", "def __enter__(self): ..."),
        ("async def __aexit__(self): ...", "def __exit__(self): ..."),
        ("transport: httpx.AsyncBaseTransport", "transport: httpx.BaseTransport"),
        ("AsyncPaymentLinks(self)", "PaymentLinks(self)"),
        ("awaited_value = asyncio_name", "awaited_value = asyncio_name"),  # word boundaries
        ("MyAsyncThing, Asynchronous, acloser", "MyAsyncThing, Asynchronous, acloser"),
        ("    timeout: float = 1,  # noqa: ASYNC109 (why)", "    timeout: float = 1,"),
        ("The API client, for ``asyncio`` code::", "The API client, for blocking code::"),
        ("@contextlib.asynccontextmanager", "@contextlib.contextmanager"),
        ("client: redis.asyncio.Redis,", "client: redis.Redis,"),
        ("import redis.asyncio  # extra", "import redis  # extra"),
        ("myredis.asyncio_x, asynccontextmanagers", "myredis.asyncio_x, asynccontextmanagers"),  # boundaries
        ("-> Coroutine[Any, Any, T]:", "-> T:"),
        ("Callable[P, Coroutine[Any, Any, APIResponse[list[T]]]]", "Callable[P, APIResponse[list[T]]]"),
    ],
)
def test_transform_rules(source: str, expected: str) -> None:
    assert load_script().transform(source) == expected


def test_unbalanced_markers_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "# unasync: begin\nclass AsyncX: ...\n# unasync: generated begin\n# unasync: generated end\n"
    )
    result = run("--check", str(bad))
    assert result.returncode == 2
    assert "unbalanced" in result.stderr


def test_output_is_deterministic(tmp_path: Path) -> None:
    unasync = load_script()
    text = (ROOT / "src" / "paysdk" / "_client.py").read_text()
    once = unasync.generate(text)
    assert once == text
    assert unasync.generate(once) == once
