"""What a command prints: tables on stdout, progress bars on stderr."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from replicalab.digest import EpisodeDigest

_REFRESH_S = 0.1  # progress bar redraw interval


def stdout_console() -> Console:
    """stdout; wide when it is not a terminal, so piped tables do not wrap at 80 columns."""
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=160)
    return console


def counted(count: int, noun: str) -> str:
    """`1 seed`, `2 seeds`, `3 difficulties`."""
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{count} {noun if count == 1 else plural}"


def progress_bar(auto_refresh: bool = True) -> Progress:
    """A progress bar on stderr: what runs, the bar, done of total, time spent and left."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        auto_refresh=auto_refresh,
        transient=True,
    )


@contextmanager
def episode_progress(total: int, description: str) -> Iterator[Callable[[EpisodeDigest], None]]:
    """A progress bar of episodes; yields the per-episode callback. No refresh thread (workers fork)."""
    progress = progress_bar(auto_refresh=False)
    task: TaskID = progress.add_task(description, total=total)
    last = [0.0]

    def advance(_: EpisodeDigest) -> None:
        progress.advance(task)
        now = time.monotonic()
        if now - last[0] >= _REFRESH_S:
            last[0] = now
            progress.refresh()

    with progress:
        yield advance
