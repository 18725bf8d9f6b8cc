"""The SDK and the CLI's private files on a Python without ``fcntl`` (Windows), issue 21 item 2, D400.

Each test runs Python in a subprocess whose ``sitecustomize`` makes ``fcntl`` unimportable (a meta-path
finder that raises ``ModuleNotFoundError``, as on Windows). Linux has no ``msvcrt``, so the Windows lock is
exercised through a stand-in ``msvcrt`` module with Windows' contract (``locking(fd, mode, nbytes)``;
``LK_NBLCK`` raises ``EACCES`` while another handle holds the region; one holder per open handle), built on
the real ``flock`` that the stand-in took before ``fcntl`` was hidden (``subprocess`` is loaded first: it
takes an importable ``msvcrt`` to mean Windows). The reference server is real
(``live_server``, over a socket).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import paysdk

SRC = Path(__file__).resolve().parents[2] / "src"

_HIDE_FCNTL = """
import importlib.abc
import sys
import tomllib

if {emulate_msvcrt!r}:
    import errno
    import fcntl as _real_fcntl  # the stand-in's own primitive, taken before fcntl is hidden
    import subprocess  # noqa: F401  (an importable msvcrt means Windows to it: loaded before the stand-in)
    import types

    msvcrt = types.ModuleType("msvcrt")
    msvcrt.LK_UNLCK, msvcrt.LK_LOCK, msvcrt.LK_NBLCK, msvcrt.LK_RLCK, msvcrt.LK_NBRLCK = 0, 1, 2, 3, 4

    def locking(fd, mode, nbytes):
        if nbytes < 1:
            raise OSError(errno.EINVAL, "Invalid argument")
        if mode == msvcrt.LK_UNLCK:
            _real_fcntl.flock(fd, _real_fcntl.LOCK_UN)
            return
        if mode != msvcrt.LK_NBLCK:
            raise AssertionError("paysdk is expected to poll with LK_NBLCK")
        try:
            _real_fcntl.flock(fd, _real_fcntl.LOCK_EX | _real_fcntl.LOCK_NB)
        except BlockingIOError:
            raise PermissionError(errno.EACCES, "Permission denied") from None

    msvcrt.locking = locking
    sys.modules["msvcrt"] = msvcrt

sys.modules.pop("fcntl", None)


class _NoFcntl(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "fcntl":
            raise ModuleNotFoundError("No module named 'fcntl'", name="fcntl")
        return None


sys.meta_path.insert(0, _NoFcntl())
"""

_SDK = """
import sys
import tomllib

import paysdk
from paysdk import _files

try:
    import fcntl  # noqa: F401
except ImportError:
    pass
else:
    raise SystemExit("fcntl is importable")
print(_files.LOCK_KIND)
step, base_url, store, slug, key, user_id = sys.argv[1:]
with paysdk.Client(
    environment=paysdk.Environment.local(base_url),
    wallet=paysdk.WalletCredentials(slug, key),
    token_store=paysdk.FileTokenStore(store),
) as client:
    if step == "login":
        client.wallet.login()
    else:
        client.wallet.cards.list(user_id)  # the server says the token expired: refresh, save
"""

_EXCLUSION = """
import multiprocessing
import os
import sys
import tomllib
import threading
import time
from pathlib import Path

import paysdk
from paysdk._files import exclusive_lock, try_lock


def count(store_path, counter, threads, rounds):
    store = paysdk.FileTokenStore(store_path)

    def work():
        for _ in range(rounds):
            with store.lock("app"):
                value = int(Path(counter).read_text())
                time.sleep(0.0005)  # widen the window a second holder would use
                Path(counter).write_text(str(value + 1))

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()


def probe(path, answer):
    fd = os.open(path, os.O_RDWR)
    answer.put("free" if try_lock(fd) else "held")
    os.close(fd)


if __name__ == "__main__":
    assert "fcntl" not in sys.modules
    where = Path(sys.argv[1])
    counter = where / "counter"
    counter.write_text("0")
    context = multiprocessing.get_context("spawn")
    job = (str(where / "t.json"), str(counter), 4, 10)
    workers = [context.Process(target=count, args=job) for _ in range(3)]
    for worker in workers:
        worker.start()
    count(str(where / "t.json"), str(counter), 4, 10)
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0, worker.exitcode
    print(counter.read_text())

    lock = where / "journal"
    answer = context.Queue()
    with exclusive_lock(lock):
        fd = os.open(lock, os.O_RDWR)
        print("same process:", "free" if try_lock(fd) else "held")
        os.close(fd)
        other = context.Process(target=probe, args=(str(lock), answer))
        other.start()
        print("other process:", answer.get(timeout=60))
        other.join(60)
    other = context.Process(target=probe, args=(str(lock), answer))
    other.start()
    print("released:", answer.get(timeout=60))
    other.join(60)
"""


def _env(tmp_path: Path, *, emulate_msvcrt: bool) -> dict[str, str]:
    site = tmp_path / "no-fcntl"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_HIDE_FCNTL.format(emulate_msvcrt=emulate_msvcrt))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYSDK_")}
    env["PAYSDK_CONFIG_DIR"] = str(tmp_path / "config")
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"  # the CLI's 0600 fallback files
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(SRC)])
    return env


def _python(env: dict[str, str], *args: str, input: str | None = None) -> str:
    run = subprocess.run(
        [sys.executable, *args], env=env, input=input, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_client_refreshes_and_saves_tokens_in_a_file_store_without_fcntl(
    live_server: str, tmp_path: Path
) -> None:
    env = _env(tmp_path, emulate_msvcrt=True)
    with paysdk.Client(environment=paysdk.Environment.local(live_server)) as sandbox:
        merchant = sandbox.sandbox.create_client()
        assert merchant.signing_private_key is not None
        user = sandbox.sandbox.create_user(merchant.slug, "ana", "ana@example.com", "password-1")
        store = tmp_path / "tokens" / "tokens.json"
        args = [str(store), merchant.slug, merchant.signing_private_key, user.user_id]

        assert _python(env, "-c", _SDK, "login", live_server, *args).split() == ["msvcrt"]
        saved = json.loads(store.read_text())["tokens"]
        assert len(saved) == 1
        sandbox.sandbox.advance_clock(1860)  # expired on the server, not on the SDK's clock
        _python(env, "-c", _SDK, "list", live_server, *args)

        assert json.loads(store.read_text())["tokens"] != saved  # the rotated pair was saved
        assert _mode(store) == 0o600
        paths = [entry.path for entry in sandbox.sandbox.requests() if entry.method == "POST"]
        assert sum(path.endswith("/auth/refresh") for path in paths) == 1
        assert sum(path.endswith("/auth/login") for path in paths) == 1


def test_the_lock_excludes_threads_and_processes_without_fcntl(tmp_path: Path) -> None:
    script = tmp_path / "exclusion.py"
    script.write_text(_EXCLUSION)
    work = tmp_path / "work"
    work.mkdir()

    lines = _python(_env(tmp_path, emulate_msvcrt=True), str(script), str(work)).splitlines()

    assert lines == ["160", "same process: held", "other process: held", "released: free"]


def test_without_any_file_lock_the_sdk_imports_and_the_file_store_says_what_to_use(tmp_path: Path) -> None:
    code = """
import sys
import tomllib

import paysdk
from paysdk import _files
print(_files.LOCK_KIND)
store = paysdk.FileTokenStore(sys.argv[1])
print(store.load("app"))
try:
    with store.lock("app"):
        pass
except OSError as exc:
    print(f"{type(exc).__name__}: {exc}")
"""
    env = _env(tmp_path, emulate_msvcrt=False)

    lines = _python(env, "-c", code, str(tmp_path / "tokens.json")).splitlines()

    assert lines[:2] == ["none", "None"]
    assert lines[2].startswith("FileLockUnavailableError: this Python has no file lock")
    assert "MemoryTokenStore or RedisTokenStore" in lines[2]


def test_cli_login_profile_and_sessions_without_fcntl(live_server: str, tmp_path: Path) -> None:
    env = _env(tmp_path, emulate_msvcrt=True)
    env["PAYSDK_BASE_URL"] = live_server
    config = tmp_path / "config"

    def paysdk_cli(*args: str, input: str | None = None) -> str:
        return _python(env, "-m", "paysdk_cli", "-o", "json", *args, input=input)

    created = json.loads(
        paysdk_cli("sandbox", "clients", "create", "--slug", "win-shop", "--save-profile", "--show-secrets")
    )
    paysdk_cli("login", "--token-stdin", "--client", "win-shop", input=created["sandboxToken"] + "\n")
    paysdk_cli("wallet", "login")
    with paysdk.Client(environment=paysdk.Environment.local(live_server)) as sandbox:
        sandbox.sandbox.create_user("win-shop", "ana", "ana@example.com", "password-1")
    paysdk_cli("users", "login", "--username", "ana", "--password-stdin", input="password-1\n")

    profiles = json.loads((config / "profiles.json").read_text())["profiles"]
    assert profiles["default"]["client"] == "win-shop"
    private = [p for p in config.rglob("*") if p.is_file()]
    assert {p.name for p in private} >= {"profiles.json", "credentials.json"}
    assert all(_mode(p) == 0o600 for p in private), [(p.name, oct(_mode(p))) for p in private]


def test_the_package_declares_the_platforms_it_runs_on() -> None:
    pyproject = tomllib.loads((SRC.parent / "pyproject.toml").read_text(encoding="utf-8"))
    classifiers = set(pyproject["project"]["classifiers"])
    assert {
        "Operating System :: POSIX :: Linux",
        "Operating System :: MacOS",
        "Operating System :: Microsoft :: Windows",
    } <= classifiers
