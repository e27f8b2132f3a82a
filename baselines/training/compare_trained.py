"""`replicalab compare-rewards --train`: the same learner trained under several reward configs,
several seeds each, compared by the judge's score (needs the [train] extra).

Each (config, seed) is one `replicalab train` run (`train.train`, its files under
`runs/<config>/seed<N>/`), so a run here is exactly the run `train` makes with those options.
Configs are compared by the judge's mean score on the validation split, never by their returns:
the score does not depend on the reward config, a return is priced by it. Per config and point
of the curve the figure shows the mean over seeds and its 95 % band (Student's t over seeds,
`metrics.Estimate`). The table reports, with the same intervals over seeds:

- curve mean: the mean of a run's validation scores over its curve's points (its area under the
  curve per step, the points being evenly spaced), the measure of how fast a config learns;
- final: the last point's validation score;
- test: the final model's mean score on the test split (`eval_seeds` per template and
  difficulty), the held-out measure of what was learned;
- curve mean − first: the curve mean minus that of the first config's run of the same seed,
  paired by seed (the seed fixes the initial weights and the scenarios), so a config that
  learns faster than the first (`sparse` in the usual comparison) shows above 0;
- test − first: the test score minus that of the first config's run of the same seed, paired
  the same way: a config whose interval excludes 0 trains a better (or worse) final policy.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from replicalab.baselines.evaluation.metrics import Estimate
from replicalab.baselines.policies.structured import SavedMaskablePPO
from replicalab.baselines.training.figures import clipped_band, new_figure, score_range
from replicalab.baselines.training.maskable_ppo import CurvePoint, TrainConfig, evaluate_policy, train
from replicalab.rewards import RewardConfig


@dataclass(frozen=True)
class TrainedRun:
    """One training run of a comparison: its learning curve and its final model's test score."""

    reward_config: str
    seed: int
    curve: list[CurvePoint]
    test_score: float


@dataclass(frozen=True)
class ConfigSummary:
    """One reward config's runs, summarized over seeds (a row of the table)."""

    reward_config: str
    seeds: int
    curve_mean: Estimate
    final: Estimate
    test: Estimate
    curve_mean_vs_first: Estimate  # paired by seed; NaN for the first config itself
    test_vs_first: Estimate  # paired by seed; NaN for the first config itself

    def paired(self) -> tuple[Estimate, Estimate]:
        """The differences from the first config, paired by seed: curve mean, then test."""
        return self.curve_mean_vs_first, self.test_vs_first


def run_folder(out_dir: Path, reward_config: str, seed: int) -> Path:
    """Where a run's files go: the config's name with anything but letters, digits, `.`, `_` and
    `-` replaced, so any name is one folder."""
    return out_dir / "runs" / re.sub(r"[^A-Za-z0-9._-]", "_", reward_config) / f"seed{seed}"


def check_configs(configs: Sequence[RewardConfig]) -> None:
    """Refuse two configs with one name, or whose names share a folder: the figure, the table and
    the run folders tell configs apart by name."""
    folders: dict[Path, str] = {}
    for config in configs:
        folder = run_folder(Path(), config.name, 0).parent
        if folder in folders:
            raise ValueError(
                f"reward configs: {folders[folder]!r} and {config.name!r} need names of their own "
                "(runs, table and figure tell configs apart by name)"
            )
        folders[folder] = config.name


def train_under_configs(
    configs: Sequence[RewardConfig],
    seeds: Sequence[int],
    base: TrainConfig,
    out_dir: Path,
    on_steps: Callable[[str, int, int], None] | None = None,
) -> list[TrainedRun]:
    """Train `base` under every config with every seed, configs outermost. `on_steps(config name,
    seed, steps done)` is called as each run trains (a progress bar). A run whose folder already
    holds a finished run of the same settings is read back, not trained again, so a comparison
    that was stopped, or whose configs were trained by separate processes into one `out_dir`,
    completes with what is there."""
    check_configs(configs)
    if len(set(seeds)) != len(seeds) or not seeds:
        raise ValueError(f"seeds: expected distinct seeds, got {list(seeds)!r}")
    runs = []
    for reward_config in configs:
        for seed in seeds:
            config = dataclasses.replace(base, reward_config=reward_config, seed=seed)
            folder = run_folder(out_dir, reward_config.name, seed)
            curve = finished_curve(config, folder)
            if curve is None:
                report = None if on_steps is None else _reporter(on_steps, reward_config.name, seed)
                curve = train(config, folder, report)
            test_score, _ = evaluate_policy(SavedMaskablePPO(folder / "model.zip"), config, "test")
            runs.append(TrainedRun(reward_config.name, seed, curve, test_score))
    return runs


def finished_curve(config: TrainConfig, folder: Path) -> list[CurvePoint] | None:
    """The curve of the run in `folder` if it finished (its model saved) with the settings of
    `config` (its options and reward config, as its `config.json` records them); else None."""
    saved = folder / "config.json"
    if not (folder / "model.zip").is_file() or not saved.is_file():
        return None
    recorded = json.loads(saved.read_text(encoding="utf-8"))
    wanted = {**dataclasses.asdict(config), "reward_config": config.reward_config.model_dump(mode="json")}
    if any(recorded.get(key) != value for key, value in wanted.items()):
        return None
    with (folder / "curve.csv").open(encoding="utf-8", newline="") as handle:
        return [
            CurvePoint(int(row["steps"]), float(row["judge_score"]), float(row["scientist_return"]))
            for row in csv.DictReader(handle)
        ]


def _reporter(on_steps: Callable[[str, int, int], None], name: str, seed: int) -> Callable[[int], None]:
    return lambda done: on_steps(name, seed, done)


def summarize_runs(runs: Sequence[TrainedRun]) -> list[ConfigSummary]:
    """One summary per config, in the order the runs were trained."""
    by_config: dict[str, list[TrainedRun]] = {}
    for run in runs:
        by_config.setdefault(run.reward_config, []).append(run)
    curve_means = {
        name: {run.seed: statistics.fmean(p.judge_score for p in run.curve) for run in group}
        for name, group in by_config.items()
    }
    tests = {name: {run.seed: run.test_score for run in group} for name, group in by_config.items()}
    first = next(iter(by_config))
    summaries = []
    for index, (name, group) in enumerate(by_config.items()):
        summaries.append(
            ConfigSummary(
                reward_config=name,
                seeds=len(group),
                curve_mean=Estimate.of(list(curve_means[name].values())),
                final=Estimate.of([run.curve[-1].judge_score for run in group]),
                test=Estimate.of([run.test_score for run in group]),
                curve_mean_vs_first=_paired(curve_means[name], curve_means[first], index),
                test_vs_first=_paired(tests[name], tests[first], index),
            )
        )
    return summaries


def _paired(own: dict[int, float], first: dict[int, float], index: int) -> Estimate:
    """`own` minus `first`, seed by seed; NaN for the first config itself (index 0)."""
    if not index:
        return Estimate(math.nan, math.nan)
    return Estimate.of([own[seed] - first[seed] for seed in own if seed in first])


def curve_bands(runs: Sequence[TrainedRun]) -> dict[str, list[tuple[int, Estimate]]]:
    """Per config, the validation score at each point of the curve over its seeds. Every run of
    a comparison trains the same steps in the same rollouts, so its points fall on the same steps."""
    by_config: dict[str, list[TrainedRun]] = {}
    for run in runs:
        by_config.setdefault(run.reward_config, []).append(run)
    bands = {}
    for name, group in by_config.items():
        steps = [point.steps for point in group[0].curve]
        if any([point.steps for point in run.curve] != steps for run in group):
            raise ValueError(f"runs of {name!r}: their curves were measured at different steps")
        scores = zip(*([point.judge_score for point in run.curve] for run in group), strict=True)
        bands[name] = [(step, Estimate.of(values)) for step, values in zip(steps, scores, strict=True)]
    return bands


def write_curves(runs: Sequence[TrainedRun], path: Path) -> None:
    """Every point of every run, one row each."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["reward_config", "seed", *CurvePoint._fields])
        for run in runs:
            for point in run.curve:
                writer.writerow([run.reward_config, run.seed, *point])


def write_summaries(summaries: Sequence[ConfigSummary], path: Path) -> None:
    """The table, with each estimate's mean and 95 % half-width (empty for a single seed)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        measures = ("curve_mean", "final", "test", "curve_mean_vs_first", "test_vs_first")
        writer.writerow(
            ["reward_config", "seeds", *(f"{m}_{part}" for m in measures for part in ("mean", "ci95"))]
        )
        for row in summaries:
            estimates = [getattr(row, m) for m in measures]
            writer.writerow(
                [row.reward_config, row.seeds, *(_cell(v) for e in estimates for v in (e.mean, e.half_width))]
            )


def _cell(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.6f}"


def plot_curves(runs: Sequence[TrainedRun], path: Path, title: str) -> None:
    """The validation score's learning curves, mean and 95 % band over seeds (clipped to the
    score's range), one colour per config."""
    fig = new_figure()
    ax = fig.subplots()
    for i, (name, band) in enumerate(curve_bands(runs).items()):
        steps = [step for step, _ in band]
        means = [estimate.mean for _, estimate in band]
        seeds = sum(run.reward_config == name for run in runs)
        ax.plot(steps, means, marker="o", markersize=3, color=f"C{i % 10}", label=f"{name} ({seeds} seeds)")
        if seeds > 1:
            low, high = clipped_band(means, [estimate.half_width for _, estimate in band], score_range())
            ax.fill_between(steps, low, high, color=f"C{i % 10}", alpha=0.2, linewidth=0)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("judge score, validation split (mean, 95% band)")
    ax.set_title(title, fontsize="medium")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.savefig(path, dpi=110)
