"""The options several commands share, and how their values become the library's arguments;
a value that cannot be used is refused as a `Problem` naming the option."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from replicalab import rewards
from replicalab.agents import GenerateFn
from replicalab.baselines.cli.errors import USAGE, Problem, first_error
from replicalab.baselines.evaluation.runner import Grid, PolicyFactory
from replicalab.baselines.policies.seats import SCIENTISTS, LLMScientist
from replicalab.baselines.policies.structured import import_callable, structured_factory
from replicalab.episode import MIN_ROUNDS
from replicalab.rewards import RewardConfig
from replicalab.scenarios import BUILTIN_TEMPLATES, TemplateData, register_template
from replicalab.scenarios.registry import check_has_cases, check_split

TemplateFilesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--template-file",
        exists=True,
        dir_okay=False,
        help="A scenario family's JSON file (a TemplateData) to register first; repeatable.",
    ),
]

TemplatesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--templates", "-t", help="Templates, comma-separated or repeated (default: all registered)."
    ),
]

DifficultiesOpt = Annotated[
    list[str] | None,
    typer.Option("--difficulties", "-d", help="Difficulties, comma-separated or repeated (default: all)."),
]

FirstSeedOpt = Annotated[int, typer.Option(min=0, help="First scenario seed.")]

SplitOpt = Annotated[
    str,
    typer.Option(help="Which held-out cases the scenarios come from: train | validation | test."),
]

MaxRoundsOpt = Annotated[
    int, typer.Option(min=MIN_ROUNDS, help="Rounds before the negotiation ends (a proposal, then an accept).")
]

JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Worker processes (Ray: tasks at a time).")]

SeedsOpt = Annotated[int, typer.Option(min=1, help="Seeds per template × difficulty.")]

GenerateFnOpt = Annotated[
    str | None, typer.Option(help="MODULE:ATTR of a GenerateFn (messages -> text), for the llm scientist.")
]
RewardConfigOpt = Annotated[
    str,
    typer.Option("--reward-config", "-r", help="Preset (sparse | default | potential) or a JSON file."),
]
StepsOpt = Annotated[
    int,
    typer.Option(
        min=1,
        help="Environment steps to train for, rounded up to whole rollouts (--n-envs × --n-steps); "
        "config.json records the count trained.",
    ),
]

NEnvsOpt = Annotated[int, typer.Option(min=1, help="Environments stepped together.")]

NStepsOpt = Annotated[
    int,
    typer.Option(
        min=1, help="Steps per env of one PPO rollout (the learner's n_steps); no other option changes it."
    ),
]

EvalEveryOpt = Annotated[
    int,
    typer.Option(
        min=1,
        help="Steps between points of the learning curve, which starts at step 0: a point at the first "
        "rollout boundary at or after each multiple. It never changes the learner.",
    ),
]

EvalSeedsOpt = Annotated[
    int,
    typer.Option(min=1, help="Scenario seeds per template and difficulty of each evaluation of the model."),
]

NumTrainScenariosOpt = Annotated[
    int | None, typer.Option(min=1, help="Train on the first N scenario seeds of the train split only.")
]

ReadingOpt = Annotated[
    str,
    typer.Option(
        help="The env's view of the paper: text (the benchmark's observation) or facts (the "
        "paper's public facts per candidate: a training aid, never the reading benchmark)."
    ),
]


def split_names(values: list[str] | None) -> list[str] | None:
    """Repeated and/or comma-separated option values, in order, without duplicates."""
    if not values:
        return None
    return list(dict.fromkeys(part.strip() for v in values for part in v.split(",") if part.strip()))


def grid_of(
    templates: list[str] | None,
    difficulties: list[str] | None,
    seeds: int,
    first_seed: int,
    split: str = "train",
) -> Grid:
    """The grid, refused by name when a template has no paper case in `split`."""
    try:
        grid = Grid.of(split_names(templates), split_names(difficulties), seeds, first_seed)
        check_split(split)
        for template in grid.templates:
            check_has_cases(template, split)
    except ValueError as exc:
        raise Problem(str(exc), USAGE) from None
    return grid


def reward_config_of(value: str) -> RewardConfig:
    """`replicalab.rewards.reward_config_of` for the command line: a bad value is a usage error."""
    try:
        return rewards.reward_config_of(value, "reward config")
    except ValueError as exc:
        raise Problem(str(exc), USAGE) from None


def load_generate_fn(spec: str) -> GenerateFn:
    """`MODULE:ATTR` → the callable; the working directory is importable, as for `python -m`."""
    try:
        return import_callable(spec, "--generate-fn")
    except ValueError as exc:
        raise Problem(str(exc), USAGE) from None


def scientist_factories(names: list[str], generate_fn: str | None, option: str) -> dict[str, PolicyFactory]:
    """The policies by name (given with `option`); `llm` is built around the `--generate-fn`
    model, which it needs and nothing else takes."""
    factories: dict[str, PolicyFactory] = {}
    for name in names:
        if name == "llm":
            if generate_fn is None:
                raise Problem(f"{option} llm needs --generate-fn MODULE:ATTR", USAGE)
            factories[name] = functools.partial(LLMScientist, load_generate_fn(generate_fn))
        elif name in SCIENTISTS:
            factories[name] = SCIENTISTS[name]
        elif name.endswith(".zip") or ":" in name:
            try:
                factories[name] = structured_factory(name)
            except ValueError as exc:
                raise Problem(str(exc), USAGE) from None
        else:
            valid = ", ".join([*SCIENTISTS, "llm", "PATH.zip", "MODULE:ATTR"])
            raise Problem(f"scientist: unknown policy {name!r}; valid: {valid}", USAGE)
    if generate_fn is not None and "llm" not in factories:
        raise Problem(f"--generate-fn applies to {option} llm only", USAGE)
    return factories


def register_template_files(paths: list[Path] | None) -> None:
    """Register each family file before anything reads the registry (the grid checks names).

    A file may not take a built-in family's name, nor two files one name; registering the same
    family again in one process replaces it, so a command can be run twice from Python."""
    seen: dict[str, Path] = {}
    for path in paths or []:
        try:
            data = TemplateData.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            raise Problem(f"--template-file: {path}: {first_error(exc)}", USAGE) from None
        name = data.template
        if name in BUILTIN_TEMPLATES:
            raise Problem(
                f"--template-file: {path} names the built-in family {name!r}; give it a name of its own",
                USAGE,
            )
        if name in seen:
            raise Problem(f"--template-file: {seen[name]} and {path} both define {name!r}", USAGE)
        seen[name] = path
        try:
            register_template(data, replace=True)
        except ValueError as exc:
            raise Problem(f"--template-file: {path}: {exc}", USAGE) from None


def writable_dir(path: Path, option: str) -> None:
    """Create `path` and prove a file can be written there, before hours of episodes depend on it."""
    if path.exists() and not path.is_dir():
        raise Problem(f"{option}: {path} is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise Problem(f"{option}: cannot write to {path}: {exc.strerror or exc}") from None
