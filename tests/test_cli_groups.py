"""A command takes its options as groups: Typer sees each group's fields as options, and the
command gets the groups back, built from what was parsed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from replicalab.baselines.cli.groups import grouped


@dataclass(frozen=True)
class _Where:
    jobs: Annotated[int, typer.Option(min=1)] = 1
    out: Annotated[str | None, typer.Option()] = None


@dataclass(frozen=True)
class _Who:
    name: Annotated[str, typer.Option("--name", "-n")] = "baseline"


def test_a_command_gets_its_groups_back_from_the_options_typer_parsed() -> None:
    seen: list[tuple[_Where, _Who, bool]] = []

    @grouped
    def command(where: _Where, who: _Who, loud: Annotated[bool, typer.Option()] = False) -> None:
        seen.append((where, who, loud))

    app = typer.Typer()
    app.command()(command)
    result = CliRunner().invoke(app, ["--jobs", "3", "-n", "oracle", "--loud"])
    assert result.exit_code == 0, result.output
    assert seen == [(_Where(jobs=3), _Who(name="oracle"), True)]
    assert CliRunner().invoke(app, ["--jobs", "0"]).exit_code == 2  # the field's own checks hold


def test_two_groups_may_not_name_one_option() -> None:
    def command(first: _Where, second: _Where) -> None: ...

    with pytest.raises(TypeError, match="options named twice: jobs, out"):
        grouped(command)
