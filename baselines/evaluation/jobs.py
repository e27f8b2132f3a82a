"""What a run is made of: its jobs (one episode each, a GRPO group's rollouts sharing a grid
position), what a worker sends back for each, and the group-relative advantage of a group."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from replicalab.baselines.policies.chat import EpisodeUsage
from replicalab.digest import EpisodeDigest
from replicalab.models import EpisodeLog
from replicalab.scenarios import ScenarioKey

MIN_ADVANTAGE_STD = 1e-8  # a group whose returns spread less has every advantage 0


class Job(NamedTuple):
    position: int  # of its cell in the grid
    key: ScenarioKey
    rollout: int | None  # its index in its group; None outside groups
    episode_id: str


class Finished(NamedTuple):
    """A played job as the parent writes it. A worker sends its log as the JSON line: a line
    pickles and unpickles far cheaper than the log's models, so the parent, which writes every
    worker's episodes, keeps up with more of them."""

    log: EpisodeLog | str  # the line where it is to be sent or written, else the log
    digest: EpisodeDigest
    stats: dict[str, float]
    usage: list[EpisodeUsage]
    turn_lines: list[str]  # its turn records' JSON lines, when the run exports them


Outcomes = list[tuple[int, list[Finished]]]
"""Finished groups: a grid position, and its jobs in rollout order."""


def group_advantages(returns: Sequence[float]) -> list[float]:
    """Each return's (R − mean) / std within its group, std being the sample standard deviation
    (ddof=1, as TRL's GRPOTrainer takes it); all 0 for a group of one or one whose std is below
    `MIN_ADVANTAGE_STD`, where no rollout did better than another."""
    values = np.asarray(returns, dtype=float)
    if len(values) < 2:
        return [0.0] * len(values)
    std = float(values.std(ddof=1))
    if std < MIN_ADVANTAGE_STD:
        return [0.0] * len(values)
    return [float(a) for a in (values - values.mean()) / std]
