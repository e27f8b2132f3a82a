"""Run every benchmark in turn (`make bench`); the figures go into benchmarks/RESULTS.md by hand,
with the command, so a reader can reproduce them. Each benchmark pins itself to one core where
its target is per core; the evaluate benchmark needs two for `--jobs 2`."""

from __future__ import annotations

import importlib

MODULES = ("bench_scenarios", "bench_agents", "bench_judge", "bench_env", "bench_evaluate")


def main() -> None:
    for name in MODULES:
        print(f"\n## {name}")
        importlib.import_module(f"benchmarks.{name}").main()


if __name__ == "__main__":
    main()
