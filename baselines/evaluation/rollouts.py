"""Many episodes in flight against one model server: concurrent rollouts and GRPO groups.

`run_rollouts` plays a grid as `run_grid` does, with up to `concurrency` episodes waiting on
their model at once (asyncio; the `Episode` itself stays synchronous), in this process or in
each of `jobs` worker processes (or Ray tasks) when one client process is not enough: each
worker plays chunks of the grid with its own connections, and the parent writes (the engine,
`replicalab.baselines.evaluation.engine`). A seat may hold an async policy (`async def
act(episode)`, e.g. a `ChatPolicy`) or any `Policy`; seat factories must pickle for `jobs` > 1.
Each episode gets fresh policies, so episodes in flight share nothing but the server and, within
a group, the scenario (a frozen value, generated once a group). An episode is a function of its
scenario, its seeds and the replies it got: a failed model call is a refused move with its own
code inside that episode, and the run goes on.

Groups (`group_size` G > 1) play each grid cell G times: the same scenario, each rollout with its
own policy seed drawn from (cell, rollout index), so sampled replies differ. A rollout's episode
id is the cell's id plus `/k`; its log records the cell's id as `group_id` and its
`advantage` (see `group_advantages`).

The log file is the runner's: the same lines in grid order (a group's rollouts in rollout order),
whatever `jobs` and `concurrency`, one flush per episode, `resume` as the runner's (a group is
written whole or played again). Beside it, with a chat seat, `usage_path(out)` gets one
`EpisodeUsage` line per seat and episode, and `export_turns` gets the `TurnRecord` of every
model turn.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Literal

from replicalab.baselines.evaluation.engine import Output, run_episodes, usage_path
from replicalab.baselines.evaluation.grid import Grid, RunResult, Settings, rollout_seed
from replicalab.baselines.evaluation.jobs import group_advantages
from replicalab.baselines.evaluation.workers import WorkerSetup
from replicalab.baselines.policies.interface import SeatFactory
from replicalab.baselines.policies.seats import GroundedLabManager
from replicalab.checks import check_positive_int
from replicalab.digest import EpisodeDigest

__all__ = ["RolloutPool", "group_advantages", "rollout_seed", "run_rollouts", "usage_path"]

RolloutPool = Literal["processes", "ray"]
"""Where `jobs` > 1 workers run: a process pool on this machine, or Ray tasks."""


def run_rollouts(
    grid: Grid,
    scientist: SeatFactory,
    lab_manager: SeatFactory = GroundedLabManager,
    *,
    settings: Settings | None = None,
    concurrency: int = 1,
    jobs: int = 1,
    pool: RolloutPool = "processes",
    group_size: int = 1,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    export_turns: str | os.PathLike[str] | None = None,
    on_episode: Callable[[EpisodeDigest], None] | None = None,
    tune_collector: bool = True,
) -> RunResult:
    """Play every cell of `grid` (`group_size` times each), `concurrency` episodes at once in
    this process, or in each of `jobs` workers of `pool` when `jobs` > 1.

    `out`, `resume` and `on_episode` as for `run_grid`; `export_turns` names a JSONL file for
    the turn records. Episodes come back (and are written) in grid order; the result's `usage`
    is the model usage of the episodes played. While episodes are in flight the objects alive
    before them are frozen out of the garbage collector's walks and its youngest generation is
    collected less often, both put back after (`replicalab.baselines.evaluation.heap`);
    `tune_collector=False` leaves the collector alone.
    """
    check_positive_int("concurrency", concurrency)
    check_positive_int("jobs", jobs)
    check_positive_int("group_size", group_size)
    if pool not in ("processes", "ray"):
        raise ValueError(f"pool: expected processes or ray, got {pool!r}")
    setup = WorkerSetup(
        scientist,
        lab_manager,
        settings or Settings(),
        turns=export_turns is not None,
        concurrency=concurrency,
        tune_collector=tune_collector,
    )
    output = Output(out, resume, export_turns, on_episode)
    return run_episodes(grid, setup, output, pool=pool, jobs=jobs, group_size=group_size)
