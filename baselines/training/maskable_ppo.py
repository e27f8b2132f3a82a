"""`replicalab train`: MaskablePPO on the Gymnasium Scientist env, with a learning curve measured
the way `evaluate` measures (needs the [train] extra: sb3-contrib and its torch).

Before training and every `eval_every` environment steps after, the current policy plays the same
validation-split grid through the runner (`StructuredScientist`: the env's observations, the env's codec), and one row
goes to `curve.csv`: the judge's mean score, which no reward config changes, and the mean return
under the run's reward config. The full config (`config.json`, the learner's settings, the
package versions and the run's `Provenance` included) is written first and the curve a row at a time, so an interrupted
run keeps both; the model (`model.zip`) and the curve's figure (`curve.png`) are written at the
end, the model for `evaluate --scientist OUT/model.zip`. The model is also saved at every point
of the curve after the first (`checkpoints/model_<steps>_steps.zip`, Stable-Baselines3's
`CheckpointCallback` naming), so a long run that is stopped keeps its latest policy. With a
`tensorboard` folder the learner logs there through Stable-Baselines3's own logger, the curve's
points included (`validation/judge_score`, `validation/scientist_return`).

The learner's settings are fixed (`config.json` records them under `learner`): every rollout is
`n_envs` × `n_steps` environment steps (`N_STEPS` unless a test shortens it) whatever
`eval_every` is, so the evaluation cadence never
changes what is learned. `steps` rounds up to whole rollouts, and a point is measured at the
first rollout boundary at or after each multiple of `eval_every`; `config.json` records the
counts under `trained`, and the curve's `steps` column is the count trained when each point was
measured.
"""

from __future__ import annotations

import csv
import importlib.metadata
import importlib.util
import json
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.policies.structured import ActFn, StructuredScientist, predict_masked
from replicalab.baselines.training.figures import plot_training_curve
from replicalab.checks import check_positive_int
from replicalab.envs.features import READINGS
from replicalab.install import install_hint
from replicalab.models import Provenance, seed_ranges
from replicalab.models.provenance import ANY_SEED
from replicalab.rewards import RewardConfig, get_preset
from replicalab.scenarios import DIFFICULTIES, template_names

POLICY = "MultiInputPolicy"
NET_ARCH = (256, 256)
"""Hidden layers of the policy and value networks. sb3's default 64 × 64 levels off below the
public reader (0.82 of the oracle at 300k–400k steps); 256 × 256 passes that level by 150k, as
the observation's 214 features feed 41 action components."""
N_STEPS = 256
"""Steps per env of one rollout (PPO's `n_steps`): 8 envs make rollouts of 2,048, PPO's usual."""
BATCH_SIZE = 256
"""Minibatch size: the learner's time goes to the 41 masked categoricals of each minibatch, not
to the environment, so fewer, larger minibatches train faster (with the checks below off, 2.1×
the steps per second of sb3's 64: `python -m benchmarks.bench_training`)."""
VERSIONED = ("replicalab", "sb3-contrib", "stable-baselines3", "torch", "gymnasium", "numpy")
"""The packages whose versions a run's config records: they decide what a seed trains."""


class CurvePoint(NamedTuple):
    """One point of a learning curve (a row of `curve.csv`)."""

    steps: int  # environment steps trained when it was measured
    judge_score: float  # mean judge score of the evaluation grid; no reward config changes it
    scientist_return: float  # mean Scientist return there, under the run's reward config


@dataclass
class TrainConfig:
    """Everything a training run depends on (written to `config.json`)."""

    steps: int = 100_000
    n_envs: int = 8
    seed: int = 0
    eval_every: int = 10_000
    eval_seeds: int = 5  # per template and difficulty, validation split
    num_train_scenarios: int | None = None
    reward_config: RewardConfig = field(default_factory=lambda: get_preset("default"))
    n_steps: int = N_STEPS  # the learner's rollout per env; the command line keeps N_STEPS
    reading: str = "text"  # the env's view of the paper: "text", or "facts" (a training aid)

    def __post_init__(self) -> None:
        for name in ("steps", "n_envs", "eval_every", "eval_seeds", "n_steps"):
            check_positive_int(name, getattr(self, name))
        if self.reading not in READINGS:
            raise ValueError(f"reading: expected one of {', '.join(READINGS)}, got {self.reading!r}")
        if self.rollout() < 2:
            raise ValueError("n_steps: n_steps × n_envs must be at least 2, PPO's smallest minibatch")

    def rollout(self) -> int:
        """Environment steps of one rollout, all envs together."""
        return self.n_steps * self.n_envs

    def batch_size(self) -> int:
        """PPO's minibatch: `BATCH_SIZE`, or the whole rollout where that is shorter."""
        return min(BATCH_SIZE, self.rollout())

    def trained_counts(self) -> dict[str, int]:
        """What the learner really trains: whole rollouts, `steps` rounded up to them."""
        return {"rollout": self.rollout(), "steps": whole_rollouts(self.steps, self.rollout())}

    def curve_steps(self) -> list[int]:
        """The step counts at which the curve is measured (see `curve_steps`)."""
        return curve_steps(0, self.steps, self.eval_every, self.rollout())


def whole_rollouts(steps: int, rollout: int) -> int:
    """`steps` rounded up to a multiple of `rollout`: the learner collects whole rollouts only."""
    return -(-steps // rollout) * rollout


def curve_steps(start: int, steps: int, every: int, rollout: int) -> list[int]:
    """Where a curve that trains `steps` from `start` is measured: at `start`, at the first
    rollout boundary at or after each multiple of `every` past `start` (a multiple that falls
    inside a rollout already measured adds no point), and at the end of the last rollout."""
    end = start + whole_rollouts(steps, rollout)
    points = [start]
    while points[-1] < end:
        due = (points[-1] - start) // every * every + every
        points.append(min(start + whole_rollouts(due, rollout), end))
    return points


def evaluate_policy(act: ActFn, config: TrainConfig, split: str) -> tuple[float, float]:
    """(mean judge score, mean return) of `act` on the `split` grid of `config.eval_seeds` seeds
    per template and difficulty, against the grounded Lab Manager, as `evaluate` plays it."""
    settings = Settings(reward_config=config.reward_config, split=split)
    grid = Grid.of(seeds=config.eval_seeds)
    digests = run_grid(
        grid, lambda: StructuredScientist(act, reading=config.reading), settings=settings
    ).digests
    return statistics.fmean(d.score for d in digests), statistics.fmean(d.scientist_return for d in digests)


def _versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in VERSIONED:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def torch_for_training() -> None:
    """Set torch up for this learner, process-wide."""
    import torch

    # sb3-contrib builds one torch Categorical per action component at every forward pass, and
    # torch checks each one's arguments: a quarter of a training step, spent re-checking logits
    # and masks the policy itself produced.
    torch.distributions.Distribution.set_default_validate_args(False)
    # One thread: the policy is a small MLP, and torch's threads spin against the envs and any
    # other process for the cores. On a loaded 2-core machine a run with torch's default threads
    # trained 22 steps/s beside three one-thread runs that trained 110 steps/s each.
    torch.set_num_threads(1)


def run_logger(tensorboard: Path | None) -> Any:
    """The learner's logger for a whole run: to `tensorboard` (a folder `MaskablePPO_<n>` in it,
    Stable-Baselines3's naming) or nowhere. Set once, it exists before the learner first learns,
    so the untrained point is logged too, and every `learn` call writes to the same event file."""
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.utils import configure_logger

    if tensorboard is None:
        return Logger(folder=None, output_formats=[])
    return configure_logger(tensorboard_log=str(tensorboard), tb_log_name="MaskablePPO")


def learn_with_curve(
    model: Any,
    config: TrainConfig,
    out: Path,
    steps: int,
    on_steps: Callable[[int], None] | None = None,
    on_point: Callable[[CurvePoint], None] | None = None,
    tensorboard: Path | None = None,
) -> list[CurvePoint]:
    """Train `model` (a MaskablePPO) `steps` more environment steps in its whole rollouts,
    measuring a point of the curve where `curve_steps` says (every `config.eval_every` steps
    from where it starts), each written to `out/curve.csv` as it comes."""

    def stepped(_locals: dict[str, Any], _globals: dict[str, Any]) -> bool:
        if on_steps is not None:
            on_steps(model.num_timesteps)
        return True  # go on training

    def measure() -> None:
        point = CurvePoint(
            model.num_timesteps,
            *evaluate_policy(lambda obs: predict_masked(model, obs), config, "validation"),
        )
        model.logger.record("validation/judge_score", point.judge_score)
        model.logger.record("validation/scientist_return", point.scientist_return)
        model.logger.dump(point.steps)
        if curve:  # the first point is the model as it came
            model.save(out / "checkpoints" / f"model_{point.steps}_steps.zip")
        curve.append(point)
        writer.writerow(point)
        handle.flush()
        if on_point is not None:
            on_point(point)

    model.set_logger(run_logger(tensorboard))
    points = curve_steps(model.num_timesteps, steps, config.eval_every, model.n_steps * model.n_envs)
    curve: list[CurvePoint] = []
    (out / "checkpoints").mkdir(exist_ok=True)
    with (out / "curve.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(CurvePoint._fields)
        measure()
        for target in points[1:]:
            # Whole rollouts: learn stops exactly at the boundary `target` is.
            model.learn(
                total_timesteps=target - model.num_timesteps, reset_num_timesteps=False, callback=stepped
            )
            measure()
    model.logger.close()
    return curve


def new_model(config: TrainConfig) -> Any:
    """A MaskablePPO with the run's fixed settings on `config.n_envs` seeded envs."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env

    import replicalab.envs  # noqa: F401  # registers ReplicaLab/Scientist-v3

    env_kwargs = {
        "reward_config": config.reward_config,
        "num_train_scenarios": config.num_train_scenarios,
        "reading": config.reading,
        "render_mode": None,  # make_vec_env asks for rgb_array otherwise
    }
    env = make_vec_env(
        "ReplicaLab/Scientist-v3", n_envs=config.n_envs, seed=config.seed, env_kwargs=env_kwargs
    )
    torch_for_training()
    return MaskablePPO(
        POLICY,
        env,
        seed=config.seed,
        n_steps=config.n_steps,
        batch_size=config.batch_size(),
        policy_kwargs={"net_arch": list(NET_ARCH)},
    )


def recorded_settings(config: TrainConfig) -> dict[str, Any]:
    """What `config.json` holds: every option, the learner's settings, the counts it trains and
    the package versions."""
    learner = {
        "algorithm": "MaskablePPO",
        "policy": POLICY,
        "n_steps": config.n_steps,
        "batch_size": config.batch_size(),
        "net_arch": list(NET_ARCH),
        "other_settings": "sb3-contrib's defaults; torch's distribution argument checks off, one torch thread",
    }
    return asdict(config) | {
        "reward_config": config.reward_config.model_dump(mode="json"),
        "learner": learner,
        "trained": config.trained_counts(),
        "versions": _versions(),
        "provenance": trained_provenance(config).model_dump(mode="json"),
    }


def trained_provenance(config: TrainConfig) -> Provenance:
    """What a model trained under `config` was trained on: the Gymnasium Scientist env's
    default grid (every family and level) of the train split, its first `num_train_scenarios`
    seeds or any it draws."""
    from replicalab.envs import SCIENTIST_ENV_ID

    capped = config.num_train_scenarios
    return Provenance(
        env_id=SCIENTIST_ENV_ID,
        policy="MaskablePPO",
        split="train",
        templates=tuple(template_names()),
        difficulties=DIFFICULTIES,
        reward_preset=config.reward_config.name,
        reading=config.reading,
        seeds=ANY_SEED if capped is None else seed_ranges(range(capped)),
    )


def train(
    config: TrainConfig,
    out: Path,
    on_steps: Callable[[int], None] | None = None,
    on_point: Callable[[CurvePoint], None] | None = None,
    tensorboard: Path | None = None,
) -> list[CurvePoint]:
    """Train, write `config.json`, `curve.csv`, `model.zip` and `curve.png` under `out`, return
    the curve. `on_steps(steps_done)` is called after every vector step (a progress bar),
    `on_point(point)` after every point of the curve; `tensorboard` is a folder for the learner's
    TensorBoard log (it needs the `tensorboard` package, which the [train] extra brings)."""
    try:
        import sb3_contrib  # noqa: F401  # torch and Stable-Baselines3 come with it
    except ImportError as exc:
        raise ImportError(f"training needs the [train] extra: {install_hint('train')}") from exc
    if tensorboard is not None and importlib.util.find_spec("tensorboard") is None:
        # SB3's logger writes with it, and would find it missing only after config.json is written.
        raise ImportError(
            "--tensorboard needs the tensorboard package (in the [train] extra): pip install tensorboard"
        )
    model = new_model(config)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(recorded_settings(config), indent=2), encoding="utf-8")
    curve = learn_with_curve(model, config, out, config.steps, on_steps, on_point, tensorboard)
    model.save(out / "model.zip")
    title = f"MaskablePPO · reward {config.reward_config.name} · seed {config.seed}"
    plot_training_curve(curve, out / "curve.png", title)
    return curve
