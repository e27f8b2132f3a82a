"""Every command's --help shows its help texts as written: bracketed words such as an extra's name
(`[train]`) are text, not markup to be swallowed."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from replicalab.baselines.cli import app

BRACKETED = re.compile(r"\[[^\]\s]+\]")
COMMANDS: Any = typer.main.get_command(app)  # a click group (typer vendors its own click)


def _texts(command: Any) -> list[str]:
    texts = [command.help or "", command.short_help or ""]
    texts += [getattr(param, "help", None) or "" for param in command.params]
    return texts


@pytest.mark.parametrize("name", ["", *sorted(COMMANDS.commands)])
def test_help_keeps_bracketed_words(name: str) -> None:
    command = COMMANDS if not name else COMMANDS.commands[name]
    result = CliRunner().invoke(app, [*([name] if name else []), "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    written = {word for text in _texts(command) for word in BRACKETED.findall(text)}
    if name == "":  # the group lists each command's first line
        written |= {w for c in COMMANDS.commands.values() for w in BRACKETED.findall(c.help or "")}
    for word in written:
        assert word in result.output, f"`{name or 'replicalab'} --help` lost {word}"


def test_train_help_names_the_extra() -> None:
    result = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "400"})
    assert "needs the [train] extra" in result.output
