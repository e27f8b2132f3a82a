"""RLlib's PPO trains both seats, the Scientist and a learned Lab Manager, through RLlib's own
PettingZoo wrappers of the AEC and the parallel env: both networks learn, the returns are
finite, the masked module never plays a move the mask forbids, the rewards RLlib's wrappers hand
out sum to the episode's returns, a waiting agent's steps carry no policy gradient, and the
docs/rllib.md's install and Python do what it says. Needs the [rllib] extra (ray[rllib] and torch),
which CI installs."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from replicalab.install import install_hint

pytest.importorskip("ray.rllib", reason=f"the [rllib] extra is not installed: {install_hint('rllib')}")

import ray
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from replicalab.baselines.training.rllib import MaskedPPOModule, act, make_env, ppo_config
from replicalab.envs import replicalab_v3
from replicalab.moves import AGENTS, LAB_MANAGER, SCIENTIST
from tests.docs_pages import blocks, page

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:.*rllib-multi-agent-env-v0 already in registry"),  # RLlib's own
]

ENV_CONFIG = {"templates": "ml_benchmark", "split": "train"}


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _weights(algo: Any) -> dict[str, dict[str, np.ndarray]]:
    """Every trainable tensor of both seats' networks (actor and critic), as the learner holds
    them (its state also holds constants, which no training moves)."""
    learned = algo.learner_group.get_weights()
    return {
        policy: {
            name: np.array(learned[policy][name]) for name, _ in algo.get_module(policy).named_parameters()
        }
        for policy in AGENTS
    }


def _legal(space: Any, mask: np.ndarray, action: Any) -> bool:
    """Whether `action` takes only values the flat `mask` allows, component by component."""
    if isinstance(action, int):
        return bool(mask[action])
    starts = np.cumsum([0, *space.nvec[:-1]])
    return bool(mask[starts + np.asarray(action)].all())


def _play(api: str, modules: dict[str, MaskedPPOModule], seed: int) -> tuple[dict[str, float], Any, int]:
    """One episode through RLlib's wrapper, each seat's module drawing its moves as in training:
    the rewards the wrapper handed each agent, the episode's log, and the moves checked."""
    env = make_env(api, ENV_CONFIG)  # type: ignore[arg-type]
    observations, _ = env.reset(seed=seed)
    got = dict.fromkeys(AGENTS, 0.0)
    checked = 0
    done = False
    while not done:
        actions = {}
        for agent, observation in observations.items():
            actions[agent] = act(modules[agent], observation, explore=True)
            if observation["action_mask"].any():  # the agent on turn (the other waits in parallel)
                assert _legal(env.action_space[agent], observation["action_mask"], actions[agent])
                checked += 1
        observations, rewards, terminated, truncated, _ = env.step(actions)
        for agent, reward in rewards.items():
            got[agent] += reward
        done = terminated["__all__"] or truncated["__all__"]
    return got, env.get_sub_environments.episode.to_log(), checked


@pytest.mark.slow
@pytest.mark.parametrize("api", ["aec", "parallel"])
def test_ppo_trains_both_seats_and_the_trained_modules_respect_the_mask(api: str) -> None:
    algo = ppo_config(api, ENV_CONFIG, batch_size=128, minibatch_size=32, epochs=1).build_algo()  # type: ignore[arg-type]
    try:
        before = _weights(algo)
        results = [algo.train() for _ in range(2)]
        after = _weights(algo)
        for policy in AGENTS:  # every layer of both networks moved, the policy heads included
            changed = [
                name
                for name in before[policy]
                if not np.array_equal(before[policy][name], after[policy][name])
            ]
            assert set(changed) == set(before[policy]), (policy, set(before[policy]) - set(changed))
            assert results[-1]["learners"][policy]["num_module_steps_trained"] > 0
        runners = results[-1]["env_runners"]
        assert runners["num_episodes"] > 0
        returns = runners["agent_episode_returns_mean"]
        assert set(returns) == set(AGENTS) and all(math.isfinite(returns[agent]) for agent in AGENTS)
        modules = {policy: algo.get_module(policy) for policy in AGENTS}
        for seed in range(4):
            got, log, checked = _play(api, modules, seed)
            assert log.invalid_action_count == 0 and checked == len(log.steps)
            assert got == pytest.approx(log.total_rewards)
    finally:
        algo.stop()


def _module(agent: str) -> MaskedPPOModule:
    env = replicalab_v3.env()
    spec = RLModuleSpec(
        module_class=MaskedPPOModule,
        observation_space=env.observation_space(agent),
        action_space=env.action_space(agent),
        model_config={"fcnet_hiddens": [16]},
    )
    module: MaskedPPOModule = spec.build()
    return module


@pytest.mark.parametrize("agent", [SCIENTIST, LAB_MANAGER])
def test_a_waiting_agents_step_is_certain_and_carries_no_policy_gradient(agent: str) -> None:
    module = _module(agent)
    space = module.observation_space
    observation = {key: torch.as_tensor(np.stack([space[key].sample() for _ in range(8)])) for key in space}
    observation["action_mask"] = torch.zeros_like(observation["action_mask"])
    out = module.forward_train({Columns.OBS: observation})
    dist = module.get_train_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
    action = dist.sample()
    assert (action == 0).all()  # the first value of every component
    log_prob = dist.logp(action)
    assert torch.all(log_prob == 0)
    log_prob.sum().backward()
    gradients = [p.grad for p in module.pi.parameters()]
    assert gradients and all(g is not None and torch.all(g == 0) for g in gradients)


def test_a_mask_with_one_legal_move_per_component_is_always_played() -> None:
    module = _module(SCIENTIST)
    space = module.observation_space
    observation = {key: space[key].sample() for key in space}
    nvec = module.action_space.nvec
    wanted = np.array([n - 1 for n in nvec])  # the last value of every component
    mask = np.zeros(int(nvec.sum()), dtype=np.int8)
    mask[np.cumsum([0, *nvec[:-1]]) + wanted] = 1
    observation["action_mask"] = mask
    for explore in (True, False):
        for _ in range(5):
            assert np.array_equal(act(module, observation, explore=explore), wanted)


def test_text_mode_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="structured action mode only"):
        make_env("aec", {"action_mode": "text"})


@pytest.mark.slow
def test_the_readme_installs_the_cpu_torch_first_and_its_python_trains_both_seats() -> None:
    section = page("rllib.md")
    install = blocks(section, "bash")[0].splitlines()
    (extra,) = [line for line in install if "pip install -e '.[rllib]'" in line]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in extra  # torch's CPU build
    (block,) = blocks(section, "python")
    assert "range(20)" in block
    scope: dict[str, Any] = {}
    exec(compile(block.replace("range(20)", "range(1)"), "README", "exec"), scope)
    try:
        assert set(scope["result"]["env_runners"]["agent_episode_returns_mean"]) == set(AGENTS)
        assert isinstance(scope["scientist"], MaskedPPOModule) and isinstance(
            scope["lab_manager"], MaskedPPOModule
        )
    finally:
        scope["algo"].stop()
