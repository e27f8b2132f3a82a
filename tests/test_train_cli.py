"""`replicalab train`: a short MaskablePPO run writes its full config, its learning curve and its
model, and the model it writes is what `evaluate --scientist` takes."""

from __future__ import annotations

import csv
import dataclasses
import importlib.metadata
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replicalab.baselines.cli import app
from replicalab.baselines.training.figures import clipped_band, return_range, score_range
from replicalab.baselines.training.maskable_ppo import (
    N_STEPS,
    CurvePoint,
    TrainConfig,
    curve_steps,
    recorded_settings,
    train,
)
from replicalab.models import Provenance
from replicalab.models.provenance import GAME_VERSION
from replicalab.rewards import get_preset


@pytest.mark.slow
def test_a_smoke_run_writes_what_evaluate_reads(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    out = tmp_path / "run"
    args = ["train", "--out", str(out), "--steps", "1000", "--n-envs", "2", "--eval-every", "500"]
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, [*args, "--eval-seeds", "1", "-r", "sparse"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((out / "curve.csv").open(encoding="utf-8")))
    # 2 envs × 256 steps a rollout: the first boundaries at or after 500 and 1,000
    assert [int(row["steps"]) for row in rows] == [0, 512, 1024]  # the curve starts untrained
    assert all(0.0 <= float(row["judge_score"]) <= 13.0 for row in rows)
    assert "validation score" in result.stdout and "1,024" in result.stdout
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["steps"] == 1000 and config["n_envs"] == 2 and config["seed"] == 0
    assert config["reward_config"] == get_preset("sparse").model_dump(mode="json")
    assert config["learner"]["algorithm"] == "MaskablePPO" and config["learner"]["n_steps"] == 256
    assert config["trained"] == {"rollout": 512, "steps": 1024}
    assert config["versions"]["sb3-contrib"]
    assert Provenance.model_validate(config["provenance"]).reward_preset == "sparse"
    assert (out / "curve.png").read_bytes().startswith(b"\x89PNG")
    saved = sorted(path.name for path in (out / "checkpoints").iterdir())
    assert saved == ["model_1024_steps.zip", "model_512_steps.zip"]  # one per trained point
    assert "whole rollouts of 512" in result.stdout
    evaluate = ["evaluate", "-t", "ml_benchmark", "-d", "easy", "--seeds", "1", "--no-oracle"]
    evaluated = CliRunner(env={"COLUMNS": "200"}).invoke(app, [*evaluate, "-s", str(out / "model.zip")])
    assert evaluated.exit_code == 0, evaluated.output
    assert "model vs grounded" in evaluated.stdout


def test_the_curve_is_measured_at_fixed_intervals_and_reported_as_it_grows(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    config = TrainConfig(
        steps=64, n_envs=2, eval_every=32, eval_seeds=1, reward_config=get_preset("potential"), n_steps=8
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
    config = TrainConfig(steps=64, n_envs=2, eval_every=64, eval_seeds=1, seed=5, n_steps=8)
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


@pytest.mark.parametrize("name", ["steps", "n_envs", "eval_every", "eval_seeds", "n_steps"])
def test_a_bad_count_names_its_field(name: str) -> None:
    with pytest.raises(ValueError, match=f"{name}: must be a positive int"):
        TrainConfig(**{name: 0})  # type: ignore[arg-type]


def test_the_learner_is_the_same_at_every_evaluation_cadence() -> None:
    settings = {
        every: recorded_settings(TrainConfig(eval_every=every)) for every in (100, 1_000, 10_000, 50_000)
    }
    learners = [(s["learner"], s["trained"]) for s in settings.values()]
    assert learners == [learners[0]] * len(learners)
    assert learners[0][0]["n_steps"] == N_STEPS and learners[0][0]["batch_size"] == 256
    assert learners[0][1] == {"rollout": 8 * N_STEPS, "steps": 100_352}  # 49 rollouts of 2,048


def test_the_config_records_what_the_model_was_trained_on() -> None:
    recorded = recorded_settings(TrainConfig(reward_config=get_preset("potential"), num_train_scenarios=45))
    provenance = Provenance.model_validate(recorded["provenance"])
    assert provenance.package_version == importlib.metadata.version("replicalab")
    assert (provenance.env_id, provenance.game_version) == ("ReplicaLab/Scientist-v3", GAME_VERSION)
    assert (provenance.policy, provenance.split, provenance.reward_preset) == (
        "MaskablePPO",
        "train",
        "potential",
    )
    assert provenance.difficulties == ("easy", "medium", "hard") and provenance.reading == "text"
    assert (
        provenance.seeds == "0-44"
        and Provenance.model_validate(recorded_settings(TrainConfig())["provenance"]).seeds == "any"
    )


def test_a_point_is_measured_at_the_first_rollout_boundary_after_each_multiple() -> None:
    assert curve_steps(0, 100, 20, 32) == [0, 32, 64, 96, 128]  # 60 falls in 33-64; 100 → 128
    assert curve_steps(0, 96, 40, 32) == [0, 64, 96]  # 40 → 64, 80 → 96 (the end)
    assert curve_steps(0, 2048, 100, 1024) == [0, 1024, 2048]  # many multiples in one rollout
    assert curve_steps(0, 64, 32, 32) == [0, 32, 64]  # a boundary on a multiple is that point
    assert curve_steps(500, 64, 32, 16) == [500, 532, 564]  # counted from where training starts
    default = TrainConfig().curve_steps()
    assert default[:3] == [0, 10_240, 20_480] and default[-1] == 100_352 and len(default) == 11


def test_rounding_to_whole_rollouts_is_recorded_and_said(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    out = tmp_path / "run"
    # 4 envs × 8 steps a rollout: 50 steps are 64 trained; 20 → 32, 40 → 64, 60 → past the end.
    args = [
        "train",
        "--out",
        str(out),
        "--steps",
        "50",
        "--n-envs",
        "4",
        "--n-steps",
        "8",
        "--eval-every",
        "20",
    ]
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, [*args, "--eval-seeds", "1"])
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["steps"] == 50 and config["eval_every"] == 20  # as asked
    assert config["trained"] == {"rollout": 32, "steps": 64}
    assert config["learner"]["n_steps"] == 8 and config["learner"]["batch_size"] == 32
    rows = list(csv.DictReader((out / "curve.csv").open(encoding="utf-8")))
    assert [int(row["steps"]) for row in rows] == [0, 32, 64]
    assert "trained 64 steps in whole rollouts of 32 (4 envs × 8)" in result.stdout


def test_train_help_says_how_steps_are_rounded() -> None:
    result = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "400"})
    text = " ".join(result.output.split())
    assert "rounded up to whole rollouts" in text and "starts at step 0" in text


def test_tensorboard_logs_the_learner_and_the_curve(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator", reason="needs tensorboard ([train] extra)"
    )
    config = TrainConfig(steps=64, n_envs=2, eval_every=32, eval_seeds=1, n_steps=8)
    train(config, tmp_path / "run", tensorboard=tmp_path / "tb")
    (log_dir,) = (tmp_path / "tb").iterdir()
    assert len(list(log_dir.iterdir())) == 1  # one event file for the whole run
    events = event_accumulator.EventAccumulator(str(log_dir))
    events.Reload()
    scores = events.Scalars("validation/judge_score")
    assert [event.step for event in scores] == [0, 32, 64]  # the untrained point too
    assert "train/loss" in events.Tags()["scalars"]


def test_the_band_stays_inside_the_scores_range() -> None:
    low, high = score_range()
    assert low == 0.0 and high == 11.75  # 10 x a perfect plan, the checks bonus, three rounds saved
    lows, highs = clipped_band([0.2, 5.0, 11.5], [0.9, 1.0, 0.6], (low, high))
    assert lows == [0.0, 4.0, 10.9] and highs == pytest.approx([1.1, 6.0, 11.75])


def test_the_return_axis_is_never_narrower_than_the_scores_range() -> None:
    low, high = score_range()
    assert return_range([2.01, 2.02, 2.0]) == (low, high)  # noise stays noise on a 0-11.75 axis
    assert return_range([-3.0, 1.0]) == (-3.0, high) and return_range([5.0, 14.5]) == (low, 14.5)
