"""What is masked wherever paysdk shows headers, query strings or stored secrets: one list, one mask.

Used by the SDK (:func:`paysdk._pipeline.redact_headers`, :class:`~paysdk.Secret`'s repr), the reference
server (request log and access log, D95; the control plane's client records) and the CLI (secrets in
its output). Stdlib only, no I/O.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MASK", "SENSITIVE_HEADERS", "SENSITIVE_WORDS", "is_sensitive_name"]

#: What a masked value is shown as.
MASK: Final = "****"

#: Header names always masked in the SDK's errors, logs and response metadata.
SENSITIVE_HEADERS: Final = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "idempotency-key", "x-callback-token"}
)

#: A header or query parameter whose name (case-folded) contains one of these words holds a secret
#: (callback header names and custom headers are free, so names are matched by word, D95).
SENSITIVE_WORDS: Final = (
    "token",
    "secret",
    "key",
    "signature",
    "passw",
    "auth",
    "session",
    "credential",
    "jwt",
    "otp",
    "cvv",
)


_WORDS = re.compile("|".join(SENSITIVE_WORDS))


def is_sensitive_name(name: str) -> bool:
    """Whether ``name`` (a header or parameter name, any case) contains one of :data:`SENSITIVE_WORDS`."""
    return _WORDS.search(name.casefold()) is not None
