"""Secrets the server only needs to check (wallet passwords, card PINs, operators' passwords): scrypt hashes.

A hash is ``scrypt$N$r$p$salt$hash`` (base64 salt of 16 random bytes and 32-byte digest) and carries its
own cost, so a hash made at one cost verifies at any other. Comparison is constant-time
(:func:`hmac.compare_digest`).

The cost (``N``, 2**14 by default, with r=8 and p=1: ~50 ms of CPU a hash) is process-wide and may be
lowered with :func:`set_cost` for a test suite, as Django's test settings swap the password hasher (D763).
Nothing else changes: a lower cost only makes new hashes cheaper to compute (and to guess), so a server
that holds real secrets keeps the default.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

__all__ = ["DEFAULT_COST", "dummy_hash", "hash_secret", "set_cost", "verify_secret"]

#: scrypt's ``N`` unless :func:`set_cost` says otherwise.
DEFAULT_COST = 2**14
_BLOCK_SIZE, _PARALLELISM = 8, 1
_cost = DEFAULT_COST
#: A hash of a forgotten random secret per cost (see :func:`dummy_hash`).
_dummies: dict[int, str] = {}


def set_cost(n: int) -> int:
    """Make new hashes with scrypt's ``N = n`` (a power of two, 2 to 2**20) in this process; returns the
    cost it replaces. For test suites: existing hashes keep verifying whatever the cost."""
    global _cost
    if n < 2 or n > 2**20 or n & (n - 1):
        raise ValueError(f"the scrypt cost must be a power of two from 2 to 2**20, not {n}")
    previous, _cost = _cost, n
    return previous


def hash_secret(secret: str) -> str:
    """``scrypt$N$r$p$salt$hash`` (base64) of ``secret`` at the current cost."""
    salt = secrets.token_bytes(16)
    n = _cost
    digest = hashlib.scrypt(secret.encode("utf-8"), salt=salt, n=n, r=_BLOCK_SIZE, p=_PARALLELISM, dklen=32)
    encoded = (base64.b64encode(salt).decode(), base64.b64encode(digest).decode())
    return "$".join(["scrypt", str(n), str(_BLOCK_SIZE), str(_PARALLELISM), *encoded])


def verify_secret(secret: str, stored: str) -> bool:
    """Whether ``secret`` matches a :func:`hash_secret` value (constant-time comparison)."""
    try:
        scheme, n, r, p, salt_b64, digest_b64 = stored.split("$")
        salt, expected = base64.b64decode(salt_b64), base64.b64decode(digest_b64)
        cost, block, parallel = int(n), int(r), int(p)
    except ValueError:
        return False
    if scheme != "scrypt":
        return False
    digest = hashlib.scrypt(
        secret.encode("utf-8", "surrogatepass"), salt=salt, n=cost, r=block, p=parallel, dklen=len(expected)
    )
    return hmac.compare_digest(digest, expected)


def dummy_hash() -> str:
    """A hash no secret matches, at the current cost (made once per cost and process): what an unknown
    name is checked against, so that it costs what a known one does, and the password of users created
    without one (bulk cardholders, D186)."""
    found = _dummies.get(_cost)
    if found is None:
        found = _dummies[_cost] = hash_secret(secrets.token_hex(16))
    return found
