"""The seed file: its checks (every problem names its entry and field), loading it on SQLite and
PostgreSQL, reset restoring it, and ``paysdk serve --seed``."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

import paysdk
from paysdk import _json
from paysdk.contracts.seed import SeedError, SeedFile, parse_seed, read_seed
from paysdk.server.seed import install_seed
from paysdk.server.wallet_tables import WalletCardRow, WalletMovementRow, WalletUserRow
from paysdk.testing import SandboxServer
from paysdk.testing._ready import free_port, http_ok, wait_ready

TOKEN = "ab" * 32
KEY = "GS9iWYId25yxE2URxA0fYb6YbkQi2Hnj80NAUC60jVw="
JSON_TYPE = {"Content-Type": "application/json"}


def _seed() -> dict[str, Any]:
    return {
        "merchants": [
            {
                "slug": "shop",
                "sandboxToken": TOKEN,
                "signingPrivateKey": KEY,
                "hookPrivateKey": "hp",
                "hookPublicKey": "hq",
            },
            {"slug": "other", "currencies": ["USD"]},
        ],
        "users": [
            {
                "id": "usr_ana",
                "merchant": "shop",
                "username": "ana",
                "email": "Ana@Example.com",
                "password": "secret-pass",
            }
        ],
        "cards": [
            {"id": "crd_main", "merchant": "shop", "holder": "ana", "balance": Decimal("250.1234")},
            {"id": "crd_stock", "merchant": "shop"},
        ],
    }


# ----------------------------------------------------------------------------------- the file's checks


def test_a_valid_seed_parses_with_exact_money() -> None:
    seed = parse_seed(_seed())
    assert [m.slug for m in seed.merchants] == ["shop", "other"]
    assert seed.cards[0].balance == Decimal("250.1234")
    assert "hp" not in repr(seed.merchants[0])
    assert TOKEN not in repr(seed.merchants[0])
    assert "secret-pass" not in repr(seed.users[0])
    for shown in (str(seed), repr(seed), str(seed.merchants[0]), str(seed.users[0])):
        assert TOKEN not in shown
        assert KEY not in shown
        assert "secret-pass" not in shown
        assert "'hp'" not in shown


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda s: s["merchants"][0].update(sandboxTokn=TOKEN), "merchants[0].sandboxTokn: Extra inputs"),
        (
            lambda s: s["merchants"][0].update(sandboxToken="xyz"),
            "merchants[0].sandboxToken: String should match",
        ),
        (lambda s: s["merchants"].append({"slug": "shop"}), "merchants[2].slug: 'shop' is listed twice"),
        (lambda s: s["users"][0].update(merchant="nobody"), "users[0].merchant: no merchant 'nobody'"),
        (lambda s: s["users"][0].update(email="not-an-email"), "users[0].email"),
        (lambda s: s["users"][0].update(password="short"), "users[0].password"),
        (lambda s: s["cards"][0].update(holder="bob"), "cards[0].holder: no user 'bob' of merchant 'shop'"),
        (
            lambda s: s["cards"][0].update(balance=Decimal("1.00001")),
            "cards[0].balance: Value error, has more than 4",
        ),
        (lambda s: s["cards"][1].update(type="virtual"), "cards[1].holder: a virtual card needs a holder"),
        (lambda s: s["cards"][1].update(id="crd_main"), "cards[1].id: 'crd_main' is listed twice"),
        (lambda s: s["merchants"][0].update(signingPrivateKey="AAAA"), "merchants[0].signingPrivateKey"),
        (lambda s: s["merchants"][0].pop("hookPublicKey"), "merchants[0].hookPublicKey: give hookPrivateKey"),
        (lambda s: s.update(extra=[]), "extra: Extra inputs are not permitted"),
    ],
)
def test_a_bad_seed_names_the_entry_and_field(change: Any, expected: str) -> None:
    data = _seed()
    change(data)
    with pytest.raises(SeedError) as caught:
        parse_seed(data, "seed.json")
    message = str(caught.value)
    assert message.startswith("seed.json: ")
    assert expected in message
    assert TOKEN not in message
    assert KEY not in message
    assert "secret-pass" not in message


def test_a_seed_must_be_an_object() -> None:
    with pytest.raises(SeedError, match="must be an object"):
        parse_seed([1, 2])


def test_read_seed_json_and_yaml(tmp_path: Path) -> None:
    (tmp_path / "seed.json").write_bytes(_json.dumps(_seed()))
    assert read_seed(tmp_path / "seed.json").cards[0].balance == Decimal("250.1234")
    (tmp_path / "seed.yaml").write_text(
        "merchants:\n  - slug: shop\n    amountMax: 5000.10\ncards:\n  - merchant: shop\n    balance: 0.1\n",
        encoding="utf-8",
    )
    seed = read_seed(tmp_path / "seed.yaml")
    assert seed.merchants[0].amount_max == Decimal("5000.10")  # exact, never through float
    assert seed.cards[0].balance == Decimal("0.1")


def test_read_seed_errors_name_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SeedError, match=r"missing\.json: cannot read the seed file"):
        read_seed(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{nope", encoding="utf-8")
    with pytest.raises(SeedError, match=r"bad\.json: not valid JSON"):
        read_seed(tmp_path / "bad.json")
    (tmp_path / "bad.yml").write_text("a: [", encoding="utf-8")
    with pytest.raises(SeedError, match=r"bad\.yml: not valid YAML"):
        read_seed(tmp_path / "bad.yml")
    monkeypatch.setitem(sys.modules, "yaml", None)  # PyYAML absent
    with pytest.raises(SeedError, match=r"reading YAML needs PyYAML \(pip install pyyaml\)"):
        read_seed(tmp_path / "bad.yml")


# ------------------------------------------------------------------------- loading it (both databases)


def _rows(app: FastAPI) -> dict[str, Any]:
    def read(session: Any) -> dict[str, Any]:
        cards = {c.id: (c.holder_id, c.type, c.status, c.balance) for c in session.query(WalletCardRow)}
        users = {u.id: (u.username, u.email) for u in session.query(WalletUserRow)}
        movements = session.query(WalletMovementRow).count()
        return {"cards": cards, "users": users, "movements": movements}

    result: dict[str, Any] = app.state.paysdk.call(read)
    return result


async def _link(client: httpx.AsyncClient, token: str, slug: str) -> httpx.Response:
    body = {"amount": Decimal("10.00"), "userId": "+50255550123", "channel": "wa", "client": slug, "ads": []}
    return await client.post("/transactions", content=_json.dumps(body), headers={"Authorization": token})


async def test_seed_loads_and_reset_restores_it(app: FastAPI, asgi_client: httpx.AsyncClient) -> None:
    state = install_seed(app, parse_seed(_seed()))
    shop = (await asgi_client.get("/_sandbox/clients/shop")).json()
    assert shop["sandboxToken"] == TOKEN
    assert shop["signingPublicKey"] == state.merchant("shop").signing_public_key
    other = (await asgi_client.get("/_sandbox/clients/other")).json()
    assert other["currencies"] == ["USD"]
    assert other["sandboxToken"] == state.merchant("other").sandbox_token  # generated once
    assert (await _link(asgi_client, TOKEN, "shop")).status_code == 200
    seeded = _rows(app)
    assert seeded["users"] == {"usr_ana": ("ana", "ana@example.com")}
    assert seeded["cards"] == {
        "crd_main": ("usr_ana", "virtual", "active", 2501234),
        "crd_stock": (None, "physical", "inactive", 0),
    }
    assert seeded["movements"] == 1

    # Change everything a test would: a new merchant, a charge on the seeded card, the clock.
    created = await asgi_client.post("/_sandbox/clients", content=b'{"slug": "extra"}', headers=JSON_TYPE)
    assert created.status_code == 201
    charge = await asgi_client.post(
        "/_sandbox/cards/crd_main/charges", content=b'{"amount": 50, "capture": true}', headers=JSON_TYPE
    )
    assert charge.status_code in (200, 201), charge.text
    assert _rows(app)["cards"]["crd_main"][3] == 2001234
    await asgi_client.post("/_sandbox/clock/advance", content=b'{"seconds": 86400}', headers=JSON_TYPE)

    assert (await asgi_client.post("/_sandbox/reset")).status_code == 200

    assert (await asgi_client.get("/_sandbox/clients/extra")).status_code == 404
    again = (await asgi_client.get("/_sandbox/clients/shop")).json()
    assert (again["sandboxToken"], again["signingPublicKey"]) == (TOKEN, shop["signingPublicKey"])
    assert (await asgi_client.get("/_sandbox/clients/other")).json()["sandboxToken"] == other["sandboxToken"]
    assert _rows(app) == seeded
    assert (await asgi_client.get("/_sandbox/clock")).json()["offsetSeconds"] == 0
    assert (await _link(asgi_client, TOKEN, "shop")).status_code == 200


async def test_a_seed_the_server_refuses_names_the_field_and_changes_nothing(
    app: FastAPI, asgi_client: httpx.AsyncClient
) -> None:
    kept = await asgi_client.post("/_sandbox/clients", content=b'{"slug": "kept"}', headers=JSON_TYPE)
    assert kept.status_code == 201
    data = _seed()
    data["merchants"][1]["timezone"] = "Mars/Olympus"
    with pytest.raises(SeedError, match=r"^merchants\[1\]\.timezone: is not a known IANA timezone$"):
        install_seed(app, parse_seed(data))
    assert (await asgi_client.get("/_sandbox/clients/kept")).status_code == 200
    assert (await asgi_client.get("/_sandbox/clients/shop")).status_code == 404
    assert app.state.paysdk.after_reset == []


async def test_a_card_in_a_currency_the_merchant_lacks_is_refused(app: FastAPI) -> None:
    data = _seed()
    data["cards"].append({"merchant": "other", "currency": "GTQ"})
    with pytest.raises(SeedError, match=r"cards\[2\]\.currency: GTQ is not a currency of 'other'"):
        install_seed(app, parse_seed(data))


# --------------------------------------------------------------------------------- paysdk serve --seed


def _serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paysdk_cli", "serve", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_serve_refuses_a_bad_seed_file_before_starting(tmp_path: Path) -> None:
    data = json.loads(_json.dumps(_seed()))
    data["users"][0]["merchant"] = "nobody"
    (tmp_path / "seed.json").write_text(json.dumps(data), encoding="utf-8")
    db = tmp_path / "s.db"
    done = _serve("--seed", "seed.json", "--db", f"sqlite:///{db}", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "users[0].merchant: no merchant 'nobody' in merchants" in done.stderr
    assert "Traceback" not in done.stderr
    assert not db.exists()  # nothing was started


def test_serve_refuses_a_seed_only_the_server_can_check(tmp_path: Path) -> None:
    data = json.loads(_json.dumps(_seed()))
    data["merchants"][0]["callbackUrl"] = "ftp://example.com/cb"
    (tmp_path / "seed.json").write_text(json.dumps(data), encoding="utf-8")
    done = _serve("--seed", "seed.json", "--db", f"sqlite:///{tmp_path / 's.db'}", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "merchants[0].callbackUrl: must be an http(s) URL" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_empty_seed_is_valid() -> None:
    seed = SeedFile()
    assert (seed.merchants, seed.users, seed.cards) == ([], [], [])


def test_serve_loads_the_seed_and_reset_restores_it(tmp_path: Path) -> None:
    (tmp_path / "seed.json").write_bytes(_json.dumps(_seed()))
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "paysdk_cli",
            "serve",
            "--port",
            str(port),
            "--seed",
            "seed.json",
            "--db",
            f"sqlite:///{tmp_path / 's.db'}",
        ],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(http_ok(f"{base}/_sandbox/health"), what="paysdk serve --seed", process=proc)
        assert httpx.get(f"{base}/_sandbox/clients/shop", timeout=60).json()["sandboxToken"] == TOKEN
        httpx.post(f"{base}/_sandbox/clients", content=b'{"slug": "extra"}', headers=JSON_TYPE, timeout=60)
        assert httpx.post(f"{base}/_sandbox/reset", timeout=60).status_code == 200
        assert httpx.get(f"{base}/_sandbox/clients/extra", timeout=60).status_code == 404
        assert httpx.get(f"{base}/_sandbox/clients/shop", timeout=60).json()["sandboxToken"] == TOKEN
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_sandbox_server_with_a_seed_on_each_database(db_url: str) -> None:
    with SandboxServer(database_url=db_url, seed=_seed()) as server:
        assert server.seeded_merchant("shop").sandbox_token == TOKEN
        generated = server.seeded_merchant("other").sandbox_token
        assert generated == server.seeded.merchant("other").sandbox_token
        server.create_merchant(slug="extra")
        server.clock.advance(3600)
        server.reset()
        with pytest.raises(paysdk.NotFoundError):
            server.sandbox.get_client("extra")
        assert server.seeded_merchant("other").sandbox_token == generated
        assert server.clock.state().offset_seconds == 0
        with server.client(TOKEN) as client:
            link = client.payment_links.create(
                amount=Decimal("10.00"), user_id="+50255550123", channel="wa", client="shop"
            )
        assert server.sandbox.transaction(link.uid).client == "shop"
