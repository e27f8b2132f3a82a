"""Any structured policy of the Gymnasium env's observations, evaluated by the runner: a callable
(`--scientist MODULE:ATTR`) or a saved MaskablePPO (`--scientist PATH.zip`) plays the same game in
`replicalab evaluate` as in `gym.make("ReplicaLab/Scientist-v3")`."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from typer.testing import CliRunner

import replicalab.envs  # noqa: F401  # registers ReplicaLab/Scientist-v3
from replicalab.baselines.cli import app
from replicalab.baselines.evaluation.runner import Grid, Settings, play_episode, run_grid
from replicalab.baselines.policies.seats import GroundedLabManager
from replicalab.baselines.policies.structured import StructuredScientist, structured_factory
from replicalab.envs.spaces import SCIENTIST_NVEC
from replicalab.scenarios import ScenarioKey

CELLS = ["-t", "ml_benchmark", "-d", "easy", "--seeds", "2", "--no-oracle"]


def first_legal(observation: dict[str, np.ndarray]) -> np.ndarray:
    """Every component's first legal value, proposing before accepting (the type's last legal)."""
    parts = np.split(observation["action_mask"].astype(bool), np.cumsum(SCIENTIST_NVEC)[:-1])
    element = np.array([int(np.argmax(part)) for part in parts])
    element[0] = int(np.flatnonzero(parts[0])[-1])
    return element


def test_the_runner_plays_what_the_gymnasium_env_plays() -> None:
    for seed, template, level in [
        (3, "ml_benchmark", "hard"),
        (7, "finance_trading", "easy"),
        (1, "math_reasoning", "medium"),
    ]:
        env = gym.make("ReplicaLab/Scientist-v3", split="test")
        obs, _ = env.reset(seed=0, options={"template": template, "difficulty": level, "scenario_seed": seed})
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(first_legal(obs))
            done = terminated or truncated
        gym_log = env.unwrapped.episode.to_log()  # type: ignore[attr-defined]
        log = play_episode(
            ScenarioKey(template, "train", level, seed),
            StructuredScientist(first_legal),
            GroundedLabManager(),
            Settings(split="test"),
        )
        assert log.steps == gym_log.steps and log.verdict == gym_log.verdict


def test_a_callable_is_evaluated_from_the_command_line() -> None:
    command = ["evaluate", *CELLS, "-s", "tests.test_structured_policy:first_legal"]
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, command)
    assert result.exit_code == 0, result.output
    assert "first_legal vs grounded" in result.stdout


def test_parallel_workers_get_the_same_games() -> None:
    factory = structured_factory("tests.test_structured_policy:first_legal")
    grid = Grid.of(["ml_benchmark"], ["easy", "hard"], 2)
    one, two = (run_grid(grid, factory, jobs=jobs).digests for jobs in (1, 2))
    assert one == two


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("missing.zip", "scientist: no model file 'missing.zip'"),
        ("os:no_such_thing", "scientist: cannot load 'os:no_such_thing'"),
        ("os:sep", "scientist: 'os:sep' is not callable"),
    ],
)
def test_a_bad_policy_is_refused_before_any_episode(spec: str, message: str) -> None:
    result = CliRunner(env={"COLUMNS": "300"}).invoke(app, ["evaluate", *CELLS, "-s", spec])
    assert result.exit_code == 2 and message in result.output


def test_a_saved_maskable_ppo_is_evaluated_from_the_command_line(tmp_path: Path) -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    env = gym.make("ReplicaLab/Scientist-v3")
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", env, n_steps=32, batch_size=32, seed=0)
    path = tmp_path / "ppo.zip"
    model.learn(total_timesteps=32).save(path)
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["evaluate", *CELLS, "-s", str(path)])
    assert result.exit_code == 0, result.output
    assert "ppo vs grounded" in result.stdout
