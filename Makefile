# The developer loop: every target builds .venv itself, so a fresh clone needs only python3 and make.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Written last by a build that finished, holding the interpreter it used: a failed build leaves
# none, so the next make starts over instead of reusing a half-built venv.
READY := $(VENV)/ready
# Written first by every build: make deletes only a venv that it built. One made by hand (the
# manual install's `python3 -m venv .venv`) is refused with a message, never wiped.
OWNED := $(VENV)/built-by-make
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
	@test ! -e $(VENV) -o -e $(OWNED) -o -e $(READY) || { echo "make: $(VENV) was not built by make and a build would delete it; remove it yourself (rm -rf $(VENV)) or build another (make VENV=.make-venv ...)" >&2; exit 1; }
	rm -rf $(VENV)
	$(PY) -m venv $(VENV)
	touch $(OWNED)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	echo '$(PY_ID)' > $@

venv: $(READY)

# Every optional extra, which CI tests too (`make extras test`). torch's CPU build goes first: the
# trl, train and rllib extras ask for torch, and PyPI's Linux torch is a CUDA build of several GB.
# The recipe is the one every missing-extra message gives (replicalab/install.py): torch pinned to
# 2.13.0+cpu, which only PyTorch's CPU index has (on macOS PyPI's plain 2.13.0 is the CPU build),
# its dependencies from PyPI. Where that index can't be reached (--retries 1 keeps the wait short),
# a local 2.13.0+cpu wheel found by pip is taken, and without one the install stops before any
# download. The check after the install (the one the recipe ends with) fails the build, giving the
# fix, if a CUDA torch or an nvidia-* package came in all the same.
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
TORCH_CPU := torch==2.13.0$(if $(filter Darwin,$(shell uname -s)),,+cpu)
EXTRAS := $(VENV)/extras
$(EXTRAS): $(READY)
	$(BIN)/pip install -q --retries 1 $(TORCH_CPU) --extra-index-url $(TORCH_CPU_INDEX)
	$(BIN)/pip install -q -e '.[dev,llm,verifiers,trl,train,rllib,server,report]'
	$(BIN)/python -m replicalab.install --check-cpu-torch
	touch $@

extras: $(EXTRAS)

evaluate: $(READY)
	$(BIN)/replicalab evaluate

# mypy (strict, over every package under its installed name) runs beside pytest (one worker per
# core, pytest-xdist): neither writes what the other reads, and mypy fills what pytest leaves idle
# of the cores (its last tests, processes it waits for). Either failing fails the target, once
# both have finished.
test: $(READY)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python .ci/typecheck.py & mypy=$$!; \
	$(BIN)/pytest -n auto; tests=$$?; \
	wait $$mypy; types=$$?; \
	test $$tests -eq 0 -a $$types -eq 0

bench: $(READY)
	$(BIN)/python -m benchmarks.run_all

# Build outputs only: logs under runs/ and reward comparisons are the user's.
clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis build dist *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
