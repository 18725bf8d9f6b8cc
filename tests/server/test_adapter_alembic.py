"""The alembic adapter's hook against the installed alembic (D530, D532): a failure names the hook and
the version, so raising the bound in pyproject.toml starts here."""

from __future__ import annotations

import alembic
from alembic.script import ScriptDirectory

from paysdk.server.adapters.alembic import upgrade_steps
from paysdk.server.migrations import SCRIPTS
from paysdk.server.schema_snapshot import REVISION

HOOK = f"alembic {alembic.__version__}: ScriptDirectory._upgrade_revs"


def _steps(heads: tuple[str, ...]) -> list[tuple[str, bool]]:
    script = ScriptDirectory(str(SCRIPTS))
    assert hasattr(script, "_upgrade_revs"), f"{HOOK} is gone"
    return [(step.revision.revision, step.is_upgrade) for step in upgrade_steps(script, REVISION, heads)]


def test_the_steps_from_an_empty_database_are_every_revision_in_order() -> None:
    revisions = [script.revision for script in reversed(list(ScriptDirectory(str(SCRIPTS)).walk_revisions()))]
    assert revisions[-1] == REVISION
    assert _steps(()) == [(revision, True) for revision in revisions], f"{HOOK} changed its steps"


def test_the_steps_from_a_revision_are_the_ones_after_it_and_none_at_the_head() -> None:
    assert _steps(("0001",)) == [(r, True) for r in ["0002"]], f"{HOOK} changed its steps"
    assert _steps((REVISION,)) == [], f"{HOOK}: a database at the head has nothing to run"
