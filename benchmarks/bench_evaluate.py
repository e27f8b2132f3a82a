"""Episodes per second of the evaluation runner (`baselines.runner.run_grid`), jobs 1 and 2.

An episode here is everything `replicalab evaluate` pays for: scenario generation, every step
of both policies, the `EpisodeLog`, and with workers its JSON line and digest (the parent orders
them and never parses a log). Best of `REPEATS` runs over 3 templates × 3 difficulties × `SEEDS`
seeds. On a machine with two cores, `jobs=2` gains only what the parent's share of the work
(ordering, unpickling) and the worker start-up leave free; `bench_scaling` goes further.

    python -m benchmarks.bench_evaluate [--seeds N]
"""

from __future__ import annotations

import argparse
import time

from replicalab.baselines.evaluation.runner import Grid, PolicyFactory, run_grid
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.seats import BaselineScientist, RandomScientist

SEEDS = 100
REPEATS = 3
POLICIES: dict[str, PolicyFactory] = {
    "baseline": BaselineScientist,
    "random": RandomScientist,
    "oracle": OracleScientist,
}


def episodes_per_second(grid: Grid, factory: PolicyFactory, jobs: int) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        run_grid(grid, factory, jobs=jobs)
        best = min(best, time.perf_counter() - start)
    return len(grid.cells()) / best


def run(seeds: int = SEEDS) -> dict[str, float]:
    """Episodes per second, keyed `evaluate_{policy}_jobs{n}_eps`."""
    grid = Grid.of(seeds=seeds)
    return {
        f"evaluate_{name}_jobs{jobs}_eps": episodes_per_second(grid, factory, jobs)
        for name, factory in POLICIES.items()
        for jobs in (1, 2)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Episodes per second of run_grid.")
    parser.add_argument("--seeds", type=int, default=SEEDS, help="seeds per template × difficulty")
    args = parser.parse_args()
    for name, value in run(args.seeds).items():
        print(f"{name}: {value:,.0f} episodes/s ({9 * args.seeds} episodes, best of {REPEATS})")


if __name__ == "__main__":
    main()
