"""`replicalab train`: MaskablePPO on the Gymnasium Scientist env (needs the [train] extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from replicalab.baselines.cli.errors import USAGE, fail, stop_on_sigterm, user_errors
from replicalab.baselines.cli.options import (
    EvalEveryOpt,
    EvalSeedsOpt,
    NEnvsOpt,
    NStepsOpt,
    NumTrainScenariosOpt,
    ReadingOpt,
    StepsOpt,
    reward_config_of,
    writable_dir,
)
from replicalab.baselines.cli.output import progress_bar, stdout_console
from replicalab.baselines.evaluation.report import number
from replicalab.baselines.training.maskable_ppo import N_STEPS, CurvePoint, TrainConfig, train


def train_command(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Where model.zip, config.json, curve.csv and curve.png go.")
    ],
    steps: StepsOpt = 100_000,
    n_envs: NEnvsOpt = 8,
    n_steps: NStepsOpt = N_STEPS,
    seed: Annotated[int, typer.Option(min=0, help="Seeds the envs, the policy and the learner.")] = 0,
    eval_every: EvalEveryOpt = 10_000,
    eval_seeds: EvalSeedsOpt = 5,
    num_train_scenarios: NumTrainScenariosOpt = None,
    reward_config: Annotated[
        str,
        typer.Option("--reward-config", "-r", help="Preset (sparse | default | potential) or a JSON file."),
    ] = "default",
    reading: ReadingOpt = "text",
    tensorboard: Annotated[
        Path | None,
        typer.Option(help="A folder for a TensorBoard log (Stable-Baselines3's logger, the curve included)."),
    ] = None,
) -> None:
    # Typer reads help texts as rich markup, where a bare [train] is a tag and vanishes: \[ keeps it.
    """Train MaskablePPO on the Gymnasium Scientist env (needs the \\[train] extra)."""
    with user_errors(USAGE):
        config = TrainConfig(
            steps=steps,
            n_envs=n_envs,
            n_steps=n_steps,
            seed=seed,
            eval_every=eval_every,
            eval_seeds=eval_seeds,
            num_train_scenarios=num_train_scenarios,
            reward_config=reward_config_of(reward_config),
            reading=reading,
        )
    with user_errors():
        writable_dir(out, "--out")
    progress = progress_bar()
    task = progress.add_task("training", total=config.trained_counts()["steps"])

    def show(point: CurvePoint) -> None:
        progress.update(task, description=f"training · validation score {point.judge_score:.2f}")

    try:
        with user_errors(), stop_on_sigterm(), progress:
            curve = train(config, out, lambda done: progress.update(task, completed=done), show, tensorboard)
    except ImportError as exc:
        fail(str(exc), 1)
    except KeyboardInterrupt:
        fail(f"interrupted; {out / 'curve.csv'} holds the curve so far", 130)
    _print_run(config, curve, out)


def _print_run(config: TrainConfig, curve: list[CurvePoint], out: Path) -> None:
    """The curve's table, what was trained where it differs from what was asked, the files."""
    console = stdout_console()
    console.print(
        curve_table(curve, f"MaskablePPO · reward {config.reward_config.name} · seed {config.seed}")
    )
    trained = config.trained_counts()
    if trained["steps"] != config.steps or any(point.steps % config.eval_every for point in curve[1:-1]):
        console.print(
            Text(
                f"trained {trained['steps']:,} steps in whole rollouts of {trained['rollout']:,} "
                f"({config.n_envs} envs × {config.n_steps}), a point at the first rollout boundary at "
                "or after each multiple of --eval-every"
            )
        )
    written = ", ".join(str(out / name) for name in ("config.json", "curve.csv", "model.zip"))
    console.print(Text(f"wrote {written} and {out / 'curve.png'}"))


def curve_table(curve: list[CurvePoint], title: str) -> Table:
    """A learning curve, a row per point: the validation judge score and the shaped return."""
    table = Table(title=title, title_justify="left", header_style="bold")
    for name in ("steps", "validation score", "return"):
        table.add_column(name, justify="right")
    for point in curve:
        table.add_row(f"{point.steps:,}", number(point.judge_score), f"{point.scientist_return:+.2f}")
    return table
