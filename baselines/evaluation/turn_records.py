"""Turn-level training records: one JSON line per model turn, for LLM-RL trainers.

A record pairs what a chat model was sent (the messages of the turn's last call, earlier
attempts and the role's corrections included) with what it answered, and with what the move
earned: `reward`, the acting agent's reward from its move up to its next move (so the answer the
move drew is paid to the move), its episode's return, and the episode's group-relative
advantage when rollouts were played in groups. Every line has the same keys, so
`datasets.load_dataset("json", data_files=PATH)` reads a file of them as one table.

A turn whose last call failed (an `llm_*` error) produced no completion and has no record.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from replicalab.baselines.policies.chat import LLMTurn
from replicalab.models import EpisodeLog

__all__ = ["TurnRecord", "turn_records"]


class TurnRecord(BaseModel):
    """One model turn. Text is kept exactly as sent and received (never stripped)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    episode_id: str
    group_id: str | None  # shared by the rollouts of one scenario; None outside groups
    agent: str  # the seat that moved: "scientist" or "lab_manager"
    round_number: int
    step: int  # the move's index in the episode log's `steps`
    messages: list[dict[str, str]]  # the chat messages of the turn's last call, as sent
    completion: str  # the model's answer to them
    error_code: str | None  # why the episode refused the move, None when it was played
    reward: float  # the agent's reward from this move up to its next one
    episode_return: float  # the agent's return over the whole episode
    advantage: float | None  # the episode's group-relative advantage; None outside groups


def turn_records(log: EpisodeLog, turns: Sequence[LLMTurn]) -> list[TurnRecord]:
    """The records of `turns`, played in the episode `log` records.

    A turn is found by its agent and round: each agent moves once a round.
    """
    steps = log.steps
    index: dict[tuple[str, int], int] = {(step.agent, step.round_number): step.index for step in steps}
    records = []
    for turn in turns:
        at = index[(turn.agent, turn.round_number)]
        later = next((s.index for s in steps[at + 1 :] if s.agent == turn.agent), len(steps))
        records.append(
            TurnRecord(
                episode_id=log.episode_id,
                group_id=log.group_id,
                agent=turn.agent,
                round_number=turn.round_number,
                step=at,
                messages=turn.messages,
                completion=turn.completion,
                error_code=steps[at].error_code,
                reward=sum(step.rewards[turn.agent] for step in steps[at:later]),
                episode_return=log.total_rewards[turn.agent],
                advantage=log.advantage,
            )
        )
    return records
