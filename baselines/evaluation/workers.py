"""Where episodes are played: this process, or a worker of a process pool or of Ray.

A worker holds one Scientist and one Lab Manager for the whole run (`init_worker`) and plays
chunks of grid cells (`play_chunk`); a worker of another process first adopts the parent's
templates (`set_up_worker`). Outcomes come back in any order; the runner writes them in grid order.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed

from replicalab.baselines.evaluation.grid import PolicyFactory, Settings, play_episode
from replicalab.baselines.policies.interface import Policy, seat_stats
from replicalab.digest import EpisodeDigest, digest
from replicalab.models import EpisodeLog
from replicalab.scenarios import ScenarioKey, TemplateData, get_template, register_template, template_names

Outcome = tuple[int, dict[str, float], EpisodeDigest, EpisodeLog | str]
"""Grid index, policy counters, digest, and the episode: the log itself when played in this
process (serialised only if a file is written), its JSON line when a worker played it. A worker
sends no log: the line is all the file needs and the digest all the table needs, so the parent
neither unpickles nor parses a model per episode."""
_worker: tuple[Policy, Policy, Settings] | None = None


def init_worker(scientist: PolicyFactory, lab_manager: PolicyFactory, settings: Settings) -> None:
    global _worker
    _worker = (scientist(), lab_manager(), settings)


def play_chunk(indexed: Sequence[tuple[int, ScenarioKey]], keep: bool = False) -> list[Outcome]:
    assert _worker is not None, "worker used before init_worker"
    scientist, lab_manager, settings = _worker
    out = []
    for index, cell in indexed:
        log = play_episode(cell, scientist, lab_manager, settings)
        stats = seat_stats(scientist, lab_manager)
        out.append((index, stats, digest(log), log if keep else log.model_dump_json()))
    return out


def chunks(todo: list[tuple[int, ScenarioKey]], jobs: int) -> list[list[tuple[int, ScenarioKey]]]:
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
    adopt_templates(templates)
    init_worker(scientist, lab_manager, settings)


def init_pool_worker(
    scientist: PolicyFactory,
    lab_manager: PolicyFactory,
    settings: Settings,
    templates: tuple[TemplateData, ...],
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    set_up_worker(scientist, lab_manager, settings, templates)


def adopt_templates(templates: tuple[TemplateData, ...]) -> None:
    """Register the parent's templates in a worker. A forked worker inherits the parent's
    registry and changes nothing here; a spawned one starts with the built-ins only, so a family
    the parent registered (or replaced) would be unknown or different without this."""
    registered = set(template_names())
    for data in templates:
        if data.template not in registered or get_template(data.template) != data:
            register_template(data, replace=True)


def outcomes(
    todo: list[tuple[int, ScenarioKey]], pool: ProcessPoolExecutor | None, jobs: int
) -> Iterator[Outcome]:
    """Outcomes as they finish (any order); in this process when there is no pool."""
    if pool is None:
        for item in todo:
            yield from play_chunk([item], keep=True)
        return
    # as_completed waits on every future once; wait(FIRST_COMPLETED) in a loop re-arms all the
    # pending ones at each completion, which made the parent's share grow with the grid.
    for future in as_completed([pool.submit(play_chunk, chunk) for chunk in chunks(todo, jobs)]):
        yield from future.result()
