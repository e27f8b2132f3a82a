"""The engine's Ray pool: chunks of a run's jobs played as Ray tasks, on one machine or a
cluster (needs Ray: the [rllib] extra, or `pip install ray`).

A task plays its chunk with `workers.play_chunk`, as a process-pool worker does, after the same
set-up (the parent's templates, then the seats), done once per Ray worker process and run. So a
Ray run writes the same log, byte for byte, as `jobs` processes: the engine still writes in grid
order, and no rule of the game lives here.

Ray is joined where it runs: a Ray already initialised in this process is used as it is; else
`ray.init()` joins the cluster `RAY_ADDRESS` names, or starts a local Ray with `jobs` CPUs,
which stays up for the process's later runs (an evaluation's oracle run, say).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Generator, Iterator, Sequence
from typing import Any

import ray

from replicalab.baselines.evaluation.jobs import Job, Outcomes
from replicalab.baselines.evaluation.workers import WorkerSetup, play_chunk, set_up_worker

_run: str | None = None
"""In a Ray worker process, the run whose set-up `workers` holds."""


@ray.remote  # type: ignore[untyped-decorator]  # Ray is Any to mypy
def _play_remote(run: str, setup: WorkerSetup, chunk: Sequence[Job]) -> Any:
    global _run
    if _run != run:
        set_up_worker(setup)
        _run = run
    return play_chunk(list(chunk))


def ensure_ray(jobs: int) -> None:
    """Initialise Ray for a run with `jobs` tasks at once, unless this process already has."""
    if ray.is_initialized():
        return
    if os.environ.get("RAY_ADDRESS"):
        ray.init(logging_level=logging.WARNING)
    else:
        ray.init(num_cpus=jobs, include_dashboard=False, logging_level=logging.WARNING)


def ray_chunks(parts: list[list[Job]], setup: WorkerSetup, jobs: int) -> Generator[Outcomes, None, None]:
    """Each chunk's outcomes as it finishes (any order), with at most `2 * jobs` chunks in
    flight so a long grid neither floods the object store nor makes each wait scan every
    pending task."""
    ensure_ray(jobs)
    run = uuid.uuid4().hex
    shared = ray.put(setup)  # sent once, not with every task
    yield from _bounded(jobs, (_play_remote.remote(run, shared, part) for part in parts))


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
