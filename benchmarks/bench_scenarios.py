"""How long `generate_scenario` takes per pack, for every template × difficulty, on one core.

Every episode reset generates a pack, so this cost is paid once per episode by every vector-env
worker; the number to watch is the median µs per pack. Run: `python -m benchmarks.bench_scenarios`.
"""

from __future__ import annotations

import os
import statistics
import timeit

from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario

SEEDS = range(200)  # packs per timing: different seeds, so every sampled branch is exercised
REPEAT = 7  # timings per combination; the median of them is reported


def pin_to_one_core() -> None:
    """Keep the measurement on one core, where the OS allows it."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def time_combination(template: str, difficulty: str) -> float:
    """Median µs per generated pack over `REPEAT` passes through `SEEDS`."""

    def one_pass() -> None:
        for seed in SEEDS:
            generate_scenario(seed, template, difficulty)

    one_pass()  # warm-up: load the template and build its plan cache
    totals = timeit.repeat(one_pass, repeat=REPEAT, number=1)
    return statistics.median(totals) / len(SEEDS) * 1e6


def measure() -> dict[tuple[str, str], float]:
    """Median µs per pack for every (template, difficulty)."""
    return {(t, d): time_combination(t, d) for t in BUILTIN_TEMPLATES for d in DIFFICULTIES}


def format_table(results: dict[tuple[str, str], float]) -> str:
    width = max(len(t) for t, _ in results)
    lines = [f"{'µs per pack':<{width}}" + "".join(f"{d:>9}" for d in DIFFICULTIES)]
    for template in dict.fromkeys(t for t, _ in results):
        cells = "".join(f"{results[(template, d)]:>9.1f}" for d in DIFFICULTIES)
        lines.append(f"{template:<{width}}{cells}")
    lines.append(f"median over all {len(results)} combinations: {statistics.median(results.values()):.1f} µs")
    return "\n".join(lines)


def main() -> None:
    pin_to_one_core()
    print(format_table(measure()))


if __name__ == "__main__":
    main()
