"""Environment steps per second of MaskablePPO on the Gymnasium Scientist env (needs the [train]
extra): `replicalab train`'s learner settings against sb3-contrib's defaults.

The two learners train the same network (`train.NET_ARCH`) on the same rollouts (8 envs × 256
steps, sb3's 10 epochs) and differ in their minibatch (64 against `train.BATCH_SIZE`) and in torch's distribution argument checks (on
against off); they run in alternation, `ROUNDS` times each, and the ratio is the median of the
paired rounds, so the machine's load moves both alike. Both run on one torch thread, as `train`
does.

    python -m benchmarks.bench_training [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv

import replicalab.envs  # noqa: F401  # registers ReplicaLab/Scientist-v3
from replicalab.baselines.training.maskable_ppo import BATCH_SIZE, NET_ARCH, POLICY

N_ENVS = 8
N_STEPS = 256
ROLLOUTS = 2
ROUNDS = 3
SETTINGS = {"sb3 defaults": (64, True), "replicalab train": (BATCH_SIZE, False)}


def _vec_env() -> VecEnv:
    return make_vec_env("ReplicaLab/Scientist-v3", n_envs=N_ENVS, seed=0, env_kwargs={"render_mode": None})


def learner_steps_per_second(batch_size: int, checks: bool) -> float:
    torch.distributions.Distribution.set_default_validate_args(checks)
    model = MaskablePPO(
        POLICY,
        _vec_env(),
        seed=0,
        n_steps=N_STEPS,
        batch_size=batch_size,
        policy_kwargs={"net_arch": list(NET_ARCH)},
    )
    steps = N_ENVS * N_STEPS * ROLLOUTS
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return steps / (time.perf_counter() - start)


def run(rounds: int = ROUNDS) -> dict[str, float]:
    """Steps per second of each learner (median over rounds) and their paired ratio."""
    torch.set_num_threads(1)
    rates: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for _ in range(rounds):
        for name, (batch_size, checks) in SETTINGS.items():
            rates[name].append(learner_steps_per_second(batch_size, checks))
    ratios = [
        ours / theirs for ours, theirs in zip(rates["replicalab train"], rates["sb3 defaults"], strict=True)
    ]
    figures = {name: statistics.median(values) for name, values in rates.items()}
    figures["ratio"] = statistics.median(ratios)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description="Steps per second of MaskablePPO on the Scientist env.")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="paired rounds of the two learners")
    args = parser.parse_args()
    figures = run(args.rounds)
    for name in SETTINGS:
        print(f"{name}: {figures[name]:,.0f} env steps/s")
    print(f"replicalab train / sb3 defaults: {figures['ratio']:.2f}× (median of {args.rounds} paired rounds)")


if __name__ == "__main__":
    main()
