"""Every public operation of ``/openapi.json`` is reached from the SDK (sync and async), from the CLI and
from the docs, or is left out on purpose with a reason; the table of it all (``docs/coverage.md``) is
current. The mapping lives in the families' registrations (``paysdk.server.families``); this test checks
it against the served document, the real client classes (each mapped method, called with valid
arguments on a recording transport, sends the operation it is mapped to) and the real ``paysdk``
command tree.

What counts as a section in the docs: the operation's path, as served or relative to its address (the
wallet's ``/rest`` left out, as ``docs/wallet.md`` writes it), quoted in backticks in a page of ``docs/``
other than the generated table, every SDK method's name in ``docs/sdk.md`` or ``docs/wallet.md``, and
every CLI command in ``docs/cli.md``.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from fastapi import FastAPI

import paysdk
from paysdk.resources._registry import FAMILIES as SDK_FAMILIES
from paysdk.server import create_app
from paysdk.server.families import FAMILIES, Family, Left, Reach, check_families, family_of, route_paths
from paysdk_cli.main import app as cli_app
from sdk_coverage import public_methods

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SCRIPT = ROOT / "scripts" / "coverage_table.py"
_METHODS = ("get", "put", "post", "delete", "patch", "options", "head", "trace")
#: The addresses' prefixes (paysdk._environment) a doc page may leave out of a path.
_ADDRESS_PREFIXES = ("/rest", "/cms/rest")


@pytest.fixture(scope="module")
def openapi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The document the real server serves."""
    application: FastAPI = create_app(
        f"sqlite:///{tmp_path_factory.mktemp('coverage') / 'server.db'}", start_ticker=False
    )

    async def fetch() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            response = await client.get("/openapi.json")
            assert response.status_code == 200
            document: dict[str, Any] = response.json()
            return document

    import asyncio

    try:
        yield asyncio.run(fetch())
    finally:
        application.state.paysdk.db.dispose()


def _operations(document: dict[str, Any]) -> list[str]:
    return [
        f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method in item
        if method in _METHODS
    ]


def _reaches() -> dict[str, tuple[Family, Reach]]:
    found: dict[str, tuple[Family, Reach]] = {}
    for family in FAMILIES:
        for key, reach in family.operations.items():
            assert key not in found, f"{key} is mapped by {found[key][0].name} and {family.name}"
            found[key] = (family, reach)
    return found


def test_every_public_operation_is_mapped_by_its_family_and_nothing_else(openapi: dict[str, Any]) -> None:
    check_families()  # no family registers a route outside its prefixes (or anything else inconsistent)
    operations = _operations(openapi)
    assert len(operations) > 30
    reaches = _reaches()
    for operation in operations:
        method, _, path = operation.partition(" ")
        family = family_of(path)
        assert family is not None, f"{operation} is under no registered prefix"
        assert family.public, f"{operation} is documented but {family.name} is not public"
        assert operation in family.operations, (
            f"{operation}: no SDK method / CLI command mapping in the {family.name} registration "
            "(paysdk.server.families; see docs/architecture.md, Adding an API family)"
        )
        assert any(m == method and p == path for m, p, _ in route_paths(family)), operation
    stale = sorted(set(reaches) - set(operations))
    assert not stale, f"mapped operations the server does not serve: {stale}"
    for family in FAMILIES:
        if not family.public:
            assert not family.operations, f"{family.name} is not in /openapi.json: it maps no operation"


def _client_methods() -> dict[str, dict[str, Any]]:
    """kind -> dotted name -> the function, for the real ``Client`` and ``AsyncClient``."""
    result: dict[str, dict[str, Any]] = {}
    for kind in ("sync", "async"):
        result[kind] = {name: getattr(cls, attr) for (cls, attr), name in public_methods(kind).items()}
    return result


def test_every_operation_has_an_sdk_method_on_both_clients_or_a_reason() -> None:
    methods = _client_methods()
    for key, (family, reach) in _reaches().items():
        assert bool(reach.sdk) != bool(reach.no_sdk), f"{key}: give SDK methods or the reason there is none"
        for name in reach.sdk:
            assert name.split(".")[0] in family.sdk_resources, (
                f"{key}: {name} is not a {family.name} resource"
            )
            for kind in ("sync", "async"):
                function = methods[kind].get(name)
                assert function is not None, f"{key}: {name} is no public method of the {kind} client"
                assert inspect.iscoroutinefunction(function) is (kind == "async"), f"{kind} {name}"


def test_every_server_family_names_registered_sdk_families() -> None:
    """A registration's ``sdk_resources`` are client attributes of THE SDK family registry
    (``paysdk.resources._registry``, D512), and every registered SDK family serves one server family."""
    registered = [entry.attribute for entry in SDK_FAMILIES]
    named = [name for family in FAMILIES for name in family.sdk_resources]
    unknown = [f"{f.name}: {name}" for f in FAMILIES for name in f.sdk_resources if name not in registered]
    assert unknown == [], "sdk_resources not in paysdk.resources._registry.FAMILIES"
    assert sorted(named) == sorted(registered), "each SDK family serves exactly one server family"


def _command(path: str) -> tuple[Any, list[str]]:
    """The click command a ``paysdk`` command path names, and the options the path ends with."""
    root = typer.main.get_command(cli_app)
    words = path.split()
    options = [word for word in words if word.startswith("-")]
    command: Any = root
    context: Any = None
    for word in (word for word in words if not word.startswith("-")):
        assert hasattr(command, "get_command"), f"paysdk {path}: {word!r} after a command that is no group"
        context = command.make_context(
            command.name or "paysdk", ["--help"], parent=context, resilient_parsing=True
        )
        found = command.get_command(context, word)
        assert found is not None, f"paysdk {path}: no command {word!r}"
        command = found
    assert not hasattr(command, "get_command"), f"paysdk {path} is a group, not a command"
    return command, options


def test_every_operation_has_a_cli_command_or_a_reason() -> None:
    for key, (family, reach) in _reaches().items():
        assert bool(reach.cli) != bool(reach.no_cli), f"{key}: give CLI commands or the reason there is none"
        for path in reach.cli:
            assert path.split()[0] in family.cli_groups, f"{key}: paysdk {path} is not a {family.name} group"
            command, options = _command(path)
            declared = {option for param in command.params for option in getattr(param, "opts", ())}
            for option in options:
                assert option in declared, f"{key}: paysdk {path}: no option {option}"


def test_the_reasons_are_the_listed_ones() -> None:
    listed = {value for name, value in vars(Left).items() if not name.startswith("_")}
    for key, (_, reach) in _reaches().items():
        for reason in (reach.no_sdk, reach.no_cli):
            if reason is not None:
                assert reason in listed, f"{key}: give the reason as a paysdk.server.families.Left constant"
    # The three left out on purpose by the issue are among them, with their reason.
    assert {Left.PAGE, Left.CVV, Left.PROCESSOR_WEBHOOK} <= listed
    reaches = _reaches()
    assert reaches["GET /rest/cards/{cardId}/cvv"][1].no_cli == Left.CVV
    assert all(
        reach.no_sdk == reach.no_cli == Left.PAGE for k, (_, reach) in reaches.items() if "/checkout" in k
    )


def _docs_text(*names: str) -> str:
    pages = [DOCS / name for name in names] if names else sorted(DOCS.glob("*.md"))
    return "\n".join(page.read_text(encoding="utf-8") for page in pages if page.name != "coverage.md")


def _mentioned(path: str, text: str) -> bool:
    forms = [path] + [path[len(prefix) :] for prefix in _ADDRESS_PREFIXES if path.startswith(prefix + "/")]
    return any(re.search(r"`(?:[A-Z]+ )?" + re.escape(form) + r"[`\s?]", text) for form in forms)


def _cli_documented(command: str, text: str) -> bool:
    """A synopsis line of docs/cli.md (``paysdk cards show|block CARD_ID ...``) names the command, with
    the options its path ends with."""
    words = command.split()
    names = [word for word in words if not word.startswith("-")]
    options = [word for word in words if word.startswith("-")]
    for line in text.splitlines():
        tokens = line.strip().split()
        if tokens[:1] != ["paysdk"] or len(tokens) < len(names) + 1:
            continue
        *groups, leaves = tokens[1 : len(names) + 1]
        if groups == names[:-1] and names[-1] in leaves.split("|"):
            rest = " ".join(tokens[len(names) + 1 :])
            if all(re.search(re.escape(option) + r"\b", rest) for option in options):
                return True
    return False


def test_every_operation_has_a_section_in_the_docs() -> None:
    every_page, sdk_pages, cli_page = _docs_text(), _docs_text("sdk.md", "wallet.md"), _docs_text("cli.md")
    missing: list[str] = []
    for key, (_, reach) in _reaches().items():
        _, _, path = key.partition(" ")
        if not _mentioned(path, every_page):
            missing.append(f"{key}: its path in backticks")
        for name in reach.sdk:
            if not re.search(r"\b" + re.escape(name.rpartition(".")[2]) + r"\b", sdk_pages):
                missing.append(f"{key}: SDK method {name} in docs/sdk.md or docs/wallet.md")
        for command in reach.cli:
            if not _cli_documented(command, cli_page):
                missing.append(f"{key}: a synopsis line of paysdk {command} in docs/cli.md")
    assert not missing, "operations without a section in the docs:\n" + "\n".join(missing)


def test_the_docs_mention_checks_what_it_should() -> None:
    assert _mentioned("/rest/cards/{cardId}", "| GET | `/cards/{cardId}` | x |")
    assert not _mentioned("/rest/cards/{cardId}", "| POST | `/cards/{cardId}/block` | x |")
    assert _mentioned("/transactions", "see `POST /transactions` above")
    assert not _mentioned("/transactions", "see `/transactions-hook` above")
    synopsis = (
        "paysdk cards show|block CARD_ID\npaysdk permissions list [--card-id C]\npaysdk users otp --verify"
    )
    assert _cli_documented("cards block", synopsis)
    assert not _cli_documented("cards alias", synopsis)
    assert _cli_documented("permissions list --card-id", synopsis)
    assert not _cli_documented("permissions list --user-id", synopsis)
    assert _cli_documented("users otp --verify", synopsis)


def test_docs_coverage_md_is_current() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    table = (DOCS / "coverage.md").read_text(encoding="utf-8")
    for key in _reaches():
        assert f"`{key}`" in table


def test_the_check_fails_when_the_table_is_stale(tmp_path: Path) -> None:
    stale = tmp_path / "coverage.md"
    stale.write_text("# stale\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--output", str(stale)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "coverage.md is stale" in result.stderr
    written = subprocess.run(
        [sys.executable, str(SCRIPT), "--output", str(stale)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert written.returncode == 0, written.stderr
    assert stale.read_text(encoding="utf-8") == (DOCS / "coverage.md").read_text(encoding="utf-8")


# ------------------------------------------------------- each SDK method sends its mapped operation


class _Sent(Exception):
    """Raised by the recording transport once the operation's request is seen: nothing is answered."""


_PAIR = {
    "data": {
        "accessToken": "a.b.c",
        "refreshToken": "d.e.f",
        "tokenType": "Bearer",
        "expiresIn": 3600,
        "refreshExpiresIn": 86400,
    }
}
#: Argument values by parameter name, each valid for the SDK's own checks.
_ARGUMENTS: dict[str, Any] = {
    "amount": Decimal("10.50"),
    "user_id": "+50255550123",
    "channel": "wa",
    "client": "shop",
    "private_key": "11111111-1111-4111-8111-111111111111",
    "public_key": "22222222-2222-4222-8222-222222222222",
    "uid": "0190aaaa-0000-7000-8000-000000000001",
    "processor": "akisiQR",
    "username": "ana",
    "password": "pw-1",
    "email": "ana@example.com",
    "otp": "123456",
    "new_password": "pw-2",
    "confirm_password": "pw-2",
    "token": "tok_1",
    "start_date": "2026-01-01",
    "end_date": "2026-01-31",
    "card_id": "crd_1",
    "client_id": "shop",
    "alias": "main",
    "pin": "1234",
    "view_token": "view_1",
    "from_card_id": "crd_1",
    "to_card_id": "crd_2",
    "permissions": ["checkCard"],
    "permission_id": "prm_1",
    "should_create_subscription": False,
    "sub_uid": "sub_1",
    "subscription_id": "sub_1",
    "file": b"subscriptionId,amount,reference\nsub_1,1.00,r-1\n",
    "partner_id": "acme",
    "cardholder_id": "usr_1",
    "batch_id": "bat_1",
    "affiliation": "1234567890",
    "csv_file": b"settlementDate,paymentId,amount,currency\n2026-01-05,tpm_1,1.00,GTQ\n",
    "report_id": "rcr_1",
    "page": 2,
    "part": paysdk.read_charges_csv(b"subscriptionId,amount,reference\nsub_1,1.00,r-1\n").parts[0],
    "currency": "GTQ",  # terminal payments
    "terminal_id": "POS-1",
    "card_number": "4242424242424242",
    "expiry_month": 12,
    "expiry_year": 2030,
    "payment_id": "tpm_000000000000000000000001",
    "business": {"legal_name": "Sol S.A.", "tax_id": "1234567-8"},
    "contact": {"name": "Ana", "email": "ana@example.com"},
    "country": "GT",
    "channels": ["wa"],
    "currencies": ["GTQ"],
    "lead_id": "lead_1",
}
#: Arguments of one method that differ from :data:`_ARGUMENTS` (by method name), optional ones included.
_PER_METHOD: dict[str, dict[str, Any]] = {
    "upload_document": {"file": b"%PDF-1.4\n", "file_name": "deed.pdf"},
    "lookup": {"external_id": "EMP-1"},  # backoffice.cardholders.lookup: one of external_id, email
}


def _template(key: str) -> tuple[str, re.Pattern[str], int]:
    method, _, path = key.partition(" ")
    pattern = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$")
    return method, pattern, len([part for part in path.split("/") if part and "{" not in part])


def _operation_of(method: str, path: str) -> str | None:
    """The mapped operation a request reaches: the matching template with the most literal segments."""
    best: tuple[int, str] | None = None
    for key in _reaches():
        wanted, pattern, literal = _template(key)
        if wanted == method and pattern.match(path) and (best is None or literal > best[0]):
            best = (literal, key)
    return None if best is None else best[1]


def _arguments(function: Any, session: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if name == "self" or parameter.default is not inspect.Parameter.empty:
            continue
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:  # the per-call options
            continue
        values[name] = session if name == "session" else _ARGUMENTS[name]
    if "filename" in inspect.signature(function).parameters:  # bytes need a name that tells their kind
        values["filename"] = "file.csv"
    values.update(_PER_METHOD.get(function.__name__, {}))
    return values


def _resolve(client: Any, name: str) -> Any:
    target = client
    for part in name.split("."):
        target = getattr(target, part)
    return target


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_every_sdk_method_sends_the_operation_it_is_mapped_to(kind: str) -> None:
    """Each mapped SDK method, called with valid arguments, sends a request that the server routes to
    the operation the registration maps it to (the application login, when one comes first, answered)."""
    import asyncio

    from paysdk.contracts.wallet import TokenPair

    seen: list[tuple[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path))
        if request.url.path in ("/rest/auth/login", "/cms/rest/app/auth/login", "/cms/rest/app/users/login"):
            return httpx.Response(200, json=_PAIR)
        raise _Sent

    environment = paysdk.Environment.local("http://testserver")
    wallet = paysdk.WalletCredentials("shop", bytes(32))
    backoffice = paysdk.BackofficeCredentials(
        "shop", bytes(32), user=paysdk.BackofficeUser("op@example.com", "pw")
    )
    session = paysdk.UserSession.from_pair(TokenPair.model_validate(_PAIR["data"]), now=0)
    reached: dict[str, str | None] = {}
    names = [(key, name) for key, (_, reach) in _reaches().items() for name in reach.sdk]
    assert len(names) > 30
    for key, name in names:
        seen.clear()
        if kind == "sync":
            with paysdk.Client(
                merchant_token="t",
                environment=environment,
                wallet=wallet,
                backoffice=backoffice,
                transport=httpx.MockTransport(handler),
            ) as client:
                method = _resolve(client, name)
                with contextlib.suppress(_Sent, paysdk.PaySDKError):
                    method(**_arguments(method, session))
        else:

            async def run(name: str = name) -> None:
                async with paysdk.AsyncClient(
                    merchant_token="t",
                    environment=environment,
                    wallet=wallet,
                    backoffice=backoffice,
                    transport=httpx.MockTransport(handler),
                ) as client:
                    method = _resolve(client, name)
                    with contextlib.suppress(_Sent, paysdk.PaySDKError):
                        await method(**_arguments(method, session))

            asyncio.run(run())
        assert seen, f"{kind} {name} sent nothing"
        reached[name] = _operation_of(*seen[-1])
        assert reached[name] == key, f"{kind} {name} sent {seen[-1]}, which is {reached[name]}, not {key}"
