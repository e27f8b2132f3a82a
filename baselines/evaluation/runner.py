"""Play a Scientist × Lab Manager pair over a grid of scenarios, in parallel, to a JSONL log.

The runner drives `Episode` directly and knows no rule of the game: it asks the policy whose
turn it is for a move and steps the episode until it is done.

Reproducibility is the point of a log, so:

- The grid is templates × difficulties × seeds, in that order; a cell is the `ScenarioKey` of
  those three in the run's split, and each policy's seed is derived from the
  same triple through `numpy.random.SeedSequence` (never `hash()`, which is salted per process).
- Episodes may run in worker processes (`jobs`), or as Ray tasks (`backend="ray"`), all through
  one engine (`replicalab.baselines.evaluation.engine`) playing the same chunks with
  `workers.play_chunk`, but lines are written in grid order only, one whole line and a flush per episode, so `jobs=2` and Ray write
  the same bytes as `jobs=1` and a killed run leaves a prefix of whole lines (plus at most one
  partial line).
- `resume=True` drops a trailing partial line, keeps the episodes already logged (they must be
  a prefix of this grid, with the same reward config and round limit) and appends the rest: the
  finished file equals a clean run's, byte for byte.

Episode ids are `ScenarioKey.episode_id`'s: unique within a run, stable across runs.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Literal

from replicalab.baselines.evaluation.engine import Output, run_episodes
from replicalab.baselines.evaluation.grid import (
    Grid,
    PolicyFactory,
    RunResult,
    Settings,
    play_episode,
    policy_seed,
    start_episode,
)
from replicalab.baselines.evaluation.rollouts import run_rollouts
from replicalab.baselines.evaluation.workers import WorkerSetup
from replicalab.baselines.policies.interface import SeatFactory
from replicalab.baselines.policies.seats import GroundedLabManager
from replicalab.checks import check_positive_int
from replicalab.digest import EpisodeDigest

__all__ = [
    "BACKENDS",
    "Backend",
    "Grid",
    "PolicyFactory",
    "RunResult",
    "Settings",
    "play_episode",
    "policy_seed",
    "run_grid",
    "start_episode",
]

Backend = Literal["processes", "ray", "served"]
BACKENDS: tuple[Backend, ...] = ("processes", "ray", "served")
"""Where `run_grid` plays episodes: `processes` (this one, or `jobs` worker processes), `ray`
(Ray tasks, `jobs` at a time), or `served` (`concurrency` episodes awaiting a served model at
once in this process, or in each of `jobs` worker processes:
`replicalab.baselines.evaluation.rollouts`)."""


def run_grid(
    grid: Grid,
    scientist: SeatFactory,
    lab_manager: SeatFactory = GroundedLabManager,
    *,
    settings: Settings | None = None,
    jobs: int = 1,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    on_episode: Callable[[EpisodeDigest], None] | None = None,
    backend: Backend = "processes",
    group_size: int = 1,
    export_turns: str | os.PathLike[str] | None = None,
    concurrency: int = 1,
) -> RunResult:
    """Play every cell of `grid`; write the logs to `out` (JSONL) in grid order if given.

    `backend="processes"` plays in this process, or in `jobs` worker processes when jobs > 1;
    `backend="ray"` plays every episode as part of a Ray task, `jobs` tasks at a time (needs
    Ray); `backend="served"` keeps `concurrency` episodes in flight in this process (or in each
    of `jobs` worker processes), for seats that await a model (an `AsyncPolicy`), and alone plays
    `group_size` rollouts per cell and writes the turn records to `export_turns` (the result's
    `usage` then holds the model usage, see `run_rollouts`); `backend="ray"` with such seats does
    the same in Ray tasks. `on_episode` is called in grid order with the digest of every
    episode, resumed ones included (progress bars). Without `resume` an existing `out` is
    overwritten. Two runs cannot write one file at once.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "served" or (backend == "ray" and (_awaits(scientist) or _awaits(lab_manager))):
        return run_rollouts(
            grid,
            scientist,
            lab_manager,
            settings=settings,
            concurrency=concurrency,
            jobs=jobs,
            pool="ray" if backend == "ray" else "processes",
            group_size=group_size,
            out=out,
            resume=resume,
            export_turns=export_turns,
            on_episode=on_episode,
        )
    if group_size != 1 or export_turns is not None or concurrency != 1:
        raise ValueError(
            "group_size, export_turns, concurrency: rollout groups, turn records and episodes in "
            "flight need backend='served'"
        )
    return _run_policies(
        grid, scientist, lab_manager, settings, jobs, Output(out, resume, None, on_episode), backend
    )


def _awaits(factory: SeatFactory) -> bool:
    """Whether the seat `factory` makes awaits its moves (a served model's)."""
    return inspect.iscoroutinefunction(factory().act)


def _run_policies(
    grid: Grid,
    scientist: SeatFactory,
    lab_manager: SeatFactory,
    settings: Settings | None,
    jobs: int,
    output: Output,
    backend: Backend,
) -> RunResult:
    """`run_grid` for seats whose moves come at once: this process, worker processes or Ray."""
    check_positive_int("jobs", jobs)
    for seat, factory in (("scientist", scientist), ("lab_manager", lab_manager)):
        if _awaits(factory):
            raise ValueError(f"{seat}: a seat that awaits its moves needs backend='served'")
    setup = WorkerSetup(scientist, lab_manager, settings or Settings())
    return run_episodes(grid, setup, output, pool="ray" if backend == "ray" else "processes", jobs=jobs)
