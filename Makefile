# The developer loop: every target builds .venv itself, so a fresh clone needs only python3 and make.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Written last by a build that finished, holding the interpreter it used: a failed build leaves
# none, so the next make starts over instead of reusing a half-built venv.
READY := $(VENV)/ready
# Which interpreter PY is: the base install it belongs to (the same from inside a venv made from
# it) and its version. Another PY, or the same path upgraded, is another interpreter.
PY_ID := $(shell $(PY) -c 'import sys; print(sys.base_prefix, sys.version.split()[0])' 2>/dev/null)

.DELETE_ON_ERROR:
.PHONY: evaluate test bench venv extras clean

# A venv built by another interpreter is rebuilt from scratch, never patched.
ifneq ($(PY_ID),$(shell cat $(READY) 2>/dev/null))
.PHONY: $(READY)
endif

$(READY): pyproject.toml
	@test -n "$(PY_ID)" || { echo "make: PY=$(PY) does not run as Python; pass PY=/path/to/python3" >&2; exit 1; }
	rm -rf $(VENV)
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	echo '$(PY_ID)' > $@

venv: $(READY)

# Every optional extra, which CI tests too (`make extras test`). torch's CPU build goes first: the
# TRL, train and rllib extras ask for torch, and pip would otherwise fetch a CUDA build of several GB.
EXTRAS := $(VENV)/extras
$(EXTRAS): $(READY)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,llm,verifiers,trl,train,rllib,server]'
	touch $@

extras: $(EXTRAS)

evaluate: $(READY)
	$(BIN)/replicalab evaluate

test: $(READY)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python .ci/typecheck.py  # mypy strict over every package, under its installed name
	$(BIN)/pytest

bench: $(READY)
	$(BIN)/python -m benchmarks.run_all

# Build outputs only: logs under runs/ and reward comparisons are the user's.
clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis build dist *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
