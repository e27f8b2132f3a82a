"""Instructions and simulated level-1 cache misses of one warm round and of one whole baseline
episode, through `env()` and on the `Episode` alone: `bench_env`'s loops, counted instead of
timed.

A 60-120 µs round timed on a shared VM moves by tens of per cent with the neighbours' load;
what valgrind's cachegrind counts does not (string hashes decide dict layouts, so
PYTHONHASHSEED is fixed; numpy's idle BLAS threads wake at the scheduler's whim, and nothing here
calls BLAS, so there is one). Two counts of the same code agree to about 1 %. Each loop is
played twice in its own process, a short and a long run after the same set-up, and the
difference over the extra rounds (or episodes: fresh seeds, reset included) is one of them.
Counts are exact for this interpreter build; the misses come from cachegrind's model of the
caches, which explains why the env's instructions cost more time than the domain's (worse
locality: numpy, PettingZoo and the codec run between the rules).

Use it to A/B a change to the per-step path without the noise. Needs `valgrind` on PATH (about
ten minutes).

    python -m benchmarks.instructions
The budget line compares a baseline episode through `env()` with the earlier project's
hand-written episode loop, which took about 3.1 M instructions per baseline episode on
CPython 3.11: ReplicaLab keeps under half of that.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_env import (
    _revision,
    domain_episodes_per_second,
    episodes_per_second,
    scenario_cells,
    time_rounds_domain,
    time_rounds_env,
)

# what is counted, how the table names it, and its short and long runs
# The episode window is long because a full garbage collection (~15M instructions, a few per
# thousand episodes) lands in a short one or not, depending on what ran before: over 300 episodes
# that moves the count by ~5 %, over 1,200 by ~1 %.
LOOPS = (("round", "per warm round", 200, 1200), ("episode", "per baseline episode", 100, 1300))
SIDES = ("env", "domain")
EVENTS = ("Ir", "I1mr", "D1mr")  # instructions, level-1 instruction and data read misses
EARLIER_EPISODE_INSTRUCTIONS = 3_100_000  # the earlier project's baseline episode, CPython 3.11


def play(side: str, loop: str, count: int) -> None:
    """`count` rounds or episodes of `side` ("env" or "domain")."""
    if loop == "round":
        vec, action = _revision()
        if side == "env":
            time_rounds_env(vec, count)
        else:
            time_rounds_domain(action, count)
    elif side == "env":
        episodes_per_second(0, count)
    else:  # drawing the cells resets an env per cell: as many draws in the short run as the long
        domain_episodes_per_second(scenario_cells(0, LOOPS[-1][-1])[:count])


def counts(side: str, loop: str, count: int, folder: Path) -> dict[str, int]:
    """Cachegrind's totals for a process that plays `count` of `loop` on `side`."""
    out = folder / f"{side}.{loop}.{count}.out"
    subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=yes",
            f"--cachegrind-out-file={out}",
            sys.executable,
            "-m",
            "benchmarks.instructions",
            "--play",
            side,
            loop,
            str(count),
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"},
    )
    events: list[str] = []
    for line in out.read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            return dict(zip(events, map(int, line.split()[1:]), strict=True))
    raise RuntimeError(f"{out}: no summary line")


def per_unit(loop: str, short: int, long: int, sides: tuple[str, ...] = SIDES) -> dict[str, dict[str, float]]:
    """side -> event -> count per round (or episode) of `loop`."""
    with tempfile.TemporaryDirectory() as folder:
        result = {}
        for side in sides:
            few, many = (counts(side, loop, n, Path(folder)) for n in (short, long))
            result[side] = {event: (many[event] - few[event]) / (long - short) for event in EVENTS}
        return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Instructions per warm round and per episode, env vs domain."
    )
    parser.add_argument(
        "--play", nargs=3, metavar=("SIDE", "LOOP", "COUNT"), help="play only (what valgrind runs)"
    )
    args = parser.parse_args()
    if args.play:
        play(args.play[0], args.play[1], int(args.play[2]))
        return
    if shutil.which("valgrind") is None:
        print("valgrind is not on PATH: nothing counted")
        return
    print("| | through env() | Episode alone | env adds |\n|---|---:|---:|---:|")
    for loop, label, short, long in LOOPS:
        result = per_unit(loop, short, long)
        env, domain = result["env"], result["domain"]
        for event in EVENTS:
            added = (env[event] - domain[event]) / domain[event]
            print(f"| {event} {label} | {env[event]:,.0f} | {domain[event]:,.0f} | {added:.2f}× |")
        if loop == "episode":
            budget = env["Ir"] / EARLIER_EPISODE_INSTRUCTIONS
            print(
                f"\nBudget: an env() episode is {budget:.2f}× the earlier project's (must stay under 0.50×)"
            )


if __name__ == "__main__":
    main()
