"""Every public SDK method, sync and async, runs against the REAL reference server somewhere in the suite.

A test that exercises SDK methods against the real server (in process through ``httpx.ASGITransport``,
or over a socket) says so with ``@pytest.mark.covers("payment_links.create", "wallet.cards.get", ...)``.
Names are attribute paths from the client (:func:`public_methods`); the user view of
``wallet.as_user(...)`` is ``wallet.as_user``, and its ``cards``/``funds``/``transfers``/``permissions``
are the same classes as ``wallet.cards``... (only the bearer differs), so they share those names.

Two checks keep the claims true:

* while a marked test runs (:func:`covers_check`, an autouse fixture), every method of the client kind
  under test (``kind`` parameter starting with ``sync`` or ``async``) is wrapped; when the test ends,
  each named method must have been called on a client whose transport is not a mock and must have
  returned or raised an API error (a refused argument does not count). Calls through
  ``client.with_raw_response`` count too: its resources are the same classes (in ``Raw`` mode), so
  they run the same wrapped class attributes;
* ``tests/e2e/test_real_server_coverage.py`` collects every marked test (a ``pytest --collect-only``
  run with ``PAYSDK_COVERAGE_REPORT`` set, :func:`report_collected`) and fails when a public method of
  either client has no marked test of that kind.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import paysdk
from paysdk.resources._registry import FAMILIES

#: The environment variable that makes a (collect-only) run write ``[[name, kind], ...]`` to a file.
REPORT_ENV = "PAYSDK_COVERAGE_REPORT"
KINDS = ("sync", "async")

#: Attributes reached through a call rather than an attribute: name -> how to make one.
_FACTORIES: dict[str, Callable[[Any], Any]] = {
    "wallet.as_user": lambda wallet: wallet.as_user(store=paysdk.MemoryTokenStore(), key="coverage"),
}


def _client(kind: str) -> paysdk.Client | paysdk.AsyncClient:
    cls = paysdk.AsyncClient if kind == "async" else paysdk.Client
    return cls(
        "0" * 64,
        paysdk.Environment.local("http://coverage.invalid"),
        wallet=paysdk.WalletCredentials("coverage", "44" * 32),
    )


def _is_resource(value: object) -> bool:
    return type(value).__module__.startswith("paysdk.resources.")


def public_methods(kind: str) -> dict[tuple[type, str], str]:
    """``(class, method name) -> "dotted.name"`` of every public method of every resource of the
    ``kind`` (``sync``/``async``) client, sub-resources and the user view included."""
    found: dict[tuple[type, str], str] = {}
    seen: set[type] = set()

    def walk(obj: object, path: str) -> None:
        cls = type(obj)
        if cls in seen:
            return
        seen.add(cls)
        for name, member in inspect.getmembers(cls):
            if not name.startswith("_") and inspect.isfunction(member):
                found[(cls, name)] = f"{path}.{name}"
        for name, value in vars(obj).items():
            if not name.startswith("_") and _is_resource(value):
                walk(value, f"{path}.{name}")
        for name, make in _FACTORIES.items():
            head, _, _ = name.rpartition(".")
            if head == path:
                walk(make(obj), name)

    client = _client(kind)
    try:
        for entry in FAMILIES:  # THE registry (D510); each family is built on first read (D460)
            walk(getattr(client, entry.attribute), entry.attribute)
    finally:
        if isinstance(client, paysdk.Client):
            client.close()
    return found


def _kind_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    value = callspec.params.get("kind") if callspec is not None else None
    if isinstance(value, str):
        for kind in KINDS:
            if value.startswith(kind):
                return kind
    return None


def _marked_names(item: pytest.Item) -> list[str]:
    return [str(name) for mark in item.iter_markers("covers") for name in mark.args]


def report_collected(session: pytest.Session) -> None:
    """With ``$PAYSDK_COVERAGE_REPORT`` set, write ``[[name, kind], ...]`` of the collected marked tests."""
    target = os.environ.get(REPORT_ENV)
    if not target:
        return
    rows = sorted(
        {(name, _kind_of(item) or "none") for item in session.items for name in _marked_names(item)}
    )
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(rows, handle)


def _client_of(resource: Any) -> Any:
    client = getattr(resource, "_client", None)
    if client is None:  # the user view keeps its client in its sub-resources
        client = resource.cards._client
    return client


def _real(resource: Any) -> bool:
    transport = _client_of(resource)._http._transport
    return isinstance(transport, httpx.ASGITransport | httpx.HTTPTransport | httpx.AsyncHTTPTransport)


def _recording(fn: Callable[..., Any], name: str, called: set[str]) -> Callable[..., Any]:
    def note(resource: Any) -> None:
        if _real(resource):
            called.add(name)

    @functools.wraps(fn)
    def wrapper(resource: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(resource, *args, **kwargs)
        except paysdk.APIError:
            note(resource)
            raise
        if not inspect.iscoroutine(result):
            note(resource)
            return result

        async def finish() -> Any:
            try:
                value = await result
            except paysdk.APIError:
                note(resource)
                raise
            note(resource)
            return value

        return finish()

    return wrapper


@pytest.fixture(autouse=True)
def covers_check(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """For a ``covers`` test: the named methods of its client kind were really called (module docstring)."""
    names = _marked_names(request.node)
    if not names:
        yield
        return
    kind = _kind_of(request.node)
    if kind is None:
        pytest.fail("a covers test needs a 'kind' parameter starting with 'sync' or 'async'", pytrace=False)
    methods = public_methods(kind)
    unknown = sorted(set(names) - set(methods.values()))
    if unknown:
        pytest.fail(f"covers names no public SDK method: {unknown}", pytrace=False)
    called: set[str] = set()
    for (cls, attr), name in methods.items():
        monkeypatch.setattr(cls, attr, _recording(getattr(cls, attr), name, called))
    yield
    missing = sorted(set(names) - called)
    if missing:
        pytest.fail(f"marked covers but never called against the real server ({kind}): {missing}")
