"""`replicalab compare-rewards`: policies replayed under each reward preset, or with `--train`
MaskablePPO trained under each."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from replicalab.baselines.cli.errors import USAGE, Problem, fail, stop_on_sigterm, user_errors
from replicalab.baselines.cli.options import (
    DifficultiesOpt,
    EvalEveryOpt,
    EvalSeedsOpt,
    FirstSeedOpt,
    GenerateFnOpt,
    JobsOpt,
    MaxRoundsOpt,
    NEnvsOpt,
    NStepsOpt,
    NumTrainScenariosOpt,
    ReadingOpt,
    SeedsOpt,
    SplitOpt,
    StepsOpt,
    TemplateFilesOpt,
    TemplatesOpt,
    grid_of,
    register_template_files,
    reward_config_of,
    scientist_factories,
    split_names,
    writable_dir,
)
from replicalab.baselines.cli.output import counted, episode_progress, progress_bar, stdout_console
from replicalab.baselines.evaluation import report
from replicalab.baselines.training.maskable_ppo import N_STEPS, TrainConfig
from replicalab.rewards import PRESETS, RewardConfig

if TYPE_CHECKING:  # the comparisons load matplotlib (and the trainer sb3-contrib) when run
    from replicalab.baselines.evaluation.runner import Grid, PolicyFactory
    from replicalab.baselines.training.compare_rewards import ComparisonRow
    from replicalab.baselines.training.compare_trained import ConfigSummary

ScientistsOpt = Annotated[
    list[str] | None,
    typer.Option("--scientists", "-s", help="Policies, comma-separated (default: baseline,random,oracle)."),
]
PresetsOpt = Annotated[
    list[str] | None,
    typer.Option("--presets", "-p", help="Reward presets or JSON files (default: every preset)."),
]
OutDirOpt = Annotated[Path, typer.Option("--out-dir", help="Where the CSV tables and the PNG figure go.")]
TrainModeOpt = Annotated[
    bool,
    typer.Option("--train", help="Train MaskablePPO under each config instead of replaying fixed policies."),
]
TrainSeedsOpt = Annotated[
    int, typer.Option(min=3, help="With --train: training seeds per config (0, 1, ...).")
]

REPLAY_ONLY = (
    "templates",
    "difficulties",
    "seeds",
    "first_seed",
    "scientists",
    "generate_fn",
    "max_rounds",
    "split",
    "jobs",
)

TRAIN_ONLY = (
    "train_seeds",
    "steps",
    "n_envs",
    "n_steps",
    "eval_every",
    "eval_seeds",
    "num_train_scenarios",
    "reading",
)
"""compare-rewards' options that only replaying policies, or only training, takes."""


def compare_rewards_command(
    ctx: typer.Context,
    templates: TemplatesOpt = None,
    difficulties: DifficultiesOpt = None,
    seeds: SeedsOpt = 10,
    first_seed: FirstSeedOpt = 0,
    scientists: ScientistsOpt = None,
    generate_fn: GenerateFnOpt = None,
    presets: PresetsOpt = None,
    max_rounds: MaxRoundsOpt = 6,
    split: SplitOpt = "train",
    jobs: JobsOpt = 1,
    out_dir: OutDirOpt = Path("reward-comparison"),
    template_files: TemplateFilesOpt = None,
    train_mode: TrainModeOpt = False,
    train_seeds: TrainSeedsOpt = 3,
    steps: StepsOpt = 100_000,
    n_envs: NEnvsOpt = 8,
    n_steps: NStepsOpt = N_STEPS,
    eval_every: EvalEveryOpt = 10_000,
    eval_seeds: EvalSeedsOpt = 5,
    num_train_scenarios: NumTrainScenariosOpt = None,
    reading: ReadingOpt = "text",
) -> None:
    """Run policies under each reward preset (table, CSV and PNG of the mean reward components),
    or with --train train MaskablePPO under each (learning curves of the judge's score)."""
    with user_errors(USAGE):
        if train_mode:
            refuse_options(ctx, REPLAY_ONLY, "with --train")
        else:
            refuse_options(ctx, TRAIN_ONLY, "without --train")
        register_template_files(template_files)
        configs = [reward_config_of(name) for name in split_names(presets) or list(PRESETS)]
        base = TrainConfig(
            steps=steps,
            n_envs=n_envs,
            n_steps=n_steps,
            eval_every=eval_every,
            eval_seeds=eval_seeds,
            num_train_scenarios=num_train_scenarios,
            reading=reading,
        )
    if train_mode:
        _compare_trained(configs, range(train_seeds), base, out_dir)
        return
    with user_errors(USAGE):
        grid = grid_of(templates, difficulties, seeds, first_seed, split)
        factories = scientist_factories(
            split_names(scientists) or ["baseline", "random", "oracle"], generate_fn, "--scientists"
        )
    _compare_replayed(grid, factories, configs, max_rounds, split, jobs, out_dir)


def _compare_replayed(
    grid: Grid,
    factories: dict[str, PolicyFactory],
    configs: list[RewardConfig],
    max_rounds: int,
    split: str,
    jobs: int,
    out_dir: Path,
) -> None:
    """compare-rewards without --train: the episodes, the CSV and PNG, the table of components."""
    from replicalab.baselines.training.compare_rewards import compare_rewards, plot, write_csv

    with user_errors():
        writable_dir(out_dir, "--out-dir")
    total = len(grid.cells()) * len(factories) * len(configs)
    try:
        with user_errors(), stop_on_sigterm(), episode_progress(total, "episodes") as advance:
            rows = compare_rewards(
                grid, factories, configs, max_rounds=max_rounds, split=split, jobs=jobs, on_episode=advance
            )
            write_csv(rows, out_dir / "reward_components.csv")
            plot(rows, out_dir / "reward_components.png")
    except KeyboardInterrupt:
        fail("interrupted", 130)
    console = stdout_console()
    console.print(_components_table(rows, len(grid.cells())))
    console.print(Text(f"wrote {out_dir / 'reward_components.csv'} and {out_dir / 'reward_components.png'}"))


def _components_table(rows: Sequence[ComparisonRow], episodes: int) -> Table:
    """One row per (preset, scientist): return, score, agreement and each reward component."""
    from replicalab.baselines.training.compare_rewards import component_names

    names = component_names(rows)
    table = Table(
        title=f"mean scientist reward per episode by component ({counted(episodes, 'episode')} per row)",
        title_justify="left",
        header_style="bold",
    )
    for column in ("preset", "scientist", "return ± 95% CI", "score", "agree", *names):
        table.add_column(column, justify="left" if column in ("preset", "scientist") else "right")
    for row in rows:
        table.add_row(
            row.preset,
            row.scientist,
            report.estimate(row.returns),
            report.number(row.score),
            report.percent(row.agreement_rate),
            *(report.number(row.components.get(n, 0.0)) for n in names),
        )
    return table


def refuse_options(ctx: typer.Context, names: Sequence[str], when: str) -> None:
    """Refuse, by its flag, an option given on the command line that does not apply `when`. (The
    source is compared by name: typer vendors click's `ParameterSource` in its newer releases.)"""
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name) if param.name in names else None
        if source is not None and source.name != "DEFAULT":
            flag = max(param.opts, key=len)
            raise Problem(f"{flag} does not apply {when}", USAGE)


def _compare_trained(
    configs: list[RewardConfig], seeds: Sequence[int], base: TrainConfig, out_dir: Path
) -> None:
    """compare-rewards --train: the runs, the curves' CSV and PNG, the table of final scores."""
    from replicalab.baselines.training.compare_trained import (
        check_configs,
        plot_curves,
        summarize_runs,
        train_under_configs,
        write_curves,
        write_summaries,
    )

    with user_errors(USAGE):
        check_configs(configs)
    with user_errors():
        writable_dir(out_dir, "--out-dir")
    runs_total = len(configs) * len(seeds)
    progress = progress_bar()
    task = progress.add_task("training", total=runs_total * base.steps)
    finished: list[tuple[str, int]] = []

    def advance(name: str, seed: int, done: int) -> None:
        if (name, seed) not in finished:
            finished.append((name, seed))
        before = (len(finished) - 1) * base.steps
        description = f"training {name} · seed {seed} ({len(finished)}/{runs_total})"
        progress.update(task, completed=before + min(done, base.steps), description=description)

    try:
        with user_errors(), stop_on_sigterm(), progress:
            runs = train_under_configs(configs, seeds, base, out_dir, advance)
    except ImportError as exc:
        fail(str(exc), 1)
    except KeyboardInterrupt:
        fail(f"interrupted; the finished runs are under {out_dir / 'runs'}", 130)
    title = f"MaskablePPO, {base.steps:,} steps × {counted(len(seeds), 'seed')} per reward config"
    summaries = summarize_runs(runs)
    write_curves(runs, out_dir / "learning_curves.csv")
    write_summaries(summaries, out_dir / "final_scores.csv")
    plot_curves(runs, out_dir / "learning_curves.png", title)
    console = stdout_console()
    console.print(_final_scores_table(summaries, title))
    written = ", ".join(str(out_dir / name) for name in ("learning_curves.csv", "final_scores.csv"))
    console.print(
        Text(f"wrote {written}, {out_dir / 'learning_curves.png'} and the runs under {out_dir / 'runs'}")
    )


def _final_scores_table(summaries: Sequence[ConfigSummary], title: str) -> Table:
    """One row per reward config: the judge's score over the curve, at its end, and on test."""
    table = Table(
        title=f"{title}: the judge's score, mean ± 95% CI over seeds",
        title_justify="left",
        header_style="bold",
    )
    first = summaries[0].reward_config if summaries else ""
    columns = (
        "reward config",
        "seeds",
        "curve mean (validation)",
        "final (validation)",
        "test",
        f"curve mean − {first}",
        f"test − {first}",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "reward config" else "right")
    for row in summaries:
        table.add_row(
            row.reward_config,
            str(row.seeds),
            report.estimate(row.curve_mean),
            report.estimate(row.final),
            report.estimate(row.test),
            *("" if math.isnan(paired.mean) else report.estimate(paired) for paired in row.paired()),
        )
    return table
