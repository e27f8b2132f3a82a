"""`benchmarks.training_curves` replays a run's checkpoints in the order they were trained and
keeps the rows an earlier call measured, so a call during training adds only the new ones."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.training_curves import CurveRow, asks_first, checkpoints, curves, read_rows, run_label
from replicalab.baselines.evaluation.runner import Grid, run_grid
from replicalab.baselines.policies.probes import PublicReaderScientist


def _run(tmp_path: Path, steps: list[int]) -> Path:
    (tmp_path / "checkpoints").mkdir()
    for n in steps:
        (tmp_path / "checkpoints" / f"model_{n}_steps.zip").write_bytes(b"")
    (tmp_path / "checkpoints" / "notes.zip").write_bytes(b"")
    (tmp_path / "config.json").write_text(json.dumps({"reading": "facts", "seed": 3}), encoding="utf-8")
    return tmp_path


def test_checkpoints_come_in_the_order_they_were_trained(tmp_path: Path) -> None:
    run = _run(tmp_path, [163840, 16384, 32768])
    assert [steps for steps, _ in checkpoints(run)] == [16384, 32768, 163840]
    assert run_label(run) == "facts seed 3"


def test_rows_already_measured_are_kept_and_not_replayed(tmp_path: Path) -> None:
    run = _run(tmp_path, [16384])
    done = [CurveRow("facts seed 3", "test", 16384, 0.5, 0.25, 1.0)]
    assert curves([run], seeds=1, splits=["test"], done=done) == done  # the empty zip is never loaded
    out = tmp_path / "curves.csv"
    out.write_text("run,split,steps,norm,norm_hard,asks_first_hard\nfacts seed 3,test,16384,0.5,0.25,1.0\n")
    assert read_rows(out) == done and read_rows(tmp_path / "missing.csv") == []


def test_asking_first_is_read_from_the_first_scientist_move() -> None:
    grid = Grid.of(templates=["ml_benchmark"], difficulties=["hard"], seeds=1)
    (asked,) = run_grid(grid, lambda: PublicReaderScientist("ask", "adopt")).logs
    (proposed,) = run_grid(grid, lambda: PublicReaderScientist("propose", "accept")).logs
    assert asks_first(asked) and not asks_first(proposed)
