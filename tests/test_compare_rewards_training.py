"""`compare-rewards --train`: MaskablePPO trained under several reward configs, 3 seeds or more
each, compared by the judge's validation score (mean and 95 % band over seeds) and by the final
models' test score; the options of the other mode are refused by name."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replicalab.baselines.cli import app
from replicalab.baselines.evaluation.metrics import Estimate
from replicalab.baselines.training.compare_trained import (
    TrainedRun,
    check_configs,
    curve_bands,
    finished_curve,
    plot_curves,
    run_folder,
    summarize_runs,
    write_summaries,
)
from replicalab.baselines.training.maskable_ppo import CurvePoint, TrainConfig
from replicalab.rewards import RewardConfig, get_preset

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(name: str, seed: int, scores: list[float], test: float) -> TrainedRun:
    curve = [CurvePoint(100 * (i + 1), score, score - 1.0) for i, score in enumerate(scores)]
    return TrainedRun(name, seed, curve, test)


RUNS = [
    _run("sparse", 0, [1.0, 2.0, 3.0], 2.5),
    _run("sparse", 1, [1.0, 4.0, 5.0], 4.5),
    _run("sparse", 2, [1.0, 3.0, 4.0], 3.5),
    _run("shaped", 0, [2.0, 6.0, 6.0], 6.0),
    _run("shaped", 1, [4.0, 6.0, 6.0], 5.0),
    _run("shaped", 2, [3.0, 6.0, 6.0], 7.0),
]


def test_configs_are_summarized_over_seeds_by_the_judge_score() -> None:
    sparse, shaped = summarize_runs(RUNS)
    assert (sparse.reward_config, sparse.seeds, shaped.reward_config) == ("sparse", 3, "shaped")
    assert sparse.curve_mean == Estimate.of([2.0, 10.0 / 3, 8.0 / 3])  # each run's mean over its points
    assert sparse.final == Estimate.of([3.0, 5.0, 4.0])
    assert shaped.test == Estimate.of([6.0, 5.0, 7.0])
    # paired by seed against the first config: shaped's curve means minus sparse's
    assert shaped.curve_mean_vs_first == Estimate.of([14 / 3 - 2.0, 16 / 3 - 10 / 3, 5.0 - 8 / 3])
    assert shaped.test_vs_first == Estimate.of([6.0 - 2.5, 5.0 - 4.5, 7.0 - 3.5])
    assert math.isnan(sparse.curve_mean_vs_first.mean) and math.isnan(sparse.test_vs_first.mean)
    bands = curve_bands(RUNS)
    assert [step for step, _ in bands["shaped"]] == [100, 200, 300]
    first, last = bands["shaped"][0][1], bands["shaped"][-1][1]
    assert first == Estimate.of([2.0, 4.0, 3.0]) and (last.mean, last.half_width) == (6.0, 0.0)


def test_curves_measured_at_different_steps_are_not_averaged() -> None:
    shifted = TrainedRun("sparse", 3, [CurvePoint(150, 1.0, 0.0)] * 3, 1.0)
    with pytest.raises(ValueError, match="runs of 'sparse': their curves were measured at different steps"):
        curve_bands([*RUNS, shifted])


def test_the_figure_and_the_table_are_written(tmp_path: Path) -> None:
    plot_curves(RUNS, tmp_path / "curves.png", "a title")
    assert (tmp_path / "curves.png").read_bytes().startswith(PNG_MAGIC)
    write_summaries(summarize_runs(RUNS[:1]), tmp_path / "one_seed.csv")
    (row,) = csv.DictReader((tmp_path / "one_seed.csv").open(encoding="utf-8"))
    assert row["seeds"] == "1" and float(row["test_mean"]) == 2.5 and row["test_ci95"] == ""  # no interval


def test_configs_are_told_apart_by_name() -> None:
    assert run_folder(Path("out"), "my/config v2", 1) == Path("out/runs/my_config_v2/seed1")
    custom = RewardConfig(name="sparse", step_cost=0.1)
    with pytest.raises(ValueError, match="'sparse' and 'sparse' need names of their own"):
        check_configs([get_preset("sparse"), custom])
    with pytest.raises(ValueError, match="'a/b' and 'a_b' need names of their own"):
        check_configs([RewardConfig(name="a/b"), RewardConfig(name="a_b")])
    check_configs([get_preset("sparse"), custom.model_copy(update={"name": "stepped"})])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--steps", "64"], "--steps does not apply without --train"),
        (["--train-seeds", "4"], "--train-seeds does not apply without --train"),
        (["--reading", "facts"], "--reading does not apply without --train"),
        (["--train", "-s", "baseline"], "--scientists does not apply with --train"),
        (["--train", "--split", "test"], "--split does not apply with --train"),
        (["--train", "--train-seeds", "2"], "--train-seeds"),
        (["--train", "-p", "sparse,sparse.json"], "need names of their own"),
    ],
)
def test_options_of_the_other_mode_are_refused_by_name(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sparse.json").write_text(RewardConfig(name="sparse", step_cost=0.1).model_dump_json())
    result = CliRunner(env={"COLUMNS": "300"}).invoke(app, ["compare-rewards", *args, "--out-dir", "out"])
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "out").exists()  # refused before anything is written


@pytest.mark.slow
def test_a_smoke_comparison_trains_every_config_and_seed(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="training needs the [train] extra")
    stepped = tmp_path / "stepped.json"
    stepped.write_text(RewardConfig(name="stepped", step_cost=0.1).model_dump_json(), encoding="utf-8")
    out = tmp_path / "cmp"
    args = ["--steps", "64", "--n-envs", "2", "--n-steps", "16", "--eval-every", "32", "--eval-seeds", "1"]
    args += ["--reading", "facts"]
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["compare-rewards", "--train", "-p", f"sparse,{stepped}", *args, "--out-dir", str(out)]
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((out / "learning_curves.csv").open(encoding="utf-8")))
    runs = {(row["reward_config"], int(row["seed"])) for row in rows}
    assert runs == {(name, seed) for name in ("sparse", "stepped") for seed in range(3)}
    for name, seed in runs:
        folder = out / "runs" / name / f"seed{seed}"
        assert (folder / "model.zip").is_file()
        assert json.loads((folder / "config.json").read_text(encoding="utf-8"))["reading"] == "facts"
        own = list(csv.DictReader((folder / "curve.csv").open(encoding="utf-8")))
        assert own == [
            {key: row[key] for key in CurvePoint._fields}
            for row in rows
            if (row["reward_config"], int(row["seed"])) == (name, seed)
        ]
        assert [int(point["steps"]) for point in own] == [0, 32, 64]
    finals = list(csv.DictReader((out / "final_scores.csv").open(encoding="utf-8")))
    assert [(row["reward_config"], row["seeds"]) for row in finals] == [("sparse", "3"), ("stepped", "3")]
    assert all(
        0.0 <= float(row["test_mean"]) <= 13.0 and not math.isnan(float(row["test_ci95"])) for row in finals
    )
    assert finals[0]["test_vs_first_mean"] == "" and finals[1]["test_vs_first_mean"] != ""  # paired by seed
    assert (out / "learning_curves.png").read_bytes().startswith(PNG_MAGIC)
    assert "stepped" in result.stdout and "test" in result.stdout


def test_a_finished_run_is_read_back_only_with_the_same_settings(tmp_path: Path) -> None:
    config = TrainConfig(steps=512, eval_every=256, seed=3, reward_config=get_preset("sparse"))
    folder = tmp_path / "run"
    folder.mkdir()
    recorded = {**dataclasses.asdict(config), "reward_config": config.reward_config.model_dump(mode="json")}
    (folder / "config.json").write_text(json.dumps({**recorded, "learner": {}}), encoding="utf-8")
    (folder / "curve.csv").write_text("steps,judge_score,scientist_return\n256,1.5,0.5\n512,2.0,1.0\n")
    assert finished_curve(config, folder) is None  # no model saved: it did not finish
    (folder / "model.zip").write_bytes(b"")
    assert finished_curve(config, folder) == [CurvePoint(256, 1.5, 0.5), CurvePoint(512, 2.0, 1.0)]
    assert finished_curve(dataclasses.replace(config, steps=1024), folder) is None
    assert finished_curve(dataclasses.replace(config, reward_config=get_preset("default")), folder) is None
