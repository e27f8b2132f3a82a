"""Train a Scientist with sb3-contrib's MaskablePPO on the Gymnasium env, save it, and evaluate
the saved model on the held-out test papers through the runner, as `replicalab evaluate
--scientist PATH.zip` does. A short run, to show the loop: `replicalab train` trains for real.

Needs the [train] extra, with torch's CPU build:
  pip install --retries 1 torch==2.13.0+cpu --extra-index-url https://download.pytorch.org/whl/cpu && pip install -e '.[train]' && python -m replicalab.install --check-cpu-torch
Run: python examples/08_maskable_ppo.py
"""

import tempfile
from pathlib import Path

import gymnasium as gym
import torch
from sb3_contrib import MaskablePPO

import replicalab.envs  # noqa: F401  (registers ReplicaLab/Scientist-v3)
from replicalab.baselines.evaluation.metrics import summarize
from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.policies.structured import structured_factory

# One torch thread: the policy is a small MLP, and torch's default of a thread per core spins
# against the envs and anything else running (`replicalab train` does the same).
torch.set_num_threads(1)
env = gym.make("ReplicaLab/Scientist-v3", split="train")  # masks its actions: no glue needed
model = MaskablePPO("MultiInputPolicy", env, n_steps=256, batch_size=64, seed=0)
model.learn(total_timesteps=512)
print(f"trained {model.num_timesteps} steps")

with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "ppo_scientist.zip"
    model.save(path)
    scientist = structured_factory(str(path))  # what `evaluate --scientist PATH.zip` plays
    result = run_grid(Grid.of(seeds=2), scientist, settings=Settings(split="test"))

for row in summarize(result.digests):
    print(f"{row.label:<22} {row.episodes:>3} episodes, judge score {row.score.mean:5.2f}")
