"""Play a Scientist × Lab Manager pair over a grid of scenarios, in parallel, to a JSONL log.

The runner drives `Episode` directly and knows no rule of the game: it asks the policy whose
turn it is for a move and steps the episode until it is done.

Reproducibility is the point of a log, so:

- The grid is templates × difficulties × seeds, in that order; the scenario of a cell is
  `generate_scenario(seed, template, difficulty)`, and each policy's seed is derived from the
  same triple through `numpy.random.SeedSequence` (never `hash()`, which is salted per process).
- Episodes may run in worker processes (`jobs`), or as Ray tasks (`backend="ray"`, see
  `replicalab.baselines.ray_backend`), both playing the same chunks with `_play`, but lines are
  written in grid order only, one whole line and a flush per episode, so `jobs=2` and Ray write
  the same bytes as `jobs=1` and a killed run leaves a prefix of whole lines (plus at most one
  partial line).
- `resume=True` drops a trailing partial line, keeps the episodes already logged (they must be
  a prefix of this grid, with the same reward config and round limit) and appends the rest: the
  finished file equals a clean run's, byte for byte.

Episode ids are `{scenario_id}/{scientist}/{lab_manager}`: unique within a run, stable across runs.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import BinaryIO, Literal, NamedTuple

import numpy as np
from pydantic import ValidationError

from replicalab.baselines.metrics import EpisodeDigest, digest
from replicalab.baselines.policies import GroundedLabManager, Policy, policy_stats, reset_policy
from replicalab.episode import SCIENTIST, Episode, check_max_rounds, coerce_action
from replicalab.models import EpisodeLog
from replicalab.rewards import RewardConfig, get_preset
from replicalab.scenarios import (
    DEFAULT_MAX_ROUNDS,
    DIFFICULTIES,
    TemplateData,
    generate_scenario,
    get_template,
    register_template,
    template_names,
)
from replicalab.scenarios.registry import check_difficulty, check_split, template_key

if sys.platform != "win32":
    import fcntl

PolicyFactory = Callable[[], Policy]
"""Builds a fresh policy; a class works. Must pickle for jobs > 1 where processes do not fork,
and for the Ray backend."""
Backend = Literal["processes", "ray"]
BACKENDS: tuple[Backend, ...] = ("processes", "ray")
"""Where `run_grid` plays episodes: `processes` (this one, or `jobs` worker processes) or `ray`
(Ray tasks, `jobs` at a time)."""


class Cell(NamedTuple):
    """One grid point: the scenario `generate_scenario(seed, template, difficulty)`."""

    template: str
    difficulty: str
    seed: int


@dataclass(frozen=True)
class Grid:
    templates: tuple[str, ...]
    difficulties: tuple[str, ...]
    seeds: tuple[int, ...]

    def __post_init__(self) -> None:
        for name in self.templates:
            get_template(name)  # refuses an unknown one, naming the valid ones
        for level in self.difficulties:
            check_difficulty(level)
        for seed in self.seeds:
            if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
                raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
        if not (self.templates and self.difficulties and self.seeds):
            raise ValueError("grid: needs at least one template, difficulty and seed")

    @classmethod
    def of(
        cls,
        templates: Sequence[str] | None = None,
        difficulties: Sequence[str] | None = None,
        seeds: int | Sequence[int] = 20,
        first_seed: int = 0,
    ) -> Grid:
        """All registered templates and all difficulties unless named; `seeds` a count or a list."""
        chosen = range(first_seed, first_seed + seeds) if isinstance(seeds, int) else seeds
        return cls(tuple(templates or template_names()), tuple(difficulties or DIFFICULTIES), tuple(chosen))

    def cells(self) -> list[Cell]:
        return [Cell(t, d, s) for t in self.templates for d in self.difficulties for s in self.seeds]


@dataclass(frozen=True)
class Settings:
    """What every episode of a run shares besides its policies."""

    reward_config: RewardConfig = field(default_factory=lambda: get_preset("default"))
    max_rounds: int = DEFAULT_MAX_ROUNDS
    step_cap: int | None = None
    split: str = "train"  # which held-out set the scenarios come from

    def __post_init__(self) -> None:
        check_max_rounds(self.max_rounds)  # refused before any episode is played
        check_split(self.split)


@dataclass
class RunResult:
    """A run's episodes in grid order: digests for the table, logs for whoever needs the rest."""

    digests: list[EpisodeDigest]  # one per grid cell, in grid order
    stats: dict[str, float]  # policy counters summed over the episodes played in this call
    resumed: int = 0  # episodes taken from the existing file
    _episodes: list[EpisodeLog | str] = field(default_factory=list, repr=False, compare=False)
    """Per grid cell, the log where this process has one (played here, or resumed), else the
    JSON line a worker sent."""

    @cached_property
    def logs(self) -> list[EpisodeLog]:
        """One per grid cell, in grid order. Built on first use: a parallel run's table needs
        only the digests, so its lines are parsed only for a caller that wants whole logs."""
        return [e if isinstance(e, EpisodeLog) else EpisodeLog.model_validate_json(e) for e in self._episodes]


def policy_seed(cell: Cell) -> int:
    """The seed a policy gets for `cell`: a SeedSequence of (seed, template, difficulty)."""
    level = DIFFICULTIES.index(check_difficulty(cell.difficulty))
    entropy = [cell.seed, template_key(cell.template), level]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0])


def episode_id(cell: Cell, scientist: str, lab_manager: str) -> str:
    return f"{cell.template}-{cell.difficulty}-{cell.seed}/{scientist}/{lab_manager}"


def start_episode(cell: Cell, settings: Settings) -> Episode:
    """A fresh episode of `cell`'s scenario under `settings`."""
    return Episode(
        generate_scenario(cell.seed, cell.template, cell.difficulty, settings.split),
        max_rounds=settings.max_rounds,
        reward_config=settings.reward_config,
        step_cap=settings.step_cap,
    )


def play_episode(
    cell: Cell, scientist: Policy, lab_manager: Policy, settings: Settings | None = None
) -> EpisodeLog:
    """Play one episode of `cell` to the end and return its log."""
    episode = start_episode(cell, settings or Settings())
    seed = policy_seed(cell)
    reset_policy(scientist, seed)
    reset_policy(lab_manager, seed)
    while not episode.done:
        agent = episode.agent_selection
        policy = scientist if agent == SCIENTIST else lab_manager
        episode.step(coerce_action(agent, policy.act(episode)))
    return episode.to_log(episode_id(cell, scientist.name, lab_manager.name))


# --------------------------------------------------------------------------- workers

_Outcome = tuple[int, dict[str, float], EpisodeDigest, EpisodeLog | str]
"""Grid index, policy counters, digest, and the episode: the log itself when played in this
process (serialised only if a file is written), its JSON line when a worker played it. A worker
sends no log: the line is all the file needs and the digest all the table needs, so the parent
neither unpickles nor parses a model per episode."""
_worker: tuple[Policy, Policy, Settings] | None = None


def _init_worker(scientist: PolicyFactory, lab_manager: PolicyFactory, settings: Settings) -> None:
    global _worker
    _worker = (scientist(), lab_manager(), settings)


def _play(indexed: Sequence[tuple[int, Cell]], keep: bool = False) -> list[_Outcome]:
    assert _worker is not None, "worker used before _init_worker"
    scientist, lab_manager, settings = _worker
    out = []
    for index, cell in indexed:
        log = play_episode(cell, scientist, lab_manager, settings)
        stats = policy_stats(scientist)
        for key, value in policy_stats(lab_manager).items():
            stats[key] = stats.get(key, 0.0) + value
        out.append((index, stats, digest(log), log if keep else log.model_dump_json()))
    return out


def _chunks(todo: list[tuple[int, Cell]], jobs: int) -> list[list[tuple[int, Cell]]]:
    """Small enough to balance the workers and keep grid-order writing flowing."""
    size = max(1, min(16, len(todo) // (jobs * 8)))
    return [todo[i : i + size] for i in range(0, len(todo), size)]


WorkerSetup = tuple[PolicyFactory, PolicyFactory, Settings, tuple[TemplateData, ...]]
"""What a worker of another process needs: both seats' factories, the settings, and the parent's
templates of the grid."""


def set_up_worker(
    scientist: PolicyFactory,
    lab_manager: PolicyFactory,
    settings: Settings,
    templates: tuple[TemplateData, ...],
) -> None:
    """Make this process a worker of a run: the parent's templates, then fresh policies."""
    _adopt_templates(templates)
    _init_worker(scientist, lab_manager, settings)


def _init_pool_worker(
    scientist: PolicyFactory,
    lab_manager: PolicyFactory,
    settings: Settings,
    templates: tuple[TemplateData, ...],
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    set_up_worker(scientist, lab_manager, settings, templates)


def _adopt_templates(templates: tuple[TemplateData, ...]) -> None:
    """Register the parent's templates in a worker. A forked worker inherits the parent's
    registry and changes nothing here; a spawned one starts with the built-ins only, so a family
    the parent registered (or replaced) would be unknown or different without this."""
    registered = set(template_names())
    for data in templates:
        if data.template not in registered or get_template(data.template) != data:
            register_template(data, replace=True)


def _outcomes(
    todo: list[tuple[int, Cell]], pool: ProcessPoolExecutor | None, jobs: int
) -> Iterator[_Outcome]:
    """Outcomes as they finish (any order); in this process when there is no pool."""
    if pool is None:
        for item in todo:
            yield from _play([item], keep=True)
        return
    # as_completed waits on every future once; wait(FIRST_COMPLETED) in a loop re-arms all the
    # pending ones at each completion, which made the parent's share grow with the grid.
    for future in as_completed([pool.submit(_play, chunk) for chunk in _chunks(todo, jobs)]):
        yield from future.result()


# --------------------------------------------------------------------------- the log file


def open_log(path: Path, stack: ExitStack) -> BinaryIO:
    """`path` opened for appending (created if missing) and locked against a second writer."""
    for folder in (path.parent, *path.parent.parents):
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"{path}: {folder} is not a directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = stack.enter_context(path.open("a+b"))
    if sys.platform != "win32":
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"{path}: another run is writing to this file") from None
    return handle


def logged_episodes(
    path: Path, handle: BinaryIO, ids: list[str], settings: Settings, unit: int = 1
) -> list[EpisodeLog]:
    """The episodes already in the file, checked to be a prefix of this run; a trailing partial
    line (a run killed mid-write) is cut off, and nothing is touched if the check fails. A run
    that writes its episodes `unit` at a time (a group's rollouts) keeps whole units only."""
    handle.seek(0)
    data = handle.read()
    lines = data[: data.rfind(b"\n") + 1].splitlines(keepends=True)
    logs = []
    for number, line in enumerate(lines, start=1):
        try:
            log = EpisodeLog.model_validate_json(line)
        except ValidationError:
            raise ValueError(f"{path}:{number}: not an EpisodeLog line") from None
        if number > len(ids) or log.episode_id != ids[number - 1]:
            raise ValueError(
                f"{path}:{number}: episode {log.episode_id!r} is not the next one of "
                "this grid; resume only a file written by the same command"
            )
        config = settings.reward_config
        if log.reward_config != config or log.max_rounds != settings.max_rounds:
            raise ValueError(
                f"{path}:{number}: written with {_describe(log.reward_config)} and {log.max_rounds} "
                f"rounds; this run uses {_describe(config)} and {settings.max_rounds}"
            )
        logs.append(log)
    kept = len(logs) - len(logs) % unit
    handle.truncate(sum(map(len, lines[:kept])))
    return logs[:kept]


def _describe(config: RewardConfig) -> str:
    """A reward config as an error message names it: two configs may share a name."""
    return f"reward config {config.name!r} ({config.model_dump_json(exclude={'name'})})"


def run_grid(
    grid: Grid,
    scientist: PolicyFactory,
    lab_manager: PolicyFactory = GroundedLabManager,
    *,
    settings: Settings | None = None,
    jobs: int = 1,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    on_episode: Callable[[EpisodeDigest], None] | None = None,
    backend: Backend = "processes",
) -> RunResult:
    """Play every cell of `grid`; write the logs to `out` (JSONL) in grid order if given.

    `backend="processes"` plays in this process, or in `jobs` worker processes when jobs > 1;
    `backend="ray"` plays every episode as part of a Ray task, `jobs` tasks at a time (needs
    Ray). `on_episode` is called in grid order with the digest of every episode, resumed ones
    included (progress bars). Without `resume` an existing `out` is overwritten. Two runs
    cannot write one file at once.
    """
    settings = settings or Settings()
    if jobs < 1:
        raise ValueError(f"jobs: must be at least 1, got {jobs}")
    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if resume and out is None:
        raise ValueError("resume: needs an output file")
    cells = grid.cells()
    names = scientist().name, lab_manager().name
    ids = [episode_id(cell, *names) for cell in cells]
    resumed_logs: list[EpisodeLog] = []
    digests: list[EpisodeDigest] = []
    episodes: list[EpisodeLog | str] = []
    totals: dict[str, float] = {}
    ready: dict[int, _Outcome] = {}
    with ExitStack() as stack:
        handle = None
        if out is not None:
            handle = open_log(Path(out), stack)
            if resume:
                resumed_logs = logged_episodes(Path(out), handle, ids, settings)
            else:
                handle.truncate(0)
        resumed = len(resumed_logs)
        for log in resumed_logs:
            digests.append(digest(log))
            episodes.append(log)
            if on_episode is not None:
                on_episode(digests[-1])
        todo = list(enumerate(cells))[resumed:]
        setup: WorkerSetup = (
            scientist,
            lab_manager,
            settings,
            tuple(get_template(name) for name in grid.templates),
        )
        outcomes: Iterator[_Outcome]
        if backend == "ray":
            from replicalab.baselines.ray_backend import ray_outcomes  # Ray is optional

            outcomes = stack.enter_context(closing(ray_outcomes(todo, setup, jobs)))  # cancels on error
        elif jobs > 1 and len(todo) > 1:
            pool = stack.enter_context(
                ProcessPoolExecutor(max_workers=jobs, initializer=_init_pool_worker, initargs=setup)
            )
            stack.callback(pool.shutdown, wait=True, cancel_futures=True)  # on error: stop soon
            outcomes = _outcomes(todo, pool, jobs)
        else:
            _init_worker(scientist, lab_manager, settings)
            outcomes = _outcomes(todo, None, jobs)
        for outcome in outcomes:
            ready[outcome[0]] = outcome
            while len(digests) in ready:  # write in grid order only
                _, stats, summary, episode = ready.pop(len(digests))
                if handle is not None:
                    line = episode if isinstance(episode, str) else episode.model_dump_json()
                    handle.write(line.encode("utf-8") + b"\n")
                    handle.flush()
                digests.append(summary)
                episodes.append(episode)
                for key, value in stats.items():
                    totals[key] = totals.get(key, 0.0) + value
                if on_episode is not None:
                    on_episode(summary)
    return RunResult(digests=digests, stats=totals, resumed=resumed, _episodes=episodes)
