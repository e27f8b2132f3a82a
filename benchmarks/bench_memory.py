"""Memory for many capped envs in one process: the resident set size (RSS) of a process holding
1, 8 and 64 Gymnasium Scientist envs with `num_train_scenarios`, once every env has played every
scenario of the capped set (3 families × 3 difficulties × `SEEDS` seeds: 1,026, over the 1,024
scenarios kept made), as many envs of one `DummyVecEnv` hold them in a long training run.

Each count runs in a fresh process (`--envs N` alone prints that process's figures); RSS is read
from `/proc/self/status` after a garbage collection, before the envs are built and after they
have played, and the table gives both and what the envs add over one env's process. The code
measured is whichever `replicalab` the interpreter imports, so the same file measures two
checkouts:

    python -m benchmarks.bench_memory [--counts 1 8 64]
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
from itertools import product

SEEDS = 114  # a cell's capped seeds: 3 × 3 × 114 = 1,026 scenarios, past the 1,024 kept
COUNTS = (1, 8, 64)


def rss_mib() -> float:
    """This process's resident set size now, in MiB."""
    gc.collect()
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("VmRSS: not in /proc/self/status")


def measure(count: int) -> tuple[float, float]:
    """RSS before `count` capped envs are built, and after each has reset into every scenario
    of the capped set."""
    from replicalab.envs.scientist_v3 import ScientistEnv
    from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES

    ScientistEnv().reset(seed=0)  # imports and first-use caches, outside the figures
    before = rss_mib()
    envs = [ScientistEnv(num_train_scenarios=SEEDS) for _ in range(count)]
    cells = list(product(BUILTIN_TEMPLATES, DIFFICULTIES, range(SEEDS)))
    for env in envs:
        env.reset(seed=0)
        for template, difficulty, seed in cells:
            env.reset(options={"template": template, "difficulty": difficulty, "scenario_seed": seed})
    return before, rss_mib()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", type=int, help="measure this many envs in this process and print it")
    parser.add_argument("--counts", type=int, nargs="+", default=list(COUNTS))
    args = parser.parse_args()
    if args.envs is not None:
        before, after = measure(args.envs)
        print(f"{args.envs} {before:.1f} {after:.1f}")
        return
    rows = []
    for count in args.counts:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_memory", "--envs", str(count)],
            capture_output=True,
            text=True,
            check=True,
        )
        _, before, after = done.stdout.split()
        rows.append((count, float(before), float(after)))
    base = rows[0][2]
    print(f"RSS of one process, MiB ({SEEDS} capped seeds a cell, every scenario played by every env)")
    print("| envs | before the envs | after | above the first row's |")
    print("|---:|---:|---:|---:|")
    for count, before, after in rows:
        print(f"| {count} | {before:.0f} | {after:.0f} | {after - base:.0f} |")


if __name__ == "__main__":
    main()
