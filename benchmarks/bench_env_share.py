"""The env's share of a MaskablePPO training step (needs the [train] extra): `replicalab train`'s
learner on the Gymnasium Scientist env against the same learner on a trivial env with the same
spaces, observations and masks.

The trivial env replays, whatever it is sent, steps recorded from the Scientist env (random
masked actions): its observations, its action masks and where its episodes end. So the learner
does the same work on both, and the difference between the two rates is what the env costs:
the env's share is `1 - real rate / trivial rate`, the part of a training step on the Scientist
env that the env takes. The Scientist env is timed on fresh scenarios (the default) and where
scenarios recur (`num_train_scenarios=RECURRING`, each env having made every scenario of the
capped set before it is timed). The kinds run in alternation, `ROUNDS` times each, each time on
a new learner of the same seed, and each share is the median of the rounds' shares. Rates are
steps per second of the process's CPU time, which the neighbours on a shared machine do not
slow down as they do the wall clock (they still share its caches). Like `train`: 8 envs in one
process (`DummyVecEnv`), 256 steps each a rollout, one torch thread, distribution checks off.

    python -m benchmarks.bench_env_share [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import gymnasium as gym
import numpy as np
from sb3_contrib import MaskablePPO
from stable_baselines3.common.env_util import make_vec_env

from benchmarks.bench_env import capped_scenarios
from replicalab.baselines.training.maskable_ppo import BATCH_SIZE, NET_ARCH, POLICY, torch_for_training
from replicalab.envs.scientist_v2 import ScientistEnv

N_ENVS = 8
N_STEPS = 256  # `train`'s rollout per env at its default 10,000 steps between curve points
ROLLOUTS = 1  # timed (collected and trained on), after one untimed rollout
ROUNDS = 3
RECURRING = 20  # scenario seeds a template and difficulty in the recurring kind
RECORDED = 2048  # steps the trivial env replays
KINDS = ("trivial", "fresh", "recurring")


class ReplayEnv(gym.Env[dict[str, Any], Any]):
    """The Scientist env's spaces, replaying recorded observations, masks and episode ends."""

    def __init__(self, steps: list[tuple[dict[str, Any], bool]], template: ScientistEnv) -> None:
        self.observation_space = template.observation_space
        self.action_space = template.action_space
        self._steps = steps
        self._at = 0

    def _next(self) -> tuple[dict[str, Any], bool]:
        self._at = (self._at + 1) % len(self._steps)
        return self._steps[self._at]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        return self._next()[0], {}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        observation, done = self._next()
        return observation, 0.0, done, False, {}

    def action_masks(self) -> np.ndarray:
        mask: np.ndarray = self._steps[self._at][0]["action_mask"].astype(bool)
        return mask


def recorded_steps(count: int = RECORDED) -> list[tuple[dict[str, Any], bool]]:
    """`count` observations of the Scientist env under random masked actions, each with whether
    the step that led to it ended the episode (a reset's observation follows an ending)."""
    env = ScientistEnv()
    env.action_space.seed(0)
    observation, _ = env.reset(seed=0)
    steps = [(observation, False)]
    while len(steps) < count:
        observation, _, terminated, truncated, _ = env.step(
            env.action_space.sample(observation["action_mask"])
        )
        steps.append((observation, terminated or truncated))
        if terminated or truncated:
            observation, _ = env.reset()
            steps.append((observation, False))
    return steps


def steps_per_second(kind: str, recorded: list[tuple[dict[str, Any], bool]]) -> float:
    """Environment steps per CPU second of `train`'s learner on the env of `kind`."""
    if kind == "trivial":
        vec = make_vec_env(lambda: ReplayEnv(recorded, ScientistEnv()), n_envs=N_ENVS, seed=0)
    else:
        capped = RECURRING if kind == "recurring" else None
        vec = make_vec_env(ScientistEnv, n_envs=N_ENVS, seed=0, env_kwargs={"num_train_scenarios": capped})
        if capped is not None:  # each env makes every scenario of the capped set, as a long run has
            for options in capped_scenarios(capped):
                vec.env_method("reset", options=options)
    model = MaskablePPO(
        POLICY,
        vec,
        seed=0,
        n_steps=N_STEPS,
        batch_size=BATCH_SIZE,
        policy_kwargs={"net_arch": list(NET_ARCH)},
    )
    model.learn(total_timesteps=N_ENVS * N_STEPS)  # one rollout untimed
    steps = N_ENVS * N_STEPS * ROLLOUTS
    start = time.process_time()
    model.learn(total_timesteps=steps, reset_num_timesteps=False)
    return steps / (time.process_time() - start)


def run(rounds: int = ROUNDS) -> dict[str, list[float]]:
    """Steps per second of each kind, one list entry a round."""
    torch_for_training()
    recorded = recorded_steps()
    rates: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for _ in range(rounds):
        for kind in KINDS:
            rates[kind].append(steps_per_second(kind, recorded))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description="The env's share of a MaskablePPO training step.")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds of the kinds in alternation")
    args = parser.parse_args()
    rates = run(args.rounds)
    print(f"trivial env, same spaces: {statistics.median(rates['trivial']):,.0f} env steps per CPU second")
    for kind, label in (("fresh", "fresh scenarios"), ("recurring", f"{RECURRING} scenarios a cell")):
        shares = [1 - real / trivial for real, trivial in zip(rates[kind], rates["trivial"], strict=True)]
        print(
            f"Scientist env, {label}: {statistics.median(rates[kind]):,.0f} env steps per CPU second; "
            f"the env's share of a step {statistics.median(shares):.0%} "
            f"(median of {args.rounds} rounds; range {min(shares):.0%}-{max(shares):.0%})"
        )


if __name__ == "__main__":
    main()
