"""The one evaluation engine: a grid's jobs played by a pool, collected and written in grid order.

`run_episodes` turns a grid into jobs (G per cell for groups of G), keeps what a resumed file
already holds, and hands the rest to a pool: `inline` (this process), `processes` (`jobs` worker
processes) or `ray` (Ray tasks, `jobs` at a time). Every pool plays the same chunks with
`workers.play_chunk` after the same set-up, and one collector takes finished groups in any
order and writes them in grid order, one whole line and a flush per episode, so every pool
writes the same bytes and a killed run leaves a prefix of whole lines.

Beside the log, with a chat seat, `usage_path(out)` gets one `EpisodeUsage` line per seat and
episode (latency is not reproducible, so it stays out of the log), and `export_turns` gets the
`TurnRecord` of every model turn. On resume both keep the lines of the episodes kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack, closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Literal, NamedTuple

from replicalab.baselines.evaluation.grid import Grid, RunResult, run_provenance
from replicalab.baselines.evaluation.jobs import Finished, Job, Outcomes
from replicalab.baselines.evaluation.log_file import logged_episodes, open_log
from replicalab.baselines.evaluation.run_files import beside
from replicalab.baselines.evaluation.workers import (
    WorkerSetup,
    chunks,
    init_pool_worker,
    parent_templates,
    play_chunk,
    set_up_worker,
)
from replicalab.baselines.policies.chat import ChatPolicy, EpisodeUsage
from replicalab.digest import EpisodeDigest, digest
from replicalab.models import EpisodeLog, Provenance

Pool = Literal["inline", "processes", "ray"]
POOLS: tuple[Pool, ...] = ("inline", "processes", "ray")
CHUNK_AT_ONCE = 16
"""Most jobs in a chunk of seats that move at once: enough to pay for sending it to a worker."""
CHUNKS_IN_FLIGHT = 4
"""A chunk of awaiting seats holds at most this many times the episodes a worker keeps in
flight, so the worker keeps them in flight across most of the chunk."""


@dataclass(frozen=True)
class Output:
    """Where a run writes: its log, and the turn records of its model turns."""

    out: str | os.PathLike[str] | None = None
    resume: bool = False
    export_turns: str | os.PathLike[str] | None = None
    on_episode: Callable[[EpisodeDigest], None] | None = None


def usage_path(out: str | os.PathLike[str]) -> Path:
    """Where the usage of the run logged to `out` goes: `runs/x.jsonl` → `runs/x.usage.jsonl`."""
    return beside(out, ".usage.jsonl")


def run_episodes(
    grid: Grid,
    setup: WorkerSetup,
    output: Output,
    *,
    pool: Pool = "inline",
    jobs: int = 1,
    group_size: int = 1,
) -> RunResult:
    """Play every cell of `grid` `group_size` times in `pool`, as `setup` says; write and report
    the episodes in grid order as `output` says."""
    if output.resume and output.out is None:
        raise ValueError("resume: needs an output file")
    if setup.provenance is None:
        provenance = run_provenance(grid, setup.settings, setup.scientist(), setup.lab_manager())
        setup = replace(setup, provenance=provenance)
    todo = _jobs(grid, setup, group_size)
    with ExitStack() as stack:
        collector = _open(todo, setup, output, group_size, stack)
        todo = todo[collector.resumed :]
        if pool == "inline" or not todo or (pool == "processes" and (jobs == 1 or len(todo) < 2)):
            set_up_worker(replace(setup, lines=output.out is not None))
            play_chunk(todo, collector.add)
        else:
            setup = replace(setup, templates=parent_templates(grid.templates), lines=True)
            per_chunk = CHUNK_AT_ONCE if setup.concurrency is None else CHUNKS_IN_FLIGHT * setup.concurrency
            parts = chunks(todo, jobs, per_chunk, group_size)
            for outcomes in _pool(pool, parts, setup, jobs, stack):
                for position, group in outcomes:
                    collector.add(position, group)
        return collector.result(setup.concurrency is not None, setup.provenance)


def _jobs(grid: Grid, setup: WorkerSetup, group_size: int) -> list[Job]:
    names = setup.scientist().name, setup.lab_manager().name
    grouped = group_size > 1
    todo = []
    for position, key in enumerate(grid.cells(setup.settings.split)):
        for k in range(group_size):
            rollout = k if grouped else None
            todo.append(Job(position, key, rollout, key.episode_id(*names, rollout)))
    return todo


def _pool(
    pool: Pool, parts: list[list[Job]], setup: WorkerSetup, jobs: int, stack: ExitStack
) -> Iterator[Outcomes]:
    """The chunks' outcomes as they finish (any order), played by `jobs` workers of `pool`."""
    if pool == "ray":
        from replicalab.baselines.evaluation.ray_backend import ray_chunks  # Ray is optional

        yield from stack.enter_context(closing(ray_chunks(parts, setup, jobs)))  # cancels on error
        return
    executor = stack.enter_context(
        ProcessPoolExecutor(max_workers=jobs, initializer=init_pool_worker, initargs=(setup,))
    )
    stack.callback(executor.shutdown, wait=True, cancel_futures=True)  # on error: stop soon
    # as_completed waits on every future once; wait(FIRST_COMPLETED) in a loop re-arms all the
    # pending ones at each completion, which made the parent's share grow with the grid.
    for future in as_completed([executor.submit(play_chunk, part) for part in parts]):
        yield future.result()


class _Files(NamedTuple):
    log: BinaryIO | None
    usage: BinaryIO | None
    turns: BinaryIO | None


def _open(
    todo: list[Job], setup: WorkerSetup, output: Output, group_size: int, stack: ExitStack
) -> _Collector:
    """The run's files opened (a resume keeps the episodes already written, whole groups only),
    and a collector that has taken the kept ones."""
    resumed: list[EpisodeLog] = []
    handle = None
    out = output.out
    if out is not None:
        handle = open_log(Path(out), stack)
        if output.resume:
            ids = [job.episode_id for job in todo]
            resumed = logged_episodes(
                Path(out), handle, ids, setup.settings, setup.provenance, unit=group_size
            )
        else:
            handle.truncate(0)
    kept = {log.episode_id for log in resumed}
    chat = any(isinstance(seat, ChatPolicy) for seat in (setup.scientist(), setup.lab_manager()))
    files = _Files(
        handle,
        _sidecar(usage_path(out), kept, stack) if out is not None and chat else None,
        _sidecar(Path(output.export_turns), kept, stack) if output.export_turns is not None else None,
    )
    collector = _Collector(len(resumed) // group_size, files, output.on_episode)
    for log in resumed:
        collector.add_resumed(log)
    return collector


def _sidecar(path: Path, kept: set[str], stack: ExitStack) -> BinaryIO:
    """`path` opened for appending, holding only its whole lines of the episodes in `kept`."""
    handle = open_log(path, stack)
    handle.seek(0)
    lines = handle.read().splitlines(keepends=True)
    keep = b"".join(line for line in lines if line.endswith(b"\n") and _episode_of(line) in kept)
    handle.truncate(0)
    handle.write(keep)
    handle.flush()
    return handle


def _episode_of(line: bytes) -> object:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record.get("episode_id") if isinstance(record, dict) else None


class _Collector:
    """Takes finished groups in any order; writes and reports them in grid order."""

    def __init__(self, first: int, files: _Files, on_episode: Callable[[EpisodeDigest], None] | None) -> None:
        self.next = first  # the grid position written next
        self.files = files
        self.on_episode = on_episode
        self.ready: dict[int, list[Finished]] = {}
        self.digests: list[EpisodeDigest] = []
        # Lines where the run writes them: a long run holding every log's models grows the heap
        # each full garbage collection walks. `logs` parses them when asked.
        self.episodes: list[EpisodeLog | str] = []
        self.stats: dict[str, float] = {}
        self.usage: list[EpisodeUsage] = []
        self.resumed = 0

    def add_resumed(self, log: EpisodeLog) -> None:
        self.resumed += 1
        self.digests.append(digest(log))
        self.episodes.append(log)
        if self.on_episode is not None:
            self.on_episode(self.digests[-1])

    def add(self, position: int, group: list[Finished]) -> None:
        self.ready[position] = group
        while self.next in self.ready:
            for finished in self.ready.pop(self.next):
                self._write(finished)
            self.next += 1

    def _write(self, finished: Finished) -> None:
        log, files = finished.log, self.files
        if files.turns is not None:
            _write_lines(files.turns, finished.turn_lines)
        if files.usage is not None:
            _write_lines(files.usage, [u.model_dump_json() for u in finished.usage])
        if files.log is not None:  # last: an episode in the log has its other lines written
            _write_lines(files.log, [log if isinstance(log, str) else log.model_dump_json()])
        self.digests.append(finished.digest)
        self.episodes.append(log)
        self.usage.extend(finished.usage)
        for key, value in finished.stats.items():
            self.stats[key] = self.stats.get(key, 0.0) + value
        if self.on_episode is not None:
            self.on_episode(finished.digest)

    def result(self, awaited: bool, provenance: Provenance | None) -> RunResult:
        """What the run played; `awaited`: whether its seats awaited their moves (a model's),
        so the run reports their usage."""
        return RunResult(
            digests=self.digests,
            stats=self.stats,
            resumed=self.resumed,
            usage=self.usage if awaited else None,
            provenance=provenance,
            _episodes=self.episodes,
        )


def _write_lines(handle: BinaryIO, lines: list[str]) -> None:
    if lines:
        handle.write("".join(line + "\n" for line in lines).encode("utf-8"))
        handle.flush()
