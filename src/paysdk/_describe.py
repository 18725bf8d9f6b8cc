"""An exception as one line for a person: its class and a sentence, never an empty message (D434).

``f"{type(exc).__name__}: {exc}"`` printed ``ReadError:`` when the exception carries no text (httpx
raises ``ReadError("")`` when a peer closes the connection before answering). :func:`exception_text`
writes the class and the exception's own text, or, when that is empty, a sentence saying what that
class of failure means.
"""

from __future__ import annotations

__all__ = ["exception_text"]

#: What an exception without a message means, by class name (httpx's, then the builtins'); the first
#: class of the exception's MRO found here wins.
_MEANING = {
    "ReadError": "the connection failed or was closed while the answer was being read",
    "WriteError": "the connection failed or was closed while the request was being sent",
    "RemoteProtocolError": "the other side closed the connection or broke the HTTP protocol",
    "LocalProtocolError": "the request could not be sent as valid HTTP",
    "ConnectError": "could not connect",
    "ProxyError": "the proxy refused or failed the connection",
    "UnsupportedProtocol": "the URL's scheme is not http or https",
    "DecodingError": "the answer's body could not be decoded",
    "TooManyRedirects": "too many redirects",
    "TimeoutException": "no answer in time",
    "NetworkError": "a network error, without details",
    "TransportError": "the connection failed, without details",
    "ConnectionResetError": "the connection was reset by the other side",
    "ConnectionRefusedError": "the connection was refused",
    "BrokenPipeError": "the other side closed the connection",
    "ConnectionError": "the connection failed",
    "TimeoutError": "no answer in time",
    "OSError": "the operating system reported an error without details",
}


def exception_text(exc: BaseException, *, limit: int | None = None) -> str:
    """``Class: message`` for ``exc`` (the message cut to ``limit`` characters when given), with a
    sentence in place of an empty message: ``ReadError: the connection failed or was closed ...``."""
    name = type(exc).__name__
    text = str(exc).strip()
    if limit is not None:
        text = text[:limit]
    if not text:
        text = next(
            (_MEANING[k.__name__] for k in type(exc).__mro__ if k.__name__ in _MEANING),
            "it carried no message",
        )
    return f"{name}: {text}"
