"""`replicalab train`: a short MaskablePPO run writes its model, config and learning curve, and
the model it writes is what `evaluate --scientist` takes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replicalab.baselines.cli import app


def test_a_short_run_writes_what_evaluate_reads(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    out = tmp_path / "run"
    args = [
        "train",
        "--out",
        str(out),
        "--steps",
        "64",
        "--n-envs",
        "2",
        "--eval-every",
        "32",
        "--eval-seeds",
        "1",
    ]
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, [*args, "-r", "sparse"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((out / "curve.csv").open(encoding="utf-8")))
    assert [int(row["steps"]) for row in rows] == [32, 64]
    assert all(0.0 <= float(row["judge_score"]) <= 13.0 for row in rows)
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["steps"] == 64 and config["reward_config"]["name"] == "sparse"
    evaluated = CliRunner(env={"COLUMNS": "200"}).invoke(
        app,
        [
            "evaluate",
            "-t",
            "ml_benchmark",
            "-d",
            "easy",
            "--seeds",
            "1",
            "--no-oracle",
            "-s",
            str(out / "model.zip"),
        ],
    )
    assert evaluated.exit_code == 0, evaluated.output
    assert "model vs grounded" in evaluated.stdout


def test_bad_training_options_are_refused_by_name(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["train", "--out", str(tmp_path), "-r", "dense"])
    assert result.exit_code == 2 and "dense" in result.output
