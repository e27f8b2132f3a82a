"""The envs at their edges: calls out of order, bad arguments and reset options, and the log of
every front."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import replicalab.envs
from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.envs import replicalab_v3
from replicalab.models import EpisodeLog, ScientistAction, ScientistActionType
from replicalab.moves import LAB_MANAGER, SCIENTIST
from replicalab.scenarios import generate_scenario
from tests.plans import PACK, good_plan, propose


def _aec(**kwargs: Any) -> replicalab_v3.raw_env:
    return replicalab_v3.env(**kwargs)


def _finished_aec() -> replicalab_v3.raw_env:
    env = _aec()
    env.reset(seed=0, options={"scenario": PACK})
    env.step(propose(good_plan(PACK)))
    env.step(grounded_lab_response(env.episode))
    env.step(ScientistAction(action_type=ScientistActionType.ACCEPT))
    assert env.episode.done
    return env


# --------------------------------------------------------------------------- AEC after the end


def test_dead_agents_leave_with_step_none_then_step_is_a_no_op_and_last_is_clear() -> None:
    env = _finished_aec()
    with pytest.raises(ValueError, match="only valid action is None"):
        env.step(1)  # PettingZoo's own refusal for a dead agent
    env.step(None)
    env.step(None)
    assert env.agents == [] and list(env.agent_iter()) == []
    log = env.episode.to_log().model_dump_json()
    env.step(None)  # PettingZoo's order wrapper: a warning, nothing else
    env.step(3)
    assert env.agents == [] and env.episode.to_log().model_dump_json() == log
    with pytest.raises(RuntimeError, match="every agent has left"):
        env.last()
    env.reset(seed=1)
    assert env.agents == [SCIENTIST, LAB_MANAGER] and env.last()[2] is False


def test_calls_before_reset_raise_a_clear_error() -> None:
    env = _aec()
    for call, name in (
        (env.last, "last"),
        (lambda: env.observe(SCIENTIST), "observe"),
        (lambda: env.step(None), "step"),
        (lambda: env.episode, "episode"),
    ):
        with pytest.raises(RuntimeError, match=f"{name}: reset\\(\\) must be called"):
            call()
    parallel = replicalab_v3.parallel_env()
    with pytest.raises(RuntimeError, match="reset"):
        parallel.step({})
    with pytest.raises(RuntimeError, match="episode: reset"):
        _ = parallel.episode
    with pytest.raises(RuntimeError, match="episode: reset"):
        _ = gym.make(replicalab.envs.SCIENTIST_ENV_ID).unwrapped.episode  # type: ignore[attr-defined]


def test_observe_refuses_an_unknown_agent() -> None:
    env = _aec()
    env.reset(seed=0)
    for agent in ("nobody", "Scientist", None):
        with pytest.raises(ValueError, match="agent: unknown agent"):
            env.observe(agent)  # type: ignore[arg-type]
    assert set(env.observe(LAB_MANAGER)) == {"observation", "action_mask"}


# --------------------------------------------------------------------------- parallel arguments


def test_parallel_step_refuses_what_is_not_a_dict_of_agents() -> None:
    env = replicalab_v3.parallel_env()
    env.reset(seed=0)
    with pytest.raises(TypeError, match="actions: expected a dict"):
        env.step(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="actions: expected a dict"):
        env.step([0, 0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="actions: unknown agent 'nobody'"):
        env.step({"nobody": 0})
    assert env.episode.transcript == [] and env.agents == [SCIENTIST, LAB_MANAGER]  # nothing was played


# --------------------------------------------------------------------------- reset options

Reset = Callable[..., Any]


def _resets() -> dict[str, tuple[Any, Reset]]:
    aec, parallel = _aec(), replicalab_v3.parallel_env()
    gym_env = gym.make(replicalab.envs.SCIENTIST_ENV_ID).unwrapped
    return {
        "aec": (aec, aec.reset),
        "parallel": (parallel, parallel.reset),
        "gymnasium": (gym_env, lambda seed=None, options=None: gym_env.reset(seed=seed, options=options)),
    }


BAD_OPTIONS: list[tuple[object, type[Exception], str]] = [
    (["template", "ml_benchmark"], TypeError, "options: expected a dict"),
    ("scenario_seed=3", TypeError, "options: expected a dict"),
    ({"scenario_seed": "abc"}, TypeError, r"options\['scenario_seed'\]"),
    ({"scenario_seed": math.inf}, TypeError, r"options\['scenario_seed'\]"),
    ({"scenario_seed": 1.7}, TypeError, r"options\['scenario_seed'\]"),
    ({"scenario_seed": 3.0}, TypeError, r"options\['scenario_seed'\]"),
    ({"scenario_seed": True}, TypeError, r"options\['scenario_seed'\]"),
    ({"scenario_seed": -1}, ValueError, r"options\['scenario_seed'\]: must be non-negative"),
    ({"template": "nope"}, ValueError, r"options\['template'\]: unknown template 'nope'"),
    ({"template": ["ml_benchmark"]}, ValueError, r"options\['template'\]"),
    ({"difficulty": "extreme"}, ValueError, r"options\['difficulty'\]"),
    ({"scenario": "ml_benchmark-easy-0"}, TypeError, r"options\['scenario'\]"),
    ({"scenario": PACK, "template": "ml_benchmark"}, ValueError, "'scenario' pins the whole pack"),
]


@pytest.mark.parametrize("front", ["aec", "parallel", "gymnasium"])
@pytest.mark.parametrize(("options", "error", "match"), BAD_OPTIONS)
def test_bad_reset_options_raise_an_error_naming_the_key(
    front: str, options: object, error: type[Exception], match: str
) -> None:
    env, reset = _resets()[front]
    with pytest.raises(error, match=match):
        reset(seed=0, options=options)
    reset(seed=0, options={"scenario_seed": np.int64(7), "template": "ml_benchmark", "difficulty": "hard"})
    assert env.episode.scenario == generate_scenario(7, "ml_benchmark", "hard")  # still usable


@pytest.mark.parametrize("front", ["aec", "parallel", "gymnasium"])
def test_an_unknown_option_is_ignored_with_a_warning(front: str) -> None:
    env, reset = _resets()[front]
    with pytest.warns(UserWarning, match="options: unknown key 'sceanrio_seed' ignored"):
        reset(seed=0, options={"sceanrio_seed": 3})
    drawn = env.episode.scenario
    reset(seed=0)
    assert env.episode.scenario == drawn  # nothing was pinned


# --------------------------------------------------------------------------- constructor arguments


def test_a_bare_name_is_one_template_or_difficulty() -> None:
    bare = _aec(templates="ml_benchmark", difficulties="hard")
    listed = _aec(templates=["ml_benchmark"], difficulties=["hard"])
    for seed in range(6):
        bare.reset(seed=seed)
        listed.reset(seed=seed)
        assert bare.episode.scenario == listed.episode.scenario
        assert bare.episode.scenario.template == "ml_benchmark"
        assert bare.episode.scenario.difficulty == "hard"


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"templates": 5}, TypeError, "templates: expected a name or a list"),
        ({"templates": {"ml_benchmark"}}, TypeError, "templates: expected a name or a list"),
        ({"templates": "ml"}, ValueError, "template: unknown template 'ml'"),
        ({"difficulties": "impossible"}, ValueError, "difficulty: unknown difficulty 'impossible'"),
        ({"step_cap": 0}, ValueError, "step_cap"),
        ({"step_cap": 2.5}, ValueError, "step_cap"),
        ({"step_cap": "10"}, ValueError, "step_cap"),
        ({"reward_config": 3}, TypeError, "reward_config"),
    ],
)
def test_bad_constructor_arguments_name_the_argument(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    for make in (
        _aec,
        replicalab_v3.parallel_env,
        lambda **kw: gym.make(replicalab.envs.SCIENTIST_ENV_ID, **kw),
    ):
        with pytest.raises(error, match=match):
            make(**kwargs)


# --------------------------------------------------------------------------- the log of every front


def test_every_front_gives_its_episode_log_the_same_way() -> None:
    aec = _aec()
    aec.reset(seed=0)
    for agent in aec.agent_iter():
        _, _, terminated, truncated, _ = aec.last()
        episode = aec.unwrapped.episode
        if terminated or truncated:
            aec.step(None)
        elif agent == SCIENTIST:
            aec.step(build_baseline_scientist_action(episode.scientist_observation()))
        else:
            aec.step(grounded_lab_response(episode))
    parallel = replicalab_v3.parallel_env()
    parallel.reset(seed=0)
    while parallel.agents:
        episode = parallel.unwrapped.episode
        move = build_baseline_scientist_action(episode.scientist_observation())
        parallel.step({SCIENTIST: move, LAB_MANAGER: 0})
    gym_env = gym.make(replicalab.envs.SCIENTIST_ENV_ID)
    gym_env.reset(seed=0)
    done = False
    while not done:
        episode = gym_env.unwrapped.episode  # type: ignore[attr-defined]
        _, _, terminated, truncated, _ = gym_env.step(
            build_baseline_scientist_action(episode.scientist_observation())
        )
        done = terminated or truncated
    for env in (aec, parallel, gym_env):
        log = env.unwrapped.episode.to_log()
        assert isinstance(log, EpisodeLog) and log.verdict is not None and log.steps
