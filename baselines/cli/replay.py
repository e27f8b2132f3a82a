"""`replicalab replay`: one logged episode, turn by turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel

from replicalab.baselines.cli.errors import Problem, user_errors
from replicalab.baselines.cli.output import counted, stdout_console
from replicalab.baselines.evaluation import report
from replicalab.baselines.evaluation.turn_records import TurnRecord
from replicalab.baselines.policies.chat import EpisodeUsage
from replicalab.models import EpisodeLog

# The other files the project writes, by what a line of them holds, and what each one is.
LINE_KINDS: tuple[tuple[type[BaseModel], str], ...] = (
    (TurnRecord, "a turns file (`evaluate --export-turns`: one model turn a line, for LLM-RL trainers)"),
    (EpisodeUsage, "a usage file (`X.usage.jsonl` beside the log X.jsonl: model calls per seat and episode)"),
)
FILE_KINDS = {
    ".zip": "a saved model (`train` writes model.zip): play it with `evaluate --scientist PATH`",
    ".csv": "a CSV table (`train`'s curve.csv or a `compare-rewards` table)",
    ".json": "a JSON file (a run's config.json, a reward config or a scenario family), not a log",
    ".png": "a figure",
}
LOG_IS = "replay reads the episode log that `evaluate --out` writes"


def _not_a_log(path: Path) -> None:
    """Refuse, by its suffix, a file the project writes that is not an episode log."""
    kind = FILE_KINDS.get(path.suffix.lower())
    if kind is not None:
        raise Problem(f"{path}: {kind}; {LOG_IS}")


def _parse_line(path: Path, lines: list[bytes], i: int) -> EpisodeLog:
    try:
        return EpisodeLog.model_validate_json(lines[i])
    except ValueError:
        pass
    for model, kind in LINE_KINDS:
        try:
            model.model_validate_json(lines[i])
        except ValueError:
            continue
        raise Problem(f"{path}: {kind}; {LOG_IS}") from None
    if i == len(lines) - 1:
        cut = "cut short by an interrupted run? `evaluate --resume` finishes it"
        raise Problem(f"{path}:{i + 1}: not an EpisodeLog line ({cut})") from None
    raise Problem(f"{path}:{i + 1}: not an EpisodeLog line; {LOG_IS}") from None


def _find_episode(path: Path, episode: str) -> EpisodeLog:
    """The episode with this id, or at this 0-based index (negative counts from the end)."""
    _not_a_log(path)
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


def read_logs(path: Path) -> list[EpisodeLog]:
    """Every episode of a log file, in order; a line that is not an episode is refused."""
    _not_a_log(path)
    lines = path.read_bytes().splitlines()
    if not lines:
        raise Problem(f"{path}: no episodes")
    return [_parse_line(path, lines, i) for i in range(len(lines))]


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
