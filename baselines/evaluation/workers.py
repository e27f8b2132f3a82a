"""Where episodes are played: this process, or a worker of a process pool or of Ray.

A worker is set up once per run (`set_up_worker`: the parent's templates, then, for seats whose
moves come at once, one Scientist and one Lab Manager held for the whole run) and plays chunks
of the run's jobs (`play_chunk`). Seats that await their moves (a served model's) get fresh
seats per episode, `concurrency` episodes in flight on the chunk's own event loop, since
episodes in flight must share nothing but the server. Either way a job's episode is played by
`replicalab.play`, and no rule of the game lives here.

The rollouts of a GRPO group, and any job whose scenario recurs within a chunk, play one
scenario generated once (`_Groups`). Finished groups come back in any order; the engine writes
them in grid order.
"""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from replicalab.baselines.evaluation.grid import Settings, rollout_seed, start_episode
from replicalab.baselines.evaluation.heap import rollout_collector
from replicalab.baselines.evaluation.jobs import Finished, Job, Outcomes, group_advantages
from replicalab.baselines.evaluation.turn_records import turn_records
from replicalab.baselines.policies.chat import ChatPolicy, EpisodeUsage, LLMTurn
from replicalab.baselines.policies.interface import Seat, SeatFactory, reset_policy, seat_stats
from replicalab.digest import digest
from replicalab.episode import Episode
from replicalab.models import Provenance
from replicalab.moves import SCIENTIST
from replicalab.play import play, play_async
from replicalab.scenarios import (
    NormalizedScenarioPack,
    TemplateData,
    generate_pack,
    get_template,
    register_template,
    template_names,
)


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker of a run needs: both seats' factories (they must pickle for a pool), the
    settings, the parent's templates, whether to send logs as lines and turn records too, how
    many episodes to keep in flight (None: the seats move at once and are held all run), whether
    the collector is tuned while episodes are in flight (`replicalab.baselines.evaluation.heap`),
    and the run's provenance, which every log it plays carries."""

    scientist: SeatFactory
    lab_manager: SeatFactory
    settings: Settings
    templates: tuple[TemplateData, ...] = ()
    lines: bool = True
    turns: bool = False
    concurrency: int | None = None
    tune_collector: bool = True
    provenance: Provenance | None = None


_setup: WorkerSetup | None = None
_held: tuple[Seat, Seat] | None = None  # the seats a worker holds when they move at once


def set_up_worker(setup: WorkerSetup) -> None:
    """Make this process a worker of a run: the parent's templates, then its seats."""
    global _setup, _held
    adopt_templates(setup.templates)
    _setup = setup
    _held = None if setup.concurrency is not None else (setup.scientist(), setup.lab_manager())


def init_pool_worker(setup: WorkerSetup) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    set_up_worker(setup)


def adopt_templates(templates: tuple[TemplateData, ...]) -> None:
    """Register the parent's templates in a worker. A forked worker inherits the parent's
    registry and changes nothing here; a spawned one starts with the built-ins only, so a family
    the parent registered (or replaced) would be unknown or different without this."""
    registered = set(template_names())
    for data in templates:
        if data.template not in registered or get_template(data.template) != data:
            register_template(data, replace=True)


def parent_templates(names: Sequence[str]) -> tuple[TemplateData, ...]:
    return tuple(get_template(name) for name in names)


def chunks(todo: list[Job], jobs: int, per_chunk: int, unit: int) -> list[list[Job]]:
    """Chunks of at most `per_chunk` jobs and at least four a worker, so the workers share the
    tail and grid-order writing keeps flowing; each chunk whole groups of `unit`, so its worker
    finishes them."""
    size = max(1, min(per_chunk, -(-len(todo) // (4 * jobs))))
    size = -(-size // unit) * unit
    return [todo[i : i + size] for i in range(0, len(todo), size)]


def play_chunk(chunk: list[Job], done: Callable[[int, list[Finished]], None] | None = None) -> Outcomes:
    """Play `chunk` (whole groups) as this worker's setup says; each finished group goes to
    `done`, else comes back in the list (a pool worker's answer)."""
    setup = _setup
    assert setup is not None, "worker used before set_up_worker"
    finished: Outcomes = []
    report = done or (lambda position, group: finished.append((position, group)))
    groups = _Groups(chunk, setup)

    def played(job: Job, result: _Played) -> None:
        group = groups.add(job, result)
        if group is not None:
            report(job.position, [_finish(p, setup) for p in _with_advantages(group)])

    if setup.concurrency is None:
        assert _held is not None
        for job in chunk:
            played(job, _play_held(job, _held, setup, groups.scenario(job)))
    else:
        with rollout_collector(setup.tune_collector):
            asyncio.run(_play_in_flight(chunk, setup, groups, played))
    return finished


@dataclass
class _Played:
    """A played episode, logged once its group is complete (`_finish`), with what a GRPO group
    adds to each log, so that no log is built twice."""

    episode: Episode
    episode_id: str
    stats: dict[str, float]
    usage: list[EpisodeUsage]
    turns: list[LLMTurn]
    group_id: str | None = None
    advantage: float | None = None


def _play_held(
    job: Job, seats: tuple[Seat, Seat], setup: WorkerSetup, scenario: NormalizedScenarioPack
) -> _Played:
    """One job played at once by the seats the worker holds."""
    episode = start_episode(job.key, setup.settings, scenario)
    seed = rollout_seed(job.key, job.rollout)
    for seat in seats:
        reset_policy(seat, seed)  # type: ignore[arg-type]
    play(episode, *seats)
    return _Played(episode, job.episode_id, seat_stats(*seats), [], [])


async def _play_fresh(job: Job, setup: WorkerSetup, scenario: NormalizedScenarioPack) -> _Played:
    """One job with fresh seats, awaiting the moves that take time; what its seats counted."""
    pair = setup.scientist(), setup.lab_manager()
    episode = start_episode(job.key, setup.settings, scenario)
    seed = rollout_seed(job.key, job.rollout)
    for seat in pair:
        reset_policy(seat, seed)  # type: ignore[arg-type]
    await play_async(episode, *pair)
    usage, turns = [], []
    for seat in pair:
        if isinstance(seat, ChatPolicy):
            usage.append(seat.usage(job.episode_id))
            turns.extend(seat.turns)
    return _Played(episode, job.episode_id, seat_stats(*pair), usage, turns)


async def _play_in_flight(
    chunk: list[Job], setup: WorkerSetup, groups: _Groups, played: Callable[[Job, _Played], None]
) -> None:
    """`chunk` with `setup.concurrency` episodes in flight, each taking the next job when free;
    the seats' connections closed on the loop that opened them, so the next run opens its own."""
    try:
        await _in_flight(
            chunk, lambda job: _play_fresh(job, setup, groups.scenario(job)), played, setup.concurrency or 1
        )
    finally:
        for seat in (setup.scientist(), setup.lab_manager()):
            if isinstance(seat, ChatPolicy):
                await seat.backend.aclose()


async def _in_flight(
    todo: list[Job],
    play_one: Callable[[Job], Awaitable[_Played]],
    done: Callable[[Job, _Played], None],
    concurrency: int,
) -> None:
    queue = iter(todo)

    async def worker() -> None:
        for job in queue:
            done(job, await play_one(job))

    workers = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(todo)))]
    try:
        await asyncio.gather(*workers)
    finally:  # a failure stops the others at once, leaving whole lines in the files
        for task in workers:
            task.cancel()


class _Groups:
    """The groups of the jobs a worker plays. The G rollouts of a GRPO group play one scenario,
    and generating it is a large part of an episode's own work, so the group's first job here
    generates it and the others share it (a pack is a frozen value that no episode changes)
    until the group's last job here has started. Played jobs, which finish in any order, are
    gathered until their group is complete."""

    def __init__(self, todo: list[Job], setup: WorkerSetup) -> None:
        self.sizes = Counter(job.position for job in todo)
        self.unstarted = Counter(self.sizes)
        self.scenarios: dict[int, NormalizedScenarioPack] = {}
        self.played: dict[int, list[_Played | None]] = {}

    def scenario(self, job: Job) -> NormalizedScenarioPack:
        position = job.position
        scenario = self.scenarios.pop(position, None)
        if scenario is None:
            scenario = generate_pack(job.key)
        self.unstarted[position] -= 1
        if self.unstarted[position]:
            self.scenarios[position] = scenario
        return scenario

    def add(self, job: Job, played: _Played) -> list[_Played] | None:
        """The group of `job` in rollout order once this completes it, else None."""
        position = job.position
        group = self.played.setdefault(position, [None] * self.sizes[position])
        group[job.rollout or 0] = played
        if any(p is None for p in group):
            return None
        del self.played[position]
        return [p for p in group if p is not None]


def _finish(played: _Played, setup: WorkerSetup) -> Finished:
    log = played.episode.to_log(
        played.episode_id, provenance=setup.provenance, group_id=played.group_id, advantage=played.advantage
    )
    turn_lines = [r.model_dump_json() for r in turn_records(log, played.turns)] if setup.turns else []
    line_or_log = log.model_dump_json() if setup.lines else log
    return Finished(line_or_log, digest(log), played.stats, played.usage, turn_lines)


def _with_advantages(group: list[_Played]) -> list[_Played]:
    """The group's rollouts with their group id and advantage; a group of one is no group."""
    if len(group) == 1:
        return group
    first = group[0].episode_id
    group_id = first[: first.rfind("/")]
    advantages = group_advantages([p.episode.totals[SCIENTIST] for p in group])
    for played, advantage in zip(group, advantages, strict=True):
        played.group_id, played.advantage = group_id, advantage
    return group
