# gpuplan: two commands for a newcomer (see README.md).
#   make run   set up and run the API on the embedded default (SQLite file + in-process cache)
#   make test  set up and run lint, type checks and the whole test suite
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck pytest fuzz bench openapi readme screenshot clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall only when the dependency declarations change.
$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/gpuplan serve --host $(HOST) --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff format --check service tests bench
	$(BIN)/ruff check service tests bench
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	eval "$$(scripts/test-services.sh)"; $(BIN)/pytest -p no:cacheprovider -q $(PYTEST_ARGS)

test: lint typecheck pytest

# Schemathesis against every operation of the OpenAPI document, valid and invalid requests, with
# and without the admin key: at least 5,000 requests, none answered 5xx (several minutes; the
# same tests run a 1,000-request pass in `make test`).
fuzz: $(STAMP)
	GPUPLAN_TEST_FUZZ_EXAMPLES=250 GPUPLAN_TEST_FUZZ_MIN_REQUESTS=5000 \
		$(BIN)/pytest -p no:cacheprovider -q tests/integration/test_fuzz_openapi.py

# The OpenAPI document, with its estimate and plan examples first regenerated from the service
# (tests fail when either drifts).
openapi: $(STAMP)
	$(BIN)/python -m service.api_examples
	$(BIN)/python -m service.openapi_export

# README example outputs, from the running service, and its tables, from committed data (the
# calibration report, the seed prices, the benchmark figures of bench/RESULTS.md); tests fail
# when they drift.
readme: $(STAMP)
	$(BIN)/python -m service.readme_examples
	$(BIN)/python -m service.readme_figures

# The README's screenshot of the planning page: the browser test's, written to docs/images/
# (needs Debian's chromium: apt-get install -y chromium).
screenshot: $(STAMP)
	GPUPLAN_TEST_ARTIFACTS=docs/images $(BIN)/pytest -p no:cacheprovider -q -s tests/integration/test_planning_page.py

# Rewrites bench/RESULTS.md; then `make readme` copies its figures into the README.
bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
