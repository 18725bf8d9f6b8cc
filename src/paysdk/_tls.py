"""One TLS verification context per process for the HTTP clients paysdk makes itself (D761).

httpx builds a new :class:`ssl.SSLContext` for every client it makes with the default ``verify=True``,
and loading certifi's bundle into it costs about 20 ms of CPU each time: more than a whole request to
the in-process reference server. The SDK's clients, the server's callback deliveries, the CLI and the
readiness probes of :mod:`paysdk.testing` pass :func:`verification_context` instead: the same
verification httpx would set up (certifi's bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set, as
httpx reads them), made once per process for each such setting and shared, as httpx's documentation
suggests (an :class:`ssl.SSLContext` is safe to share between clients and threads).
"""

from __future__ import annotations

import functools
import os
import ssl

__all__ = ["verification_context"]


def verification_context() -> ssl.SSLContext:
    """The process's shared context verifying servers as httpx's default ``verify=True`` does."""
    return _context(os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None)


@functools.cache
def _context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    if cafile is not None:
        return ssl.create_default_context(cafile=cafile)
    if capath is not None:
        return ssl.create_default_context(capath=capath)
    import certifi  # httpx's own dependency, and its default bundle

    return ssl.create_default_context(cafile=certifi.where())
