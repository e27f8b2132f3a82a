"""`evaluate --scientist PATH.zip | MODULE:ATTR`: a trained policy plays in the runner the moves it
plays in `gym.make("ReplicaLab/Scientist-v3")`, with the runner's table and logs; a user's own
module loads from the working directory; an element the codec refuses is a refused move."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from typer.testing import CliRunner

import replicalab.envs  # noqa: F401  # registers ReplicaLab/Scientist-v3
from replicalab.baselines.cli import app
from replicalab.baselines.policies.structured import predict_masked
from replicalab.models import EpisodeLog

CELL = ["-t", "finance_trading", "-d", "medium", "--seeds", "2", "--no-oracle", "--split", "test"]


def _gym_episode(act: object, scenario_seed: int) -> EpisodeLog:
    """The episode `act` plays on the Gymnasium env, on the cell CELL names."""
    env = gym.make("ReplicaLab/Scientist-v3", split="test")
    options = {"template": "finance_trading", "difficulty": "medium", "scenario_seed": scenario_seed}
    obs, _ = env.reset(seed=0, options=options)
    done = False
    while not done:
        obs, _, terminated, truncated, _ = env.step(act(obs))  # type: ignore[operator]
        done = terminated or truncated
    log: EpisodeLog = env.unwrapped.episode.to_log()  # type: ignore[attr-defined]
    return log


def _evaluate(scientist: str, out: Path) -> list[EpisodeLog]:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["evaluate", *CELL, "-s", scientist, "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    return [EpisodeLog.model_validate_json(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_a_saved_model_logs_the_moves_it_makes_on_the_gymnasium_env(tmp_path: Path) -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    env = gym.make("ReplicaLab/Scientist-v3")
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", env, n_steps=64, batch_size=64, seed=3)
    model.learn(total_timesteps=64).save(tmp_path / "ppo.zip")
    logs = _evaluate(str(tmp_path / "ppo.zip"), tmp_path / "ppo.jsonl")
    assert len(logs) == 2 and all(log.episode_id.endswith("/ppo/grounded") for log in logs)
    for seed, log in enumerate(logs):
        expected = _gym_episode(lambda obs: predict_masked(model, obs), seed)
        assert log.steps == expected.steps and log.final_protocol == expected.final_protocol


POLICY_MODULE = """
import numpy as np

def last_legal(observation):
    # every component's last legal value: the structured action's last type is accept
    mask = observation["action_mask"].astype(bool)
    return np.array([int(np.flatnonzero(part)[-1]) for part in np.split(mask, SPLITS)])

def garbage(observation):
    return "propose something"
"""


@pytest.fixture()
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A policy module in a working directory that is not on sys.path."""
    from replicalab.envs.spaces import SCIENTIST_NVEC

    name = "my_scientist_policy"
    splits = np.cumsum(SCIENTIST_NVEC)[:-1].tolist()
    (tmp_path / f"{name}.py").write_text(POLICY_MODULE.replace("SPLITS", repr(splits)), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, name, raising=False)
    yield name
    sys.modules.pop(name, None)


def test_a_callable_in_the_working_directory_is_evaluated_as_the_env_plays_it(
    user_module: str, tmp_path: Path
) -> None:
    logs = _evaluate(f"{user_module}:last_legal", tmp_path / "mine.jsonl")
    act = sys.modules[user_module].last_legal
    for seed, log in enumerate(logs):
        assert log.steps == _gym_episode(act, seed).steps


def test_an_element_the_codec_refuses_is_a_refused_move_not_a_crash(user_module: str, tmp_path: Path) -> None:
    logs = _evaluate(f"{user_module}:garbage", tmp_path / "garbage.jsonl")
    for log in logs:
        assert log.final_protocol is None and log.invalid_action_count > 0
        assert {step.error_code for step in log.steps if step.error_code is not None} == {"invalid_action"}
