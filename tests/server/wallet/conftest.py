"""Fixtures of the wallet server tests (on top of tests/conftest.py: ``db_url``, ``app``, ``asgi_client``)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .kit import Kit


@pytest.fixture
async def kit(asgi_client: httpx.AsyncClient, merchant_factory: Any) -> Kit:
    """A merchant with a generated wallet key pair, driven through the API."""
    return Kit(asgi_client, await merchant_factory())
