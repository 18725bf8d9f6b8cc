"""The server's one reach into alembic's private parts (D530, D532).

Written against alembic 1.13 to 1.20 (``pyproject.toml``: ``alembic>=1.13,<1.21``).
``tests/server/test_adapter_alembic.py`` fails, naming the hook and the installed version, when a
private part used here is gone or changed.

Hooks:

- :func:`upgrade_steps`: ``ScriptDirectory._upgrade_revs(destination, heads)``, the migration steps from
  a database's current heads to ``destination``: what alembic's own ``upgrade`` command hands its
  environment. :func:`paysdk.server.migrations.prepare` runs the migrations on its own connection, in its
  own transaction, with a ``Config`` built in code and no ``env.py`` (D470-D473), so it calls the
  command's step function itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

__all__ = ["upgrade_steps"]


def upgrade_steps(script: ScriptDirectory, destination: str, heads: Any) -> Any:
    """The steps that upgrade a database at ``heads`` to ``destination`` (alembic's ``upgrade``)."""
    return script._upgrade_revs(destination, heads)
