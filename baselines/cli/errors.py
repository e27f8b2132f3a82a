"""How a command ends on a user's mistake: one line on stderr and an exit code, no traceback
(2 for a bad option, 1 for a file or run that cannot be used, 3 for a partial run, 130 when
interrupted)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

USAGE = 2  # exit code for a bad option value
PARTIAL = 3
"""Exit code of an `evaluate` run whose table leaves out episodes a server's failure spoiled
(`replicalab.outages`); `--allow-partial` makes such a run exit 0."""


class Problem(Exception):
    """A user-facing error: printed as one line, exit code attached."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def fail(message: str, code: int) -> NoReturn:
    Console(stderr=True, soft_wrap=True).print(Text(f"Error: {message}", style="bold red"))
    raise typer.Exit(code)


@contextmanager
def user_errors(code: int = 1) -> Iterator[None]:
    """Turn the library's ValueError/OSError (bad input, unreadable file) into a clean exit."""
    try:
        yield
    except Problem as problem:
        fail(str(problem), problem.code)
    except (ValueError, OSError) as exc:
        fail(str(exc), code)


def first_error(error: ValidationError) -> str:
    """A file's first validation error on one line: where in the file, and what is wrong."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the whole file"
    more = error.error_count() - 1
    return f"{where}: {first['msg']}" + (f" (and {more} more)" if more else "")


@contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """SIGTERM (`kill`, `timeout`, a job scheduler) stops a run the way Ctrl-C does: the log
    keeps whole episodes and the worker processes are shut down, not orphaned."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
