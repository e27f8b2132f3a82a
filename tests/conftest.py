"""Fixtures several test modules share. Helpers that are not fixtures (plans, scripted models,
strategies, the docs pages) live in plain helper modules beside this one; no test module imports
another."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from benchmarks.openai_stub import StubServer, serve

# One thread for torch (and BLAS) in the tests and the processes they start, unless the caller
# says otherwise: a thread per core spins against the other pytest worker and whatever else runs,
# and on a shared 2-core machine a 256-step MaskablePPO test took 11 s in one run of the suite
# and 165 s in another.
# The examples' test removes it, so they run as a user runs them.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture
def stub() -> Iterator[StubServer]:
    """An OpenAI-compatible chat server on 127.0.0.1, answering from its script."""
    with serve() as server:
        yield server


@pytest.fixture
def runner() -> CliRunner:
    """The command line in this process, 200 columns wide so table rows stay on one line."""
    return CliRunner(env={"COLUMNS": "200"})
