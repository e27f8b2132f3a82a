"""`replicalab replay`: one logged episode, turn by turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from replicalab.baselines.cli.errors import Problem, user_errors
from replicalab.baselines.cli.output import counted, stdout_console
from replicalab.baselines.evaluation import report
from replicalab.models import EpisodeLog


def _parse_line(path: Path, lines: list[bytes], i: int) -> EpisodeLog:
    try:
        return EpisodeLog.model_validate_json(lines[i])
    except ValueError:
        raise Problem(
            f"{path}:{i + 1}: not an EpisodeLog line (cut short by an interrupted "
            "run? `evaluate --resume` finishes it)"
        ) from None


def _find_episode(path: Path, episode: str) -> EpisodeLog:
    """The episode with this id, or at this 0-based index (negative counts from the end)."""
    lines = path.read_bytes().splitlines()
    if not lines:
        raise Problem(f"{path}: no episodes")
    if episode.lstrip("-").isdigit():
        index = int(episode)
        if not -len(lines) <= index < len(lines):
            raise Problem(f"{path}: index {index} is out of range ({counted(len(lines), 'episode')})")
        return _parse_line(path, lines, index % len(lines))
    wanted = b'"episode_id":' + json.dumps(episode, ensure_ascii=False).encode("utf-8")
    for i, line in enumerate(lines):
        if wanted in line and (log := _parse_line(path, lines, i)).episode_id == episode:
            return log
    raise Problem(f"{path}: no episode with id {episode!r} (give an id or a 0-based index)")


def replay(
    path: Annotated[Path, typer.Argument(help="A JSONL file written by `evaluate --out`.")],
    episode: Annotated[str, typer.Argument(help="Episode id, or 0-based index (-1 = last).")] = "0",
) -> None:
    """Print one logged episode turn by turn, with the judge's explanation."""
    with user_errors():
        log = _find_episode(path, episode)
    console = stdout_console()
    for part in report.replay(log):
        console.print(part)
