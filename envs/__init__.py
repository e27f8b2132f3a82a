"""Thin RL fronts over `replicalab.episode`: the PettingZoo AEC env and the Gymnasium Scientist env.

Importing this package registers `ReplicaLab/Scientist-v1` with Gymnasium; without an import,
`gymnasium.make("replicalab.envs:ReplicaLab/Scientist-v1")` imports it first (Gymnasium's
`module:id` form).
"""

from gymnasium.envs.registration import register, registry

from replicalab.envs import replicalab_v1

SCIENTIST_ENV_ID = "ReplicaLab/Scientist-v1"

if SCIENTIST_ENV_ID not in registry:
    register(id=SCIENTIST_ENV_ID, entry_point="replicalab.envs.scientist_v1:ScientistEnv")

__all__ = ["SCIENTIST_ENV_ID", "replicalab_v1"]
