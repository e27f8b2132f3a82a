"""The verifiers 0.4 (`verifiers.v1`) taskset and environment play ReplicaLab episodes exactly as
the Gymnasium text env does.

verifiers loads them by the taskset id "replicalab" (its loader imports the package and takes
the classes its `__all__` names). A real agent runs its model through a harness program in a
runtime that verifiers provisions with `uv`, beyond an offline test; so the episode is driven
here by a scripted seat with the `Agents` surface `Env.run` uses (an agent's `interaction`, its
`turn` returning verifiers' own `Segment`, the trace's `record_reward` and `info`). Needs
verifiers with its v1 stack (0.3.1's already has it; 0.4 has only it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

vf = pytest.importorskip(
    "verifiers.v1", reason="verifiers with its v1 stack is not installed: pip install 'verifiers>=0.4'"
)

from replicalab.envs.chat_episode import ChatEpisode, scenario_ids  # noqa: E402
from replicalab.envs.verifiers_v1 import REWARDS, ReplicaLabEnv, ReplicaLabTask  # noqa: E402
from tests.chat_oracle import ACCEPT, GARBAGE, baseline_proposal, gymnasium_outcome  # noqa: E402

SETTINGS = {"split": "train", "templates": ["ml_benchmark", "finance_trading"], "num_seeds": 2}


class _Trace:
    """What `ReplicaLabEnv.run` writes on the agent's trace."""

    def __init__(self) -> None:
        self.rewards: dict[str, tuple[float, float]] = {}
        self.info: dict[str, Any] = {}

    def record_reward(self, name: str, value: float, weight: float = 1.0) -> None:
        self.rewards[name] = (value, weight)


class _Interaction:
    """A scripted Scientist: each `turn` records the user message and answers the next reply."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.heard: list[str | None] = []
        self.trace = _Trace()

    async def turn(self, message: str | None = None) -> Any:
        self.heard.append(message)
        if not self.replies:
            return vf.Segment(messages=[], terminated=True)
        return vf.Segment(messages=[vf.AssistantMessage(content=self.replies.pop(0))])


class _Seat:
    def __init__(self, replies: list[str]) -> None:
        self.played = _Interaction(replies)

    @asynccontextmanager
    async def interaction(self, task: Any) -> AsyncIterator[_Interaction]:
        yield self.played


class _Agents:
    def __init__(self, replies: list[str]) -> None:
        self.scientist = _Seat(replies)


def _load(**taskset: Any) -> tuple[ReplicaLabEnv, list[ReplicaLabTask]]:
    config = vf.resolve_env_config({"taskset": {"id": "replicalab", **SETTINGS, **taskset}})
    env = vf.load_environment(config)
    return env, list(vf.load_taskset(config.taskset).load())


def _play(env: ReplicaLabEnv, task: ReplicaLabTask, replies: list[str]) -> _Interaction:
    agents = _Agents(replies)
    asyncio.run(env.run(task, agents))
    return agents.scientist.played


def test_the_id_replicalab_loads_the_environment_and_one_task_per_scenario() -> None:
    env, tasks = _load(max_rounds=4)
    assert isinstance(env, ReplicaLabEnv)
    expected = scenario_ids("train", templates=SETTINGS["templates"], num_seeds=2)
    assert [t.data.info["scenario_id"] for t in tasks] == expected
    for task in tasks[:3]:
        system, first = ChatEpisode(task.data.info["scenario_id"], max_rounds=4).opening()
        assert (task.data.system_prompt, task.data.prompt) == (system["content"], first["content"])


@pytest.mark.parametrize("replies", [[GARBAGE, "proposal", ACCEPT], [GARBAGE] * 4, ["proposal"]])
def test_an_episode_scores_what_the_gymnasium_text_env_gives(replies: list[str]) -> None:
    env, tasks = _load(max_rounds=4)
    for task in tasks[:4]:
        scenario_id = task.data.info["scenario_id"]
        scripted = [baseline_proposal(scenario_id) if r == "proposal" else r for r in replies]
        played = _play(env, task, scripted)
        expected = gymnasium_outcome(scenario_id, scripted, max_rounds=4)
        assert played.trace.rewards == {
            "scientist_return": (pytest.approx(expected["return"]), REWARDS["scientist_return"]),
            "judge_score": (pytest.approx(expected["judge"]), REWARDS["judge_score"]),
        }
        assert played.trace.info == {"scenario_id": scenario_id, "verdict": expected["verdict"]}
        assert played.heard[0] is None  # the task's prompt speaks first
        assert played.heard[1:] == expected["prompts"][1 : len(played.heard)]


def test_a_bad_setting_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="split"):
        _load(split="dev")
    with pytest.raises(ValueError, match="max_rounds"):
        _load(max_rounds=1)
