"""The episode log: every turn as it happened, enough to replay and audit an episode."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, PlainSerializer

from replicalab.models.actions import Protocol
from replicalab.models.base import Contract, RawText
from replicalab.models.judge_values import RewardBreakdown, Verdict
from replicalab.models.observations import ConversationEntry
from replicalab.models.provenance import Provenance
from replicalab.models.reward_config import RewardConfig


def _as_is(value: object) -> object:
    return value


LoggedAction = Annotated[
    dict[str, object] | RawText | None, PlainSerializer(_as_is, return_type=Any, when_used="json")
]
"""A step's action: the validated action's JSON fields, or the raw text if malformed. Its JSON is
written by type inference, the same bytes as the union's own serializer writes for about half
the work, and a log writes one for every step."""


class StepRecord(Contract):
    """One agent turn as it happened: what was sent, how it was judged, what it paid."""

    index: int = Field(ge=0)
    agent: Literal["scientist", "lab_manager"]
    round_number: int = Field(ge=0)
    action: LoggedAction
    action_type: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    raw_chars: int | None = None  # refused text too long or not UTF-8 to log whole: its length
    raw_sha256: str | None = None  # and the SHA-256 of its UTF-8 bytes (surrogates passed through)
    rewards: dict[str, float] = Field(default_factory=dict)  # every agent's reward from this step
    reward_components: dict[str, dict[str, float]] = Field(default_factory=dict)  # agent -> named terms


def _is_none(value: object) -> bool:
    return value is None


class EpisodeLog(Contract):
    """Everything needed to replay and audit one episode; byte-identical for equal inputs."""

    episode_id: str  # deterministic: f"{scenario_id}" plus the policy tags of the runner, if any
    seed: int
    template: str
    difficulty: str
    scenario_id: str
    max_rounds: int
    reward_config: RewardConfig  # the whole config the episode was played with
    transcript: list[ConversationEntry]
    steps: list[StepRecord]
    final_protocol: Protocol | None
    reward_breakdown: RewardBreakdown | None
    verdict: Verdict | None  # None while the episode is still running
    rounds_used: int
    invalid_action_count: int
    total_rewards: dict[str, float]  # per agent, the sum over steps of `rewards[agent]`
    # Only rollouts played in groups (G rollouts of one scenario) carry these two; the JSON of
    # any other log omits them, so it is byte for byte what it was without them.
    group_id: str | None = Field(default=None, exclude_if=_is_none)  # the id its group shares
    advantage: float | None = Field(default=None, exclude_if=_is_none)
    """(Scientist return − its group's mean) / the group's sample standard deviation; 0 when
    the group's returns do not spread (std < 1e-8)."""
    provenance: Provenance | None = Field(default=None, exclude_if=_is_none)
    """What played it: the run's version, game, seats, scenarios and reward (`Provenance`); a
    log written by a run carries it, one an env or an older version wrote has none."""
