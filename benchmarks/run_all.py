"""Run every benchmark in turn (`make bench`); the figures go into benchmarks/RESULTS.md by hand,
with the command, so a reader can reproduce them.

Each benchmark runs in its own process: those whose rates are per core pin themselves to one
core, and that pinning must not leak into the evaluate benchmark, which needs two for `--jobs 2`.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

MODULES = (
    "bench_scenarios",
    "bench_agents",
    "bench_judge",
    "bench_env",
    "bench_memory",
    "instructions",
    "bench_evaluate",
    "bench_scaling",
    "bench_llm",
    "bench_ray",
    "bench_server",
    "bench_server_abuse",
    "bench_env_share",
)
NEEDS = {
    "bench_ray": "ray",
    "bench_server": "fastapi",
    "bench_server_abuse": "fastapi",
    "bench_env_share": "sb3_contrib",
}
"""A benchmark of an optional extra runs where its package is installed."""


def main() -> None:
    for name in MODULES:
        print(f"\n## {name}", flush=True)
        if name in NEEDS and importlib.util.find_spec(NEEDS[name]) is None:
            print(f"skipped: {NEEDS[name]} is not installed", flush=True)
            continue
        subprocess.run([sys.executable, "-m", f"benchmarks.{name}"], check=True)


if __name__ == "__main__":
    main()
