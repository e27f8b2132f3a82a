"""The Lab Manager's Gymnasium env: the standard checker in both modes, the game's bookkeeping
(rewards summing to the log's, masked stances refused, the same seed the same episode), the
Scientist of the user's choice, and MaskablePPO training on it and on both seats padded alike."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import replicalab.envs
from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.envs.lab_manager_v3 import DEFAULT_SCIENTIST, LabManagerEnv
from replicalab.episode import Episode
from replicalab.models import LabManagerAction
from replicalab.moves import LAB_MANAGER_ACTION_TYPES
from tests.docs_pages import blocks, page

MODES = ("structured", "text")


def test_it_is_a_plain_gymnasium_env() -> None:
    """No PettingZoo in between: the env and the session it holds import none of it."""
    from pathlib import Path

    import replicalab.envs.lab_manager_v3 as module
    import replicalab.envs.session as session

    for source in (module.__file__, session.__file__):
        assert "pettingzoo" not in Path(str(source)).read_text(encoding="utf-8")


@pytest.mark.parametrize("mode", MODES)
def test_gymnasium_check_env(mode: str) -> None:
    env = gym.make(replicalab.envs.LAB_MANAGER_ENV_ID, action_mode=mode)
    assert isinstance(env.unwrapped, LabManagerEnv)
    check_env(env.unwrapped, skip_render_check=True)


def _play(env: gym.Env[Any, Any], seed: int, choose: Any) -> tuple[float, Any]:
    obs, info = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(choose(env, obs))
        total, done = total + float(reward), terminated or truncated
    return total, info


def _first_allowed(env: gym.Env[Any, Any], obs: Any) -> int:
    return int(np.flatnonzero(obs["action_mask"])[0])


def _grounded(env: gym.Env[Any, Any], obs: Any) -> int:
    return LAB_MANAGER_ACTION_TYPES.index(grounded_lab_response(env.unwrapped.episode).action_type)


@pytest.mark.parametrize("choose", [_first_allowed, _grounded])
def test_the_steps_pay_what_the_log_totals_and_a_seed_replays(choose: Any) -> None:
    env = gym.make(replicalab.envs.LAB_MANAGER_ENV_ID)
    for seed in range(4):
        total, info = _play(env, seed, choose)
        log = env.unwrapped.episode.to_log()
        assert total == pytest.approx(log.total_rewards["lab_manager"])  # the opening's pay included
        assert info["verdict"] == log.verdict and log.invalid_action_count == 0
        assert env.unwrapped.episode.to_log() == log
        _play(env, seed, choose)
        assert env.unwrapped.episode.to_log().model_dump_json() == log.model_dump_json()


def test_the_observation_mask_is_the_action_mask_and_a_masked_stance_is_refused() -> None:
    env = LabManagerEnv()
    obs, _ = env.reset(seed=0)
    mask = env.action_masks()
    assert mask.dtype == bool and (mask == obs["action_mask"].astype(bool)).all()
    assert mask.tolist() == [True, False, False, False]  # nothing on the table: only a report
    _, _, _, _, info = env.step(3)
    assert info["error"]["code"] == "masked_action"


def test_the_grounded_lab_managers_episode_is_the_runners() -> None:
    """Played through the env with the grounded stances, an episode is the one the runner plays
    between the reader and the grounded Lab Manager."""
    from replicalab.baselines.evaluation.grid import play_episode
    from replicalab.baselines.policies.probes import PublicReaderScientist
    from replicalab.baselines.policies.seats import GroundedLabManager
    from replicalab.scenarios import ScenarioKey

    key = ScenarioKey("ml_benchmark", "train", "medium", 3)
    env = LabManagerEnv()
    env.reset(
        seed=0, options={"template": key.template, "difficulty": key.difficulty, "scenario_seed": key.seed}
    )
    done = False
    while not done:
        *_, terminated, truncated, _ = env.step(_grounded(env, None))
        done = terminated or truncated
    ours = env.episode.to_log()
    theirs = play_episode(key, PublicReaderScientist(), GroundedLabManager())
    assert ours.transcript == theirs.transcript and ours.total_rewards == theirs.total_rewards


def test_text_mode_reads_json_and_shows_the_llm_prompt() -> None:
    env = gym.make(replicalab.envs.LAB_MANAGER_ENV_ID, action_mode="text")
    obs, info = env.reset(seed=0)
    assert info["system_prompt"].startswith("You are the Lab Manager") and "Round 1" in obs["prompt"]
    answer: LabManagerAction = grounded_lab_response(env.unwrapped.episode)
    obs, _, _, _, info = env.step(answer.model_dump_json())
    assert info["error"] is None and env.observation_space.contains(obs)
    _, _, terminated, truncated, info = env.step(2)  # a stance's number is the structured space's
    assert info["error"]["code"] == "wrong_action_type"
    with pytest.raises(TypeError, match="action_masks"):
        env.unwrapped.action_masks()
    done = terminated or truncated  # the refused move cost the turn, and the Scientist may have ended it
    while not done:  # every observation of a whole episode is in the space, prompt and all
        answer = grounded_lab_response(env.unwrapped.episode)
        obs, _, terminated, truncated, info = env.step(answer.model_dump_json())
        assert env.observation_space.contains(obs) and info["error"] is None
        done = terminated or truncated


def _baseline(episode: Episode) -> Any:
    return build_baseline_scientist_action(episode.scientist_observation())


def test_the_scientist_is_the_users_choice() -> None:
    assert DEFAULT_SCIENTIST.endswith(":PublicReaderScientist")
    by_function = LabManagerEnv(scientist=_baseline)
    by_name = LabManagerEnv(scientist="replicalab.baselines.policies.seats:BaselineScientist")
    logs = []
    for env in (by_function, by_name):
        _play(env, 5, _grounded)
        logs.append(env.episode.to_log())
    assert logs[0].transcript == logs[1].transcript
    assert logs[0].transcript != _reader_transcript(5)
    with pytest.raises(ValueError, match="scientist"):
        LabManagerEnv(scientist="no_such_module:Nobody")
    with pytest.raises(ValueError, match="scientist"):
        LabManagerEnv(scientist="no colon")
    with pytest.raises(TypeError, match="scientist"):
        LabManagerEnv(scientist=3)  # type: ignore[arg-type]


def test_a_step_cap_leaves_the_lab_manager_a_move() -> None:
    with pytest.raises(ValueError, match="step_cap"):
        LabManagerEnv(step_cap=1)
    env = LabManagerEnv(step_cap=2)
    env.reset(seed=0)
    _, _, terminated, truncated, info = env.step(0)
    assert truncated and not terminated and info["verdict"] == "truncated"


def _reader_transcript(seed: int) -> Any:
    env = LabManagerEnv()
    _play(env, seed, _grounded)
    return env.episode.to_log().transcript


def test_it_steps_in_an_async_vector_env() -> None:
    vec = gym.vector.AsyncVectorEnv([lambda: gym.make(replicalab.envs.LAB_MANAGER_ENV_ID) for _ in range(2)])
    try:
        obs, _ = vec.reset(seed=0)
        for _ in range(8):
            # a finished episode's mask is all 0: its action is ignored, the next step resets it
            actions = np.array([vec.single_action_space.sample(mask=mask) for mask in obs["action_mask"]])
            obs, *_ = vec.step(actions)
        assert obs["observation"].shape == (2, vec.single_observation_space["observation"].shape[0])
    finally:
        vec.close()


@pytest.mark.slow
def test_maskable_ppo_trains_on_it() -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="the [train] extra is not installed")
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    env = gym.make(replicalab.envs.LAB_MANAGER_ENV_ID)
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0)
    model.learn(total_timesteps=64)
    assert model.num_timesteps == 64
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=True)
    assert env.unwrapped.action_masks()[int(action)]  # a masked policy picks an allowed stance


@pytest.mark.slow
def test_one_policy_trains_on_both_seats_padded_as_the_docs_show() -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="the [train] extra is not installed")
    torch = pytest.importorskip("torch")
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(1)
    (snippet,) = [b for b in blocks(page("training.md"), "python") if "class SharedSeat" in b]
    scope: dict[str, Any] = {}
    exec(compile(snippet, "training.md", "exec"), scope)
    seats = DummyVecEnv([lambda: scope["SharedSeat"](0), lambda: scope["SharedSeat"](1)])
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", seats, n_steps=32, batch_size=32, n_epochs=1, seed=0)
    model.learn(total_timesteps=64)
    assert model.num_timesteps == 64
    masks = np.stack(seats.env_method("action_masks"))
    assert masks.shape == (2, int(scope["ACTIONS"].nvec.sum()))
