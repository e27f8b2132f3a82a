"""The RL fronts against the standard checkers, in vector envs, and their reward bookkeeping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, parallel_api_test, render_test, seed_test

import replicalab.envs
from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.envs import replicalab_v3
from replicalab.envs.scientist_v3 import ScientistEnv
from replicalab.episode import Episode
from replicalab.models import EpisodeLog, LabManagerAction, ScientistAction
from replicalab.moves import LAB_MANAGER, SCIENTIST, ActionError
from tests.processes import stdout_of

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:pettingzoo\\.test")
MODES = ("structured", "text")


# --------------------------------------------------------------------------- standard checkers


@pytest.mark.parametrize("mode", MODES)
def test_pettingzoo_api_seed_and_render(mode: str) -> None:
    api_test(replicalab_v3.env(action_mode=mode), num_cycles=100)
    seed_test(lambda: replicalab_v3.env(action_mode=mode), num_cycles=100)
    render_test(
        lambda render_mode=None: replicalab_v3.env(action_mode=mode, render_mode=render_mode),
        custom_tests={"ansi": lambda text: text.startswith("== ")},
    )


@pytest.mark.parametrize("mode", MODES)
def test_pettingzoo_parallel_api(mode: str) -> None:
    parallel_api_test(replicalab_v3.parallel_env(action_mode=mode), num_cycles=100)


@pytest.mark.parametrize("mode", MODES)
def test_gymnasium_check_env(mode: str) -> None:
    env = gym.make(replicalab.envs.SCIENTIST_ENV_ID, action_mode=mode)
    assert isinstance(env.unwrapped, ScientistEnv)
    check_env(env.unwrapped)


def test_making_the_v1_id_names_v2() -> None:
    """The game changed with v2; Gymnasium's own deprecation error points a v1 user at it."""
    with pytest.raises(gym.error.DeprecatedEnv, match="Scientist-v3"):
        gym.make("ReplicaLab/Scientist-v1")


def _make(mode: str) -> Any:
    return lambda: gym.make(replicalab.envs.SCIENTIST_ENV_ID, action_mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("vector", ["sync", "async"])
def test_scientist_env_steps_in_vector_envs(mode: str, vector: str) -> None:
    n = 4
    factory = gym.vector.SyncVectorEnv if vector == "sync" else gym.vector.AsyncVectorEnv
    vec = factory([_make(mode) for _ in range(n)])
    try:
        single = vec.single_action_space
        single.seed(3)
        obs, _ = vec.reset(seed=3)
        features = np.asarray(ScientistEnv(action_mode=mode).reset(seed=0)[0]["observation"])
        assert obs["observation"].shape == (n, *features.shape)
        ended = np.zeros(n, dtype=bool)
        for _ in range(14):
            actions = [single.sample(obs["action_mask"][i]) for i in range(n)]
            batch = np.stack(actions) if mode == "structured" else tuple(actions)
            obs, rewards, terminations, truncations, _ = vec.step(batch)
            assert rewards.shape == terminations.shape == truncations.shape == (n,)
            assert terminations.dtype == truncations.dtype == np.bool_
            assert np.isfinite(rewards).all()
            ended |= terminations
        assert ended.all()  # six rounds at most, so every copy finished at least once
    finally:
        vec.close()


# --------------------------------------------------------------------------- pydantic and dicts


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("form", ["model", "dict"])
def test_aec_accepts_pydantic_and_dict_actions_for_both_agents(mode: str, form: str) -> None:
    env = replicalab_v3.env(action_mode=mode)
    env.reset(seed=2)

    def send(action: ScientistAction | LabManagerAction) -> None:
        agent = env.agent_selection
        env.step(action if form == "model" else action.model_dump())
        assert env.infos[agent]["error"] is None

    episode = env.episode
    send(build_baseline_scientist_action(episode.scientist_observation()))
    assert episode.protocol is not None
    send(grounded_lab_response(episode))
    send(
        ScientistAction.model_validate(
            {"action_type": "request_info", "questions": ["How many staff are available?"]}
        )
    )
    send(grounded_lab_response(episode))
    assert env.agent_selection == SCIENTIST and episode.round_number == 3
    assert episode.invalid_action_count == 0


@pytest.mark.parametrize("mode", MODES)
def test_parallel_and_gymnasium_accept_pydantic_and_dict_actions(mode: str) -> None:
    par = replicalab_v3.parallel_env(action_mode=mode)
    par.reset(seed=4)
    episode = par.session.episode
    assert episode is not None
    move = build_baseline_scientist_action(episode.scientist_observation())
    _, _, _, _, infos = par.step({SCIENTIST: move.model_dump(), LAB_MANAGER: 0})
    assert infos[SCIENTIST]["error"] is None and infos[LAB_MANAGER]["error"] is None
    _, _, _, _, infos = par.step({SCIENTIST: move, LAB_MANAGER: grounded_lab_response(episode)})
    assert infos[SCIENTIST]["error"] is None and infos[LAB_MANAGER]["error"] is None

    env = ScientistEnv(action_mode=mode)
    env.reset(seed=4)
    _, _, _, _, info = env.step(move)
    assert info["error"] is None
    _, _, _, _, info = env.step({"action_type": "request_info", "questions": ["Why does it fail?"]})
    assert info["error"] is None and env.session.episode is not None
    assert env.session.episode.invalid_action_count == 0


# --------------------------------------------------------------------------- reward bookkeeping


def _choose(
    env: replicalab_v3.raw_env, agent: str, obs: dict[str, Any], policy: str, rng: np.random.Generator
) -> Any:
    episode = env.episode
    if policy == "baseline":
        if agent == SCIENTIST:
            return build_baseline_scientist_action(episode.scientist_observation())
        return grounded_lab_response(episode)
    if policy == "noisy" and rng.random() < 0.2:
        return ["not an action", None, {"action_type": "accept"}, 7][int(rng.integers(4))]
    return env.action_space(agent).sample(obs["action_mask"])


def play(env: replicalab_v3.raw_env, seed: int, policy: str) -> dict[str, float]:
    """One episode; returns, per agent, the sum of what `last()` showed it at each of its turns."""
    env.reset(seed=seed)
    for agent in env.possible_agents:
        env.action_space(agent).seed(seed)
    rng = np.random.default_rng(seed)
    seen = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter(100):
        obs, reward, terminated, truncated, _ = env.last()
        seen[agent] += reward
        env.step(None if terminated or truncated else _choose(env, agent, obs, policy, rng))
    assert not env.agents
    return seen


@pytest.mark.parametrize("preset", ["sparse", "default", "potential"])
@pytest.mark.parametrize("policy", ["random", "noisy", "baseline"])
def test_rewards_seen_through_last_sum_to_the_logged_totals(preset: str, policy: str) -> None:
    verdicts: set[str | None] = set()
    for mode in MODES:
        step_cap = 11 if policy == "noisy" else None
        env = replicalab_v3.env(action_mode=mode, reward_config=preset, step_cap=step_cap)
        for seed in range(12):
            seen = play(env, seed, policy)
            log = env.episode.to_log()
            verdicts.add(log.verdict)
            for agent in env.possible_agents:
                assert seen[agent] == pytest.approx(log.total_rewards[agent], abs=1e-9)
    assert verdicts <= {
        "agreement",
        "accept_without_consent",
        "accept_infeasible",
        "round_limit",
        "truncated",
    }
    assert None not in verdicts


@pytest.mark.parametrize("preset", ["default", "potential"])
def test_gymnasium_and_parallel_rewards_sum_to_the_logged_totals(preset: str) -> None:
    for seed in range(8):
        env = ScientistEnv(reward_config=preset)
        obs, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(env.action_space.sample(obs["action_mask"]))
            total += reward
            done = terminated or truncated
        episode = env.session.episode
        assert episode is not None
        assert total == pytest.approx(episode.totals[SCIENTIST], abs=1e-9)

        par = replicalab_v3.parallel_env(reward_config=preset)
        observations, _ = par.reset(seed=seed)
        for agent in par.possible_agents:
            par.action_space(agent).seed(seed)
        sums = dict.fromkeys(par.possible_agents, 0.0)
        while par.agents:
            actions = {a: par.action_space(a).sample(observations[a]["action_mask"]) for a in par.agents}
            observations, rewards, _, _, _ = par.step(actions)
            for agent, value in rewards.items():
                sums[agent] += value
        episode = par.session.episode
        assert episode is not None
        for agent in par.possible_agents:
            assert sums[agent] == pytest.approx(episode.totals[agent], abs=1e-9)


def _trace(env: replicalab_v3.raw_env, seed: int) -> list[object]:
    """What a random pair of agents sees over the episode `env` was reset to, and its log."""
    for agent in env.possible_agents:
        env.action_space(agent).seed(seed)
    seen: list[object] = [env.system_prompt]
    for agent in env.agent_iter(100):
        obs, reward, terminated, truncated, info = env.last()
        seen.append({k: v.tobytes() if isinstance(v, np.ndarray) else v for k, v in obs.items()})
        seen.append((reward, info))
        env.step(None if terminated or truncated else env.action_space(agent).sample(obs["action_mask"]))
    return [*seen, env.episode.to_log().model_dump_json()]


@pytest.mark.parametrize("mode", MODES)
def test_a_capped_env_makes_each_scenario_once_and_plays_it_as_new(mode: str) -> None:
    """Where `num_train_scenarios` caps the seeds, an env generates each scenario once and keeps
    it: a recurring scenario is the same pack, and its episodes are, observation for observation,
    those an uncapped env plays on that scenario."""
    capped = replicalab_v3.env(action_mode=mode, templates="ml_benchmark", num_train_scenarios=2)
    uncapped = replicalab_v3.env(action_mode=mode, templates="ml_benchmark")
    packs: dict[str, object] = {}
    capped.reset(seed=7)
    for seed in range(14):  # 6 scenarios: most recur
        if seed:
            capped.reset()
        pack = capped.episode.scenario
        assert packs.setdefault(pack.scenario_id, pack) is pack
        pinned = {"template": pack.template, "difficulty": pack.difficulty, "scenario_seed": pack.seed}
        uncapped.reset(seed=seed, options=pinned)
        assert uncapped.episode.scenario is not pack
        assert _trace(capped, seed) == _trace(uncapped, seed)
    for difficulty in ("easy", "medium", "hard"):
        for scenario_seed in (0, 1):
            capped.reset(options={"difficulty": difficulty, "scenario_seed": scenario_seed})
            pack = capped.episode.scenario
            assert (pack.difficulty, pack.seed) == (difficulty, scenario_seed)
            assert packs.setdefault(pack.scenario_id, pack) is pack
    assert len(packs) == 6


@pytest.mark.parametrize("mode", MODES)
def test_capped_envs_of_one_process_share_each_kept_scenario_and_play_the_same_episodes(mode: str) -> None:
    """Every capped env of a process keeps its scenarios in one store: a second env finds the
    first's packs (one copy, however many envs), and plays, seed for seed, the episodes the
    first played when it made them; an env of the other reading keeps its own translation."""
    first = replicalab_v3.env(action_mode=mode, templates="math_reasoning", num_train_scenarios=3)
    second = replicalab_v3.env(action_mode=mode, templates="math_reasoning", num_train_scenarios=3)
    facts = replicalab_v3.env(
        action_mode=mode, templates="math_reasoning", num_train_scenarios=3, reading="facts"
    )
    for seed in range(60, 72):
        first.reset(seed=seed)
        pack = first.episode.scenario
        made = _trace(first, seed)
        second.reset(seed=seed)
        assert second.episode.scenario is pack
        assert _trace(second, seed) == made
        facts.reset(seed=seed)
        assert facts.episode.scenario is not pack
        assert facts.observation_space(SCIENTIST)["observation"].shape != (
            first.observation_space(SCIENTIST)["observation"].shape
        )


# --------------------------------------------------------------------------- determinism

_SCRIPT = """
import sys, numpy as np
from replicalab.envs import replicalab_v3
for mode in ("structured", "text"):
    env = replicalab_v3.env(action_mode=mode)
    for seed in (0, 1, 2, 3):
        env.reset(seed=seed)
        for agent in env.possible_agents:
            env.action_space(agent).seed(seed)
        for agent in env.agent_iter(100):
            obs, _, terminated, truncated, _ = env.last()
            env.step(None if terminated or truncated
                     else env.action_space(agent).sample(obs["action_mask"]))
        sys.stdout.write(env.unwrapped.episode.to_log().model_dump_json() + "\\n")
"""


def _logs(hash_seed: str) -> str:
    return stdout_of(_SCRIPT, hash_seed)


def test_same_seed_and_actions_give_byte_identical_logs_across_hash_seeds() -> None:
    first, second = _logs("0"), _logs("4242")
    assert first == second
    lines = first.splitlines()
    assert len(lines) == 8 and len(set(lines)) == 8  # distinct episodes, each reproduced exactly


def test_log_replays_to_the_same_bytes() -> None:
    env = replicalab_v3.env(action_mode="text")
    play(env, 5, "noisy")
    log = env.episode.to_log()
    assert log.invalid_action_count > 0
    again = Episode(env.episode.scenario)
    for step in log.steps:
        assert again.agent_selection == step.agent
        if step.error_code is not None:
            raw = step.action if isinstance(step.action, str) else None
            again.step(ActionError(code=step.error_code, message=step.error_message or "", raw=raw))
        else:
            model = ScientistAction if step.agent == SCIENTIST else LabManagerAction
            again.step(model.model_validate(step.action))
    assert again.to_log().model_dump_json() == log.model_dump_json()


@pytest.mark.parametrize("mode", MODES)
def test_log_json_round_trips_byte_for_byte(mode: str) -> None:
    env = replicalab_v3.env(action_mode=mode)
    for seed in range(24):
        play(env, seed, ("random", "noisy", "baseline")[seed % 3])
        text = env.episode.to_log().model_dump_json()
        assert EpisodeLog.model_validate_json(text).model_dump_json() == text


@pytest.mark.parametrize("mode", ["structured", "text"])
def test_the_feature_space_is_the_documented_0_to_1(mode: str) -> None:
    env = replicalab_v3.env(action_mode=mode)
    gym_env = gym.make("ReplicaLab/Scientist-v3", action_mode=mode)
    boxes = [env.observation_space(agent)["observation"] for agent in env.possible_agents]
    boxes.append(gym_env.observation_space["observation"])  # type: ignore[index]
    for box in boxes:
        assert float(box.low.min()) == float(box.low.max()) == 0.0
        assert float(box.high.min()) == float(box.high.max()) == 1.0
    if mode == "structured":  # the values an episode of random legal moves observes
        env.reset(seed=3)
        for agent in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            assert env.observation_space(agent)["observation"].contains(observation["observation"])
            action = env.action_space(agent).sample(observation["action_mask"])
            env.step(None if terminated or truncated else action)
    assert "Every value lies in [0, 1], the bounds of its space (`Box(0, 1)`)" in " ".join(
        (Path(__file__).resolve().parent.parent / "docs" / "observation-features.md").read_text().split()
    )
