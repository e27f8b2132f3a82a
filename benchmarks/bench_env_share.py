"""The env's share of a MaskablePPO training step (needs the [train] extra), timed inside one real
run: `replicalab train`'s learner on the Gymnasium Scientist env, with every call the learner
makes into the env (`reset`, `step`, `action_masks`) timed where it is made.

The share is the env's calls' CPU time over the CPU time of the whole `learn` call (collecting
the rollout and training on it); what is left is the learner's, the vectorized env's bookkeeping
included. Timing the env inside the run it serves measures what it costs there, with the
learner's caches and allocations around it, where comparing two learners' speeds (one on a
trivial env) measured the difference of two noisy rates. The env runs on fresh scenarios (the
default) and where scenarios recur (`num_train_scenarios=RECURRING`, every scenario of the
capped set made before the timed run, as in a long run). The kinds run in alternation, `ROUNDS`
times each, each time on a new learner of the same seed, and each share is the median of the
rounds'. CPU time of the process (`time.process_time`), which the neighbours on a shared machine
do not slow down as they do the wall clock. Like `train`: 8 envs in one process
(`DummyVecEnv`), 256 steps each a rollout, one torch thread, distribution checks off.

    python -m benchmarks.bench_env_share [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np
from sb3_contrib import MaskablePPO
from stable_baselines3.common.env_util import make_vec_env

from benchmarks.bench_env import capped_scenarios
from replicalab.baselines.training.maskable_ppo import BATCH_SIZE, NET_ARCH, POLICY, torch_for_training
from replicalab.envs.scientist_v3 import ScientistEnv

N_ENVS = 8
N_STEPS = 256  # `train`'s rollout per env at its default 10,000 steps between curve points
ROLLOUTS = 2  # timed (collected and trained on), after one untimed rollout
ROUNDS = 3
RECURRING = 20  # scenario seeds a template and difficulty in the recurring kind
KINDS = ("fresh", "recurring")


class TimedScientistEnv(ScientistEnv):
    """The Scientist env, adding the CPU time of each call the learner makes into it to
    `TimedScientistEnv.spent` (one total for every env of the process)."""

    spent = 0.0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        start = time.process_time()
        try:
            return super().reset(seed=seed, options=options)
        finally:
            TimedScientistEnv.spent += time.process_time() - start

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        start = time.process_time()
        try:
            return super().step(action)
        finally:
            TimedScientistEnv.spent += time.process_time() - start

    def action_masks(self) -> np.ndarray:
        start = time.process_time()
        try:
            return super().action_masks()
        finally:
            TimedScientistEnv.spent += time.process_time() - start


def env_share(kind: str) -> tuple[float, float]:
    """The env's share of the CPU time of `train`'s learner over `ROLLOUTS` rollouts on the env
    of `kind`, and the env steps per CPU second."""
    capped = RECURRING if kind == "recurring" else None
    vec = make_vec_env(TimedScientistEnv, n_envs=N_ENVS, seed=0, env_kwargs={"num_train_scenarios": capped})
    if capped is not None:  # every scenario of the capped set made, as a long run has
        for options in capped_scenarios(capped):
            vec.env_method("reset", options=options, indices=[0])
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
    TimedScientistEnv.spent = 0.0
    start = time.process_time()
    model.learn(total_timesteps=steps, reset_num_timesteps=False)
    total = time.process_time() - start
    return TimedScientistEnv.spent / total, steps / total


def run(rounds: int = ROUNDS) -> dict[str, list[tuple[float, float]]]:
    """(share, rate) of each kind, one list entry a round."""
    torch_for_training()
    results: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
    for _ in range(rounds):
        for kind in KINDS:
            results[kind].append(env_share(kind))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description="The env's share of a MaskablePPO training step.")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds of the kinds in alternation")
    args = parser.parse_args()
    results = run(args.rounds)
    print("| env | env steps per CPU second | the env's share of a step |\n|---|---:|---:|")
    for kind, label in (("fresh", "fresh scenarios"), ("recurring", f"{RECURRING} scenarios a cell")):
        shares = [share for share, _ in results[kind]]
        rate = statistics.median(rate for _, rate in results[kind])
        print(
            f"| Scientist env, {label} | {rate:,.0f} | {statistics.median(shares):.0%} "
            f"(rounds: {min(shares):.0%}-{max(shares):.0%}) |"
        )


if __name__ == "__main__":
    main()
