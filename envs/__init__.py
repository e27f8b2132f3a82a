"""Thin RL fronts over `replicalab.episode`: the PettingZoo AEC env and a Gymnasium env per seat.

Importing this package registers `ReplicaLab/Scientist-v2` and `ReplicaLab/LabManager-v2` with
Gymnasium; without an import, `gymnasium.make("replicalab.envs:ReplicaLab/Scientist-v2")` imports
it first (Gymnasium's `module:id` form).
"""

from gymnasium.envs.registration import register, registry

from replicalab.envs import replicalab_v2

SCIENTIST_ENV_ID = "ReplicaLab/Scientist-v2"
LAB_MANAGER_ENV_ID = "ReplicaLab/LabManager-v2"

if SCIENTIST_ENV_ID not in registry:
    register(id=SCIENTIST_ENV_ID, entry_point="replicalab.envs.scientist_v2:ScientistEnv")
if LAB_MANAGER_ENV_ID not in registry:
    register(id=LAB_MANAGER_ENV_ID, entry_point="replicalab.envs.lab_manager_v2:LabManagerEnv")

__all__ = ["LAB_MANAGER_ENV_ID", "SCIENTIST_ENV_ID", "replicalab_v2"]
