"""The few numbers of one finished episode that a results table needs, made where it was played.

A log is thousands of bytes of transcript and steps; whoever plays an episode (a worker process,
the chat episode of a trainer adapter) digests it there, so the side that builds the table never
parses a log back.
"""

from __future__ import annotations

from typing import NamedTuple

from replicalab.models import EpisodeLog, Verdict
from replicalab.outages import server_errors


class Judged(NamedTuple):
    """The judge's factors of an agreed protocol, the ones the table averages."""

    rigor: float
    feasibility: float
    fidelity: float


class EpisodeDigest(NamedTuple):
    """The few numbers of one episode that the results table needs.

    A log is thousands of bytes of transcript and steps; a worker process makes this digest
    where it played the episode and sends it along with the JSON line, so the parent, which
    also has to order and write the lines, never parses a log back just to make the table.
    A named tuple: immutable, and made at a fraction of a frozen dataclass's cost (one per
    episode played).
    """

    episode_id: str
    scenario_id: str  # the `ScenarioKey` id of the episode's scenario
    template: str
    difficulty: str
    seed: int
    verdict: Verdict | None
    score: float  # the judge total of the agreed protocol; 0 without agreement
    scientist_return: float
    rounds_used: int
    invalid_action_count: int
    steps: int  # agent steps, both agents, refused ones included
    agreed: Judged | None  # None unless the episode ended in agreement with a judged protocol
    server_errors: int = 0  # moves refused for a server's failure: the table leaves such an episode out


def digest(log: EpisodeLog) -> EpisodeDigest:
    """The table's numbers of `log`."""
    breakdown = log.reward_breakdown if log.verdict == "agreement" else None
    return EpisodeDigest(
        episode_id=log.episode_id,
        scenario_id=log.scenario_id,
        template=log.template,
        difficulty=log.difficulty,
        seed=log.seed,
        verdict=log.verdict,
        score=breakdown.total if breakdown is not None else 0.0,
        scientist_return=log.total_rewards.get("scientist", 0.0),
        rounds_used=log.rounds_used,
        invalid_action_count=log.invalid_action_count,
        steps=len(log.steps),
        agreed=(
            Judged(breakdown.rigor, breakdown.feasibility, breakdown.fidelity)
            if breakdown is not None
            else None
        ),
        server_errors=server_errors(log),
    )
