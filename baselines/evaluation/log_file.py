"""A run's JSONL log: opened locked against a second writer, and checked before a resume.

Lines are written in grid order only, one whole line and a flush per episode, so a killed run
leaves a prefix of whole lines (plus at most one partial line), which a resume cuts off. A resume
also plays again, from the first one on, the episodes that a server's failure spoiled
(`replicalab.outages`): what an outage left in the log is never kept as the model's.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from replicalab.baselines.evaluation.grid import Settings
from replicalab.models import EpisodeLog, Provenance
from replicalab.outages import server_errors
from replicalab.rewards import RewardConfig

if sys.platform != "win32":
    import fcntl


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
    path: Path,
    handle: BinaryIO,
    ids: list[str],
    settings: Settings,
    provenance: Provenance | None = None,
    unit: int = 1,
) -> list[EpisodeLog]:
    """The episodes already in the file, checked to be a prefix of this run (played by the same
    version, seats and settings: `provenance`, when given, is this run's), up to the first one
    a server's failure spoiled; that one, those after it and a trailing partial line (a run
    killed mid-write) are cut off, and nothing is touched if the check fails. A run that writes
    its episodes `unit` at a time (a group's rollouts) keeps whole units only."""
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
        if provenance is not None and log.provenance != provenance:
            raise ValueError(
                f"{path}:{number}: written by {_origin(log.provenance)}; this run is {provenance.label()}"
            )
        logs.append(log)
    spoiled = next((i for i, log in enumerate(logs) if server_errors(log)), len(logs))
    kept = spoiled - spoiled % unit
    handle.truncate(sum(map(len, lines[:kept])))
    return logs[:kept]


def _origin(provenance: Provenance | None) -> str:
    return "a run that recorded no provenance" if provenance is None else provenance.label()


def _describe(config: RewardConfig) -> str:
    """A reward config as an error message names it: two configs may share a name."""
    return f"reward config {config.name!r} ({config.model_dump_json(exclude={'name'})})"
