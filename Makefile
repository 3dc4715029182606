# One way to run everything. `make up` runs the local deployment, `make test` the whole suite.
PY := .venv/bin/python
VENV_STAMP := .venv/.installed

.PHONY: setup up test lint typecheck unit bench clean system-deps

$(VENV_STAMP): pyproject.toml
	python3 -m venv .venv
	.venv/bin/pip install --quiet --upgrade pip uv
	.venv/bin/uv pip install --quiet --python $(PY) -e '.[dev]'
	touch $(VENV_STAMP)

setup: $(VENV_STAMP)

system-deps:
	bash scripts/install-system-deps.sh

up: setup
	.venv/bin/rigway up

lint: setup
	.venv/bin/ruff check src tests bench
	.venv/bin/ruff format --check src tests bench
	.venv/bin/lint-imports

typecheck: setup
	.venv/bin/mypy

unit: setup
	.venv/bin/pytest -q

test: lint typecheck unit

bench: setup
	$(PY) bench/run_all.py

clean:
	rm -rf .venv .rigway .mypy_cache .ruff_cache .pytest_cache
