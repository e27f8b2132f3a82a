"""Thin RL fronts over `replicalab.episode`: the PettingZoo AEC env and a Gymnasium env per seat.

Importing this package registers `ReplicaLab/Scientist-v3` and `ReplicaLab/LabManager-v3` with
Gymnasium; without an import, `gymnasium.make("replicalab.envs:ReplicaLab/Scientist-v3")` imports
it first (Gymnasium's `module:id` form).
"""

from gymnasium.envs.registration import register, registry

from replicalab.envs import replicalab_v3

SCIENTIST_ENV_ID = "ReplicaLab/Scientist-v3"
LAB_MANAGER_ENV_ID = "ReplicaLab/LabManager-v3"

if SCIENTIST_ENV_ID not in registry:
    register(id=SCIENTIST_ENV_ID, entry_point="replicalab.envs.scientist_v3:ScientistEnv")
if LAB_MANAGER_ENV_ID not in registry:
    register(id=LAB_MANAGER_ENV_ID, entry_point="replicalab.envs.lab_manager_v3:LabManagerEnv")

__all__ = ["LAB_MANAGER_ENV_ID", "SCIENTIST_ENV_ID", "replicalab_v3"]
