"""The one Lua script of paysdk's Redis locks (token stores and callback dedup stores).

A lock or claim is ``SET key <random token> NX PX <ttl>``; it is released with :data:`RELEASE_SCRIPT`
(``EVAL RELEASE_SCRIPT 1 key token``), which deletes the key only while it still holds the caller's
token, so a holder whose lease expired never deletes the next holder's lock.
"""

from __future__ import annotations

from typing import Final

__all__ = ["RELEASE_SCRIPT"]

RELEASE_SCRIPT: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
