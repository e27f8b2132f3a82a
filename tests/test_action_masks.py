"""The Gymnasium Scientist env masks its actions as sb3-contrib expects: `action_masks()` is the
flat mask the observation carries, and MaskablePPO trains on `gym.make` with no glue."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import replicalab.envs  # noqa: F401  # registers ReplicaLab/Scientist-v3


def test_the_mask_is_the_observations_and_only_legal_moves_pass() -> None:
    env = gym.make("ReplicaLab/Scientist-v3")
    obs, _ = env.reset(seed=0)
    for _ in range(20):
        mask = env.unwrapped.action_masks()  # type: ignore[attr-defined]
        assert mask.dtype == np.bool_ and np.array_equal(mask, obs["action_mask"].astype(bool))
        obs, _, terminated, truncated, info = env.step(env.action_space.sample(obs["action_mask"]))
        assert info.get("error") is None  # a masked-in sample is always a legal move
        if terminated or truncated:
            obs, _ = env.reset()


def test_text_mode_has_no_component_masks() -> None:
    env = gym.make("ReplicaLab/Scientist-v3", action_mode="text")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="action_masks: only the structured action space"):
        env.unwrapped.action_masks()  # type: ignore[attr-defined]


@pytest.mark.slow
def test_maskable_ppo_trains_on_the_env_with_no_glue() -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    env = gym.make("ReplicaLab/Scientist-v3")
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", env, n_steps=128, batch_size=64, seed=0)
    model.learn(total_timesteps=256)
    assert model.num_timesteps == 256  # two rollouts and their updates went through
    obs, _ = env.reset(seed=1)
    done = False
    while not done:  # a masked prediction is a legal move, to the end of an episode
        action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=True)  # type: ignore[attr-defined]
        obs, _, terminated, truncated, info = env.step(action)
        assert info.get("error") is None
        done = terminated or truncated
