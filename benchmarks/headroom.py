"""How far the throughput target (4,000 baseline episodes/s through `env()`) lies from what this
design can reach on the machine at hand.

Two costs of every episode sit outside ReplicaLab's own code (`instructions.COUNTERFACTUALS`):
pydantic's `__getattr__` hook, which on CPython 3.11 keeps every field read of every model off
the interpreter's fast path, and numpy's seeding of a new generator for every pack. This counts
a baseline episode through `env()` with each taken away, alone and together (cachegrind, as
`benchmarks.instructions` counts), then times episodes/s through `env()` and on the `Episode`
alone (`bench_env.steady_rates`, one core) as shipped and with both taken away, in alternating
processes so that the host's drift lands on both.

Run: `.venv/bin/python -m benchmarks.headroom` (about five minutes; the count needs valgrind).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys

from benchmarks.bench_env import steady_rates
from benchmarks.bench_scenarios import pin_to_one_core
from benchmarks.instructions import COUNTERFACTUALS, LOOPS, per_unit

ALTERNATIONS = 3  # processes of each kind, timed turn about


def counted() -> None:
    """Instructions per baseline episode through `env()`, as shipped and counterfactually."""
    loop, _, short, long = LOOPS[-1]
    variants = [(), *((name,) for name in COUNTERFACTUALS), tuple(COUNTERFACTUALS)]
    print("| baseline episode through env() | instructions | change |\n|---|---:|---:|")
    shipped = 0.0
    for without in variants:
        per_episode = per_unit(loop, short, long, ("env",), without)["env"]["Ir"]
        shipped = shipped or per_episode
        label = " and ".join(COUNTERFACTUALS[name][0] for name in without) or "as shipped"
        print(f"| {label} | {per_episode:,.0f} | {per_episode / shipped - 1:+.1%} |")


def rates_in_process(without: list[str]) -> dict[str, float]:
    """Median episodes/s of this process's `steady_rates`, with `without` applied first."""
    pin_to_one_core()  # the target is per core
    for name in without:
        COUNTERFACTUALS[name][1]()
    rates = steady_rates()
    return {kind: statistics.median(rates[kind]) for kind in ("env", "domain")}


def timed() -> None:
    """Episodes/s as shipped and without both costs, each from its own processes."""
    both = sorted(COUNTERFACTUALS)
    results: dict[str, list[dict[str, float]]] = {"as shipped": [], "without both": []}
    for _ in range(ALTERNATIONS):
        for label, without in (("as shipped", []), ("without both", both)):
            command = [sys.executable, "-m", "benchmarks.headroom", "--rates", *without]
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            results[label].append(json.loads(out))
    print("\n| episodes/s, one core | through env() | on the Episode alone |\n|---|---:|---:|")
    for label, runs in results.items():
        cells = []
        for kind in ("env", "domain"):
            values = sorted(run[kind] for run in runs)
            cells.append(f"{statistics.median(values):,.0f} ({values[0]:,.0f}-{values[-1]:,.0f})")
        print(f"| {label} | {cells[0]} | {cells[1]} |")


def main() -> None:
    if sys.argv[1:2] == ["--rates"]:
        print(json.dumps(rates_in_process(sys.argv[2:])))
        return
    if shutil.which("valgrind") is None:
        print("valgrind is not on PATH: nothing counted")
    else:
        counted()
    timed()


if __name__ == "__main__":
    main()
