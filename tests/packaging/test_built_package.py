"""The package as a merchant gets it: built with the standard front end, installed into clean venvs.

``python -m build`` makes the sdist and, from it, the wheel (as CI and a release would). The wheel is
then installed from it into fresh virtual environments, its dependencies from the package index (pip's
cache makes a second run quick):

- with no extras: ``import paysdk`` works, none of the server's or command line's libraries is installed
  or imported, and the ``paysdk`` command prints one line naming ``pip install 'paysdk-toolkit[cli]'``;
- as ``paysdk-toolkit[cli]``: ``paysdk --help``, ``paysdk --version``, a profile saved by ``paysdk login
  --no-verify`` (offline), and ``paysdk serve`` naming the ``server`` extra in one line;
- as ``paysdk-toolkit[cli,server]``: ``paysdk --help``, ``paysdk --version``, then ``paysdk serve`` on a free
  port, a sandbox client and one payment link made with the installed command, and a clean stop;
- as ``paysdk-toolkit[testing]``: a merchant's own test file on the plugin's fixtures runs green with that
  environment's pytest (the server in process).

Each environment is also run with ``fcntl`` made unimportable (a ``sitecustomize`` on ``PYTHONPATH`` puts
a meta-path finder first that refuses it, as on Windows; Linux has no ``msvcrt`` either): ``import
paysdk`` and a ``paysdk.Client`` work, the private files' lock is ``none`` and taking it raises
``FileLockUnavailableError`` naming the stores to use instead (D400); where the CLI is installed, ``paysdk
login`` still saves the profile and the token 0600 (writing them takes no lock); the ``[testing]`` suite
passes as well.
"""

from __future__ import annotations

import json
import signal
import stat
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import httpx
import pytest

from paysdk._version import DISTRIBUTION, __version__
from paysdk.testing._ready import free_port, http_ok, wait_ready

from ._build import INSTALL_TIMEOUT, Dist, clean_env, make_venv

pytestmark = pytest.mark.heavy  # minutes of builds and installs: run first (tests/conftest.py)

#: The distribution's name as wheel and sdist file names spell it (PEP 427/625: ``-`` becomes ``_``).
FILE_NAME = DISTRIBUTION.replace("-", "_")

#: What a bare ``pip install paysdk-toolkit`` must bring: the SDK's own dependencies, nothing more.
#: No phone library: the SDK checks userId's E.164 shape itself, the server its country (D525).
SDK_REQUIREMENTS = {"httpx", "httpcore", "pydantic", "pynacl"}
#: Distributions only an extra may bring.
EXTRA_DISTRIBUTIONS = {
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "psycopg",
    "psycopg-binary",
    "segno",
    "platformdirs",
    "python-multipart",
    "python-calamine",
    "phonenumberslite",  # the server's country check of userId (D525)
    "phonenumbers",
    "sse-starlette",  # the server's event streams (D600)
    "typer",
    "click",
    "rich",
    "keyring",
    "redis",
    "pytest",
}
#: Their top-level modules, which ``import paysdk`` must not load.
EXTRA_MODULES = (
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "psycopg",
    "segno",
    "platformdirs",
    "multipart",
    "python_calamine",
    "phonenumbers",
    "typer",
    "click",
    "rich",
    "keyring",
    "redis",
    "pytest",
)


def _installed(venv: Path) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=clean_env(),
    )
    return {entry["name"].lower().replace("_", "-") for entry in json.loads(proc.stdout)}


def _run(
    bin_dir: Path, *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env=env or clean_env(),
    )


#: A ``sitecustomize`` that makes ``fcntl`` unimportable, as on Windows (D400).
_HIDE_FCNTL = """
import importlib.abc
import sys

sys.modules.pop("fcntl", None)


class _NoFcntl(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "fcntl":
            raise ModuleNotFoundError("No module named 'fcntl'", name="fcntl")
        return None


sys.meta_path.insert(0, _NoFcntl())
"""

#: ``import paysdk``, a client, and what the private files' lock is and does.
_SDK_AND_LOCK = """
import json, sys
try:
    import fcntl  # noqa: F401
except ImportError:
    has_fcntl = False
else:
    has_fcntl = True
import paysdk
from paysdk import _files
with paysdk.Client(merchant_token="t" * 64, environment=paysdk.Environment.local("http://127.0.0.1:9")):
    pass
try:
    with paysdk.FileTokenStore(sys.argv[1]).lock("app"):
        locked = "locked"
except OSError as exc:
    locked = f"{type(exc).__name__}: {exc}"
print(json.dumps({"fcntl": has_fcntl, "kind": _files.LOCK_KIND, "lock": locked, "file": paysdk.__file__}))
"""


def _without_fcntl(tmp_path: Path) -> dict[str, str]:
    """The clean environment plus a ``sitecustomize`` that makes ``fcntl`` unimportable."""
    site = tmp_path / "no-fcntl"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_HIDE_FCNTL, encoding="utf-8")
    return clean_env(PYTHONPATH=str(site))


def _check_sdk_with_and_without_fcntl(venv: Path, tmp_path: Path) -> None:
    """In ``venv``: the SDK imports and makes a client with ``fcntl`` and without; the lock is
    ``fcntl.flock``, or, with neither ``fcntl`` nor ``msvcrt``, refused with the stores to use (D400)."""
    bin_dir = venv / "bin"
    for hidden in (False, True):
        env = _without_fcntl(tmp_path) if hidden else clean_env()
        store = tmp_path / f"tokens-{hidden}" / "tokens.json"
        proc = _run(bin_dir, "python", "-c", _SDK_AND_LOCK, str(store), cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        assert result["file"].startswith(str(venv))
        if hidden:
            assert (result["fcntl"], result["kind"]) == (False, "none")
            assert result["lock"].startswith("FileLockUnavailableError: this Python has no file lock")
            assert "MemoryTokenStore or RedisTokenStore" in result["lock"]
        else:
            assert (result["fcntl"], result["kind"], result["lock"]) == (True, "fcntl", "locked")


#: Where ``paysdk login`` points the profile: nothing listens there (``--no-verify``: nothing is asked).
_OFFLINE_PROFILE = ("--base-url", "http://127.0.0.1:9", "--client", "packaged-shop")


def _check_profile_save_with_and_without_fcntl(bin_dir: Path, tmp_path: Path) -> None:
    """``paysdk login --no-verify`` (no server needed) saves a profile and its token 0600 with ``fcntl``
    and without; ``paysdk profiles list`` reads them back."""
    token = "ab" * 32
    for hidden in (False, True):
        config = tmp_path / f"config-{'no-fcntl' if hidden else 'fcntl'}"
        env = {
            **(_without_fcntl(tmp_path) if hidden else clean_env()),
            "PAYSDK_CONFIG_DIR": str(config),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",  # the 0600 file fallback
        }
        for name in ("PAYSDK_PROFILE", "PAYSDK_BASE_URL", "PAYSDK_MERCHANT_TOKEN", "PAYSDK_CONTROL_TOKEN"):
            env.pop(name, None)
        login = subprocess.run(
            [str(bin_dir / "paysdk"), "login", "--token-stdin", "--no-verify", *_OFFLINE_PROFILE],
            input=token + "\n",
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
            env=env,
        )
        assert login.returncode == 0, (hidden, login.stderr)
        assert "Logged in: profile 'default'" in login.stderr
        assert "Traceback" not in login.stderr
        assert token not in login.stdout + login.stderr
        profiles = json.loads((config / "profiles.json").read_text(encoding="utf-8"))["profiles"]
        assert profiles["default"] == {"base_url": "http://127.0.0.1:9", "client": "packaged-shop"}
        files = sorted(p for p in config.rglob("*") if p.is_file())
        assert {p.name for p in files} == {"profiles.json", "credentials.json"}
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files), files
        listed = _run(bin_dir, "paysdk", "-o", "json", "profiles", "list", cwd=tmp_path, env=env)
        assert listed.returncode == 0, listed.stderr
        [row] = json.loads(listed.stdout)
        assert (row["profile"], row["client"], row["tokenSource"]) == ("default", "packaged-shop", "file")
        assert token not in listed.stdout


# --------------------------------------------------------------------------------------------------
# what the two files hold


def test_the_wheel_holds_both_typed_packages_the_command_and_no_tests(dist: Dist) -> None:
    assert dist.wheel.name == f"{FILE_NAME}-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = wheel.namelist()
        entry_points = wheel.read(f"{FILE_NAME}-{__version__}.dist-info/entry_points.txt").decode()
    tops = {name.split("/", 1)[0] for name in names}
    assert tops == {"paysdk", "paysdk_cli", f"{FILE_NAME}-{__version__}.dist-info"}
    for required in (
        "paysdk/py.typed",
        "paysdk_cli/py.typed",
        "paysdk/__init__.py",
        "paysdk/_version.py",
        "paysdk/_client.py",
        "paysdk/server/app.py",
        "paysdk_cli/_entry.py",
        "paysdk_cli/main.py",
    ):
        assert required in names, required
    # no test suite (the only top-level entries are the two packages; paysdk/server/services/test_cards.py
    # is the server's table of test card numbers, not a test)
    assert not [name for name in names if "/tests/" in name or name.endswith("conftest.py")]
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
    assert "paysdk = paysdk_cli._entry:run" in entry_points


def test_the_wheel_metadata_has_the_one_version_and_the_extras(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as wheel:
        metadata = Parser().parsestr(wheel.read(f"{FILE_NAME}-{__version__}.dist-info/METADATA").decode())
    assert metadata["Version"] == __version__
    assert metadata["Name"] == DISTRIBUTION
    # no `dev` extra: the repository's own tools are a dependency group, not published (D425)
    assert set(metadata.get_all("Provides-Extra") or []) == {"cli", "server", "redis", "testing", "all"}
    requires = metadata.get_all("Requires-Dist") or []
    unconditional = {_dist_name(req) for req in requires if "extra ==" not in req}
    assert unconditional == SDK_REQUIREMENTS
    by_extra: dict[str, set[str]] = {}
    for req in requires:
        if "extra ==" in req:
            extra = req.rsplit("extra ==", 1)[1].strip().strip("'\"")
            by_extra.setdefault(extra, set()).add(_dist_name(req))
    assert by_extra["cli"] == {"typer", "rich", "keyring", "platformdirs"}
    assert {"fastapi", "uvicorn", "sqlalchemy", "psycopg", "phonenumberslite", "sse-starlette"} <= by_extra[
        "server"
    ]
    assert "phonenumbers" not in by_extra["server"]  # the lite package, without the geodata (D423)
    assert by_extra["redis"] == {"redis"}
    assert by_extra["testing"] == by_extra["server"] | {"pytest"}
    assert by_extra["all"] == by_extra["server"] | by_extra["cli"] | by_extra["redis"] | {"pytest"}


def _dist_name(requirement: str) -> str:
    name = requirement.split(";", 1)[0]
    for stop in "<>=![ (~":
        name = name.split(stop, 1)[0]
    return name.strip().lower()


def test_the_sdist_holds_the_sources_and_docs_and_no_tests(dist: Dist) -> None:
    assert dist.sdist.name == f"{FILE_NAME}-{__version__}.tar.gz"
    prefix = f"{FILE_NAME}-{__version__}/"
    with tarfile.open(dist.sdist) as sdist:
        names = [name.removeprefix(prefix) for name in sdist.getnames()]
    for required in (
        "pyproject.toml",
        "README.md",
        "CHANGELOG.md",
        "mkdocs.yml",
        "scripts/griffe_rest.py",  # mkdocs.yml's griffe extension (D480)
        "PKG-INFO",
        "src/paysdk/py.typed",
        "src/paysdk/_version.py",
        "src/paysdk_cli/_entry.py",
        "docs/packaging.md",
        "docs/reference/client.md",
    ):
        assert required in names, required
    tops = {name.split("/", 1)[0] for name in names if name}
    # (hatchling always adds the .gitignore it read the exclusions from)
    assert tops == {
        "src",
        "docs",
        "scripts",
        "pyproject.toml",
        "README.md",
        "CHANGELOG.md",
        "mkdocs.yml",
        "PKG-INFO",
        ".gitignore",
    }
    assert not [name for name in names if "/tests/" in name or name.endswith("conftest.py")]
    assert not [name for name in names if name.startswith((".venv", ".site", ".git/"))]
    assert [name for name in names if name.startswith("scripts/")] == ["scripts/griffe_rest.py"]


# --------------------------------------------------------------------------------------------------
# installed


def test_a_bare_install_imports_the_sdk_alone_and_the_command_names_its_extra(
    dist: Dist, tmp_path: Path
) -> None:
    venv = tmp_path / "bare"
    bin_dir = make_venv(venv, str(dist.wheel))

    installed = _installed(venv)
    assert DISTRIBUTION in installed
    assert installed >= SDK_REQUIREMENTS
    assert sorted(installed & EXTRA_DISTRIBUTIONS) == []

    check = (
        "import json, sys\n"
        "import paysdk, paysdk.callbacks\n"
        "from paysdk import AsyncClient, Client, Environment, FileTokenStore, WalletCredentials\n"
        "client = Client(merchant_token='t' * 64, environment=Environment.local('http://127.0.0.1:9'))\n"
        "client.close()\n"
        f"extras = {EXTRA_MODULES!r}\n"
        "print(json.dumps({'file': paysdk.__file__, 'version': paysdk.__version__,\n"
        "    'loaded': sorted(m for m in sys.modules if m.partition('.')[0] in extras)}))\n"
    )
    proc = _run(bin_dir, "python", "-c", check, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["file"].startswith(str(venv))  # the installed wheel, not this source tree
    assert result["version"] == __version__
    assert result["loaded"] == []

    for args in ((), ("--help",), ("links", "create", "--amount", "1")):
        command = _run(bin_dir, "paysdk", *args, cwd=tmp_path)
        assert command.returncode == 1, args
        assert command.stdout == ""
        lines = command.stderr.splitlines()
        assert len(lines) == 1, command.stderr
        assert f"pip install '{DISTRIBUTION}[cli]'" in lines[0]
        assert "Traceback" not in command.stderr

    _check_sdk_with_and_without_fcntl(venv, tmp_path)


def test_the_cli_install_saves_a_profile_offline_and_names_the_server_extra(
    dist: Dist, tmp_path: Path
) -> None:
    venv = tmp_path / "cli"
    bin_dir = make_venv(venv, f"{dist.wheel}[cli]")
    installed = _installed(venv)
    assert {"typer", "rich", "keyring", "platformdirs"} <= installed
    assert not installed & {"fastapi", "uvicorn", "sqlalchemy", "pytest", "phonenumberslite", "sse-starlette"}
    env = clean_env(PAYSDK_CONFIG_DIR=str(tmp_path / "config"))

    help_ = _run(bin_dir, "paysdk", "--help", cwd=tmp_path, env=env)
    assert help_.returncode == 0, help_.stderr
    assert "login" in help_.stdout
    assert "serve" in help_.stdout
    version = _run(bin_dir, "paysdk", "--version", cwd=tmp_path, env=env)
    assert version.returncode == 0, version.stderr
    assert version.stdout == f"paysdk {__version__}\n"

    _check_profile_save_with_and_without_fcntl(bin_dir, tmp_path)

    # with the cli extra but not the server's, `paysdk serve` names the server extra in one line
    serve = _run(bin_dir, "paysdk", "serve", "--port", str(free_port()), cwd=tmp_path, env=env)
    assert serve.returncode == 1
    lines = serve.stderr.splitlines()
    assert len(lines) == 1, serve.stderr
    assert f"pip install '{DISTRIBUTION}[server]'" in lines[0]
    assert "Traceback" not in serve.stderr

    _check_sdk_with_and_without_fcntl(venv, tmp_path)


def test_the_cli_and_server_install_serves_and_makes_a_payment_link(dist: Dist, tmp_path: Path) -> None:
    venv = tmp_path / "cli-server"
    bin_dir = make_venv(venv, f"{dist.wheel}[cli,server]")
    assert {"typer", "fastapi", "uvicorn", "sqlalchemy"} <= _installed(venv)
    env = clean_env(
        PAYSDK_CONFIG_DIR=str(tmp_path / "config"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )
    for name in ("PAYSDK_PROFILE", "PAYSDK_BASE_URL", "PAYSDK_MERCHANT_TOKEN", "PAYSDK_CONTROL_TOKEN"):
        env.pop(name, None)

    help_ = _run(bin_dir, "paysdk", "--help", cwd=tmp_path, env=env)
    assert help_.returncode == 0, help_.stderr
    assert "serve" in help_.stdout
    assert "links" in help_.stdout
    assert "https://paysdk-toolkit.readthedocs.io/cli/" in help_.stdout  # not docs/cli.md (D427)
    assert "docs/" not in help_.stdout
    version = _run(bin_dir, "paysdk", "--version", cwd=tmp_path, env=env)
    assert version.returncode == 0, version.stderr
    assert version.stdout == f"paysdk {__version__}\n"

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            str(bin_dir / "paysdk"),
            "serve",
            "--port",
            str(port),
            "--db",
            f"sqlite:///{tmp_path / 'server.db'}",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_healthy(server, url)
        created = _run(
            bin_dir,
            "paysdk",
            "--base-url",
            url,
            "-o",
            "json",
            "sandbox",
            "clients",
            "create",
            "--slug",
            "packaged-shop",
            "--show-secrets",
            cwd=tmp_path,
            env=env,
        )
        assert created.returncode == 0, created.stderr
        token = json.loads(created.stdout)["sandboxToken"]

        link = _run(
            bin_dir,
            "paysdk",
            "--base-url",
            url,
            "-o",
            "json",
            "links",
            "create",
            "--amount",
            "10.50",
            "--user-id",
            "+50255550123",
            "--channel",
            "wa",
            "--client",
            "packaged-shop",
            cwd=tmp_path,
            env={**env, "PAYSDK_MERCHANT_TOKEN": token},
        )
        assert link.returncode == 0, link.stderr
        made = json.loads(link.stdout)
        assert made["uid"]
        assert token not in link.stdout
        checkout = httpx.get(made["URL"], timeout=10)  # the wire name (spec)
        assert checkout.status_code == 200
        assert "10.50" in checkout.text
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            _, err = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            _, err = server.communicate()
    assert server.returncode == 0, err[-3000:]
    assert "Traceback" not in err

    _check_profile_save_with_and_without_fcntl(bin_dir, tmp_path)
    _check_sdk_with_and_without_fcntl(venv, tmp_path)


#: A merchant's own test file, as docs/testing.md shows: the plugin's fixtures, nothing else imported.
_MERCHANT_TESTS = """
from decimal import Decimal


def test_a_paid_link_sends_its_callback(paysdk_client, paysdk_merchant, paysdk_callbacks):
    link = paysdk_client.payment_links.create(
        amount=Decimal("12.50"), user_id="+50255550123", channel="wa", client=paysdk_merchant.slug
    )
    assert paysdk_client.sandbox.pay(link.uid, "4242424242424242").status == "approved"
    callback = paysdk_callbacks.wait_for_uid(link.uid)
    assert callback.amount == Decimal("12.50")


def test_each_test_gets_a_fresh_merchant_on_a_reset_server(paysdk_client, paysdk_merchant, paysdk_clock):
    link = paysdk_client.payment_links.create(
        amount=Decimal("1.00"), user_id="+50255550123", channel="sms", client=paysdk_merchant.slug
    )
    before = paysdk_clock.now()
    paysdk_clock.advance(60)
    assert (paysdk_clock.now() - before).total_seconds() >= 60
    assert paysdk_client.sandbox.transaction(link.uid).status == "pending"
"""


def test_the_testing_install_runs_a_merchants_suite_on_the_plugin(dist: Dist, tmp_path: Path) -> None:
    venv = tmp_path / "testing"
    bin_dir = make_venv(venv, f"{dist.wheel}[testing]")
    installed = _installed(venv)
    assert {"pytest", "fastapi", "uvicorn", "sqlalchemy"} <= installed
    assert not installed & {"typer", "rich", "keyring"}  # no command line
    suite = tmp_path / "shop-tests"
    suite.mkdir()
    (suite / "test_checkout.py").write_text(_MERCHANT_TESTS, encoding="utf-8")

    for hidden in (False, True):
        env = _without_fcntl(tmp_path) if hidden else clean_env()
        run = _run(bin_dir, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=suite, env=env)
        assert run.returncode == 0, (hidden, run.stdout[-3000:], run.stderr[-3000:])
        assert "2 passed" in run.stdout, run.stdout

    _check_sdk_with_and_without_fcntl(venv, tmp_path)


def _wait_healthy(server: subprocess.Popen[str], url: str, timeout: float | None = None) -> None:
    """The suite's one readiness wait (D541) on ``paysdk serve`` of a clean venv."""
    wait_ready(http_ok(f"{url}/_sandbox/health"), what="paysdk serve", process=server, timeout=timeout)


def test_pipx_runs_the_server_with_no_python_project_around(dist: Dist, tmp_path: Path) -> None:
    """docs/packaging.md's one command for a merchant's CI:
    ``pipx run --spec 'paysdk-toolkit[cli,server]' paysdk serve``, here with the built wheel as the spec,
    from an empty directory, pipx's home in ``tmp_path``."""
    workdir = tmp_path / "ci-job"
    workdir.mkdir()
    env = clean_env(
        PIPX_HOME=str(tmp_path / "pipx-home"),
        PIPX_BIN_DIR=str(tmp_path / "pipx-bin"),
        PIPX_MAN_DIR=str(tmp_path / "pipx-man"),
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    spec = f"{dist.wheel}[cli,server]"
    # --no-compile: as make_venv installs (the modules the test imports compile as they load).
    command = [sys.executable, "-m", "pipx", "run", "--pip-args=--no-compile", "--spec", spec, "paysdk"]
    server = subprocess.Popen(
        [*command, "serve", "--port", str(port), "--db", f"sqlite:///{tmp_path / 'ci.db'}"],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_healthy(server, url, timeout=INSTALL_TIMEOUT)  # the first run installs the package
        created = httpx.post(f"{url}/_sandbox/clients", json={"slug": "ci-shop"}, timeout=10)
        assert created.status_code == 201, created.text
        listed = subprocess.run(
            [*command, "--base-url", url, "-o", "json", "sandbox", "clients", "show", "ci-shop"],
            capture_output=True,
            text=True,
            cwd=workdir,
            env={**env, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"},
            timeout=120,
        )
        assert listed.returncode == 0, listed.stderr
        assert json.loads(listed.stdout)["slug"] == "ci-shop"
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            _, err = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            _, err = server.communicate()
    assert server.returncode == 0, err[-3000:]
    assert list(workdir.iterdir()) == []  # nothing written where the job runs
