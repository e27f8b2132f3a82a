"""How parallel rollouts scale with worker processes, on whatever machine runs this.

1. The evaluation runner: `run_grid(Grid.of(seeds=S), BaselineScientist, jobs=j)`, the work
   `replicalab evaluate` does (see `bench_evaluate`). Episodes/s over the 9 × S cells, best of
   `REPEATS` runs; each run starts its own process pool, so the pool's start-up is in the
   figure, as it is in every evaluation. The parent orders what the workers send (each
   episode's JSON line and digest), and that serial share caps the speed-up.
2. Gymnasium vector rollouts: N copies of `ReplicaLab/Scientist-v3` in `AsyncVectorEnv` (one
   process each) and, for comparison, in `SyncVectorEnv` (all in this process). Env steps/s
   over `vector_steps` vector steps, best of `REPEATS` blocks, after a warm-up and excluding
   construction. The policy proposes the cheapest legal protocol (the first legal value of
   every component, read off the flat action mask) and accepts as soon as accepting is legal,
   so an episode is two steps (propose, which the Lab Manager answers inside the step, then
   accept): a short-episode load where resets and the judge weigh heavily. In Gymnasium's
   default autoreset mode the step after a terminal one only resets that copy; such steps are
   not counted as env steps, but their time is in the figure, as a trainer pays it too.

3. The machine's ceiling: `CALIBRATION_TASKS` tasks per worker of a fixed pure-Python integer
   loop in a `ProcessPoolExecutor` started before timing, best of `REPEATS`. Nothing is shared
   and nothing waits, so its speed-up is the most this machine gives N processes of CPU-bound
   Python; on a shared VM, whose vCPUs may be hyperthreads or lent to neighbours, it can be far
   below N. Each scaling table's "of ceiling" is its speed-up over this one: what is lost there
   is ours, not the machine's.

For the runner, the CPU seconds of the best run per episode, in this process (all its threads:
`RUSAGE_SELF`) and in the pool's workers (`RUSAGE_CHILDREN`, which counts only children waited
for: `run_grid` joins its pool before it returns, so the difference around the call is its
workers'). At one job the parent plays every episode itself. At more, the parent unpickles and
orders the results; when its CPU time nears the run's wall time ("parent busy", which may pass
100% as its threads count too) it is the serial bottleneck, and more workers cannot help. The
figures need `resource`, which is Unix-only; elsewhere the columns read "n/a".

Worker counts are 1, 2, 4, 8, ... up to the cores this process may use, and that number when it
is not a power of two; `--workers` replaces them (1 is always added, as the base). Speed-up is
over one worker (one copy); efficiency is speed-up ÷ workers. Unlike `bench_env`, this benchmark
does not pin itself to one core: the cores are what it measures.

    python -m benchmarks.bench_scaling [--workers 1 2 4] [--seeds S] [--vector-steps K]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import gymnasium as gym
import numpy as np

import replicalab.envs
from replicalab.baselines.evaluation.runner import Grid, run_grid
from replicalab.baselines.policies.seats import BaselineScientist
from replicalab.envs.spaces import A_TYPE, SCIENTIST_MASK_SIZE, SCIENTIST_NVEC
from replicalab.models import ScientistActionType
from replicalab.moves import SCIENTIST_ACTION_TYPES

if sys.platform != "win32":
    import resource

SEEDS = 300  # 2,700 episodes: about 1.5 s at jobs=1 on the 2-core sandbox
VECTOR_STEPS = 1000
WARM_UP_STEPS = 20
REPEATS = 3
RESET_SEED = 0
CALIBRATION_LOOPS = 1_000_000  # about 0.07 s of one core on the 2-core sandbox
CALIBRATION_TASKS = 6  # per worker, so that one slow task weighs little

_OFFSETS = np.concatenate([[0], np.cumsum(SCIENTIST_NVEC)[:-1]])
_TYPE_PREFERENCE = np.array(
    [
        SCIENTIST_ACTION_TYPES.index(kind)
        for kind in (
            ScientistActionType.ACCEPT,
            ScientistActionType.PROPOSE_PROTOCOL,
            ScientistActionType.REVISE_PROTOCOL,
            ScientistActionType.REQUEST_INFO,
        )
    ]
)
# A value's place in its component's order of preference: the first value first, except that the
# action types go by `_TYPE_PREFERENCE`. Ranked from the top, so that one `reduceat` over
# mask × rank finds every component's most preferred legal value in every copy at once.
_PLACE = np.arange(SCIENTIST_MASK_SIZE) - np.repeat(_OFFSETS, SCIENTIST_NVEC)
_PLACE[_OFFSETS[A_TYPE] + _TYPE_PREFERENCE] = np.arange(len(_TYPE_PREFERENCE))
_RANK = SCIENTIST_MASK_SIZE - _PLACE


def worker_counts(cap: int) -> list[int]:
    counts = [1]
    while counts[-1] * 2 <= cap:
        counts.append(counts[-1] * 2)
    return counts if counts[-1] == cap else [*counts, cap]


def usable_cpus() -> int:
    """The cores this process may run on, which a container or taskset may keep below the host's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def machine() -> dict[str, str]:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            model = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {
        "cpus": f"{usable_cpus()} usable (os.cpu_count() {os.cpu_count()})",
        "processor": model,
        "python": platform.python_version(),
        "start method": multiprocessing.get_start_method(),
        "gymnasium": gym.__version__,
    }


def _spin(loops: int) -> int:
    """CPU-bound Python that shares nothing: the work that parallelizes perfectly."""
    total = 0
    for i in range(loops):
        total ^= i * i
    return total


def calibration_rate(workers: int) -> float:
    """Tasks/s of `_spin` over `workers` processes, best of `REPEATS`."""
    tasks = [CALIBRATION_LOOPS] * (workers * CALIBRATION_TASKS)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        # Start the workers outside the timing; a late starter slows the first repeat only.
        list(pool.map(_spin, [CALIBRATION_LOOPS] * workers))
        best = float("inf")
        for _ in range(REPEATS):
            start = time.perf_counter()
            list(pool.map(_spin, tasks))
            best = min(best, time.perf_counter() - start)
    return len(tasks) / best


def _cpu_seconds() -> tuple[float, float] | None:
    """User + system CPU seconds of this process and of its waited-for children; None where
    there is no `resource`."""
    if sys.platform == "win32":
        return None
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def runner_rate(grid: Grid, jobs: int) -> dict[str, float]:
    """The fastest of `REPEATS` runs: episodes/s (`eps`) and, where `_cpu_seconds` can tell,
    CPU µs per episode in this process (`parent_us`) and in the pool's workers (`workers_us`)."""
    episodes = len(grid.cells())
    best: dict[str, float] = {"eps": 0.0}
    for _ in range(REPEATS):
        before = _cpu_seconds()
        start = time.perf_counter()
        run_grid(grid, BaselineScientist, jobs=jobs)
        elapsed = time.perf_counter() - start
        after = _cpu_seconds()
        if episodes / elapsed > best["eps"]:
            best = {"eps": episodes / elapsed}
            if before is not None and after is not None:
                best["parent_us"] = (after[0] - before[0]) / episodes * 1e6
                best["workers_us"] = (after[1] - before[1]) / episodes * 1e6
    return best


def policy(mask: np.ndarray) -> np.ndarray:
    """Accept when legal, else propose, revise, ask; the first legal value of every other
    component. A component with no legal value (a finished episode's type) gets its first choice."""
    best = np.maximum.reduceat(mask * _RANK, _OFFSETS, axis=1)
    action = (SCIENTIST_MASK_SIZE - best) % SCIENTIST_MASK_SIZE  # the place; none legal: 0
    action[:, A_TYPE] = _TYPE_PREFERENCE[action[:, A_TYPE]]
    return action


def _scientist_env() -> gym.Env[Any, Any]:
    """Module level so the env factory pickles where worker processes do not fork."""
    return gym.make(replicalab.envs.SCIENTIST_ENV_ID)


def vector_rate(
    vector_class: Callable[[list[Callable[[], gym.Env[Any, Any]]]], gym.vector.VectorEnv],
    copies: int,
    vector_steps: int,
) -> tuple[float, float]:
    """(Env steps/s, the policy's largest share of a timed block's wall time)."""
    vector_env = vector_class([_scientist_env] * copies)
    try:
        observation, _ = vector_env.reset(seed=RESET_SEED)
        resetting = np.zeros(copies, dtype=bool)  # the copies whose next step is a reset
        for _ in range(WARM_UP_STEPS):
            observation, _, terminated, truncated, _ = vector_env.step(policy(observation["action_mask"]))
            resetting = terminated | truncated
        best_rate, policy_share = 0.0, 0.0
        for _ in range(REPEATS):
            steps, in_policy = 0, 0.0
            start = time.perf_counter()
            for _ in range(vector_steps):
                before = time.perf_counter()
                action = policy(observation["action_mask"])
                in_policy += time.perf_counter() - before
                steps += copies - int(resetting.sum())
                observation, _, terminated, truncated, _ = vector_env.step(action)
                resetting = terminated | truncated
            elapsed = time.perf_counter() - start
            best_rate = max(best_rate, steps / elapsed)
            policy_share = max(policy_share, in_policy / elapsed)
    finally:
        vector_env.close()
    return best_rate, policy_share


def run(workers: list[int], seeds: int = SEEDS, vector_steps: int = VECTOR_STEPS) -> dict[str, float]:
    """Rates at each count in `workers` (include 1: speed-ups are over it), keyed
    `calibration_n{n}_rate` (tasks/s), `runner_jobs{j}_eps` (episodes/s), `async_n{n}_steps` and
    `sync_n{n}_steps` (env steps/s); the runner's CPU µs per episode `runner_jobs{j}_parent_us`
    and `runner_jobs{j}_workers_us` (Unix only); and `policy_share`, the policy's largest share
    of a timed vector block."""
    out = {f"calibration_n{n}_rate": calibration_rate(n) for n in workers}
    grid = Grid.of(seeds=seeds)
    for jobs in workers:
        out.update({f"runner_jobs{jobs}_{key}": value for key, value in runner_rate(grid, jobs).items()})
    shares = []
    for copies in workers:
        for name, vector_class in (("async", gym.vector.AsyncVectorEnv), ("sync", gym.vector.SyncVectorEnv)):
            rate, share = vector_rate(vector_class, copies, vector_steps)
            out[f"{name}_n{copies}_steps"] = rate
            shares.append(share)
    out["policy_share"] = max(shares)
    return out


def _scaling(rate: float, base: float, workers: int) -> str:
    speed_up = rate / base
    return f"{speed_up:.2f}× | {speed_up / workers:.0%}"


def _of_ceiling(rates: dict[str, float], key: str, workers: int) -> str:
    """Speed-up over the calibration's at the same count: below 100% is lost to our code, not
    to the machine."""
    speed_up = rates[key.format(workers)] / rates[key.format(1)]
    ceiling = rates[f"calibration_n{workers}_rate"] / rates["calibration_n1_rate"]
    return f"{speed_up / ceiling:.0%}"


def _cpu_columns(rates: dict[str, float], jobs: int) -> str:
    """The parent's CPU time ÷ the run's wall time is last: near 100%, the parent is the serial
    bottleneck (its threads count too, so it may pass 100%)."""
    parent = rates.get(f"runner_jobs{jobs}_parent_us")
    if parent is None:
        return "n/a | n/a | n/a"
    busy = parent * rates[f"runner_jobs{jobs}_eps"] / 1e6
    return f"{parent:,.0f} | {rates[f'runner_jobs{jobs}_workers_us']:,.0f} | {busy:.0%}"


def main() -> None:
    parser = argparse.ArgumentParser(description="Scaling of run_grid and vector envs with worker processes.")
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        help="worker counts; 1 is always added, as the base (default 1, 2, 4, ... up to the usable cores)",
    )
    parser.add_argument("--seeds", type=int, default=SEEDS, help="seeds per template × difficulty")
    parser.add_argument("--vector-steps", type=int, default=VECTOR_STEPS, help="vector steps per timed block")
    args = parser.parse_args()
    workers = sorted({1, *(args.workers or worker_counts(usable_cpus()))})
    if workers[0] < 1 or args.seeds < 1 or args.vector_steps < 1:
        parser.error("--workers, --seeds and --vector-steps must be positive")
    start = time.perf_counter()
    rates = run(workers, args.seeds, args.vector_steps)
    for key, value in machine().items():
        print(f"- {key}: {value}")
    print(
        f"\nMachine ceiling: {CALIBRATION_TASKS} tasks per worker of a {CALIBRATION_LOOPS:,}-step "
        f"pure-Python integer loop, pool started before timing, best of {REPEATS}:\n"
    )
    print("| workers | tasks/s | speed-up | efficiency |\n|---:|---:|---:|---:|")
    base = rates["calibration_n1_rate"]
    for n in workers:
        rate = rates[f"calibration_n{n}_rate"]
        print(f"| {n} | {rate:,.1f} | {_scaling(rate, base, n)} |")
    episodes = len(Grid.of(seeds=args.seeds).cells())
    print(
        f"\nrun_grid, BaselineScientist, {episodes:,} episodes, best of {REPEATS} "
        "(CPU µs per episode and parent busy: that run's):\n"
    )
    print(
        "| jobs | episodes/s | speed-up | efficiency | of ceiling | parent µs/ep | workers µs/ep "
        "| parent busy |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    base = rates["runner_jobs1_eps"]
    for jobs in workers:
        rate = rates[f"runner_jobs{jobs}_eps"]
        print(
            f"| {jobs} | {rate:,.0f} | {_scaling(rate, base, jobs)} "
            f"| {_of_ceiling(rates, 'runner_jobs{}_eps', jobs)} | {_cpu_columns(rates, jobs)} |"
        )
    print(
        f"\nScientist-v3 × N, env steps/s, {args.vector_steps:,} vector steps after {WARM_UP_STEPS}, "
        f"best of {REPEATS} (speed-up and efficiency: async over async N=1):\n"
    )
    print(
        "| N | async | speed-up | efficiency | of ceiling | sync | async ÷ sync |"
        "\n|---:|---:|---:|---:|---:|---:|---:|"
    )
    base = rates["async_n1_steps"]
    for copies in workers:
        rate, sync = rates[f"async_n{copies}_steps"], rates[f"sync_n{copies}_steps"]
        print(
            f"| {copies} | {rate:,.0f} | {_scaling(rate, base, copies)} "
            f"| {_of_ceiling(rates, 'async_n{}_steps', copies)} | {sync:,.0f} | {rate / sync:.2f} |"
        )
    print(f"\npolicy: at most {rates['policy_share']:.0%} of a timed vector block")
    print(f"wall time: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
