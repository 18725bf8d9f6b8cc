"""Ed25519 keys and EdDSA JWTs (RFC 8037, RFC 7515, RFC 8725), with pynacl. Pure: no I/O, no clock.

Shared by the SDK (application login signature, reading a token's ``exp``) and the reference server
(issuing and verifying tokens, decision D33). Verification here checks the signature and the header
(``alg`` exactly ``EdDSA``, no ``crit``, the expected ``typ`` and ``kid``); the caller checks claims
against its own clock and state.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from paysdk._secret import Secret

if TYPE_CHECKING:  # pynacl (and its C bindings) load on first use: `from paysdk import Client` skips it
    import nacl.signing

__all__ = [
    "JWTError",
    "b64url_decode",
    "b64url_encode",
    "decode_unverified",
    "encode_jwt",
    "jwk_thumbprint",
    "load_signing_key",
    "public_jwk",
    "public_key_b64",
    "sign_merchant",
    "verify_jwt",
    "verify_key_from_b64",
    "verify_merchant_signature",
]


class JWTError(ValueError):
    """A token, key or signature that does not hold. The message never contains the token or key."""


def b64url_encode(data: bytes) -> str:
    """Base64url without padding (RFC 7515 section 2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Decode base64url with or without padding; :class:`JWTError` when it is not base64url."""
    if not isinstance(text, str) or any(c in text for c in "+/ \n\r\t"):
        raise JWTError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise JWTError("not base64url") from None


def _b64_any(text: str) -> bytes:
    """Standard or url-safe base64, padding optional."""
    cleaned = text.strip().replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(cleaned + "=" * (-len(cleaned) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise JWTError("not base64") from None


def load_signing_key(key: str | bytes | Secret | Mapping[str, Any]) -> nacl.signing.SigningKey:
    """An Ed25519 private key from a 32-byte seed (raw bytes, base64, base64url or hex) or an OKP JWK.

    Raises :class:`JWTError` (never showing the key) when it is none of these.
    """
    if isinstance(key, Secret):
        key = key.reveal()
    seed: bytes
    if isinstance(key, Mapping):
        if key.get("kty") != "OKP" or key.get("crv") != "Ed25519" or "d" not in key:
            raise JWTError("a private JWK must be kty OKP, crv Ed25519, with d")
        seed = b64url_decode(str(key["d"]))
    elif isinstance(key, bytes):
        seed = key
    elif isinstance(key, str):
        text = key.strip()
        if text.startswith("{"):
            try:
                return load_signing_key(json.loads(text))
            except json.JSONDecodeError:
                raise JWTError("the key is not valid JSON") from None
        if len(text) == 64 and all(c in "0123456789abcdefABCDEF" for c in text):
            seed = bytes.fromhex(text)
        else:
            seed = _b64_any(text)
    else:
        raise JWTError("the key must be a seed (bytes, base64 or hex) or an OKP JWK")
    if len(seed) != 32:
        raise JWTError("an Ed25519 private key is a 32-byte seed")
    import nacl.signing

    return nacl.signing.SigningKey(seed)


def public_key_b64(key: nacl.signing.SigningKey | nacl.signing.VerifyKey) -> str:
    """The 32-byte public key, standard base64 (the form the control plane registers)."""
    import nacl.signing  # loaded with ``key``'s class

    verify = key.verify_key if isinstance(key, nacl.signing.SigningKey) else key
    return base64.b64encode(bytes(verify)).decode("ascii")


def verify_key_from_b64(text: str) -> nacl.signing.VerifyKey:
    """An Ed25519 public key from base64/base64url (32 bytes)."""
    raw = _b64_any(text)
    if len(raw) != 32:
        raise JWTError("an Ed25519 public key is 32 bytes")
    import nacl.signing

    return nacl.signing.VerifyKey(raw)


def public_jwk(key: nacl.signing.SigningKey | nacl.signing.VerifyKey) -> dict[str, str]:
    """The public OKP JWK with its RFC 7638 thumbprint as ``kid``."""
    import nacl.signing  # loaded with ``key``'s class

    verify = key.verify_key if isinstance(key, nacl.signing.SigningKey) else key
    x = b64url_encode(bytes(verify))
    return {"kty": "OKP", "crv": "Ed25519", "x": x, "kid": jwk_thumbprint(x), "use": "sig", "alg": "EdDSA"}


def jwk_thumbprint(x: str) -> str:
    """RFC 7638 thumbprint of an Ed25519 OKP key with public value ``x``."""
    canonical = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": x}, separators=(",", ":"), sort_keys=True)
    return b64url_encode(hashlib.sha256(canonical.encode()).digest())


def sign_merchant(key: nacl.signing.SigningKey, merchant: str) -> str:
    """The application-login signature (D36): standard base64 of the Ed25519 signature of the exact
    UTF-8 bytes of ``merchant`` (spec 7604: sign the bytes sent, never a re-serialization)."""
    return base64.b64encode(key.sign(merchant.encode("utf-8")).signature).decode("ascii")


def verify_merchant_signature(verify: nacl.signing.VerifyKey, merchant: str, signature: str) -> bool:
    """Whether ``signature`` (base64, padding optional) signs the UTF-8 bytes of ``merchant``."""
    try:
        raw = _b64_any(signature)
    except JWTError:
        return False
    if len(raw) != 64:
        return False
    from nacl.exceptions import BadSignatureError  # loaded with ``verify``'s class

    try:
        verify.verify(merchant.encode("utf-8"), raw)
    except BadSignatureError:
        return False
    return True


def encode_jwt(key: nacl.signing.SigningKey, claims: Mapping[str, Any], *, typ: str, kid: str) -> str:
    """A compact EdDSA JWS of ``claims`` with header ``{"alg": "EdDSA", "typ": typ, "kid": kid}``."""
    header = {"alg": "EdDSA", "typ": typ, "kid": kid}
    signing_input = (
        b64url_encode(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + b64url_encode(json.dumps(dict(claims), separators=(",", ":"), sort_keys=True).encode())
    )
    signature = key.sign(signing_input.encode("ascii")).signature
    return signing_input + "." + b64url_encode(signature)


def _split(token: str) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    if not isinstance(token, str) or len(token) > 8192:
        raise JWTError("malformed token")
    parts = token.split(".")
    if len(parts) != 3:
        raise JWTError("malformed token")
    try:
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
    except (ValueError, UnicodeDecodeError):
        raise JWTError("malformed token") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise JWTError("malformed token")
    return header, claims, (parts[0] + "." + parts[1]).encode("ascii"), b64url_decode(parts[2])


def decode_unverified(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Header and claims WITHOUT checking the signature: for a client reading its own token's ``exp``.

    Never use this to trust a token.
    """
    header, claims, _, _ = _split(token)
    return header, claims


def verify_jwt(
    token: str, keys: Mapping[str, nacl.signing.VerifyKey], *, typ: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Verify a token's header and signature; return (header, claims).

    Refuses (with :class:`JWTError`): anything but ``alg`` ``EdDSA`` (so ``none``, HS256, RS256, Ed448
    and a missing ``alg`` all fail before any key is used), any ``crit``, a ``typ`` other than ``typ``,
    an unknown ``kid``, and a signature that does not verify. Claims are the caller's to check.
    """
    header, claims, signing_input, signature = _split(token)
    if header.get("alg") != "EdDSA":
        raise JWTError("algorithm not allowed")
    if "crit" in header:
        raise JWTError("unsupported critical header")
    kid = header.get("kid")
    if not isinstance(kid, str) or kid not in keys:
        raise JWTError("unknown key")
    if len(signature) != 64:
        raise JWTError("bad signature")
    from nacl.exceptions import BadSignatureError  # loaded with the keys' class

    try:
        keys[kid].verify(signing_input, signature)
    except BadSignatureError:
        raise JWTError("bad signature") from None
    if header.get("typ") != typ:
        raise JWTError("wrong token type")
    return header, claims
