"""The server's adapters: the only modules that touch private parts of uvicorn and SQLAlchemy (D530).

Each adapter names at its top the library versions it was written against; ``pyproject.toml`` bounds
those libraries above, and a test per adapter (``tests/server/test_adapter_*.py``) fails naming the hook
and the installed version when a private part it uses is gone or changed. ``tests/foundation/
test_private_hooks.py`` keeps such reads out of every other module.
"""
