"""`replicalab train`: a short MaskablePPO run writes its full config, its learning curve and its
model, and the model it writes is what `evaluate --scientist` takes."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replicalab.baselines.cli import app
from replicalab.baselines.training.figures import clipped_band, score_range
from replicalab.baselines.training.maskable_ppo import CurvePoint, TrainConfig, train
from replicalab.rewards import get_preset


@pytest.mark.slow
def test_a_smoke_run_writes_what_evaluate_reads(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    out = tmp_path / "run"
    args = ["train", "--out", str(out), "--steps", "2000", "--n-envs", "4", "--eval-every", "1000"]
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, [*args, "--eval-seeds", "1", "-r", "sparse"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((out / "curve.csv").open(encoding="utf-8")))
    assert [int(row["steps"]) for row in rows] == [0, 1000, 2000]  # the curve starts untrained
    assert all(0.0 <= float(row["judge_score"]) <= 13.0 for row in rows)
    assert "validation score" in result.stdout and "2,000" in result.stdout
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["steps"] == 2000 and config["n_envs"] == 4 and config["seed"] == 0
    assert config["reward_config"] == get_preset("sparse").model_dump(mode="json")
    assert config["learner"]["algorithm"] == "MaskablePPO" and config["learner"]["n_steps"] == 250
    assert config["trained"] == {"rollout": 1000, "steps": 2000, "eval_every": 1000}
    assert config["versions"]["sb3-contrib"]
    assert (out / "curve.png").read_bytes().startswith(b"\x89PNG")
    saved = sorted(path.name for path in (out / "checkpoints").iterdir())
    assert saved == ["model_1000_steps.zip", "model_2000_steps.zip"]  # one per trained point
    assert "rounded up" not in result.stdout
    evaluate = ["evaluate", "-t", "ml_benchmark", "-d", "easy", "--seeds", "1", "--no-oracle"]
    evaluated = CliRunner(env={"COLUMNS": "200"}).invoke(app, [*evaluate, "-s", str(out / "model.zip")])
    assert evaluated.exit_code == 0, evaluated.output
    assert "model vs grounded" in evaluated.stdout


def test_the_curve_is_measured_at_fixed_intervals_and_reported_as_it_grows(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    config = TrainConfig(
        steps=64, n_envs=2, eval_every=32, eval_seeds=1, reward_config=get_preset("potential")
    )
    steps_seen: list[int] = []
    points: list[CurvePoint] = []
    curve = train(config, tmp_path, steps_seen.append, points.append)
    assert points == curve and [point.steps for point in curve] == [0, 32, 64]
    assert (
        steps_seen == sorted(steps_seen) and steps_seen[0] == 2 and steps_seen[-1] == 64
    )  # each vector step
    written = list(csv.reader((tmp_path / "curve.csv").open(encoding="utf-8")))
    assert written[0] == list(CurvePoint._fields)
    assert [[float(v) for v in row] for row in written[1:]] == [list(point) for point in curve]


@pytest.mark.slow
def test_a_seed_trains_the_same_model_twice(tmp_path: Path) -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    config = TrainConfig(steps=64, n_envs=2, eval_every=64, eval_seeds=1, seed=5)
    runs = {"one": config, "two": config, "other seed": dataclasses.replace(config, seed=6)}
    curves = {name: train(run, tmp_path / name) for name, run in runs.items()}
    weights = {
        name: sb3_contrib.MaskablePPO.load(tmp_path / name / "model.zip").policy.state_dict() for name in runs
    }

    def same(a: str, b: str) -> bool:
        return all(bool((weights[a][key] == weights[b][key]).all()) for key in weights[a])

    assert curves["one"] == curves["two"] and same("one", "two")
    assert not same("one", "other seed")


def test_bad_training_options_are_refused_by_name(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["train", "--out", str(tmp_path), "-r", "dense"])
    assert result.exit_code == 2 and "dense" in result.output
    a_file = tmp_path / "file"
    a_file.write_text("")
    result = CliRunner().invoke(app, ["train", "--out", str(a_file), "--steps", "8"])
    assert result.exit_code == 1 and "--out" in result.output and "not a directory" in result.output


@pytest.mark.parametrize("name", ["steps", "n_envs", "eval_every", "eval_seeds"])
def test_a_bad_count_names_its_field(name: str) -> None:
    with pytest.raises(ValueError, match=f"{name}: must be a positive int"):
        TrainConfig(**{name: 0})  # type: ignore[arg-type]


def test_rounding_to_whole_rollouts_is_recorded_and_said(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    out = tmp_path / "run"
    # 4 envs × 8 steps (the shortest rollout) a rollout: 50 steps are 64 trained, a point every 20
    # is one every 32.
    args = ["train", "--out", str(out), "--steps", "50", "--n-envs", "4", "--eval-every", "20"]
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, [*args, "--eval-seeds", "1"])
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["steps"] == 50 and config["eval_every"] == 20  # as asked
    assert config["trained"] == {"rollout": 32, "steps": 64, "eval_every": 32}
    rows = list(csv.DictReader((out / "curve.csv").open(encoding="utf-8")))
    assert [int(row["steps"]) for row in rows] == [0, 32, 64]
    assert "trained 64 steps, a point every 32" in result.stdout and "whole rollouts of 32" in result.stdout


def test_train_help_says_how_steps_are_rounded() -> None:
    result = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "400"})
    text = " ".join(result.output.split())
    assert "rounded up to whole rollouts" in text and "starts at step 0" in text


def test_tensorboard_logs_the_learner_and_the_curve(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator", reason="needs tensorboard ([train] extra)"
    )
    config = TrainConfig(steps=64, n_envs=2, eval_every=32, eval_seeds=1)
    train(config, tmp_path / "run", tensorboard=tmp_path / "tb")
    (log_dir,) = (tmp_path / "tb").iterdir()
    events = event_accumulator.EventAccumulator(str(log_dir))
    events.Reload()
    scores = events.Scalars("validation/judge_score")
    assert [event.step for event in scores] == [32, 64]
    assert "train/loss" in events.Tags()["scalars"]


def test_the_band_stays_inside_the_scores_range() -> None:
    low, high = score_range()
    assert low == 0.0 and high == 11.75  # 10 x a perfect plan, the checks bonus, three rounds saved
    lows, highs = clipped_band([0.2, 5.0, 11.5], [0.9, 1.0, 0.6], (low, high))
    assert lows == [0.0, 4.0, 10.9] and highs == pytest.approx([1.1, 6.0, 11.75])
