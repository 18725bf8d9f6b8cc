"""One table of own codes (``paysdk.contracts.codes.OWN_CODES``); every other place agrees with it.

The places: the SDK's error classes and the tree in ``paysdk._errors``' docstring, the SDK's token code
sets, the reference server's answers (``APIProblem`` and every literal code in its source), the
``status / code`` pairs written in source and docs, the OpenAPI descriptions of the answers, the CLI's
hints and the table "Own codes" of ``docs/spec-decisions.md``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

import paysdk
from paysdk import _errors, _tokens
from paysdk.contracts.codes import OWN_CODES, OwnCode, Remedy, WalletCode, code_info
from paysdk.server import create_app
from paysdk.server.errors import APIProblem
from paysdk_cli import _errors as cli_errors

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "src").rglob("*.py"))
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _status_class(status: int) -> type[paysdk.APIError]:
    return _errors.error_class_for(status, None)


# ----------------------------------------------------------------------------------------- the table


def test_the_table_holds_every_enum_member_once_in_order() -> None:
    members = [*OwnCode, *WalletCode]
    assert [int(m) for m in members] == list(OWN_CODES)
    for member in members:
        row = OWN_CODES[member]
        assert row.code is member
        assert row.name == member.name
        assert row.meaning
        assert row.meaning == row.meaning.strip()
        assert 400 <= row.status < 500
        assert row.family == ("wallet" if 7000 <= member < 8100 else "general")
    assert code_info(None) is None
    assert code_info(1234) is None
    assert code_info(7303) is OWN_CODES[7303]


def _docs_rows() -> list[tuple[str, ...]]:
    text = (ROOT / "docs" / "spec-decisions.md").read_text(encoding="utf-8")
    section = text.split("\n### Own codes\n", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert rows[0] == "| code | name | HTTP | when |"
    return [tuple(cell.strip() for cell in row.strip("|").split(" | ")) for row in rows[1:]]


def test_the_docs_table_is_the_table() -> None:
    expected = [(str(int(r.code)), r.name, str(r.status), r.meaning) for r in OWN_CODES.values()]
    assert _docs_rows() == expected


# ------------------------------------------------------------------------------------------ the SDK


def test_every_code_has_one_sdk_class_of_its_status() -> None:
    classes = {cls.code: cls for cls in _errors.OWN_CODE_ERRORS.values()}
    assert set(classes) == set(OWN_CODES)
    assert len(classes) == len(_errors.OWN_CODE_ERRORS)
    for code, row in OWN_CODES.items():
        cls = classes[code]
        assert _errors.OWN_CODE_ERRORS[(row.status, code)] is cls
        assert _errors.error_class_for(row.status, code) is cls
        assert issubclass(cls, _status_class(row.status)), (code, cls)
        assert issubclass(cls, paysdk.WalletError) == (row.family == "wallet")
        assert (cls.__doc__ or "").startswith(f"HTTP {row.status}, ownCode {code}: "), cls
        assert getattr(paysdk, cls.__name__) is cls
        assert cls.__name__ in paysdk.__all__
        # another status with the same code is not this class
        other = 500 if row.status != 500 else 400
        assert _errors.error_class_for(other, code) is _status_class(other)


def test_the_sdk_error_tree_docstring_names_each_class_with_its_code() -> None:
    doc = _errors.__doc__ or ""
    pairs = re.findall(r"(\w+Error) +(?:\d{3} / (?:ownCode )?)?(\d{4})", doc)
    named = {name: int(code) for name, code in pairs}
    assert set(named.values()) == set(OWN_CODES)
    for name, code in named.items():
        assert getattr(_errors, name).code == code, name


def test_the_sdk_token_code_sets_are_wallet_401_codes() -> None:
    for codes in (
        _tokens.REPLAY_CODES,
        _tokens.SESSION_DEAD_CODES,
        _tokens.RECOVERABLE_CODES,
        _tokens.DEAD_REFRESH_CODES,
    ):
        for code in codes:
            row = OWN_CODES[code]
            assert (row.family, row.status) == ("wallet", 401), code


# --------------------------------------------------------------------------------------- the server


def test_the_server_refuses_a_code_off_the_table() -> None:
    assert APIProblem(422, 7303, "Insufficient funds.").own_code == 7303
    assert APIProblem(404, None, "Not found.").own_code is None
    with pytest.raises(ValueError, match="7999"):
        APIProblem(400, 7999, "No such code.")
    with pytest.raises(ValueError, match="7303"):
        APIProblem(400, 7303, "Insufficient funds with the wrong status.")


def _literal_codes_in_server_calls() -> list[tuple[str, int, int]]:
    """``APIProblem(status, code, ...)`` calls with literal numbers anywhere in the sources."""
    found: list[tuple[str, int, int]] = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or len(node.args) < 2:
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            status, code = node.args[0], node.args[1]
            if name == "APIProblem" and isinstance(code, ast.Constant) and isinstance(code.value, int):
                value = -1
                if isinstance(status, ast.Constant) and isinstance(status.value, int):
                    value = status.value
                found.append((f"{path.name}:{node.lineno}", value, code.value))
    return found


def test_literal_codes_in_the_sources_are_on_the_table() -> None:
    for where, status, code in _literal_codes_in_server_calls():
        assert code in OWN_CODES, where
        assert status in (-1, OWN_CODES[code].status), where


#: ``401 / 7105``, ``409 / 5000``: a status and an own code written together in prose.
_PAIR = re.compile(r"\b([1-5]\d\d) / ([2-8]\d{3})\b")


@pytest.mark.parametrize("path", SOURCES + DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_status_code_pairs_in_source_and_docs_agree_with_the_table(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for status, code in _PAIR.findall(text):
        assert int(code) in OWN_CODES, f"{path.name}: {status} / {code} is not a known own code"
        assert OWN_CODES[int(code)].status == int(status), f"{path.name}: {status} / {code}"


def _codes_in(text: str) -> set[int]:
    codes: set[int] = set()
    for low, high in re.findall(r"\b([2-8]\d{3})-([2-8]\d{3})\b", text):
        codes |= {code for code in OWN_CODES if int(low) <= code <= int(high)}
        assert {int(low), int(high)} <= set(OWN_CODES), (low, high)
    without_ranges = re.sub(r"\b[2-8]\d{3}-[2-8]\d{3}\b", "", text)
    codes |= {int(code) for code in re.findall(r"(?<![\w.-])([2-8]\d{3})(?![\w.-])", without_ranges)}
    return codes


def test_the_openapi_document_names_each_code_under_its_status(tmp_path: Path) -> None:
    application = create_app(f"sqlite:///{tmp_path / 'server.db'}", start_ticker=False)
    try:
        spec: dict[str, Any] = application.openapi()
    finally:
        application.state.paysdk.db.dispose()
    seen: set[int] = set()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for status, answer in operation.get("responses", {}).items():
                for code in _codes_in(answer.get("description", "")):
                    assert code in OWN_CODES, (method, path, status, code)
                    assert str(OWN_CODES[code].status) == status, (method, path, status, code)
                    seen.add(code)
    assert {2003, 2007, 5000, 5004, 7303} <= seen


# ------------------------------------------------------------------------------------------ the CLI


def test_the_cli_hint_of_each_code_is_its_remedy() -> None:
    hints = cli_errors._REMEDY_HINTS
    assert set(hints) == {remedy.value for remedy in Remedy}
    for code, row in OWN_CODES.items():
        for status in (401, 403):
            expected = hints[row.remedy] if row.remedy is not None else None
            assert cli_errors._auth_hint(status, code) == expected, code
        assert cli_errors._auth_hint(404, code) is None
    assert cli_errors._auth_hint(401, None) == hints[Remedy.MERCHANT_TOKEN]
    assert "--as-user" in (cli_errors._auth_hint(401, WalletCode.WRONG_TOKEN_TYPE) or "")
    assert "key-file" in (cli_errors._auth_hint(401, WalletCode.KEYS_EXPIRED) or "")
    assert "log in again" in (cli_errors._auth_hint(401, WalletCode.TOKEN_EXPIRED) or "")
