"""``Environment.from_env``: each ``PAYSDK_*`` variable alone, and what a missing or bad one raises."""

from __future__ import annotations

import pytest

import paysdk

URL = "https://api.example.com"
ADDRESS_VARS = ("PAYSDK_BASE_URL", "PAYSDK_WEBVIEW_URL", "PAYSDK_WALLET_BASE_URL", "PAYSDK_CMS_BASE_URL")
ALL_VARS = (*ADDRESS_VARS, "PAYSDK_IDEMPOTENCY", "PAYSDK_ENVIRONMENT")


@pytest.fixture(autouse=True)
def _no_paysdk_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ALL_VARS:
        monkeypatch.delenv(var, raising=False)


def test_nothing_set_raises_the_configuration_error() -> None:
    with pytest.raises(paysdk.ValidationError) as info:
        paysdk.Environment.from_env()
    assert info.value.field == "PAYSDK_BASE_URL"
    assert "PAYSDK_BASE_URL" in str(info.value)
    assert "environment=paysdk.Environment" in str(info.value)
    with pytest.raises(paysdk.ValidationError) as client_info:
        paysdk.Client()
    assert client_info.value.field == "PAYSDK_BASE_URL"


def test_only_base_url_derives_the_addresses_and_does_not_declare_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PAYSDK_BASE_URL", URL + "/")
    env = paysdk.Environment.from_env()
    assert (env.base_url, env.webview_url, env.wallet_base_url, env.cms_base_url) == (
        URL,
        URL + "/checkout",
        URL + "/rest",
        URL + "/cms/rest",
    )
    assert env.honours_idempotency_keys is False
    assert env.name == "custom"
    with paysdk.Client("0" * 64) as client:
        assert client.environment.honours_idempotency_keys is False


@pytest.mark.parametrize("var", [v for v in ALL_VARS if v != "PAYSDK_BASE_URL"])
def test_any_other_variable_alone_is_not_enough(monkeypatch: pytest.MonkeyPatch, var: str) -> None:
    monkeypatch.setenv(var, "1" if var == "PAYSDK_IDEMPOTENCY" else URL)
    with pytest.raises(paysdk.ValidationError) as info:
        paysdk.Environment.from_env()
    assert info.value.field == "PAYSDK_BASE_URL"


@pytest.mark.parametrize("var", ADDRESS_VARS[1:])
def test_each_address_overrides_its_derived_value(monkeypatch: pytest.MonkeyPatch, var: str) -> None:
    monkeypatch.setenv("PAYSDK_BASE_URL", URL)
    monkeypatch.setenv(var, "https://elsewhere.example/x")
    env = paysdk.Environment.from_env()
    field = {"PAYSDK_WEBVIEW_URL": "webview_url", "PAYSDK_WALLET_BASE_URL": "wallet_base_url"}.get(
        var, "cms_base_url"
    )
    assert getattr(env, field) == "https://elsewhere.example/x"
    assert env.honours_idempotency_keys is False


def test_all_four_addresses_still_do_not_declare_keys() -> None:
    environ = {var: URL for var in ADDRESS_VARS}
    assert paysdk.Environment.from_env(environ).honours_idempotency_keys is False


@pytest.mark.parametrize(
    ("flag", "honours"),
    [("1", True), ("true", True), ("YES", True), ("0", False), ("false", False), ("no", False), ("", False)],
)
def test_idempotency_is_declared_only_explicitly(flag: str, honours: bool) -> None:
    env = paysdk.Environment.from_env({"PAYSDK_BASE_URL": URL, "PAYSDK_IDEMPOTENCY": flag})
    assert env.honours_idempotency_keys is honours


def test_bad_values_name_their_variable() -> None:
    with pytest.raises(paysdk.ValidationError) as flag:
        paysdk.Environment.from_env({"PAYSDK_BASE_URL": URL, "PAYSDK_IDEMPOTENCY": "maybe"})
    assert flag.value.field == "PAYSDK_IDEMPOTENCY"
    assert "'maybe'" in str(flag.value)
    with pytest.raises(paysdk.ValidationError) as base:
        paysdk.Environment.from_env({"PAYSDK_BASE_URL": "api.example.com"})
    assert base.value.field == "PAYSDK_BASE_URL"
    with pytest.raises(paysdk.ValidationError) as wallet:
        paysdk.Environment.from_env({"PAYSDK_BASE_URL": URL, "PAYSDK_WALLET_BASE_URL": "ftp://x"})
    assert wallet.value.field == "PAYSDK_WALLET_BASE_URL"


def test_name_and_local() -> None:
    env = paysdk.Environment.from_env({"PAYSDK_BASE_URL": URL, "PAYSDK_ENVIRONMENT": "sandbox"})
    assert env.name == "sandbox"
    assert paysdk.Environment.local().honours_idempotency_keys is True
    with pytest.raises(paysdk.ValidationError) as info:
        paysdk.Environment("x", URL, URL, URL)
    assert info.value.field == "base_url"
    assert isinstance(info.value, ValueError)
