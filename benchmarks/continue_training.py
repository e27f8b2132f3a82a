"""Train a `replicalab train` run's model for more steps, with the same learner, adding points to
its learning curve: how far longer training goes, without retraining from zero (needs the
[train] extra).

The model is loaded with its optimizer state and settings (rollout, minibatch) and trained on
fresh envs seeded `seed + 1000`, so the continuation does not replay the first run's scenarios;
at the first rollout boundary at or after every `--eval-every` steps the policy plays the
validation grid as `train` measures it.

    python -m benchmarks.continue_training runs/ppo-0 runs/ppo-0-more --steps 200000 --seed 0
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sb3_contrib import MaskablePPO
from stable_baselines3.common.env_util import make_vec_env

import replicalab.envs  # noqa: F401  # registers ReplicaLab/Scientist-v3
from replicalab.baselines.training.maskable_ppo import (
    CurvePoint,
    TrainConfig,
    learn_with_curve,
    torch_for_training,
)


def continue_training(run: Path, out: Path, steps: int, seed: int, eval_every: int) -> list[CurvePoint]:
    """Load `run/model.zip`, train `steps` more, write `curve.csv` and `model.zip` under `out`."""
    torch_for_training()
    config = TrainConfig(steps=steps, seed=seed, eval_every=eval_every)
    env = make_vec_env(
        "ReplicaLab/Scientist-v3", n_envs=config.n_envs, seed=seed + 1000, env_kwargs={"render_mode": None}
    )
    model = MaskablePPO.load(run / "model.zip", env=env)
    out.mkdir(parents=True, exist_ok=True)
    curve = learn_with_curve(model, config, out, steps)
    model.save(out / "model.zip")
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a `replicalab train --out` folder")
    parser.add_argument("out", type=Path, help="where the continuation's curve and model go")
    parser.add_argument("--steps", type=int, default=200_000, help="environment steps to add")
    parser.add_argument("--seed", type=int, default=0, help="the first run's seed")
    parser.add_argument("--eval-every", type=int, default=50_000, help="steps between curve points")
    args = parser.parse_args()
    for point in continue_training(args.run, args.out, args.steps, args.seed, args.eval_every):
        print(f"{point.steps:>9,} steps: validation judge score {point.judge_score:.2f}")


if __name__ == "__main__":
    main()
