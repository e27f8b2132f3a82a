"""`replicalab play`: a person in the Scientist's seat (or the Lab Manager's) in the terminal.

The person reads what a model reads and types what a model would send (`policies.human`); the
partner is the grounded Lab Manager, or with `--lab-manager` a Scientist policy. The episode is
played by the one game loop and appended to a JSONL log that `replay` and `report` read.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from replicalab.baselines.cli.errors import USAGE, Problem, fail, user_errors
from replicalab.baselines.cli.options import (
    MaxRoundsOpt,
    RewardConfigOpt,
    SplitOpt,
    TemplateFilesOpt,
    register_template_files,
    reward_config_of,
)
from replicalab.baselines.cli.output import stdout_console
from replicalab.baselines.evaluation import report
from replicalab.baselines.evaluation.grid import Settings, play_episode
from replicalab.baselines.evaluation.log_file import open_log
from replicalab.baselines.policies.human import Quit, human_lab_manager, human_scientist
from replicalab.baselines.policies.interface import Policy
from replicalab.baselines.policies.seats import SCIENTISTS, GroundedLabManager
from replicalab.scenarios import BUILTIN_TEMPLATES, DEFAULT_MAX_ROUNDS, DIFFICULTIES, ScenarioKey
from replicalab.scenarios.key import check_seed
from replicalab.scenarios.registry import check_difficulty, check_has_cases, check_split

DEFAULT_PARTNER = "reader"
"""The Scientist a person playing the Lab Manager faces: one that reads the paper and negotiates."""


class ConsoleTerminal:
    """A rich console: each text in a panel (as text, never markup), input on its own line."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def show(self, title: str, text: str) -> None:
        self.console.print(Panel(Text(text), title=Text(title), title_align="left"))

    def read(self, prompt: str) -> str:
        return self.console.input(Text(prompt, style="bold"))


def _scenario(template: str, difficulty: str, seed: int, split: str) -> ScenarioKey:
    """The scenario the options name, refused by option when it cannot be played."""
    try:
        check_has_cases(template, split)
        return ScenarioKey(
            template,
            check_split(split),
            check_difficulty(difficulty, "--difficulty"),
            check_seed(seed, "--seed"),
        )
    except ValueError as exc:
        raise Problem(str(exc), USAGE) from None


def _seats(partner: str | None, lab_manager: bool, terminal: ConsoleTerminal) -> tuple[Policy, Policy, str]:
    """The Scientist's seat, the Lab Manager's, and a line saying who plays which."""
    if not lab_manager:
        if partner not in (None, "grounded"):
            raise Problem("--partner: the Scientist's partner is the grounded Lab Manager", USAGE)
        return (
            human_scientist(terminal),
            GroundedLabManager(),
            "the Scientist, facing the grounded Lab Manager",
        )
    name = DEFAULT_PARTNER if partner is None else partner
    if name not in SCIENTISTS:
        raise Problem(f"--partner: unknown Scientist {name!r}; valid: {', '.join(SCIENTISTS)}", USAGE)
    return SCIENTISTS[name](), human_lab_manager(terminal), f"the Lab Manager, facing the {name} Scientist"


TemplateOpt = Annotated[
    str, typer.Option("--template", "-t", help="The scenario family (`replicalab scenarios` lists them).")
]
DifficultyOpt = Annotated[str, typer.Option("--difficulty", "-d", help=f"One of {', '.join(DIFFICULTIES)}.")]
LabManagerOpt = Annotated[
    bool,
    typer.Option("--lab-manager", help="Play the Lab Manager's seat against a Scientist policy (--partner)."),
]
PartnerOpt = Annotated[
    str | None,
    typer.Option(
        help=f"With --lab-manager, the Scientist you face: {' | '.join(SCIENTISTS)} "
        f"(default {DEFAULT_PARTNER}). The Scientist always faces the grounded Lab Manager."
    ),
]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="The JSONL log the episode is appended to.")]


def play_command(
    template: TemplateOpt = BUILTIN_TEMPLATES[0],
    difficulty: DifficultyOpt = DIFFICULTIES[0],
    seed: Annotated[int, typer.Option(min=0, help="The scenario seed.")] = 0,
    split: SplitOpt = "train",
    lab_manager: LabManagerOpt = False,
    partner: PartnerOpt = None,
    max_rounds: MaxRoundsOpt = DEFAULT_MAX_ROUNDS,
    reward_config: RewardConfigOpt = "default",
    out: OutOpt = Path("runs/play.jsonl"),
    template_files: TemplateFilesOpt = None,
) -> None:
    """Play a seat yourself: read what a model reads, type its JSON (or a shortcut; `help`)."""
    console = stdout_console()
    with user_errors(USAGE):
        register_template_files(template_files)
        key = _scenario(template, difficulty, seed, split)
        settings = Settings(reward_config_of(reward_config), max_rounds, split=split)
        scientist, lab, who = _seats(partner, lab_manager, ConsoleTerminal(console))
    console.print(Text(f"{key.id}: you are {who}. Type help for the shortcuts."))
    with ExitStack() as stack:
        with user_errors():
            handle = open_log(out, stack)  # before the game: a log that cannot be written is said now
        try:
            log = play_episode(key, scientist, lab, settings)
        except Quit:
            console.print("stopped before the end; nothing logged")
            return
        except (EOFError, KeyboardInterrupt):
            fail("interrupted; nothing logged", 130)
        handle.write((log.model_dump_json() + "\n").encode("utf-8"))
    for part in report.replay(log):  # the negotiation, what each move paid, the judge's account
        console.print(part)
    console.print(Text(f"logged to {out} (replicalab replay {out} -1)"))
