"""`run_grid(..., backend="ray")`: the runner's chunks of episodes played as Ray tasks, on one
machine or a cluster (needs Ray: the [rllib] extra, or `pip install ray`).

A task plays its chunk with `workers.play_chunk`, as a process-pool worker does, after the
pool worker's set-up (the parent's templates, then fresh policies), done once per Ray worker
process and run. So a Ray run writes the same log, byte for byte, as `jobs` processes: the
runner still writes in grid order, and no rule of the game lives here.

`ray_rollouts` does the same for rollouts against a served model: each task plays a chunk
with the `play` it is given (`rollouts.play_rollouts`, passed in so that this module does not
import its caller), its episodes in flight at once on the task's own event loop.

Ray is joined where it runs: a Ray already initialised in this process is used as it is; else
`ray.init()` joins the cluster `RAY_ADDRESS` names, or starts a local Ray with `jobs` CPUs,
which stays up for the process's later runs (an evaluation's oracle run, say).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

import ray

from replicalab.baselines.evaluation.workers import Outcome, WorkerSetup, chunks, play_chunk, set_up_worker
from replicalab.scenarios import ScenarioKey

_run: str | None = None
"""In a Ray worker process, the run whose policies `workers` holds."""


@ray.remote  # type: ignore[untyped-decorator]  # Ray is Any to mypy
def _play_remote(run: str, setup: WorkerSetup, chunk: Sequence[tuple[int, ScenarioKey]]) -> Any:
    global _run
    if _run != run:
        set_up_worker(*setup)
        _run = run
    return play_chunk(chunk)


@ray.remote  # type: ignore[untyped-decorator]  # Ray is Any to mypy
def _play_rollouts_remote(
    play: Callable[..., Any], setup: Any, chunk: Sequence[Any], concurrency: int
) -> Any:
    return play(setup, list(chunk), concurrency)


def ensure_ray(jobs: int) -> None:
    """Initialise Ray for a run with `jobs` tasks at once, unless this process already has."""
    if ray.is_initialized():
        return
    if os.environ.get("RAY_ADDRESS"):
        ray.init(logging_level=logging.WARNING)
    else:
        ray.init(num_cpus=jobs, include_dashboard=False, logging_level=logging.WARNING)


def ray_outcomes(
    todo: list[tuple[int, ScenarioKey]], setup: WorkerSetup, jobs: int
) -> Generator[Outcome, None, None]:
    """Outcomes as their chunks finish (any order), with at most `2 * jobs` chunks in flight so
    a long grid neither floods the object store nor makes each wait scan every pending task."""
    if not todo:  # a finished file resumed: nothing to start Ray for
        return
    ensure_ray(jobs)
    run = uuid.uuid4().hex
    shared = ray.put(setup)  # sent once, not with every task
    for outcomes in _bounded(jobs, (_play_remote.remote(run, shared, chunk) for chunk in chunks(todo, jobs))):
        yield from outcomes


def ray_rollouts(
    play: Callable[..., Any], parts: list[list[Any]], setup: Any, jobs: int, concurrency: int
) -> Generator[Any, None, None]:
    """Each chunk's rollouts played by a Ray task, `concurrency` in flight in it, as chunks
    finish (any order), `2 * jobs` chunks at most in flight."""
    ensure_ray(jobs)
    shared = ray.put(setup)
    yield from _bounded(
        jobs, (_play_rollouts_remote.remote(play, shared, part, concurrency) for part in parts)
    )


def _bounded(jobs: int, tasks: Iterator[Any]) -> Generator[Any, None, None]:
    """The results of `tasks` (started lazily, `2 * jobs` at a time) as they finish."""
    pending: list[Any] = []
    try:
        while True:
            while len(pending) < 2 * jobs and (task := next(tasks, None)) is not None:
                pending.append(task)
            if not pending:
                return
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        for ref in pending:  # an error or Ctrl-C: stop soon, as the pool does
            ray.cancel(ref)
