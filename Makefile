# The README's two commands. Each builds .venv on first use with pinned versions from
# pyproject.toml; nothing needs to be installed beforehand except Python 3.11+.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/pip install --quiet --disable-pip-version-check

.PHONY: demo lint test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Core dependencies only: `make demo` stays quick on a fresh clone.
$(VENV)/.core-installed: pyproject.toml | $(BIN)/python
	$(PIP) -e .
	touch $@

# The test suite trains tiny models with TRL and runs Ray locally. torch==2.13.0 goes first: it
# is the CPU wheel this machine kind has on disk, and installing it first keeps the `train`
# extra from pulling a multi-GB CUDA build.
$(VENV)/.test-installed: pyproject.toml $(VENV)/.core-installed
	$(PIP) torch==2.13.0
	$(PIP) -e '.[test,train,ray]'
	touch $@

demo: $(VENV)/.core-installed
	$(BIN)/hsa demo

# Style, types and layers (configured in pyproject.toml); `make test` runs it first.
lint: $(VENV)/.test-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# Two worker processes (the machine kind has 2 cores). Every test that imports torch carries the
# xdist group "torch", so they all run in one process, which builds the tiny models once.
test: lint
	$(BIN)/python -m pytest -n 2 --dist loadgroup

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis .mypy_cache .ruff_cache .import_linter_cache
