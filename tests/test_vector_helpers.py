"""The Scientist env through the vector helpers users reach for: Stable-Baselines3's `make_vec_env`
(which creates every copy with `render_mode="rgb_array"`), its `SubprocVecEnv`, and
`gymnasium.make_vec`; and the "rgb_array" frame those helpers record."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import replicalab.envs
from replicalab.envs import replicalab_v3
from replicalab.envs.render import FRAME_SHAPE, frame_text

ENV_ID = replicalab.envs.SCIENTIST_ENV_ID


def _play_one_round(vec: object, n: int) -> None:
    obs = vec.reset()  # type: ignore[attr-defined]
    masks = obs["action_mask"]
    space = vec.action_space  # type: ignore[attr-defined]
    actions = np.stack([space.sample(masks[i]) for i in range(n)])
    _, rewards, _, _ = vec.step(actions)  # type: ignore[attr-defined]
    assert rewards.shape == (n,) and np.isfinite(rewards).all()


# A user's script: SubprocVecEnv's workers (forkserver or spawn) re-import the main module, so the
# `import replicalab.envs` at its top registers the id in every worker.
SUBPROC_SCRIPT = """
import numpy as np
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv

import replicalab.envs

if __name__ == "__main__":
    vec = make_vec_env(replicalab.envs.SCIENTIST_ENV_ID, n_envs=2, seed=5, vec_env_cls=SubprocVecEnv)
    obs = vec.reset()
    actions = np.stack([vec.action_space.sample(obs["action_mask"][i]) for i in range(2)])
    _, rewards, _, _ = vec.step(actions)
    print(rewards.shape, [frame.shape for frame in vec.get_images()])
    vec.close()
"""


def test_stable_baselines3_subproc_vec_env_from_a_script(tmp_path: Path) -> None:
    pytest.importorskip("stable_baselines3", reason="needs the train extra")
    script = tmp_path / "train_script.py"
    script.write_text(SUBPROC_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"(2,) {[(*FRAME_SHAPE, 3)] * 2}"


@pytest.mark.parametrize("vec_cls", ["dummy", "subproc"])
def test_stable_baselines3_make_vec_env(vec_cls: str) -> None:
    env_util = pytest.importorskip("stable_baselines3.common.env_util", reason="needs the train extra")
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    # Gymnasium's `module:id` form imports the module first, in whichever process makes the env.
    env_id = f"replicalab.envs:{ENV_ID}" if vec_cls == "subproc" else ENV_ID
    cls = DummyVecEnv if vec_cls == "dummy" else SubprocVecEnv
    vec = env_util.make_vec_env(env_id, n_envs=2, seed=5, vec_env_cls=cls)
    try:
        assert vec.render_mode == "rgb_array"
        _play_one_round(vec, 2)
        frames = vec.get_images()
        assert [f.shape for f in frames] == [(*FRAME_SHAPE, 3)] * 2
    finally:
        vec.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_gymnasium_make_vec_with_the_registered_id(mode: str) -> None:
    vec = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode=mode, render_mode="rgb_array")
    try:
        obs, _ = vec.reset(seed=1)
        actions = np.stack([vec.single_action_space.sample(obs["action_mask"][i]) for i in range(2)])
        _, rewards, _, _, _ = vec.step(actions)
        assert rewards.shape == (2,)
    finally:
        vec.close()


def test_rgb_array_frames_keep_one_size_and_change_with_the_transcript() -> None:
    env = gym.make(ENV_ID, render_mode="rgb_array")
    obs, _ = env.reset(seed=2)
    first = env.render()
    assert isinstance(first, np.ndarray) and first.dtype == np.uint8 and first.shape == (*FRAME_SHAPE, 3)
    assert (first < 128).any()  # text was drawn, not a blank page
    env.action_space.seed(2)
    env.step(env.action_space.sample(obs["action_mask"]))
    second = env.render()
    assert isinstance(second, np.ndarray) and second.shape == first.shape
    assert not np.array_equal(first, second)


def test_the_multi_agent_env_renders_rgb_array_too() -> None:
    env = replicalab_v3.env(render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.shape == (*FRAME_SHAPE, 3)


def test_a_frame_keeps_the_scenario_and_round_once_the_transcript_overflows() -> None:
    env = replicalab_v3.env(render_mode="ansi", max_rounds=12)
    env.reset(seed=0)
    for number, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(number)
    for agent in env.agent_iter():
        observation, _, terminated, truncated, _ = env.last()
        action = env.action_space(agent).sample(observation["action_mask"])
        env.step(None if terminated or truncated else action)
    transcript = str(env.render()).splitlines()
    shown = frame_text("\n".join(transcript)).splitlines()
    assert len(transcript) > 40 and len(shown) == 32  # more than a frame holds
    assert shown[:2] == transcript[:2] and shown[2:] == transcript[-30:]
    assert shown[0].startswith("== ") and shown[1].lstrip().startswith("round ")  # id, title; round
