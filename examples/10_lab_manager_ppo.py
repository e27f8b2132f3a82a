"""Train the Lab Manager with sb3-contrib's MaskablePPO against a fixed Scientist (the project's
reader, the env's default), then play the trained stance policy on held-out test papers beside
the grounded Lab Manager's stances. A short run, to show the loop.

Needs the [train] extra, with torch's CPU build:
  pip install --retries 1 torch==2.13.0+cpu --extra-index-url https://download.pytorch.org/whl/cpu && pip install -e '.[train]' && python -m replicalab.install --check-cpu-torch
Run: python examples/10_lab_manager_ppo.py
"""

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO

import replicalab.envs  # noqa: F401  (registers ReplicaLab/LabManager-v3)
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.moves import LAB_MANAGER_ACTION_TYPES

torch.set_num_threads(1)  # a small MLP: more threads only fight the env for the cores
env = gym.make("ReplicaLab/LabManager-v3", split="train")  # masks its stances: no glue needed
model = MaskablePPO("MultiInputPolicy", env, n_steps=128, batch_size=64, seed=0)
model.learn(total_timesteps=256)
print(f"trained {model.num_timesteps} steps")


def trained(env, obs):
    return model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=True)[0]


def grounded(env, obs):  # the reference Lab Manager's stance, for comparison
    return LAB_MANAGER_ACTION_TYPES.index(grounded_lab_response(env.unwrapped.episode).action_type)


test = gym.make("ReplicaLab/LabManager-v3", split="test")
for name, policy in (("trained", trained), ("grounded", grounded)):
    returns, agreements = [], 0
    for seed in range(9):
        obs, info = test.reset(seed=seed)
        done, total = False, 0.0
        while not done:
            obs, reward, terminated, truncated, info = test.step(policy(test, obs))
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
        agreements += info["verdict"] == "agreement"
    print(f"{name:<9} 9 test episodes, {agreements} agreements, mean return {np.mean(returns):+.2f}")
