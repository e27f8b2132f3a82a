"""# ReplicaLab as a verifiers 0.4 (`verifiers.v1`) taskset and environment

| | |
|---|---|
| Import | `from replicalab.envs.verifiers_v1 import ReplicaLabTaskset, ReplicaLabEnv` (verifiers >= 0.4) |
| By id | `vf.load_environment(vf.resolve_env_config({"taskset": {"id": "replicalab", ...}}))` with `import verifiers.v1 as vf` |
| Taskset | `ReplicaLabTaskset`: one task per scenario (`split`, `templates`, `difficulties`, `num_seeds`) |
| Env | `ReplicaLabEnv`: one seat, `scientist`, against the grounded Lab Manager |
| Rewards | `scientist_return` (weight 1.0), `judge_score` (weight 0.0: logged beside it) |

## Description
verifiers 0.4 replaced the classic `MultiTurnEnv` (which `replicalab.envs.verifiers_env`
subclasses for verifiers < 0.4) with tasksets, environments and agents run by a harness. Here
the taskset's tasks are scenarios, each opening with the Scientist's system prompt and first
observation; the environment's `run` plays one `replicalab.envs.chat_episode.ChatEpisode` with
the `scientist` agent as the model, stepping the episode host-side as the run's user: each reply
is the Scientist's move, the Lab Manager answers inside the same call, and the next observation
is the next user turn, until the episode ends (the Scientist's `accept` or the round limit). A
reply that is not one valid action is refused by the episode (an error code, a penalty, a lost
round), never by this module.

## Rewards
Recorded on the agent's trace when the episode ends or the exchange stops: `scientist_return`,
the Scientist's return under `reward_config`, and `judge_score`, the judge's score of the agreed
protocol (0 without agreement); `trace.info` holds the `verdict` and the `scenario_id`.

## Configuration
`ReplicaLabTasksetConfig` (`--env.taskset.*`): `split` ("train", "validation" or "test"),
`templates` and `difficulties` (default: all), `num_seeds` (seeds a template and difficulty,
ordered seed first), `max_rounds`, `reward_config` (a preset name).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf

from replicalab.envs.chat_episode import ChatEpisode, scenario_ids
from replicalab.episode import check_max_rounds
from replicalab.rewards import reward_config_of
from replicalab.scenarios import DEFAULT_MAX_ROUNDS
from replicalab.scenarios.registry import check_split

REWARDS = {"scientist_return": 1.0, "judge_score": 0.0}  # name -> weight on the trace


class ReplicaLabTasksetConfig(vf.TasksetConfig):
    """Which scenarios the taskset holds and how their episodes are played."""

    split: str = "train"
    templates: list[str] | None = None
    difficulties: list[str] | None = None
    num_seeds: int = 100
    max_rounds: int = DEFAULT_MAX_ROUNDS
    reward_config: str = "default"


class ReplicaLabData(vf.TaskData):
    """A scenario's task: its opening prompt, and the episode's settings under `info`."""

    info: dict[str, Any]


class ReplicaLabTask(vf.Task[ReplicaLabData, vf.State, vf.TaskConfig]):
    """One scenario to play."""


class ReplicaLabEnvConfig(vf.EnvConfig):
    """The environment's one seat: the Scientist (`--env.scientist.*`)."""

    scientist: vf.AgentConfig = vf.AgentConfig()


class ReplicaLabEnv(vf.Env[ReplicaLabEnvConfig]):
    """One ReplicaLab episode per task, the model as the Scientist (see the module)."""

    async def run(self, task: Any, agents: Any) -> None:
        info = task.data.info
        chat = ChatEpisode(
            info["scenario_id"], max_rounds=info["max_rounds"], reward_config=info["reward_config"]
        )
        async with agents.scientist.interaction(task) as interaction:
            segment = await interaction.turn()  # the task's prompt speaks first
            while not segment.terminated:
                observation = chat.play(segment.last_reply)
                if observation is None:
                    break
                segment = await interaction.turn(observation)
            trace = interaction.trace
            trace.record_reward("scientist_return", chat.scientist_return, REWARDS["scientist_return"])
            trace.record_reward("judge_score", chat.judge_score, REWARDS["judge_score"])
            trace.info["scenario_id"] = info["scenario_id"]
            trace.info["verdict"] = chat.episode.verdict


class ReplicaLabTaskset(vf.Taskset[ReplicaLabTask, ReplicaLabTasksetConfig]):
    """The scenarios of a split as tasks, in `scenario_ids`' order (seed first). A bad setting
    raises an error naming it when the tasks are loaded."""

    def load(self) -> Iterator[ReplicaLabTask]:
        config = self.config
        check_max_rounds(config.max_rounds)
        reward_config_of(config.reward_config)
        ids = scenario_ids(
            check_split(config.split),
            templates=config.templates,
            difficulties=config.difficulties,
            num_seeds=config.num_seeds,
        )
        for scenario_id in ids:
            system, first = ChatEpisode(scenario_id, max_rounds=config.max_rounds).opening()
            yield ReplicaLabTask(
                ReplicaLabData(
                    id=scenario_id,
                    name=scenario_id,
                    prompt=first["content"],
                    system_prompt=system["content"],
                    info={
                        "scenario_id": scenario_id,
                        "max_rounds": config.max_rounds,
                        "reward_config": config.reward_config,
                    },
                ),
                config.task,
            )


__all__ = ["ReplicaLabEnv", "ReplicaLabTaskset"]
