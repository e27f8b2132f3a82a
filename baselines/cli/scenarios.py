"""`replicalab scenarios`: the scenario families, or one generated scenario."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from replicalab.baselines.cli.errors import USAGE, user_errors
from replicalab.baselines.cli.options import SplitOpt, TemplateFilesOpt, register_template_files
from replicalab.baselines.cli.output import stdout_console
from replicalab.baselines.evaluation import report
from replicalab.scenarios import available_scenario_families, generate_scenario


def scenarios(
    show: Annotated[
        tuple[str, str, int] | None,
        typer.Option(metavar="TEMPLATE DIFFICULTY SEED", help="Print one scenario's public brief."),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="JSON instead of tables (with --show: the whole pack, hidden parts too)."
        ),
    ] = False,
    split: SplitOpt = "train",
    template_files: TemplateFilesOpt = None,
) -> None:
    """List the scenario families, or show one generated scenario."""
    with user_errors(USAGE):
        register_template_files(template_files)
    if show is None:
        families = available_scenario_families()
        if as_json:
            typer.echo(json.dumps([f.model_dump() for f in families], indent=2))
        else:
            stdout_console().print(report.families_table(families))
        return
    template, difficulty, seed = show
    with user_errors(USAGE):
        pack = generate_scenario(seed, template, difficulty, split)
    if as_json:
        typer.echo(pack.model_dump_json(indent=2))
    else:
        stdout_console().print(report.brief(pack))
