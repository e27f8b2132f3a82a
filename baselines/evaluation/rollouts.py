"""Many episodes in flight against one model server: concurrent rollouts and GRPO groups.

`run_rollouts` plays a grid as `run_grid` does, with up to `concurrency` episodes waiting on
their model at once (asyncio; the `Episode` itself stays synchronous), in this process or in
each of `jobs` worker processes (or Ray tasks) when one client process is not enough: each
worker plays chunks of the grid with its own connections, and the parent writes. A seat may
hold an async policy (`async def act(episode)`, e.g. a `ChatPolicy`) or any `Policy`; seat
factories must pickle for `jobs` > 1.
Each episode gets fresh policies, so episodes in flight share nothing but the server and, within
a group, the scenario (a frozen value, generated once a group). An episode is a function of its
scenario, its seeds and the replies it got: a failed model call is a refused move with its own
code inside that episode, and the run goes on.

Groups (`group_size` G > 1) play each grid cell G times: the same scenario, each rollout with its
own policy seed drawn from (cell, rollout index), so sampled replies differ. A rollout's episode
id is the cell's id plus `/k`; its log records the cell's id as `group_id` and its
`advantage` (see `group_advantages`).

The log file is the runner's: the same lines in grid order (a group's rollouts in rollout order),
whatever `jobs` and `concurrency`, one flush per episode, `resume` through `runner.logged_episodes` (a group is written whole or
played again). Beside it, with a chat seat, `usage_path(out)` gets one `EpisodeUsage` line per
seat and episode (latency is not reproducible, so it stays out of the log), and `export_turns`
gets the `TurnRecord` of every model turn. On resume both keep the lines of the episodes kept.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal, NamedTuple

import numpy as np

from replicalab.baselines.evaluation.grid import (
    Grid,
    RunResult,
    Settings,
    episode_id,
    policy_seed,
    start_episode,
)
from replicalab.baselines.evaluation.log_file import logged_episodes, open_log
from replicalab.baselines.evaluation.turn_records import turn_records
from replicalab.baselines.evaluation.workers import adopt_templates
from replicalab.baselines.policies.chat import ChatPolicy, EpisodeUsage, LLMTurn
from replicalab.baselines.policies.interface import AsyncPolicy, Seat, SeatFactory, reset_policy, seat_stats
from replicalab.baselines.policies.seats import GroundedLabManager
from replicalab.checks import check_positive_int
from replicalab.digest import EpisodeDigest, digest
from replicalab.models import EpisodeLog
from replicalab.moves import SCIENTIST
from replicalab.play import play_async
from replicalab.scenarios import (
    NormalizedScenarioPack,
    ScenarioKey,
    TemplateData,
    generate_pack,
    get_template,
)

__all__ = [
    "AsyncPolicy",
    "RolloutPool",
    "RolloutResult",
    "RolloutSetup",
    "Seat",
    "SeatFactory",
    "group_advantages",
    "play_rollout",
    "rollout_seed",
    "run_rollouts",
    "usage_path",
]

MIN_ADVANTAGE_STD = 1e-8  # a group whose returns spread less has every advantage 0


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


def rollout_seed(cell: ScenarioKey, rollout: int | None) -> int:
    """The policy seed of a rollout of `cell`: the runner's `policy_seed` outside groups, else a
    SeedSequence of (that seed, the rollout index)."""
    seed = policy_seed(cell)
    if rollout is None:
        return seed
    return int(np.random.SeedSequence([seed, rollout]).generate_state(1)[0])


def usage_path(out: str | os.PathLike[str]) -> Path:
    """Where the usage of the run logged to `out` goes: `runs/x.jsonl` → `runs/x.usage.jsonl`."""
    path = Path(out)
    return path.with_name(path.with_suffix("").name + ".usage.jsonl")


async def play_rollout(
    cell: ScenarioKey,
    scientist: Seat,
    lab_manager: Seat,
    settings: Settings,
    seed: int,
    name: str,
    scenario: NormalizedScenarioPack | None = None,
) -> EpisodeLog:
    """Play one episode of `cell` to the end, awaiting the moves that take time; log it as `name`.
    `scenario`, when given, is `cell`'s (`generate_pack(cell)`), generated once for its group."""
    episode = start_episode(cell, settings, scenario)
    reset_policy(scientist, seed)  # type: ignore[arg-type]
    reset_policy(lab_manager, seed)  # type: ignore[arg-type]
    await play_async(episode, scientist, lab_manager)
    return episode.to_log(name)


@dataclass
class RolloutResult(RunResult):
    """`RunResult`, and the model usage of the episodes played in this call."""

    usage: list[EpisodeUsage] = field(default_factory=list)


class _Rollout(NamedTuple):
    position: int  # of its cell in the grid
    cell: ScenarioKey
    rollout: int | None  # its index in its group; None outside groups
    episode_id: str


@dataclass
class _Played:
    log: EpisodeLog
    stats: dict[str, float]
    usage: list[EpisodeUsage]
    turns: list[LLMTurn]


class _Finished(NamedTuple):
    """A played rollout as the parent writes it. A worker sends its log as the JSON line: a line
    pickles and unpickles far cheaper than the log's models, so the parent, which writes every
    worker's episodes, keeps up with more of them."""

    log: EpisodeLog | str  # the line where it is to be sent or written, else the log
    digest: EpisodeDigest
    stats: dict[str, float]
    usage: list[EpisodeUsage]
    turn_lines: list[str]  # its turn records' JSON lines, when the run exports them


class _Output(NamedTuple):
    """How played rollouts are finished: their logs as lines, their turn records too."""

    lines: bool
    turns: bool


RolloutSetup = tuple[SeatFactory, SeatFactory, Settings, tuple[TemplateData, ...], _Output]
"""What a worker of a run needs: both seats' factories, the settings, the parent's templates and
how to finish what it plays."""
RolloutPool = Literal["processes", "ray"]
"""Where `jobs` > 1 workers run: a process pool on this machine, or Ray tasks."""
Outcomes = list[tuple[int, list[_Finished]]]
"""Finished groups: a grid position, and its rollouts in rollout order."""


class _Files(NamedTuple):
    log: BinaryIO | None
    usage: BinaryIO | None
    turns: BinaryIO | None


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
) -> RolloutResult:
    """Play every cell of `grid` (`group_size` times each), `concurrency` episodes at once in
    this process, or in each of `jobs` workers of `pool` when `jobs` > 1.

    `out`, `resume` and `on_episode` as for `run_grid`; `export_turns` names a JSONL file for
    the turn records. Episodes come back (and are written) in grid order.
    """
    settings = settings or Settings()
    check_positive_int("concurrency", concurrency)
    check_positive_int("jobs", jobs)
    check_positive_int("group_size", group_size)
    if pool not in ("processes", "ray"):
        raise ValueError(f"pool: expected processes or ray, got {pool!r}")
    if resume and out is None:
        raise ValueError("resume: needs an output file")
    seats = scientist(), lab_manager()
    grouped = group_size > 1
    rollouts = [
        _Rollout(position, cell, k if grouped else None, _rollout_id(cell, seats, k if grouped else None))
        for position, cell in enumerate(grid.cells(settings.split))
        for k in range(group_size)
    ]
    with ExitStack() as stack:
        resumed: list[EpisodeLog] = []
        handle = None
        if out is not None:
            handle = open_log(Path(out), stack)
            if resume:
                ids = [r.episode_id for r in rollouts]
                resumed = logged_episodes(Path(out), handle, ids, settings, unit=group_size)
            else:
                handle.truncate(0)
        kept = {log.episode_id for log in resumed}
        chat = any(isinstance(seat, ChatPolicy) for seat in seats)
        files = _Files(
            handle,
            _sidecar(usage_path(out), kept, stack) if out is not None and chat else None,
            _sidecar(Path(export_turns), kept, stack) if export_turns is not None else None,
        )
        collector = _Collector(len(resumed) // group_size, files, on_episode)
        for log in resumed:
            collector.add_resumed(log)

        todo = rollouts[len(resumed) :]
        turns = export_turns is not None
        if jobs == 1 or len(todo) < 2:
            setup: RolloutSetup = (scientist, lab_manager, settings, (), _Output(out is not None, turns))
            play_rollouts(setup, todo, concurrency, collector.add)
        else:
            templates = tuple(get_template(name) for name in grid.templates)
            setup = (scientist, lab_manager, settings, templates, _Output(True, turns))
            chunks = _chunks(todo, jobs, concurrency, group_size)
            if pool == "ray":
                from replicalab.baselines.evaluation.ray_backend import ray_rollouts  # Ray is optional

                finished: Iterator[Outcomes] = ray_rollouts(play_rollouts, chunks, setup, jobs, concurrency)
            else:
                finished = _pool_rollouts(chunks, setup, jobs, concurrency, stack)
            for outcomes in finished:
                for position, group in outcomes:
                    collector.add(position, group)
        return collector.result(len(resumed))


def _rollout_id(cell: ScenarioKey, seats: tuple[Seat, Seat], rollout: int | None) -> str:
    group = episode_id(cell, seats[0].name, seats[1].name)
    return group if rollout is None else f"{group}/{rollout}"


class _Groups:
    """The groups of the rollouts a worker plays. The G rollouts of a GRPO group play one
    scenario, and generating it is about a quarter of an LLM episode's own work, so the group's
    first rollout here generates it and the others share it (a pack is a frozen value that no
    episode changes) until the group's last rollout here has started. Played rollouts, which
    finish in any order, are gathered until their group is complete."""

    def __init__(self, todo: list[_Rollout]) -> None:
        self.sizes = Counter(rollout.position for rollout in todo)
        self.unstarted = Counter(self.sizes)
        self.scenarios: dict[int, NormalizedScenarioPack] = {}
        self.played: dict[int, list[_Played | None]] = {}

    def scenario(self, rollout: _Rollout) -> NormalizedScenarioPack:
        position = rollout.position
        scenario = self.scenarios.pop(position, None)
        if scenario is None:
            scenario = generate_pack(rollout.cell)
        self.unstarted[position] -= 1
        if self.unstarted[position]:
            self.scenarios[position] = scenario
        return scenario

    def add(self, rollout: _Rollout, played: _Played) -> list[_Played] | None:
        """The group of `rollout` in rollout order once this completes it, else None."""
        position = rollout.position
        group = self.played.setdefault(position, [None] * self.sizes[position])
        group[rollout.rollout or 0] = played
        if any(p is None for p in group):
            return None
        del self.played[position]
        return [p for p in group if p is not None]


def _finish(played: _Played, output: _Output) -> _Finished:
    log = played.log
    turn_lines = [r.model_dump_json() for r in turn_records(log, played.turns)] if output.turns else []
    line_or_log = log.model_dump_json() if output.lines else log
    return _Finished(line_or_log, digest(log), played.stats, played.usage, turn_lines)


async def _play(
    rollout: _Rollout,
    scientist: SeatFactory,
    lab_manager: SeatFactory,
    settings: Settings,
    scenario: NormalizedScenarioPack,
) -> _Played:
    """One rollout of `scenario` with fresh seats, and what its seats counted."""
    pair = scientist(), lab_manager()
    seed = rollout_seed(rollout.cell, rollout.rollout)
    log = await play_rollout(rollout.cell, *pair, settings, seed, rollout.episode_id, scenario)
    stats = seat_stats(*pair)
    usage, turns = [], []
    for seat in pair:
        if isinstance(seat, ChatPolicy):
            usage.append(seat.usage(rollout.episode_id))
            turns.extend(seat.turns)
    return _Played(log, stats, usage, turns)


def play_rollouts(
    setup: RolloutSetup,
    todo: list[_Rollout],
    concurrency: int,
    done: Callable[[int, list[_Finished]], None] | None = None,
) -> Outcomes:
    """Play `todo` (whole groups) in this process, `concurrency` at once, on an event loop of
    its own; each group goes to `done` as it finishes, else comes back in the list (a worker's
    chunk)."""
    scientist, lab_manager, settings, templates, output = setup
    if templates:
        adopt_templates(templates)
    finished: Outcomes = []
    report = done or (lambda position, group: finished.append((position, group)))
    groups = _Groups(todo)

    def played(rollout: _Rollout, result: _Played) -> None:
        group = groups.add(rollout, result)
        if group is not None:
            report(rollout.position, [_finish(p, output) for p in _with_advantages(group)])

    async def play_all() -> None:
        try:
            await _play_all(
                todo,
                lambda rollout: _play(rollout, scientist, lab_manager, settings, groups.scenario(rollout)),
                played,
                concurrency,
            )
        finally:  # on the loop that opened them: the next run opens its own
            for seat in (scientist(), lab_manager()):
                if isinstance(seat, ChatPolicy):
                    await seat.backend.aclose()

    with _young_objects_collected_late():
        asyncio.run(play_all())
    return finished


YOUNG_COLLECTION_THRESHOLD = 10_000
"""Allocations between two collections of the garbage collector's youngest generation while
rollouts play (Python's default is 700)."""


@contextmanager
def _young_objects_collected_late() -> Iterator[None]:
    """Episodes in flight keep their objects across awaits, so at Python's default threshold a
    young collection finds most of what it scans still alive, promotes it and scans it again
    later: at 256 in flight the collector took 14 % of the run and paused every episode for up
    to 180 ms at once. At `YOUNG_COLLECTION_THRESHOLD` most of an episode's objects are freed
    before a collection looks. The thresholds are the process's, so the run puts them back."""
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], YOUNG_COLLECTION_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def _chunks(todo: list[_Rollout], jobs: int, concurrency: int, group_size: int) -> list[list[_Rollout]]:
    """Chunks of a few times `concurrency` rollouts, so a worker keeps its episodes in flight
    across most of a chunk, and at least two a worker, so the workers share the tail; each
    chunk whole groups, so its worker finishes them."""
    size = max(1, min(4 * concurrency, -(-len(todo) // (2 * jobs))))
    size = -(-size // group_size) * group_size
    return [todo[i : i + size] for i in range(0, len(todo), size)]


def _init_pool_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle


def _pool_rollouts(
    chunks: list[list[_Rollout]], setup: RolloutSetup, jobs: int, concurrency: int, stack: ExitStack
) -> Iterator[Outcomes]:
    """The chunks' outcomes as they finish, played by `jobs` worker processes."""
    pool = stack.enter_context(ProcessPoolExecutor(max_workers=jobs, initializer=_init_pool_worker))
    stack.callback(pool.shutdown, wait=True, cancel_futures=True)  # on error: stop soon
    futures = [pool.submit(play_rollouts, setup, chunk, concurrency) for chunk in chunks]
    for future in as_completed(futures):
        yield future.result()


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


async def _play_all(
    todo: list[_Rollout],
    play: Callable[[_Rollout], Awaitable[_Played]],
    done: Callable[[_Rollout, _Played], None],
    concurrency: int,
) -> None:
    """Play `todo` with `concurrency` workers, each taking the next rollout when it is free."""
    queue = iter(todo)

    async def worker() -> None:
        for rollout in queue:
            done(rollout, await play(rollout))

    workers = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(todo)))]
    try:
        await asyncio.gather(*workers)
    finally:  # a failure stops the others at once, leaving whole lines in the files
        for task in workers:
            task.cancel()


class _Collector:
    """Takes finished groups in any order; writes and reports them in grid order."""

    def __init__(self, first: int, files: _Files, on_episode: Callable[[EpisodeDigest], None] | None) -> None:
        self.next = first  # the grid position written next
        self.files = files
        self.on_episode = on_episode
        self.ready: dict[int, list[_Finished]] = {}
        self.digests: list[EpisodeDigest] = []
        # Lines where the run writes them: a long run holding every log's models grows the heap
        # each full garbage collection walks. `logs` parses them when asked.
        self.episodes: list[EpisodeLog | str] = []
        self.stats: dict[str, float] = {}
        self.usage: list[EpisodeUsage] = []

    def add_resumed(self, log: EpisodeLog) -> None:
        self.digests.append(digest(log))
        self.episodes.append(log)
        if self.on_episode is not None:
            self.on_episode(self.digests[-1])

    def add(self, position: int, group: list[_Finished]) -> None:
        self.ready[position] = group
        while self.next in self.ready:
            for finished in self.ready.pop(self.next):
                self._write(finished)
            self.next += 1

    def _write(self, finished: _Finished) -> None:
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

    def result(self, resumed: int) -> RolloutResult:
        return RolloutResult(
            digests=self.digests, stats=self.stats, resumed=resumed, _episodes=self.episodes, usage=self.usage
        )


def _with_advantages(group: list[_Played]) -> list[_Played]:
    """The group's logs with their group id and advantage; a group of one is no group."""
    if len(group) == 1:
        return group
    first = group[0].log.episode_id
    group_id = first[: first.rfind("/")]
    advantages = group_advantages([p.log.total_rewards[SCIENTIST] for p in group])
    for played, advantage in zip(group, advantages, strict=True):
        played.log = played.log.model_copy(update={"group_id": group_id, "advantage": advantage})
    return group


def _write_lines(handle: BinaryIO, lines: list[str]) -> None:
    if lines:
        handle.write("".join(line + "\n" for line in lines).encode("utf-8"))
        handle.flush()
