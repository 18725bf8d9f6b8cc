# paysdk: `make demo` and `make test` do all set-up from a bare machine (Python, make and apt).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-under-load lint bench services unasync coverage clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade "pip>=25.1"  # --group (PEP 735 dependency groups)
	$(BIN)/python -m pip uninstall -q -y paysdk 2>/dev/null || true  # the name before paysdk-toolkit (D420)
	$(BIN)/python -m pip install -q -e '.[all]' --group dev  # the dev tools: a PEP 735 group, not an extra (D425)
	@touch $(STAMP)

services:
	@bash scripts/ensure-services.sh

## Run the reference server and walk a merchant's path with the CLI.
demo: $(STAMP)
	@bash scripts/demo.sh

## Every test, none skipped, against real PostgreSQL, Redis and Chromium, on $(TEST_WORKERS) parallel workers
## (pytest-xdist; each worker has its own PostgreSQL database; D540). `make test TEST_WORKERS=0`: one process.
## Bytecode caches are written even where the environment asks not to (PYTHONDONTWRITEBYTECODE): the suite
## starts a few hundred Python processes (workers, servers, commands), and each would compile the project and
## rewrite the tests' asserts again (a worker's collection: 17 s of CPU, 8 s with the caches; D767).
TEST_WORKERS ?= 4
test: $(STAMP) services
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadgroup

## The same suite under a CPU hog holding the load average near 8 on two cores (stress-ng, from apt): RUNS
## runs (default 1), HOGS stress-ng CPU workers (default 4); prints each run's result and the load it ran at.
RUNS ?= 1
HOGS ?= 4
test-under-load: $(STAMP) services
	bash scripts/test_under_load.sh $(RUNS) $(HOGS)

## ruff (lint and format, generated code included), mypy --strict, the import layers, the generated sync code, the schema snapshot,
## docs/coverage.md and docs/cli.md's command overview are up to date, and the docs site builds with no broken link or reference
## and shows no reST markup of the docstrings as text (scripts/check_site.py).
lint: $(STAMP)
	$(BIN)/ruff check src tests examples benchmarks scripts
	$(BIN)/ruff format --check src tests examples benchmarks scripts
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache  # the layers: the server's core imports no family (pyproject.toml, D554)
	$(BIN)/python scripts/sdk_registry.py --check
	$(BIN)/python scripts/unasync.py --check
	$(BIN)/python scripts/coverage_table.py --check
	$(BIN)/python scripts/cli_overview.py --check
	$(BIN)/python scripts/schema_snapshot.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir .site
	$(BIN)/python scripts/check_site.py .site

## Write the clients' family declarations from the SDK family registry, then the sync code from the async one.
unasync: $(STAMP)
	$(BIN)/python scripts/sdk_registry.py
	$(BIN)/python scripts/unasync.py

## Rewrite docs/coverage.md (operation -> SDK method -> CLI command) from the families' registrations.
coverage: $(STAMP)
	$(BIN)/python scripts/coverage_table.py

bench: $(STAMP) services
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .site
