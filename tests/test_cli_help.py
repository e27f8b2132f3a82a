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


PLACEHOLDER = re.compile(r"<\w+(\[\w+\])?( range)?>|\{\w+\}")
"""Typer's own labels: `<bool>` beside a flag, `<str>` or `<list[str]>` for a value, `{path}` for
a required argument in the usage line."""


@pytest.mark.parametrize("name", ["", *sorted(COMMANDS.commands)])
def test_help_shows_no_placeholder(name: str) -> None:
    result = CliRunner().invoke(app, [*([name] if name else []), "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert not PLACEHOLDER.search(lines[0]), lines[0]  # the usage line
    options = [line for line in lines if re.match(r"│ +-", line)]  # an option's row, not an argument's
    assert any("--help" in line for line in options)
    for line in options:
        assert not PLACEHOLDER.search(line), line
    flags = [line for line in options if "--no-" in line or "--help" in line or "--version" in line]
    for line in flags:  # a flag takes no value: nothing between its name and its help
        assert re.match(r"│ +(-\w |--[\w-]+|--no-[\w-]+…?| )+ {2,}[A-Z]", line), line
