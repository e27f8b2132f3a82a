"""# ReplicaLab as a verifiers multi-turn environment

| | |
|---|---|
| Import | `from replicalab.envs.verifiers_env import load_environment` (extra `[verifiers]`) |
| By name | `verifiers.load_environment("replicalab", **args)` (the package's `load_environment` calls this one) |
| Class | `ReplicaLabEnv(verifiers.MultiTurnEnv)` |
| Dataset | one row per scenario: `prompt` (system prompt + first observation), `info.scenario_id` |
| Rubric | `scientist_return` (weight 1.0), `judge_score` (weight 0.0: logged as a metric) |

## Description
The model plays the Scientist in text mode against the grounded Lab Manager; each rollout is
one `replicalab.episode.Episode` driven through `replicalab.envs.chat_episode.ChatEpisode`.
The environment's reply to a Scientist message is the next observation, whose conversation
history ends with the Lab Manager's answer; a reply that is not one valid action is refused
by the episode (an error code, a penalty, a lost round), never by this module.

## Dataset
Scenario seeds of a split: every template × difficulty × seed in `range(num_seeds)`, ordered
seed first. `split` ("train", "validation" or "test") picks the held-out set of paper cases the
scenarios come from.

## Rewards
`scientist_return`: the Scientist's return under `reward_config` (a preset name or a
`RewardConfig`). `judge_score`: the judge's score of the agreed protocol, 0 without agreement.
Both are reward functions; `return_weight` and `score_weight` weigh them. A rollout that
verifiers stops early (a failed model call, an overlong prompt, a timeout) scores the return so
far and a judge score of 0.

## Termination
The rollout ends when the episode does: the Scientist's `accept` or the round limit. The last
environment message (`final_env_response`) states the verdict, the judge's score and the
return; `state["verdict"]` holds the verdict (`state_columns=["verdict"]` puts it in outputs). `max_turns` is left unlimited: each model turn is one round, so the episode's own round
limit ends it, and a turn limit of `max_rounds` would stop the rollout before its last move
is played.

## Supported versions
verifiers >= 0.1.14, < 0.4: the classic `MultiTurnEnv` API this class subclasses. verifiers 0.4
replaced that API with a new stack (`verifiers.v1`: `Env`, `Taskset`, `Harness`, agents) and
keeps no `MultiTurnEnv`; under it, importing this module raises an `ImportError` that says so
and how to install a supported release.

## Version History
* v0: initial release.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any

import verifiers as vf
from datasets import Dataset

from replicalab.envs.chat_episode import ChatEpisode, scenario_ids
from replicalab.episode import check_max_rounds
from replicalab.rewards import RewardConfig, reward_config_of
from replicalab.scenarios import DEFAULT_MAX_ROUNDS
from replicalab.scenarios.registry import check_split

SUPPORTED = ">=0.1.14,<0.4"  # the [verifiers] extra's pin
_EPISODE = "replicalab_episode"  # the state key of a rollout's ChatEpisode

if not hasattr(vf, "MultiTurnEnv"):  # checked before the class below subclasses it
    raise ImportError(
        f"replicalab's verifiers environment needs verifiers {SUPPORTED}, whose MultiTurnEnv it "
        f"subclasses; verifiers {importlib.metadata.version('verifiers')} is installed, which "
        "replaced that API with verifiers.v1. Install a supported release: pip install 'verifiers<0.4'"
    )


def _text(message: Any) -> str:
    """The text of a chat message's content (a string, or a list of content parts)."""
    content = message.get("content") if message is not None else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text") or "" for part in content if part.get("type") == "text")
    return ""


def scientist_return(state: vf.State) -> float:
    """The Scientist's return under the environment's reward config."""
    chat = state.get(_EPISODE)
    return chat.scientist_return if chat is not None else 0.0


def judge_score(state: vf.State) -> float:
    """The judge's score of the agreed protocol; 0 without agreement."""
    chat = state.get(_EPISODE)
    return chat.judge_score if chat is not None else 0.0


class ReplicaLabEnv(vf.MultiTurnEnv):
    """One ReplicaLab episode per rollout (see the module docstring)."""

    def __init__(
        self,
        dataset: Dataset,
        *,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        reward_config: str | RewardConfig = "default",
        **kwargs: Any,
    ) -> None:
        self.max_rounds = check_max_rounds(max_rounds)
        self.reward_config = reward_config_of(reward_config)
        super().__init__(dataset=dataset, eval_dataset=dataset, **kwargs)

    async def setup_state(self, state: vf.State) -> vf.State:
        state[_EPISODE] = ChatEpisode(
            state["info"]["scenario_id"], max_rounds=self.max_rounds, reward_config=self.reward_config
        )
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        chat: ChatEpisode = state[_EPISODE]
        observation = chat.play(_text(messages[-1]) if messages else "")
        if observation is None:
            state["verdict"] = chat.episode.verdict
            closing = [vf.UserMessage(content=chat.closing_message())]
            state["final_env_response"] = closing
            return closing
        return [vf.UserMessage(content=observation)]


def load_environment(
    split: str = "train",
    *,
    templates: Sequence[str] | None = None,
    difficulties: Sequence[str] | None = None,
    num_seeds: int = 100,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    reward_config: str | RewardConfig = "default",
    return_weight: float = 1.0,
    score_weight: float = 0.0,
    **kwargs: Any,
) -> ReplicaLabEnv:
    """The ReplicaLab Scientist as a verifiers `MultiTurnEnv` over the scenarios of `split`.

    Other keyword arguments (`sampling_args`, `timeout_seconds`, ...) go to `MultiTurnEnv`.
    """
    check_max_rounds(max_rounds)
    reward_config = reward_config_of(reward_config)  # refused before any scenario is built
    rows = [
        {
            "prompt": ChatEpisode(scenario_id, max_rounds=max_rounds).opening(),
            "info": {"scenario_id": scenario_id},
        }
        for scenario_id in scenario_ids(
            check_split(split), templates=templates, difficulties=difficulties, num_seeds=num_seeds
        )
    ]
    rubric = vf.Rubric(funcs=[scientist_return, judge_score], weights=[return_weight, score_weight])
    return ReplicaLabEnv(
        Dataset.from_list(rows), max_rounds=max_rounds, reward_config=reward_config, rubric=rubric, **kwargs
    )
