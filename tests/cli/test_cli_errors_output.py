"""Exit codes, error lines, table vs JSON output and exact amounts, against a mock API transport."""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from paysdk._redact import MASK

from .conftest import TOKEN, MockAPI, run_cli

LINK = [
    "links",
    "create",
    "--amount",
    "10.50",
    "--user-id",
    "+50255555555",
    "--channel",
    "wa",
    "--client",
    "acme",
]
LINK_ANSWER = {
    "uid": "u-1",
    "reference": "PL-ABCDEFGHJK",
    "URL": "http://127.0.0.1:8000/checkout/?orderId=u-1",
}
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYSDK_MERCHANT_TOKEN", TOKEN)


def _no_secret(*texts: str) -> None:
    for text in texts:
        assert TOKEN not in text


def test_links_create_json_prints_wire_fields_and_sends_exact_amount(mock_api: MockAPI) -> None:
    mock_api.body = LINK_ANSWER
    result = run_cli(
        "-o", "json", *LINK, "--custom-key", "order=42", "--custom-key", "note=a=b", "--external-id", "ext-1"
    )

    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == LINK_ANSWER
    sent = mock_api.requests[0]
    assert b'"amount":10.50' in sent.content  # the exact digits typed, never a float
    body = mock_api.json_body()
    assert body["amount"] == Decimal("10.50")
    assert body["customKeys"] == {"order": "42", "note": "a=b"}
    assert body["externalId"] == "ext-1"
    assert sent.url.path == "/transactions"
    assert str(sent.url).startswith("http://127.0.0.1:8000/")  # the documented local default
    _no_secret(result.stdout, result.stderr)


def test_json_is_the_default_when_stdout_is_not_a_terminal(mock_api: MockAPI) -> None:
    mock_api.body = LINK_ANSWER
    result = run_cli(*LINK)
    assert json.loads(result.stdout)["URL"] == LINK_ANSWER["URL"]


def test_links_create_table_prints_the_url(mock_api: MockAPI) -> None:
    mock_api.body = LINK_ANSWER
    result = run_cli("-o", "table", *LINK)

    assert result.exit_code == 0, result.stderr
    assert LINK_ANSWER["URL"] in result.stdout
    assert "PL-ABCDEFGHJK" in result.stdout
    assert not result.stdout.lstrip().startswith("{")


def test_base_url_option_and_env(mock_api: MockAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    mock_api.body = LINK_ANSWER
    assert run_cli("--base-url", "http://api.example.test:1234", *LINK).exit_code == 0
    assert mock_api.requests[-1].url.host == "api.example.test"
    monkeypatch.setenv("PAYSDK_BASE_URL", "http://env.example.test")
    assert run_cli(*LINK).exit_code == 0
    assert mock_api.requests[-1].url.host == "env.example.test"


def test_409_exits_6_with_own_code_and_field_details(mock_api: MockAPI) -> None:
    mock_api.status = 409
    mock_api.body = {
        "ownCode": 5000,
        "message": "Invalid request.",
        "details": [{"field": "channel", "message": "unknown channel"}],
    }
    result = run_cli(*LINK)

    assert result.exit_code == 6
    assert result.stderr.startswith("Error: HTTP 409 ownCode 5000: Invalid request.")
    assert "channel: unknown channel" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_400_amount_out_of_range_exits_6(mock_api: MockAPI) -> None:
    mock_api.status = 400
    mock_api.body = {"ownCode": 2003, "message": "Amount out of range.", "details": []}
    result = run_cli(*LINK)
    assert result.exit_code == 6
    assert "HTTP 400 ownCode 2003" in result.stderr


@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors_exit_4(mock_api: MockAPI, status: int) -> None:
    mock_api.status = status
    mock_api.body = {"ownCode": None, "message": "Unauthorized.", "details": []}
    result = run_cli(*LINK)

    assert result.exit_code == 4
    assert f"Error: HTTP {status}: Unauthorized." in result.stderr
    _no_secret(result.stdout, result.stderr)


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_exit_7(mock_api: MockAPI, status: int) -> None:
    mock_api.status = status
    mock_api.body = {"ownCode": None, "message": "Boom.", "details": []}
    result = run_cli(*LINK)
    assert result.exit_code == 7
    assert f"HTTP {status}" in result.stderr


@pytest.mark.parametrize("error", [httpx.ConnectError("connection refused"), httpx.ReadTimeout("timed out")])
def test_network_errors_exit_7(mock_api: MockAPI, error: Exception) -> None:
    mock_api.raise_error = error
    result = run_cli(*LINK)
    assert result.exit_code == 7
    assert result.stderr.startswith("Error: ")
    assert "Traceback" not in result.stderr


def test_off_contract_success_answer_is_not_a_connection_error(mock_api: MockAPI) -> None:
    mock_api.body = {"uid": "u1", "status": "approved"}  # a 200 without reference and URL
    result = run_cli(*LINK)
    assert result.exit_code == 7
    assert result.stderr.startswith("Error: the API answered HTTP 200 to POST /transactions, but the answer")
    assert "does not match the contract" in result.stderr
    assert "may have taken effect" in result.stderr
    assert "could not reach" not in result.stderr
    assert "Traceback" not in result.stderr
    assert len(mock_api.requests) == 1


def test_an_answer_over_the_size_cap_is_not_a_connection_error(mock_api: MockAPI) -> None:
    mock_api.handler = lambda request: httpx.Response(200, content=b" " * (16 * 1024 * 1024 + 1))
    result = run_cli(*LINK)
    assert result.exit_code == 7
    assert result.stderr.startswith("Error: the API's answer was too large: HTTP 200 answer to POST")
    assert "max_response_bytes" in result.stderr
    assert "could not reach" not in result.stderr


def test_verbose_shows_traceback_and_debug_lines_but_no_token(mock_api: MockAPI) -> None:
    mock_api.status = 500
    mock_api.body = {"ownCode": None, "message": "Boom.", "details": []}
    result = run_cli("-v", *LINK)

    assert result.exit_code == 7
    assert "Traceback" in result.stderr
    assert "debug paysdk_cli" in result.stderr
    _no_secret(result.stdout, result.stderr)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["links", "create", "--user-id", "+1", "--channel", "wa", "--client", "c"], "--amount"),
        (
            ["links", "create", "--amount", "ten", "--user-id", "+1", "--channel", "wa", "--client", "c"],
            "not a decimal number",
        ),
        (
            [
                "links",
                "create",
                "--amount",
                "1",
                "--user-id",
                "+1",
                "--channel",
                "wa",
                "--client",
                "c",
                "--custom-key",
                "novalue",
            ],
            "KEY=VALUE",
        ),
        (["-o", "xml", "links", "create"], "xml"),
        (["nope"], "nope"),
    ],
)
def test_usage_errors_exit_2(mock_api: MockAPI, args: list[str], needle: str) -> None:
    result = run_cli(*args)
    assert result.exit_code == 2
    assert needle in result.stderr
    assert mock_api.requests == []


def test_sdk_validation_error_is_usage_error_naming_the_option(mock_api: MockAPI) -> None:
    result = run_cli(
        "links", "create", "--amount", "0", "--user-id", "+50255555555", "--channel", "wa", "--client", "acme"
    )
    assert result.exit_code == 2
    assert "Error: invalid value for --amount" in result.stderr
    assert mock_api.requests == []


def test_alt_process_writes_png(mock_api: MockAPI, tmp_path: Path) -> None:
    uri = "data:image/png;base64," + base64.b64encode(PNG).decode()
    mock_api.body = {"data": {"type": "base64", "data": uri}}
    out = tmp_path / "qr.png"
    result = run_cli(
        "-o",
        "table",
        "alt",
        "process",
        "u-1",
        "--processor",
        "akisiQR",
        "--data-json",
        '{"a": 1.10}',
        "--qr-out",
        str(out),
    )

    assert result.exit_code == 0, result.stderr
    assert out.read_bytes() == PNG
    assert str(out) in result.stdout
    assert uri not in result.stdout  # the table shows the size only
    assert mock_api.json_body() == {"processor": "akisiQR", "data": {"a": Decimal("1.10")}}


def test_alt_process_qr_out_on_a_non_qr_rail_is_refused_before_sending(
    mock_api: MockAPI, tmp_path: Path
) -> None:
    mock_api.body = {"data": {"type": "reference", "data": "123456789012"}}
    result = run_cli("alt", "process", "u-1", "--processor", "pronet", "--qr-out", str(tmp_path / "x.png"))
    assert result.exit_code == 2
    assert "--qr-out" in result.stderr
    assert mock_api.requests == []


def test_alt_process_qr_rail_answering_no_image_leaves_no_file(mock_api: MockAPI, tmp_path: Path) -> None:
    mock_api.body = {"data": {"type": "url", "data": "https://pay.example/qr"}}
    result = run_cli("alt", "process", "u-1", "--processor", "akisiQR", "--qr-out", str(tmp_path / "x.png"))
    assert result.exit_code == 1
    assert "--qr-out" in result.stderr
    assert list(tmp_path.iterdir()) == []  # neither the PNG nor its temporary file


def test_alt_process_bad_data_json_is_usage_error(mock_api: MockAPI) -> None:
    result = run_cli("alt", "process", "u-1", "--processor", "akisiQR", "--data-json", "[1]")
    assert result.exit_code == 2
    assert "JSON object" in result.stderr


def test_sandbox_client_secrets_masked_unless_show_secrets(mock_api: MockAPI) -> None:
    client = {
        "slug": "acme",
        "amountMin": 1.00,
        "amountMax": 100000.00,
        "channels": ["wa"],
        "currencies": ["GTQ"],
        "paymentMethods": ["akisiQR"],
        "country": "GT",
        "timezone": "America/Guatemala",
        "callbackUrl": None,
        "callbackHeaderName": "X-Callback-Token",
        "callbackHeaderValue": "cbsecretcbsecretcbsecret",
        "threeDS": False,
        "sandboxToken": TOKEN,
        "productionToken": "f" * 64,
        "hookPrivateKey": "11111111-2222-3333-4444-555555555555",
        "hookPublicKey": "66666666-7777-8888-9999-000000000000",
    }
    mock_api.body = client
    secrets = [TOKEN, "f" * 64, "11111111-2222-3333-4444-555555555555", "cbsecretcbsecretcbsecret"]

    table = run_cli("-o", "table", "sandbox", "clients", "show", "acme")
    masked = run_cli("-o", "json", "sandbox", "clients", "show", "acme")
    table_show = run_cli("-o", "table", "sandbox", "clients", "show", "acme", "--show-secrets")
    shown = run_cli("-o", "json", "sandbox", "clients", "show", "acme", "--show-secrets")

    for result in (table, masked, table_show):
        assert result.exit_code == 0, result.stderr
        for secret in secrets:
            assert secret not in result.stdout
            assert secret not in result.stderr
    assert "acme" in table.stdout
    assert json.loads(masked.stdout)["sandboxToken"] == MASK
    assert json.loads(masked.stdout)["hookPublicKey"] == client["hookPublicKey"]
    assert "only applies to -o json" in table_show.stderr
    assert json.loads(shown.stdout)["sandboxToken"] == TOKEN


def test_sandbox_commands_need_no_token(mock_api: MockAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAYSDK_MERCHANT_TOKEN")
    mock_api.body = {"now": "2026-01-01T00:00:00Z", "offsetSeconds": 0}
    result = run_cli("sandbox", "clock", "show")
    assert result.exit_code == 0, result.stderr
    assert "Authorization" not in mock_api.requests[0].headers


def test_links_create_open_opens_the_browser(mock_api: MockAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []

    def fake_open(url: str) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr("webbrowser.open", fake_open)
    mock_api.body = LINK_ANSWER
    result = run_cli(*LINK, "--open")
    assert result.exit_code == 0, result.stderr
    assert opened == [LINK_ANSWER["URL"]]
    assert json.loads(result.stdout)["URL"] == LINK_ANSWER["URL"]  # stdout stays clean JSON
    assert "Opened" in result.stderr


def test_invalid_value_names_an_option_the_command_has(mock_api: MockAPI) -> None:
    # The SDK names its argument (card_number); the error must name the command's own option for it.
    result = run_cli("sandbox", "pay", "some-uid", "--card", "1234")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith("Error: invalid value for --card-number: '1234': ")
    assert mock_api.requests == []  # refused before anything was sent
