# The README's two commands. Each builds .venv on first use with pinned versions from
# pyproject.toml; nothing needs to be installed beforehand except Python 3.11+.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Core dependencies only: `make demo` stays quick on a fresh clone.
$(VENV)/.core-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml $(VENV)/.core-installed
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

demo: $(VENV)/.core-installed
	$(BIN)/hsa demo

test: $(VENV)/.test-installed
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis
