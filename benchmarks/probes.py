"""What the benchmark measures: each probe's score as a share of the oracle's, per split and per
difficulty, with 95 % intervals.

The probes (`replicalab.baselines.policies.probes` and the reference policies): the oracle (reads the
hidden study: the ceiling), the memorizer fitted on the train split, the public reader, the
baseline and random legal moves. Every probe plays the same scenarios; a probe's normalized
score on an episode is its judge score over the oracle's on the same scenario, and the table
gives the mean over episodes with a normal 95 % interval. The memorizer is fitted on train
seeds 0..`FIT_SEEDS`-1; the scenarios measured use seeds from `FIRST_SEED` on, so its train
figure is on papers it knows but packs it never saw.

    python -m benchmarks.probes [--seeds 40]
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable

from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.policies.interface import Policy
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.probes import MemorizerScientist, PublicReaderScientist
from replicalab.baselines.policies.seats import BaselineScientist, RandomScientist
from replicalab.digest import EpisodeDigest
from replicalab.scenarios import DIFFICULTIES
from replicalab.scenarios.types import SPLITS

FIT_SEEDS = 50
FIRST_SEED = 10_000
BLIND = "public reader, proposes blind"
ASKS = "public reader (asks, revises)"


def _interval(values: list[float]) -> str:
    mean = statistics.fmean(values)
    half = 1.96 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return f"{mean:.2f} ± {half:.2f}"


def played(
    probes: dict[str, Callable[[], Policy]], split: str, difficulties: tuple[str, ...], seeds: int
) -> dict[str, list[EpisodeDigest]]:
    """Probe name -> its episodes of the grid, the oracle's included, in grid order."""
    grid = Grid.of(difficulties=list(difficulties), seeds=range(FIRST_SEED, FIRST_SEED + seeds))
    settings = Settings(split=split)
    every = {**probes, "oracle": OracleScientist}
    return {name: run_grid(grid, factory, settings=settings).digests for name, factory in every.items()}


def normalized(episodes: dict[str, list[EpisodeDigest]], name: str) -> list[float]:
    """`name`'s score over the oracle's on the same scenario, per episode."""
    oracle = [d.score for d in episodes["oracle"]]
    scores = [d.score for d in episodes[name]]
    return [s / o if o > 0 else 0.0 for s, o in zip(scores, oracle, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40, help="seeds per template and difficulty")
    args = parser.parse_args()
    memorizer = MemorizerScientist(seeds=range(FIT_SEEDS))
    probes: dict[str, Callable[[], Policy]] = {
        "memorizer": lambda: memorizer,
        BLIND: lambda: PublicReaderScientist("propose", "adopt"),
        ASKS: PublicReaderScientist,
        "baseline": BaselineScientist,
        "random": RandomScientist,
    }
    per_split = 3 * len(DIFFICULTIES) * args.seeds
    runs: dict[str, dict[str, list[EpisodeDigest]]] = {
        split: played(probes, split, DIFFICULTIES, args.seeds) for split in SPLITS
    }
    runs |= {f"test {level}": played(probes, "test", (level,), args.seeds) for level in DIFFICULTIES}
    print(
        "normalized score (share of the oracle's), mean ± 95 % interval: "
        f"{per_split} episodes per split, {per_split // len(DIFFICULTIES)} per test difficulty"
    )
    columns = [*SPLITS, *(f"test {level}" for level in DIFFICULTIES)]
    _table(columns, [(name, [_interval(normalized(runs[c], name)) for c in columns]) for name in probes])
    print("\njudge score and rounds used on the test split, per difficulty (mean ± 95 % interval)")
    levels = [f"test {level}" for level in DIFFICULTIES]
    rows = [
        (
            name,
            [_interval([d.score for d in runs[c][name]]) for c in levels]
            + [_mean_rounds(runs, levels, name)],
        )
        for name in [*probes, "oracle"]
    ]
    _table([*(f"score, {c}" for c in levels), "rounds easy / medium / hard"], rows)
    hard = runs["test hard"]
    gain = [a.score - b.score for a, b in zip(hard[ASKS], hard[BLIND], strict=True)]
    print(f"\non test hard, asking first minus proposing blind (paired judge score): {_interval(gain)}")


def _mean_rounds(runs: dict[str, dict[str, list[EpisodeDigest]]], columns: list[str], name: str) -> str:
    return " / ".join(f"{statistics.fmean(d.rounds_used for d in runs[c][name]):.2f}" for c in columns)


def _table(columns: list[str], rows: list[tuple[str, list[str]]]) -> None:
    print("| probe | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for name, cells in rows:
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
