"""A digest of everything a user can observe, to prove a speed change changed nothing else.

Run it before and after the change and compare the lines: packs, every `last()` of env episodes
in both action modes (baseline and random policies), Gymnasium episodes, and the runner's logs
for the baseline, random and oracle Scientists. Any difference in any byte changes a digest.

Run: `.venv/bin/python -m benchmarks.fingerprint` (a few seconds).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import gymnasium
import numpy as np

import replicalab.envs  # noqa: F401 - registers ReplicaLab/Scientist-v3
from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.baselines.evaluation.runner import Grid, PolicyFactory, run_grid
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.seats import BaselineScientist, GroundedLabManager, RandomScientist
from replicalab.envs import replicalab_v3
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario

PACK_SEEDS = 60
ENV_EPISODES = 150
GYM_EPISODES = 100
RUNNER_SEEDS = 40


def _feed(digest: Any, observation: dict[str, Any], *rest: object) -> None:
    for key in sorted(observation):
        value = observation[key]
        digest.update(key.encode())
        digest.update(value.tobytes() if isinstance(value, np.ndarray) else repr(value).encode())
    digest.update(json.dumps(rest, sort_keys=True, default=str).encode())


def packs() -> str:
    digest = hashlib.sha256()
    for seed in range(PACK_SEEDS):
        for template in BUILTIN_TEMPLATES:
            for difficulty in DIFFICULTIES:
                digest.update(generate_scenario(seed, template, difficulty).model_dump_json().encode())
    return digest.hexdigest()


def env_episodes(action_mode: str, policy: str) -> str:
    """Every `last()` and the log of seeded episodes; `policy` is "baseline" or "random"."""
    digest = hashlib.sha256()
    env = replicalab_v3.env(action_mode=action_mode, max_rounds=6 if policy == "baseline" else 4)
    for seed in range(ENV_EPISODES):
        env.reset(seed=seed)
        for agent in env.possible_agents:
            env.action_space(agent).seed(seed)
        for agent in env.agent_iter():
            observation, reward, terminated, truncated, info = env.last()
            _feed(digest, observation, reward, terminated, truncated, info)
            if terminated or truncated:
                env.step(None)
                continue
            episode = env.unwrapped.episode
            if policy == "baseline":
                scientist = build_baseline_scientist_action(episode.scientist_observation())
                env.step(scientist if agent == "scientist" else grounded_lab_response(episode))
            elif action_mode == "text" and agent == "scientist" and seed % 2 == 0:
                env.step(build_baseline_scientist_action(episode.scientist_observation()).model_dump_json())
            else:
                env.step(env.action_space(agent).sample(observation["action_mask"]))
        digest.update(env.unwrapped.episode.to_log().model_dump_json().encode())
    return digest.hexdigest()


def gym_episodes() -> str:
    digest = hashlib.sha256()
    env = gymnasium.make("ReplicaLab/Scientist-v3")
    for seed in range(GYM_EPISODES):
        observation, info = env.reset(seed=seed)
        env.action_space.seed(seed)
        done = False
        while not done:
            observation, reward, terminated, truncated, info = env.step(
                env.action_space.sample(observation["action_mask"])
            )
            _feed(digest, observation, reward, terminated, truncated, info)
            done = terminated or truncated
    return digest.hexdigest()


def runner_logs(scientist: PolicyFactory) -> str:
    digest = hashlib.sha256()
    for log in run_grid(Grid.of(seeds=RUNNER_SEEDS), scientist, GroundedLabManager).logs:
        digest.update(log.model_dump_json().encode())
    return digest.hexdigest()


def fingerprint() -> dict[str, str]:
    return {
        "packs": packs(),
        **{
            f"env_{policy}_{mode}": env_episodes(mode, policy)
            for policy in ("baseline", "random")
            for mode in ("structured", "text")
        },
        "gym_random": gym_episodes(),
        "runner_baseline": runner_logs(BaselineScientist),
        "runner_random": runner_logs(RandomScientist),
        "runner_oracle": runner_logs(OracleScientist),
    }


def main() -> None:
    for name, value in fingerprint().items():
        print(f"{name:26s} {value}")


if __name__ == "__main__":
    main()
