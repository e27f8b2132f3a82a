"""Compare reward presets: the same policies on the same seeds, one run per (preset, policy).

A preset changes what an episode pays, not the game: no built-in policy learns from the
reward, so they make the same moves under every built-in preset, and the differences between
rows are differences of reward design alone. The judge's score of an agreed protocol does not
depend on the preset (a preset prices only the return). The table (CSV) and the figure show
each policy's mean return under each preset, split into its named components
(`metrics.mean_components`), where a shaping term or a penalty shows its weight.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from replicalab.baselines.evaluation.metrics import Estimate, mean_components
from replicalab.baselines.evaluation.runner import Grid, PolicyFactory, Settings, run_grid
from replicalab.digest import EpisodeDigest
from replicalab.rewards import RewardConfig


@dataclass(frozen=True)
class ComparisonRow:
    preset: str
    scientist: str
    episodes: int
    returns: Estimate  # the Scientist's return
    score: float  # mean judge total of agreed protocols (0 otherwise), whatever the preset
    agreement_rate: float
    components: dict[str, float]  # mean per episode, by component name


def compare_rewards(
    grid: Grid,
    scientists: dict[str, PolicyFactory],
    configs: Sequence[RewardConfig],
    *,
    max_rounds: int = 6,
    split: str = "train",
    jobs: int = 1,
    on_episode: Callable[[EpisodeDigest], None] | None = None,
) -> list[ComparisonRow]:
    """One row per (preset, scientist), presets outermost, against the grounded Lab Manager."""
    rows = []
    for config in configs:
        settings = Settings(reward_config=config, max_rounds=max_rounds, split=split)
        for name, factory in scientists.items():
            result = run_grid(grid, factory, settings=settings, jobs=jobs, on_episode=on_episode)
            digests = result.digests
            rows.append(
                ComparisonRow(
                    preset=config.name,
                    scientist=name,
                    episodes=len(digests),
                    returns=Estimate.of([d.scientist_return for d in digests]),
                    score=sum(d.score for d in digests) / len(digests),
                    agreement_rate=sum(d.verdict == "agreement" for d in digests) / len(digests),
                    components=mean_components(result.logs),
                )
            )
    return rows


def component_names(rows: Sequence[ComparisonRow]) -> list[str]:
    return sorted({name for row in rows for name in row.components})


def write_csv(rows: Sequence[ComparisonRow], path: Path) -> None:
    names = component_names(rows)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(
            [
                "preset",
                "scientist",
                "episodes",
                "return_mean",
                "return_ci95",
                "score_mean",
                "agreement_rate",
                *names,
            ]
        )
        for row in rows:
            writer.writerow(
                [
                    row.preset,
                    row.scientist,
                    row.episodes,
                    f"{row.returns.mean:.6f}",
                    f"{row.returns.half_width:.6f}",
                    f"{row.score:.6f}",
                    f"{row.agreement_rate:.6f}",
                    *(f"{row.components.get(n, 0.0):.6f}" for n in names),
                ]
            )


def plot(rows: Sequence[ComparisonRow], path: Path) -> None:
    """One panel per scientist: grouped bars of mean components per preset, a marker for the
    mean return. Drawn on a bare `Figure` (Agg canvas): no pyplot state, no display needed."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    scientists = list(dict.fromkeys(row.scientist for row in rows))
    presets = list(dict.fromkeys(row.preset for row in rows))
    names = component_names(rows)
    by_key = {(row.scientist, row.preset): row for row in rows}
    fig = Figure(figsize=(4.2 * len(scientists) + 1.5, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(scientists), sharey=True, squeeze=False)[0]
    width = 0.8 / max(len(names), 1)
    for ax, scientist in zip(axes, scientists, strict=True):
        for j, name in enumerate(names):
            xs = [i - 0.4 + width * (j + 0.5) for i in range(len(presets))]
            heights = [by_key[(scientist, p)].components.get(name, 0.0) for p in presets]
            ax.bar(xs, heights, width=width, label=name, color=f"C{j % 10}")
        returns = [by_key[(scientist, p)].returns.mean for p in presets]
        ax.scatter(range(len(presets)), returns, marker="D", color="black", zorder=3, label="mean return")
        ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.set_xticks(range(len(presets)), presets)
        ax.set_title(scientist)
        ax.set_xlabel("reward preset")
    axes[0].set_ylabel("mean reward per episode (scientist)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize="small")
    fig.savefig(path, dpi=110)
