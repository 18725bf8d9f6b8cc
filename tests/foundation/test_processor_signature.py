"""Known-answer vectors of the processor webhook signature (D193): ``v1`` is the hex HMAC-SHA256, keyed
with the processor secret, of ``"<t>.<raw body>"``. The expected values were computed outside the project
(``printf '<t>.<body>' | openssl dgst -sha256 -hmac <secret>``) and are checked here against a few lines
of ``hmac`` written in this file, so a :func:`~paysdk.contracts.processor_webhooks.sign` that stops
covering ``t`` (a captured delivery replayed forever under a new ``t=``) fails, however ``verify`` agrees
with it."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from paysdk.contracts.processor_webhooks import sign, verify

BODY = (
    b'{"notificationId":"ntf-1","type":"settled","paymentId":"tpm_0123456789abcdef01234567",'
    b'"at":"2026-01-05T00:00:00Z"}'
)
ZEROS = "psec_" + "0" * 64
ABS = "psec_" + "ab" * 32

#: (secret, t, body, v1) computed with openssl.
VECTORS = [
    (ZEROS, 1767571200, BODY, "e20d6a352bbe40d186288627c07d472ad38b150d9de419a7270eb1208e196b18"),
    (ABS, 1767571201, BODY, "4577824dff7c54d61bfe30aa041cdd6f7f28bc58c4c56e1eec1e526685659c4b"),
    (ABS, 1, b"", "cb8137853bb51f9f8826fcf5b9a7df37b3d56c66f7bd024f60aa4fd7814af387"),
]


IDS = ["zeros-secret", "ab-secret", "empty-body"]


def by_hand(secret: str, t: int, body: bytes) -> str:
    """The scheme of D193 written out here, independent of the module under test."""
    return hmac.new(secret.encode("utf-8"), str(t).encode("ascii") + b"." + body, hashlib.sha256).hexdigest()


@pytest.mark.parametrize(("secret", "t", "body", "v1"), VECTORS, ids=IDS)
def test_sign_matches_the_known_answers(secret: str, t: int, body: bytes, v1: str) -> None:
    assert by_hand(secret, t, body) == v1  # the hand-written scheme agrees with openssl
    assert sign(secret, body, t) == f"t={t},v1={v1}"
    assert verify(secret, body, f"t={t},v1={v1}", now=t) is None
    assert verify(secret, body, f"t={t},v1={v1.upper()}", now=t) is None


@pytest.mark.parametrize(("secret", "t", "body", "v1"), VECTORS, ids=IDS)
def test_an_old_signature_under_a_new_timestamp_is_refused(secret: str, t: int, body: bytes, v1: str) -> None:
    for later in (t + 1, t + 3600, t + 86400 * 365):
        why = verify(secret, body, f"t={later},v1={v1}", now=later)
        assert why is not None
        assert "does not match" in why


def test_the_timestamp_is_part_of_the_signed_text() -> None:
    # Same secret and body, t one second apart: different signatures (the first two vectors' secrets
    # differ, so compare here).
    assert sign(ABS, BODY, 1767571200) != sign(ABS, BODY, 1767571201)
    assert sign(ABS, BODY, 1767571201) == f"t=1767571201,v1={VECTORS[1][3]}"
