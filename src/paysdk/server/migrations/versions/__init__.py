"""The revisions (alembic loads each file by its path; this package makes them importable for tests)."""
