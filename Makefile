# One way to run everything. `make up` runs the local deployment, `make test` the whole suite.
PY := .venv/bin/python
VENV_STAMP := .venv/.installed

.PHONY: setup up test lint typecheck unit bench clean system-deps

$(VENV_STAMP): pyproject.toml
	python3 -m venv .venv
	.venv/bin/pip install --quiet --upgrade pip uv
	.venv/bin/uv pip install --quiet --python $(PY) -e '.[dev]'
	python3 -m venv .venv/tools/openapi-client
	.venv/bin/uv pip install --quiet --python .venv/tools/openapi-client/bin/python \
	  openapi-python-client
	touch $(VENV_STAMP)

setup: $(VENV_STAMP)

system-deps:
	bash scripts/install-system-deps.sh

up: setup
	.venv/bin/rigway up

lint: setup
	.venv/bin/ruff check src tests bench examples
	.venv/bin/ruff format --check src tests bench examples
	.venv/bin/lint-imports

# The last run checks the Windows backend, and the launcher's Windows path, as Windows sees
# them: their binding modules, which the Linux runs skip (their top-level
# `assert sys.platform == "win32"`), and their `sys.platform == "win32"` branches.
typecheck: setup
	.venv/bin/mypy
	.venv/bin/mypy examples
	.venv/bin/mypy --strict tests bench
	.venv/bin/mypy --strict --platform win32 --follow-imports=silent -p rigway.agent.backends.windows \
	  -m rigway.agent.launcher -m rigway.agent._launcher_windows -m rigway.agent.install \
	  -m rigway.cli.agent

# On SQLite (the default store), whatever RIGWAY_TEST_DATABASE_URL says, with line
# coverage of src/: the report lists what no test runs, and the run fails under the floor
# set in pyproject.toml ([tool.coverage.report] fail_under).
unit: setup
	env -u RIGWAY_TEST_DATABASE_URL .venv/bin/pytest -q --cov --durations=25

# The store's tests again on PostgreSQL, when RIGWAY_TEST_DATABASE_URL names one: every
# module of tests/gateway and tests/e2e whose tests touch the store (the database_url
# fixture, or a database of its own) carries the `postgres` marker; the rest would only
# add time. SDK, CLI and MCP tests reach the store through the same routes and stay out,
# and so do the X11 desktop's and the schema-conformance run's (what they test is the
# host's and the API's, the same on either store; CI's time is near its limit).
unit-postgres: setup
	@if [ -n "$${RIGWAY_TEST_DATABASE_URL:-}" ]; then \
	  .venv/bin/pytest -q --durations=15 -m 'postgres and not x11' tests/gateway tests/e2e \
	    --deselect tests/e2e/test_schemathesis.py; \
	else echo "RIGWAY_TEST_DATABASE_URL is unset: PostgreSQL run skipped"; fi

test: system-deps lint typecheck unit unit-postgres

bench: setup
	$(PY) -m bench.gateway_sim
	$(PY) -m bench.screenshot_cpu
	$(PY) -m bench.x11_gateway
	$(PY) -m bench.stream
	$(PY) -m bench.ws_compression
	$(PY) -m bench.agent_step

clean:
	rm -rf .venv .rigway .mypy_cache .ruff_cache .pytest_cache .coverage .coverage.*
