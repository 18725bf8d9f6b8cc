"""paysdk.server.passwords: scrypt hashes that carry their cost, the default cost, and the process-wide
setting the test suites lower (D763)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator

import pytest

from paysdk.server import passwords


@pytest.fixture
def default_cost() -> Iterator[None]:
    """The server's own cost for one test (the suite runs at the cheap one, tests/conftest.py)."""
    previous = passwords.set_cost(passwords.DEFAULT_COST)
    yield
    passwords.set_cost(previous)


@pytest.mark.usefixtures("default_cost")
def test_a_hash_is_made_at_the_default_cost_and_verifies() -> None:
    stored = passwords.hash_secret("correct horse")
    scheme, n, r, p, _salt, _digest = stored.split("$")
    assert (scheme, n, r, p) == ("scrypt", str(2**14), "8", "1")
    assert passwords.verify_secret("correct horse", stored)
    assert not passwords.verify_secret("correct horsE", stored)


def test_a_hash_verifies_whatever_the_cost_is_now() -> None:
    previous = passwords.set_cost(4)
    try:
        cheap = passwords.hash_secret("pin 1234")
        assert cheap.split("$")[1] == "4"
        passwords.set_cost(2**10)
        assert passwords.verify_secret("pin 1234", cheap)
        dearer = passwords.hash_secret("pin 1234")
        passwords.set_cost(4)
        assert passwords.verify_secret("pin 1234", dearer)
        assert not passwords.verify_secret("pin 1235", dearer)
    finally:
        passwords.set_cost(previous)


def test_the_stored_digest_is_scrypt_of_the_secret_with_its_salt() -> None:
    stored = passwords.hash_secret("s3cret")
    _scheme, n, r, p, salt, digest = stored.split("$")
    expected = hashlib.scrypt(b"s3cret", salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=32)
    assert base64.b64decode(digest) == expected
    assert passwords.hash_secret("s3cret") != stored  # a new salt each time


@pytest.mark.parametrize(
    "stored", ["", "bcrypt$4$8$1$AA==$AA==", "scrypt$x$8$1$AA==$AA==", "scrypt$4$8$1$!!$AA"]
)
def test_a_malformed_or_foreign_hash_never_verifies(stored: str) -> None:
    assert not passwords.verify_secret("anything", stored)


@pytest.mark.parametrize("cost", [0, 1, 3, 2**14 + 1, 2**21])
def test_a_cost_that_is_not_a_power_of_two_in_range_is_refused(cost: int) -> None:
    with pytest.raises(ValueError, match="power of two"):
        passwords.set_cost(cost)


def test_the_dummy_hash_matches_nothing_and_follows_the_cost() -> None:
    previous = passwords.set_cost(8)
    try:
        dummy = passwords.dummy_hash()
        assert dummy == passwords.dummy_hash()  # made once per cost
        assert dummy.split("$")[1] == "8"
        assert not passwords.verify_secret("", dummy)
        passwords.set_cost(16)
        assert passwords.dummy_hash().split("$")[1] == "16"
    finally:
        passwords.set_cost(previous)


def test_the_suite_runs_at_the_cheap_cost() -> None:
    """tests/conftest.py's session fixture (what makes the wallet tests cheap) is in force."""
    assert passwords.hash_secret("x").split("$")[1] == "2"
