"""`replicalab`: evaluate policies, replay logged episodes, play a seat yourself, report runs as HTML, browse scenarios, compare rewards, train.

    replicalab evaluate                       # the project's reader vs the grounded Lab Manager, 180 episodes
    replicalab evaluate --scientist random --out runs/random.jsonl --jobs 2
    replicalab evaluate --backend ray --jobs 8   # Ray tasks (RAY_ADDRESS's cluster, else local)
    replicalab replay runs/random.jsonl 3     # or an episode id; -1 is the last
    replicalab play -t ml_benchmark -d hard --seed 7   # play the Scientist yourself; --lab-manager for the other seat
    replicalab report runs/baseline.jsonl runs/random.jsonl --out report.html   # needs [report]
    replicalab evaluate --template-file my_family.json -t my_family --seeds 2
    replicalab scenarios --show ml_benchmark hard 7
    replicalab compare-rewards --out-dir reward-comparison
    replicalab train --out runs/ppo --steps 200000 -r potential   # needs the [train] extra
    replicalab evaluate --scientist runs/ppo/model.zip
    replicalab compare-rewards --train -p sparse,potential --out-dir reward-training
    replicalab export-reading --split train --seeds 40 --out reading-train.jsonl

Results go to stdout, the progress bar and errors to stderr. A mistake in the command line
(unknown template, bad file) ends with a one-line message and a non-zero exit, no traceback:
2 for a bad option, 1 for a file or run that cannot be used; `evaluate` exits 3 after a partial
run (episodes lost to a model server's failure; `--allow-partial` makes it 0).
"""

from __future__ import annotations

from typing import Annotated

import typer

from replicalab import __version__
from replicalab.baselines.cli.compare_rewards import compare_rewards_command
from replicalab.baselines.cli.evaluate import evaluate
from replicalab.baselines.cli.export_reading import export_reading
from replicalab.baselines.cli.help_text import PlainHelpCommand, PlainHelpGroup
from replicalab.baselines.cli.play import play_command
from replicalab.baselines.cli.replay import replay
from replicalab.baselines.cli.report import report
from replicalab.baselines.cli.scenarios import scenarios
from replicalab.baselines.cli.serve import serve
from replicalab.baselines.cli.train import train_command

app = typer.Typer(
    cls=PlainHelpGroup,
    name="replicalab",
    help="ReplicaLab: evaluate Scientist policies, replay episodes, play a seat, browse scenarios, train a Scientist.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"replicalab {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Options of the command itself, before any subcommand (the help text is the app's)."""


app.command(cls=PlainHelpCommand)(evaluate)
# Unknown options pass through as arguments, so a negative index (`replay FILE -1`) is an index.
app.command(cls=PlainHelpCommand, context_settings={"ignore_unknown_options": True})(replay)
app.command(cls=PlainHelpCommand)(scenarios)
app.command(cls=PlainHelpCommand)(report)
app.command("train", cls=PlainHelpCommand)(train_command)
app.command("compare-rewards", cls=PlainHelpCommand)(compare_rewards_command)
app.command(cls=PlainHelpCommand)(serve)
app.command("play", cls=PlainHelpCommand)(play_command)
app.command("export-reading", cls=PlainHelpCommand)(export_reading)
