#!/usr/bin/env python3
"""Scaffold a new API family end to end: ``python scripts/new_family.py <name>``.

``<name>`` is a lower_case Python name (``toy``, ``gift_cards``). The scaffold is a family with one
resource, ``items``, and two operations: ``POST /<name>/items`` (create: a name and an amount) and
``GET /<name>/items/{itemId}`` (read one), reached by ``client.<name>.create``/``.get`` and by
``paysdk <name> create``/``show``. It writes, each from a template below:

* the contract ``src/paysdk/contracts/<name>.py`` (the wire models);
* the SDK resource ``src/paysdk/resources/<name>.py`` (operation builders + ``Async<Name>`` between the
  unasync markers), registered in ``src/paysdk/resources/_registry.py``;
* the server's tables ``src/paysdk/server/<name>_tables.py``, service ``server/services/<name>.py``,
  router ``server/routers/<name>.py``, its registration in ``server/families.py``
  (:func:`server_registration`: the one place that knows how a family registers with the server), an
  alembic revision ``server/migrations/versions/v<NNNN>_<name>.py`` with the snapshot of the head it
  follows in ``migrations/snapshots.py``;
* the CLI group ``src/paysdk_cli/commands/<name>.py`` and its line in ``paysdk_cli/main.py``; an entry
  per command in ``tests/cli/cli_invocations.py``;
* tests: ``tests/e2e/test_<name>_sdk.py`` (both clients against the real server) and
  ``tests/cli/test_cli_<name>.py``;
* docs: a section of ``docs/sdk.md``, a section of ``docs/cli.md``, the class in
  ``docs/reference/resources.md``;

then runs the generators (``sdk_registry.py``, ``unasync.py``, ``cli_overview.py``,
``coverage_table.py``, ``schema_snapshot.py``) and ``ruff`` (import order, format) on what it touched.
The result passes ``make lint`` and its tests with no hand edit; then fill in the family's own logic
(docs/architecture.md, "Adding an API family"). ``tests/foundation/test_new_family_scaffold.py`` runs
this script on a copy of the repository.
"""

from __future__ import annotations

import argparse
import importlib.util
import keyword
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
_NAME = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*\Z")


@dataclass(frozen=True)
class Names:
    """The spellings of a family's name: ``gift_cards`` -> ``GiftCards``, ``gift-cards``, ``Gift cards``."""

    snake: str

    @property
    def camel(self) -> str:
        return "".join(part.capitalize() for part in self.snake.split("_"))

    @property
    def kebab(self) -> str:
        return self.snake.replace("_", "-")

    @property
    def title(self) -> str:
        return self.snake.replace("_", " ").capitalize()

    @property
    def upper(self) -> str:
        return self.snake.upper()

    def fill(self, template: str) -> str:
        """``template`` with the placeholders (``__name__``, ``__Name__``, ``__NAME__``, ``__kebab__``,
        ``__Title__``) replaced."""
        return (
            template.replace("__name__", self.snake)
            .replace("__Name__", self.camel)
            .replace("__NAME__", self.upper)
            .replace("__kebab__", self.kebab)
            .replace("__Title__", self.title)
        )


# ------------------------------------------------------------------------------------------ templates

CONTRACT = '''"""__Title__: the wire models of ``POST /__kebab__/items`` and
``GET /__kebab__/items/{itemId}``, shared by the SDK (``client.__name__``) and the reference server.
Scaffolded by ``scripts/new_family.py``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from paysdk.contracts.common import DecimalNumber, Money, WireModel

__all__ = ["ITEM_NAME_MAX", "__Name__Item", "__Name__ItemCreate"]

#: The longest item name.
ITEM_NAME_MAX = 64


class __Name__ItemCreate(WireModel):
    """The body of ``POST /__kebab__/items``."""

    name: Annotated[str, Field(min_length=1, max_length=ITEM_NAME_MAX)]
    amount: Money


class __Name__Item(WireModel):
    """An item, as the server answers it."""

    item_id: str
    name: str
    amount: DecimalNumber
    created_at: datetime
'''

RESOURCE = '''"""__Title__ (``client.__name__``): ``POST /__kebab__/items`` and
``GET /__kebab__/items/{itemId}``, with the merchant token. Scaffolded by ``scripts/new_family.py``."""

from __future__ import annotations

from decimal import Decimal
from typing import Unpack

from paysdk._pipeline import CallOptions, Operation, PostCallOptions, apply_call_options
from paysdk.contracts.__name__ import ITEM_NAME_MAX, __Name__Item
from paysdk.resources._base import AsyncEndpoint, AsyncResource, Endpoint, M, Resource
from paysdk.resources._validation import check_amount, check_str, path_segment

__all__ = ["Async__Name__", "__Name__", "create_operation", "get_operation"]

_PATH = "/__kebab__/items"


def create_operation(
    *, name: str, amount: Decimal | int | str, **options: Unpack[PostCallOptions]
) -> Operation[__Name__Item]:
    """Create an item (``POST /__kebab__/items``, ``201``).

    ``name``: 1 to 64 characters; ``amount``: positive, at most 2 decimals (``Decimal``, ``int`` or a
    decimal string). Returns the :class:`~paysdk.contracts.__name__.__Name__Item`. Raises
    :class:`~paysdk.ValidationError` naming the argument before sending.
    """
    body = {"name": check_str(name, "name", max_length=ITEM_NAME_MAX), "amount": check_amount(amount)}
    op = Operation(
        method="POST",
        path=_PATH,
        auth="raw",
        json=body,
        parse=__Name__Item.model_validate,
        expected=frozenset({201}),
    )
    return apply_call_options(op, options)


def get_operation(item_id: str, **options: Unpack[CallOptions]) -> Operation[__Name__Item]:
    """Read item ``item_id`` (``GET /__kebab__/items/{itemId}``); :class:`~paysdk.NotFoundError` when
    there is none (or it is another client's)."""
    op = Operation(
        method="GET",
        path=f"{_PATH}/{path_segment(item_id, 'item_id')}",
        auth="raw",
        parse=__Name__Item.model_validate,
    )
    return apply_call_options(op, options)


# unasync: begin
class Async__Name__(AsyncResource[M]):
    """__Title__ (``client.__name__``): create an item, read it."""

    create = AsyncEndpoint(create_operation)
    get = AsyncEndpoint(get_operation)


# unasync: end


# unasync: generated begin
# unasync: generated end
'''

TABLES = '''"""Storage of __Title__, on the ``Base`` of :mod:`paysdk.server.core_tables`. Scaffolded by
``scripts/new_family.py``; a change of these tables needs a migration (docs/start-and-reset.md)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from paysdk.server.core_tables import Base

__all__ = ["__NAME___RESET_ORDER", "__Name__ItemRow"]


class __Name__ItemRow(Base):
    """An item of a client; money as integer cents (D18)."""

    __tablename__ = "__name___items"

    item_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime]


#: The tables ``/_sandbox/reset`` empties, children first.
__NAME___RESET_ORDER: tuple[type[Base], ...] = (__Name__ItemRow,)
'''

SERVICE = '''"""__Title__: the logic and storage of ``POST /__kebab__/items`` and
``GET /__kebab__/items/{itemId}``. Scaffolded by ``scripts/new_family.py``."""

from __future__ import annotations

import secrets
from datetime import datetime
from decimal import Decimal

from sqlalchemy.orm import Session

from paysdk.contracts.__name__ import __Name__Item, __Name__ItemCreate
from paysdk.server.__name___tables import __Name__ItemRow
from paysdk.server.auth import Credentials, EnvironmentName, authenticate_token
from paysdk.server.bodies import parse_json_object, validate
from paysdk.server.errors import APIProblem

__all__ = ["create_item", "get_item"]


def _view(row: __Name__ItemRow) -> __Name__Item:
    return __Name__Item(
        item_id=row.item_id,
        name=row.name,
        amount=Decimal(row.amount_cents).scaleb(-2),
        created_at=row.created_at,
    )


def create_item(
    session: Session, now: datetime, environment: EnvironmentName, credentials: Credentials, raw: bytes
) -> __Name__Item:
    """``POST /__kebab__/items``: an item of the token's client."""
    client = authenticate_token(session, credentials, environment)
    body = validate(__Name__ItemCreate, parse_json_object(raw))
    row = __Name__ItemRow(
        item_id="itm_" + secrets.token_hex(12),
        client_id=client.id,
        name=body.name,
        amount_cents=int(body.amount.scaleb(2)),
        created_at=now,
    )
    session.add(row)
    session.flush()
    return _view(row)


def get_item(
    session: Session, environment: EnvironmentName, credentials: Credentials, item_id: str
) -> __Name__Item:
    """``GET /__kebab__/items/{itemId}``: ``404`` naming ``itemId`` for an unknown item, or another
    client's."""
    client = authenticate_token(session, credentials, environment)
    row = session.get(__Name__ItemRow, item_id)
    if row is None or row.client_id != client.id:
        raise APIProblem.not_found("Item", "itemId")
    return _view(row)
'''

ROUTER = '''"""__Title__ on ``{base_url}``: ``POST /__kebab__/items`` and
``GET /__kebab__/items/{itemId}``. HTTP only; the logic is in :mod:`paysdk.server.services.__name__`.
Scaffolded by ``scripts/new_family.py``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from starlette.responses import Response

from paysdk.contracts.__name__ import __Name__Item, __Name__ItemCreate
from paysdk.server.routers._common import answer, route
from paysdk.server.routers._transactions import Db, MerchantToken
from paysdk.server.services import __name__ as service

__all__ = ["ITEMS_PATH", "ITEM_PATH", "router"]

router = APIRouter(tags=["__kebab__"])

ITEMS_PATH = "/__kebab__/items"
ITEM_PATH = "/__kebab__/items/{itemId}"

ItemId = Annotated[str, Path(alias="itemId", description="The item's id.", max_length=40)]


@router.post(
    ITEMS_PATH,
    **route(
        "Create an item",
        auth="merchant",
        body=__Name__ItemCreate,
        answer=__Name__Item,
        status=201,
        errors={
            400: "Malformed JSON body (ownCode null).",
            409: "A missing or invalid field (5000, naming it).",
        },
    ),
)
async def create_item(request: Request, db: Db, merchant: MerchantToken) -> Response:
    """Create an item of the merchant token's client."""
    raw = await request.body()
    item = await db.run(service.create_item, db.session, db.now, db.context.environment, merchant, raw)
    return answer(item, 201)


@router.get(
    ITEM_PATH,
    **route(
        "Read an item",
        auth="merchant",
        answer=__Name__Item,
        errors={404: "No such item (ownCode null)."},
    ),
)
async def get_item(item_id: ItemId, db: Db, merchant: MerchantToken) -> Response:
    """One item of the merchant token's client."""
    item = await db.run(service.get_item, db.session, db.context.environment, merchant, item_id)
    return answer(item)
'''

CLI = '''"""``paysdk __kebab__``: __Title__ (``POST /__kebab__/items``,
``GET /__kebab__/items/{itemId}``), with the profile's merchant token. Scaffolded by
``scripts/new_family.py``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit
from paysdk_cli._params import parse_amount

__all__ = ["COLUMNS", "app"]

app = new_app("__Title__: create an item, show it.")

#: What the table shows of an item (``-o json`` prints every field).
COLUMNS = ["itemId", "name", "amount", "createdAt"]


def _show(ctx: typer.Context, item: Any) -> None:
    emit(state(ctx).output, item.to_wire(), columns=COLUMNS, title=f"Item {item.item_id}")


@app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Option("--name", help="The item's name.")],
    amount: Annotated[str, typer.Option("--amount", help="Amount as a decimal, e.g. 10.50 (exact).")],
) -> None:
    """Create an item and print it."""
    value = parse_amount(amount)
    with open_client(state(ctx)) as sdk:
        item = sdk.__name__.create(name=name, amount=value)
    _show(ctx, item)


@app.command("show")
def show(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(help="The item's id (itm_...).", metavar="ITEM_ID")],
) -> None:
    """Print one item."""
    with open_client(state(ctx)) as sdk:
        item = sdk.__name__.get(item_id)
    _show(ctx, item)
'''

E2E_TEST = '''"""__Title__ through the SDK against the REAL reference server: async in process and sync over a
socket, on SQLite and PostgreSQL. Scaffolded by ``scripts/new_family.py``."""

from __future__ import annotations

from decimal import Decimal

import pytest

import paysdk
from paysdk.contracts.__name__ import __Name__Item

from .conftest import Maker, call


@pytest.mark.covers("__name__.create", "__name__.get")
async def test_an_item_is_created_and_read_back(make: Maker) -> None:
    sandbox = make()
    merchant = await call(sandbox.sandbox.create_client())
    client = make(merchant_token=merchant.sandbox_token)
    item = await call(client.__name__.create(name="first", amount="12.50"))
    assert isinstance(item, __Name__Item)
    assert item.amount == Decimal("12.50")
    again = await call(client.__name__.get(item.item_id))
    assert again == item
    with pytest.raises(paysdk.NotFoundError):
        await call(client.__name__.get("itm_missing"))


async def test_bad_arguments_are_refused_before_sending(make: Maker) -> None:
    client = make(merchant_token="0" * 64)
    with pytest.raises(paysdk.ValidationError, match="amount"):
        await call(client.__name__.create(name="x", amount=1.5))
    with pytest.raises(paysdk.ValidationError, match="name"):
        await call(client.__name__.create(name="", amount="1.00"))
'''

CLI_TEST = '''"""End to end: ``paysdk __kebab__ create|show`` against the reference server on a
real socket, with the profile's stored merchant token. Scaffolded by ``scripts/new_family.py``."""

from __future__ import annotations

import json

import pytest

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")


def test_create_then_show_and_an_unknown_item() -> None:
    made = run_cli("sandbox", "clients", "create", "--slug", "cli-__kebab__", "--save-profile")
    assert made.exit_code == 0, made.stderr
    created = run_cli("-o", "json", "__kebab__", "create", "--name", "first", "--amount", "12.50")
    assert created.exit_code == 0, created.stderr
    item = json.loads(created.stdout)
    assert item["amount"] == 12.5
    shown = run_cli("-o", "json", "__kebab__", "show", item["itemId"])
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout) == item
    missing = run_cli("-o", "json", "__kebab__", "show", "itm_missing")
    assert missing.exit_code == 6, missing.stderr
'''

MIGRATION = '''"""__Title__'s tables (scaffolded by ``scripts/new_family.py``).

Frozen once released: a later change is a new revision.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "__REV__"
down_revision: str | None = "__DOWN__"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``__name___items``."""
    op.create_table(
        "__name___items",
        sa.Column("item_id", sa.String(40), primary_key=True),
        sa.Column("client_id", sa.Integer(), sa.ForeignKey("clients.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix___name___items_client_id", "__name___items", ["client_id"])
'''

SDK_DOCS = """## __Title__

`client.__name__` takes the merchant token (scaffolded by `scripts/new_family.py`):
`client.__name__.create(name=..., amount=...)` creates an item (`POST /__kebab__/items`) and
`client.__name__.get(item_id)` reads it (`GET /__kebab__/items/{itemId}`).

"""

CLI_DOCS = """## __Title__

### `__kebab__ create | show`

```sh
paysdk __kebab__ create --name NAME --amount AMOUNT [-o table|json]
paysdk __kebab__ show ITEM_ID [-o table|json]
```

Both send the profile's merchant token; an unknown item exits 6.

"""

CLI_INVOCATIONS = """    "__kebab__ create": Call(("--name", "first", "--amount", "1.00")),
    "__kebab__ show": Call(("itm_missing",), exit=6),
"""


def server_registration(names: Names) -> str:
    """THE template of a family's server registration (``server/families.py``): a ``Family(...)``
    constant. When the way families register with the server changes (hooks, another module), this
    function and :func:`register_server` are the two places of the scaffold to adapt."""
    return names.fill(
        """__NAME__ = Family(
    name="__name__",
    prefixes=("/__kebab__",),
    routers=(("", "paysdk.server.routers.__name__:router"),),
    tables=("paysdk.server.__name___tables:__NAME___RESET_ORDER",),
    sdk_resources=("__name__",),
    cli_groups=("__kebab__",),
    operations={
        "POST /__kebab__/items": _reach("__name__.create", "__kebab__ create"),
        "GET /__kebab__/items/{itemId}": _reach("__name__.get", "__kebab__ show"),
    },
)
"""
    )


# ------------------------------------------------------------------------------------------ edits


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    if text.count(old) != 1:
        raise SystemExit(f"{path.relative_to(ROOT)}: expected one {old!r} to edit, found {text.count(old)}")
    path.write_text(text.replace(old, new), encoding="utf-8")


def _write(path: Path, text: str) -> Path:
    if path.exists():
        raise SystemExit(f"{path.relative_to(ROOT)} exists already")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def register_server(names: Names) -> Path:
    """Insert :func:`server_registration` before ``FAMILIES`` of ``server/families.py`` and append the
    family to it (before the control plane, which stays last). The registration names the tables module by
    reference (the core imports no family, D550); :func:`register_layers` places that module in the
    families' layer of the import contracts."""
    path = SRC / "paysdk" / "server" / "families.py"
    _edit(
        path,
        "#: Every family the server serves, in registration order",
        server_registration(names) + "\n\n#: Every family the server serves, in registration order",
    )
    _edit(path, "    CONTROL_PLANE,\n)", f"    {names.upper},\n    CONTROL_PLANE,\n)")
    return path


def register_layers(names: Names) -> Path:
    """Place the family's tables module in the families' layer of the ``server-core`` import contract of
    ``pyproject.toml`` (the contract is exhaustive, D550) and let it import its contracts."""
    path = ROOT / "pyproject.toml"
    _edit(path, " : webhooks_tables : pages", f" : webhooks_tables : {names.snake}_tables : pages")
    _edit(
        path,
        '  "paysdk.server.webhooks_tables -> paysdk.contracts.**",\n',
        '  "paysdk.server.webhooks_tables -> paysdk.contracts.**",\n'
        f'  "paysdk.server.{names.snake}_tables -> paysdk.contracts.**",\n',
    )
    return path


def register_sdk(names: Names) -> Path:
    """Append the family to ``FAMILIES`` of ``resources/_registry.py``."""
    path = SRC / "paysdk" / "resources" / "_registry.py"
    module = f"paysdk.resources.{names.snake}"
    entry = f'    SdkFamily("{names.snake}", "{module}", "{names.camel}", "{names.title}"),\n'
    text = path.read_text(encoding="utf-8")
    start = text.index("FAMILIES: tuple[SdkFamily, ...] = (")
    end = text.index("\n)\n", start)
    path.write_text(text[: end + 1] + entry + text[end + 1 :], encoding="utf-8")
    return path


def register_cli(names: Names) -> Path:
    """Add the group to ``FAMILIES`` of ``paysdk_cli/main.py``, before ``sandbox``."""
    path = SRC / "paysdk_cli" / "main.py"
    module = f"paysdk_cli.commands.{names.snake}"
    line = f'    "{names.kebab}": ("{module}", "app", "{names.title}: create an item, show it."),\n'
    _edit(
        path,
        '    "sandbox": ("paysdk_cli.commands.sandbox"',
        line + '    "sandbox": ("paysdk_cli.commands.sandbox"',
    )
    return path


def add_migration(names: Names) -> list[Path]:
    """A new head revision creating the family's table, and the snapshot of the head it follows."""
    versions = SRC / "paysdk" / "server" / "migrations" / "versions"
    numbers = sorted(int(m.group(1)) for p in versions.glob("v*.py") if (m := re.match(r"v(\d{4})_", p.name)))
    down = f"{numbers[-1]:04d}"
    rev = f"{numbers[-1] + 1:04d}"
    migration = _write(
        versions / f"v{rev}_{names.snake}.py",
        names.fill(MIGRATION).replace("__REV__", rev).replace("__DOWN__", down),
    )
    # The head's schema, as the snapshot module holds it now (before schema_snapshot.py rewrites it).
    spec = importlib.util.spec_from_file_location(
        "_head_snapshot", SRC / "paysdk" / "server" / "schema_snapshot.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    namespace = vars(module)
    if namespace["REVISION"] != down:
        raise SystemExit(
            f"schema_snapshot.py records {namespace['REVISION']}, the head is {down}: run it first"
        )
    snapshots = SRC / "paysdk" / "server" / "migrations" / "snapshots.py"
    text = snapshots.read_text(encoding="utf-8")
    match = re.search(r"SNAPSHOTS: dict\[str, Tables\] = \{(.*)\}\n", text)
    if match is None:
        raise SystemExit("migrations/snapshots.py: no SNAPSHOTS line")
    block = f"#: Revision {down}.\n_R{down}: Tables = {namespace['TABLES']!r}\n\n"
    head = text[: match.start()]
    comment = "#: ``revision -> tables`` of every revision before the head.\n"
    head = head.removesuffix(comment)
    snapshots.write_text(
        head + block + comment + f'SNAPSHOTS: dict[str, Tables] = {{{match.group(1)}, "{down}": _R{down}}}\n',
        encoding="utf-8",
    )
    return [migration, snapshots]


def add_docs(names: Names) -> list[Path]:
    """The family's section in docs/sdk.md (before the control plane's) and docs/cli.md (before the
    design notes), and its class in the API reference."""
    docs = ROOT / "docs"
    _edit(docs / "sdk.md", "## Sandbox control plane\n", names.fill(SDK_DOCS) + "## Sandbox control plane\n")
    _edit(docs / "cli.md", "## Design notes\n", names.fill(CLI_DOCS) + "## Design notes\n")
    reference = docs / "reference" / "resources.md"
    text = reference.read_text(encoding="utf-8").rstrip("\n")
    reference.write_text(text + f"\n\n::: paysdk.resources.{names.snake}.{names.camel}\n", encoding="utf-8")
    return [docs / "sdk.md", docs / "cli.md", reference]


def add_invocations(names: Names) -> Path:
    """The CLI commands' entries in ``tests/cli/cli_invocations.py`` (before ``serve``, the last)."""
    path = ROOT / "tests" / "cli" / "cli_invocations.py"
    _edit(path, '    "serve": Call(', names.fill(CLI_INVOCATIONS) + '    "serve": Call(')
    return path


#: Sample values of the scaffold's SDK parameters for ``tests/foundation/test_coverage.py``, which calls
#: every SDK method with the values of its ``_ARGUMENTS`` (by parameter name).
COVERAGE_ARGUMENTS = {"name": '"first"', "item_id": '"itm_1"'}


def add_coverage_arguments() -> Path:
    """The scaffold's parameter names that ``_ARGUMENTS`` of ``tests/foundation/test_coverage.py``
    lacks, added with a sample value."""
    path = ROOT / "tests" / "foundation" / "test_coverage.py"
    text = path.read_text(encoding="utf-8")
    start = text.index("_ARGUMENTS: dict[str, Any] = {")
    end = text.index("\n}\n", start)
    missing = [
        f'    "{name}": {value},\n'
        for name, value in COVERAGE_ARGUMENTS.items()
        if f'\n    "{name}": ' not in text[start:end]
    ]
    path.write_text(text[: end + 1] + "".join(missing) + text[end + 1 :], encoding="utf-8")
    return path


def _run(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    subprocess.run(args, cwd=ROOT, check=True, env=env)  # noqa: S603


def scaffold(name: str) -> list[Path]:
    """Write and register family ``name``; the paths written or edited."""
    if not _NAME.match(name) or keyword.iskeyword(name) or name.startswith("with_"):
        raise SystemExit(f"{name!r}: give a lower_case name (letters, digits, single underscores)")
    if (SRC / "paysdk" / "contracts" / f"{name}.py").exists():
        raise SystemExit(f"family {name!r} exists already")
    names = Names(name)
    touched = [
        _write(SRC / "paysdk" / "contracts" / f"{name}.py", names.fill(CONTRACT)),
        _write(SRC / "paysdk" / "resources" / f"{name}.py", names.fill(RESOURCE)),
        _write(SRC / "paysdk" / "server" / f"{name}_tables.py", names.fill(TABLES)),
        _write(SRC / "paysdk" / "server" / "services" / f"{name}.py", names.fill(SERVICE)),
        _write(SRC / "paysdk" / "server" / "routers" / f"{name}.py", names.fill(ROUTER)),
        _write(SRC / "paysdk_cli" / "commands" / f"{name}.py", names.fill(CLI)),
        _write(ROOT / "tests" / "e2e" / f"test_{name}_sdk.py", names.fill(E2E_TEST)),
        _write(ROOT / "tests" / "cli" / f"test_cli_{name}.py", names.fill(CLI_TEST)),
        register_sdk(names),
        register_server(names),
        register_layers(names),
        register_cli(names),
        add_invocations(names),
        add_coverage_arguments(),
        *add_migration(names),
        *add_docs(names),
    ]
    python = sys.executable
    ruff = str(Path(python).with_name("ruff"))
    py_files = [str(path) for path in touched if path.suffix == ".py"]
    _run(ruff, "check", "--fix", "--select", "I", "--quiet", *py_files)
    _run(ruff, "format", "--quiet", *py_files)
    _run(python, "scripts/sdk_registry.py")
    _run(python, "scripts/unasync.py")
    _run(python, "scripts/schema_snapshot.py")
    _run(python, "scripts/cli_overview.py")
    _run(python, "scripts/coverage_table.py")
    return touched


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("name", help="the family's lower_case name (client attribute, module, CLI group)")
    args = parser.parse_args(argv)
    for path in scaffold(args.name):
        print(path.relative_to(ROOT))
    print("then: fill in the family's logic; docs/architecture.md, 'Adding an API family'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
