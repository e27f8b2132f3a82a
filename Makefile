# The developer loop: every target builds .venv itself, so a fresh clone needs only python3 and make.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/replicalab: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

.PHONY: evaluate test lint bench
evaluate: $(BIN)/replicalab
	$(BIN)/replicalab evaluate

test: $(BIN)/replicalab
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest

bench: $(BIN)/replicalab
	$(BIN)/python -m benchmarks.run_all
