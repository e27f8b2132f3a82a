"""`replicalab train`: MaskablePPO on the Gymnasium Scientist env, with a learning curve measured
the way `evaluate` measures (needs the [train] extra: sb3-contrib and its torch).

Every `eval_every` environment steps the current policy plays the same validation-split grid
through the runner (`StructuredScientist`: the env's observations, the env's codec), and one row
goes to `curve.csv`: the judge's mean score, which no reward config changes, and the mean return
under the run's reward config. The model (`model.zip`) and the full config (`config.json`) are
written beside it, so a run can be evaluated (`evaluate --scientist OUT/model.zip`) and repeated.
"""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from replicalab.baselines.runner import Grid, Settings, run_grid
from replicalab.baselines.structured_policy import StructuredScientist
from replicalab.rewards import RewardConfig, get_preset

CURVE_FIELDS = ("steps", "judge_score", "return")


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

    def __post_init__(self) -> None:
        for name in ("steps", "n_envs", "eval_every", "eval_seeds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: must be a positive int, got {value!r}")


def _score(model: Any, config: TrainConfig) -> tuple[float, float]:
    """(mean judge score, mean return) of the model's deterministic policy on the validation grid."""

    def act(observation: dict[str, np.ndarray]) -> Any:
        mask = observation["action_mask"].astype(bool)
        return model.predict(observation, action_masks=mask, deterministic=True)[0]

    settings = Settings(reward_config=config.reward_config, split="validation")
    digests = run_grid(
        Grid.of(seeds=config.eval_seeds), lambda: StructuredScientist(act), settings=settings
    ).digests
    return statistics.fmean(d.score for d in digests), statistics.fmean(d.scientist_return for d in digests)


def train(config: TrainConfig, out: Path, progress: Any = None) -> list[dict[str, float]]:
    """Train, write `model.zip`, `config.json` and `curve.csv` under `out`, return the curve.
    `progress(steps_done)` is called after each training chunk (a progress bar)."""
    try:
        from sb3_contrib import MaskablePPO
        from stable_baselines3.common.env_util import make_vec_env
    except ImportError as exc:
        raise ImportError("training needs the [train] extra: pip install 'replicalab[train]'") from exc
    import replicalab.envs  # noqa: F401  # registers ReplicaLab/Scientist-v0

    out.mkdir(parents=True, exist_ok=True)
    env_kwargs = {
        "reward_config": config.reward_config,
        "num_train_scenarios": config.num_train_scenarios,
        "render_mode": None,  # make_vec_env asks for rgb_array otherwise
    }
    env = make_vec_env(
        "ReplicaLab/Scientist-v0", n_envs=config.n_envs, seed=config.seed, env_kwargs=env_kwargs
    )
    # a rollout (n_steps per env) no longer than the steps between two points of the curve
    rollout = max(8, min(2048, config.eval_every) // config.n_envs)
    model = MaskablePPO(
        "MultiInputPolicy",
        env,
        seed=config.seed,
        n_steps=rollout,
        batch_size=min(64, rollout * config.n_envs),
    )
    curve: list[dict[str, float]] = []
    done = 0
    while done < config.steps:
        chunk = min(config.eval_every, config.steps - done)
        model.learn(total_timesteps=chunk, reset_num_timesteps=False)
        done += chunk
        score, ret = _score(model, config)
        curve.append({"steps": done, "judge_score": score, "return": ret})
        if progress is not None:
            progress(done)
    model.save(out / "model.zip")
    settings = asdict(config) | {"reward_config": config.reward_config.model_dump(mode="json")}
    (out / "config.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    with (out / "curve.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CURVE_FIELDS)
        writer.writeheader()
        writer.writerows(curve)
    return curve
