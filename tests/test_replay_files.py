"""`replay` given another file the project writes says what that file is, and sends the user to
the episode log; only a log whose last line is cut short is blamed on an interrupted run."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from replicalab.baselines.cli import app
from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.evaluation.turn_records import TurnRecord
from replicalab.baselines.policies.chat import EpisodeUsage
from replicalab.baselines.policies.seats import RandomScientist


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("runs") / "random.jsonl"
    run_grid(
        Grid.of(["ml_benchmark"], ["easy"], 2), RandomScientist, out=path, settings=Settings(split="test")
    )
    return path


def _replay(path: Path) -> str:
    result = CliRunner(env={"COLUMNS": "300"}).invoke(app, ["replay", str(path)])
    assert result.exit_code == 1, result.output
    return " ".join(result.output.split())


def test_a_turns_file_is_named(tmp_path: Path) -> None:
    record = TurnRecord(
        episode_id="e",
        group_id=None,
        agent="scientist",
        round_number=1,
        step=0,
        messages=[{"role": "user", "content": "hi"}],
        completion="{}",
        error_code=None,
        reward=0.0,
        episode_return=0.0,
        advantage=None,
    )
    path = tmp_path / "turns.jsonl"
    path.write_text(record.model_dump_json() + "\n")
    message = _replay(path)
    assert "a turns file (`evaluate --export-turns`" in message and "`evaluate --out`" in message
    assert "interrupted" not in message


def test_a_usage_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "run.usage.jsonl"
    path.write_text(EpisodeUsage(episode_id="e", agent="scientist", calls=3).model_dump_json() + "\n")
    message = _replay(path)
    assert "a usage file" in message and "interrupted" not in message


@pytest.mark.parametrize(
    ("name", "said"),
    [("model.zip", "a saved model"), ("curve.csv", "a CSV table"), ("config.json", "a JSON file")],
)
def test_files_of_other_kinds_are_named_by_suffix(tmp_path: Path, name: str, said: str) -> None:
    path = tmp_path / name
    path.write_bytes(b'{\n  "steps": 1\n}\n')
    message = _replay(path)
    assert said in message and "interrupted" not in message


def test_only_a_cut_last_line_is_blamed_on_an_interrupted_run(log: Path, tmp_path: Path) -> None:
    lines = log.read_bytes().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(lines[0] + lines[1][:50])
    result = CliRunner().invoke(app, ["replay", str(cut), "-1"])
    assert result.exit_code == 1 and "`evaluate --resume` finishes it" in " ".join(result.output.split())
    assert CliRunner().invoke(app, ["replay", str(cut), "0"]).exit_code == 0
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"[1, 2]\n" + lines[1])
    message = _replay(broken)
    assert "broken.jsonl:1: not an EpisodeLog line" in message and "interrupted" not in message
