"""What the benchmark measures: each probe's score as a share of the oracle's, per split and per
difficulty, with 95 % intervals.

The probes (`replicalab.baselines.probes` and the reference policies): the oracle (reads the
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

from replicalab.baselines.oracle import OracleScientist
from replicalab.baselines.policies import BaselineScientist, Policy, RandomScientist
from replicalab.baselines.probes import MemorizerScientist, PublicReaderScientist
from replicalab.baselines.runner import Grid, Settings, run_grid
from replicalab.scenarios import DIFFICULTIES
from replicalab.scenarios.types import SPLITS

FIT_SEEDS = 50
FIRST_SEED = 10_000


def _interval(values: list[float]) -> str:
    mean = statistics.fmean(values)
    half = 1.96 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return f"{mean:.2f} ± {half:.2f}"


def normalized(
    probes: dict[str, Callable[[], Policy]], split: str, difficulties: tuple[str, ...], seeds: int
) -> dict[str, list[float]]:
    """Probe name -> its score over the oracle's, per episode of the grid."""
    grid = Grid.of(difficulties=list(difficulties), seeds=range(FIRST_SEED, FIRST_SEED + seeds))
    settings = Settings(split=split)
    oracle = [d.score for d in run_grid(grid, OracleScientist, settings=settings).digests]
    result = {}
    for name, factory in probes.items():
        scores = [d.score for d in run_grid(grid, factory, settings=settings).digests]
        result[name] = [s / o if o > 0 else 0.0 for s, o in zip(scores, oracle, strict=True)]
    result["oracle (score)"] = oracle
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40, help="seeds per template and difficulty")
    args = parser.parse_args()
    memorizer = MemorizerScientist(seeds=range(FIT_SEEDS))
    probes: dict[str, Callable[[], Policy]] = {
        "memorizer": lambda: memorizer,
        "public reader": PublicReaderScientist,
        "public reader, asks costs first": lambda: PublicReaderScientist(ask=True),
        "baseline": BaselineScientist,
        "random": RandomScientist,
    }
    per_split = 3 * len(DIFFICULTIES) * args.seeds
    print(
        "normalized score (share of the oracle's), mean ± 95 % interval: "
        f"{per_split} episodes per split, {per_split // len(DIFFICULTIES)} per test difficulty"
    )
    columns = [f"{split}" for split in SPLITS] + [f"test {level}" for level in DIFFICULTIES]
    print("| probe | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    cells: dict[str, dict[str, list[float]]] = {}
    for split in SPLITS:
        cells[split] = normalized(probes, split, DIFFICULTIES, args.seeds)
    for level in DIFFICULTIES:
        cells[f"test {level}"] = normalized(probes, "test", (level,), args.seeds)
    for name in [*probes, "oracle (score)"]:
        print(f"| {name} | " + " | ".join(_interval(cells[c][name]) for c in columns) + " |")


if __name__ == "__main__":
    main()
