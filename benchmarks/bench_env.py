"""What the PettingZoo front costs on top of the rules, and how many episodes/s it runs.

1. One full round (Scientist revise + Lab Manager answer, structured mode) through `env()`
   — decode, step, observe via `last()` for each agent — against the same round driven on the
   `Episode` alone, in one run.
2. Baseline Scientist vs grounded Lab Manager, whole episodes through `env()` (reset included),
   after a warm-up, on seeds no run has played (`steady_rates`).

Run: `.venv/bin/python -m benchmarks.bench_env` (one core; medians of repeated timings).
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

from envs import replicalab_v0
from envs.codec import ScientistCodec
from envs.spaces import A_CONTROLS, A_DURATION, A_ITEMS, A_SAMPLE, A_TYPE, SAMPLE_LEVELS, SCIENTIST_NVEC
from replicalab.agents import build_baseline_scientist_action
from replicalab.episode import LAB_MANAGER_ACTION_TYPES, Episode
from replicalab.models import ScientistAction
from replicalab.scenarios import generate_scenario

ROUNDS = 400
REPEATS = 7
EPISODES = 600  # per throughput run
RUNS = 7
WARM_UP_SEED = 10**6  # far from the timed runs' seeds


def _revision() -> tuple[np.ndarray, ScientistAction]:
    """A sensible structured revise action (essential items or their substitutes, the required
    review, the public minimum sample size, the time limit) and the pydantic action it means."""
    pack = generate_scenario(3, "ml_benchmark", "medium")
    codec = ScientistCodec(pack)
    bounds = {c.kind: c for c in pack.constraints}
    vec = np.zeros(SCIENTIST_NVEC.size, dtype=np.int64)
    vec[A_TYPE] = 1  # revise_protocol
    min_sample = int(bounds["min_sample_size"].quantity or 1)
    vec[A_SAMPLE] = next(i for i, level in enumerate(SAMPLE_LEVELS) if level >= min_sample)
    vec[A_DURATION] = pack.lab.time_limit_days - 1
    review = codec.control_slot(bounds["required_review"].term or "")
    for slot in {review or 0, len(codec.controls) - 1, len(codec.controls) - 2}:
        vec[A_CONTROLS + slot] = 1
    for slot, item in enumerate(codec.items):
        usable = item.essential and item.available
        rescues = any(s.alternative == item.name for s in pack.allowed_substitutions)
        if usable or (rescues and item.available):
            vec[A_ITEMS + slot] = 1
    action = codec.decode(vec, (False, True, False, False))
    assert isinstance(action, ScientistAction), action
    return vec, action


def grounded_stance(env: replicalab_v0.raw_env) -> int:
    """The structured Lab Manager picking the reference policy's stance."""
    return LAB_MANAGER_ACTION_TYPES.index(env.episode.grounded_lab_response().action_type)


def time_rounds_env(vec: np.ndarray) -> float:
    env = replicalab_v0.env(templates=["ml_benchmark"], difficulties=["medium"], max_rounds=10**6)
    env.reset(seed=0, options={"template": "ml_benchmark", "difficulty": "medium", "scenario_seed": 3})
    env.step(build_baseline_scientist_action(env.episode.scientist_observation()))
    env.step(grounded_stance(env))
    start = time.perf_counter()
    for _ in range(ROUNDS):
        env.last()
        env.step(vec)
        env.last()
        env.step(grounded_stance(env))
    return (time.perf_counter() - start) / ROUNDS


def time_rounds_domain(action: ScientistAction) -> float:
    episode = Episode(generate_scenario(3, "ml_benchmark", "medium"), max_rounds=10**6)
    episode.step(build_baseline_scientist_action(episode.scientist_observation()))
    episode.step(episode.grounded_lab_response())
    start = time.perf_counter()
    for _ in range(ROUNDS):
        episode.step(action)
        episode.step(episode.grounded_lab_response())
    return (time.perf_counter() - start) / ROUNDS


def episodes_per_second(first_seed: int, n: int = EPISODES) -> float:
    """Baseline Scientist vs grounded Lab Manager through `env()`, on `n` seeds never played before."""
    env = replicalab_v0.env()
    start = time.perf_counter()
    for seed in range(first_seed, first_seed + n):
        env.reset(seed=seed)
        for agent in env.agent_iter():
            _, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            episode = env.unwrapped.episode
            if agent == "scientist":
                env.step(build_baseline_scientist_action(episode.scientist_observation()))
            else:
                env.step(episode.grounded_lab_response())
    return n / (time.perf_counter() - start)


def steady_rates() -> list[float]:
    """Episodes/s of RUNS runs after a warm-up, each on fresh seeds: what a long training run
    sees once the caches of values that recur across packs (case texts, lab numbers) are full,
    without ever replaying an episode."""
    episodes_per_second(WARM_UP_SEED, EPISODES)
    return [episodes_per_second(run * EPISODES) for run in range(RUNS)]


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # the targets are per core
    vec, action = _revision()
    env_round = statistics.median(time_rounds_env(vec) for _ in range(REPEATS))
    domain_round = statistics.median(time_rounds_domain(action) for _ in range(REPEATS))
    rates = steady_rates()
    print(f"round through env():        {env_round * 1e6:8.1f} µs")
    print(f"round on the Episode alone: {domain_round * 1e6:8.1f} µs")
    print(f"env overhead:               {(env_round - domain_round) / domain_round:8.2f}× the domain cost")
    print(
        f"baseline vs grounded through env(): {statistics.median(rates):,.0f} episodes/s "
        f"(median of {RUNS} runs of {EPISODES} fresh episodes; range {min(rates):,.0f}-{max(rates):,.0f})"
    )


if __name__ == "__main__":
    main()
