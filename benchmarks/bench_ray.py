"""What `replicalab evaluate --backend ray` costs against worker processes, on this machine.

1. The command as a user runs it, default grid (baseline against the grounded Lab Manager and the
   oracle, 3 templates × 3 difficulties × 20 seeds = 360 episodes, test split), `--jobs J`, with
   `--backend processes` and then `--backend ray`, each a fresh `replicalab evaluate` process timed
   from start to exit: the interpreter, the imports, the pool or the local Ray's start, the
   episodes, the table. Both logs are compared byte for byte.
2. Inside one process, `run_grid` over 3 × 3 × `SEEDS` seeds with the baseline Scientist: once
   with `jobs` worker processes (their start included, as in every run), then on Ray started
   beforehand (`ray.init(num_cpus=J)`, timed apart), whose first run starts Ray's worker
   processes and whose second run finds them warm. So the table separates what starting Ray
   costs from what playing through Ray costs.

Needs Ray (the [rllib] extra).

    python -m benchmarks.bench_ray [--jobs J] [--seeds S]
"""

from __future__ import annotations

import argparse
import filecmp
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ray

from replicalab.baselines.evaluation.runner import BACKENDS, Backend, Grid, run_grid
from replicalab.baselines.policies.seats import BaselineScientist

SEEDS = 200
_CLI = [sys.executable, "-c", "from replicalab.baselines.cli import app; app(prog_name='replicalab')"]


def _evaluate(backend: Backend, jobs: int, out: Path) -> float:
    start = time.perf_counter()
    command = [
        *_CLI,
        "evaluate",
        "-s",
        "baseline",
        "--jobs",
        str(jobs),
        "--backend",
        backend,
        "--out",
        str(out),
    ]
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def _run(grid: Grid, jobs: int, backend: Backend) -> float:
    start = time.perf_counter()
    run_grid(grid, BaselineScientist, jobs=jobs, backend=backend)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description="evaluate --backend ray against worker processes.")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=SEEDS)
    args = parser.parse_args()
    print(f"Python {platform.python_version()}, Ray {ray.__version__}, --jobs {args.jobs}")

    with tempfile.TemporaryDirectory() as folder:
        logs = {backend: Path(folder) / f"{backend}.jsonl" for backend in BACKENDS}
        seconds = {backend: _evaluate(backend, args.jobs, path) for backend, path in logs.items()}
        same = filecmp.cmp(logs["processes"], logs["ray"], shallow=False)
    print("\n`replicalab evaluate` (default grid, 360 episodes), whole command:")
    for backend, value in seconds.items():
        print(f"  --backend {backend:<9} {value:6.2f} s")
    print(f"  logs byte-identical: {same}")

    grid = Grid.of(seeds=args.seeds)
    episodes = len(grid.cells())
    processes = _run(grid, args.jobs, "processes")
    start = time.perf_counter()
    ray.init(num_cpus=args.jobs, include_dashboard=False)
    started = time.perf_counter() - start
    cold, warm = _run(grid, args.jobs, "ray"), _run(grid, args.jobs, "ray")
    ray.shutdown()
    print(f"\nrun_grid, baseline, {episodes} episodes:")
    print(f"  worker processes        {processes:6.2f} s  {episodes / processes:7.0f} episodes/s")
    print(f"  ray.init (local)        {started:6.2f} s")
    print(f"  Ray, first run          {cold:6.2f} s  {episodes / cold:7.0f} episodes/s")
    print(f"  Ray, workers warm       {warm:6.2f} s  {episodes / warm:7.0f} episodes/s")


if __name__ == "__main__":
    main()
