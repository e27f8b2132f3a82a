"""Fixtures several test modules share. Helpers that are not fixtures (plans, scripted models,
strategies, the docs pages) live in plain helper modules beside this one; no test module imports
another."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from benchmarks.openai_stub import StubServer, serve


@pytest.fixture
def stub() -> Iterator[StubServer]:
    """An OpenAI-compatible chat server on 127.0.0.1, answering from its script."""
    with serve() as server:
        yield server


@pytest.fixture
def runner() -> CliRunner:
    """The command line in this process, 200 columns wide so table rows stay on one line."""
    return CliRunner(env={"COLUMNS": "200"})
