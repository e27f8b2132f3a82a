"""Instructions and simulated level-1 cache misses of one warm round, through `env()` and on the
`Episode` alone: the rounds of `bench_env`, counted instead of timed.

A 60-120 µs round timed on a shared VM moves by tens of per cent with the neighbours' load;
what valgrind's cachegrind counts does not (string hashes decide dict layouts, so
PYTHONHASHSEED is fixed; numpy's idle BLAS threads wake at the scheduler's whim, and nothing here
calls BLAS, so there is one). Two counts of the same code agree to a few instructions a round. Each side is played twice in its own process, `SHORT` and `LONG`
rounds after the same set-up, and the difference over `LONG - SHORT` rounds is one round.
Counts are exact for this interpreter build; the misses come from cachegrind's model of the
caches, which explains why the env's instructions cost more time than the domain's (worse
locality: numpy, PettingZoo and the codec run between the rules).

Use it to A/B a change to the per-step path without the noise. Needs `valgrind` on PATH (about
two minutes).

    python -m benchmarks.instructions
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_env import _revision, time_rounds_domain, time_rounds_env

SHORT, LONG = 200, 1200
SIDES = ("env", "domain")
EVENTS = ("Ir", "I1mr", "D1mr")  # instructions, level-1 instruction and data read misses


def play(side: str, rounds: int) -> None:
    vec, action = _revision()
    if side == "env":
        time_rounds_env(vec, rounds)
    else:
        time_rounds_domain(action, rounds)


def counts(side: str, rounds: int, folder: Path) -> dict[str, int]:
    """Cachegrind's totals for a process that plays `rounds` rounds of `side`."""
    out = folder / f"{side}.{rounds}.out"
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
            str(rounds),
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


def per_round() -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as folder:
        result = {}
        for side in SIDES:
            short, long = counts(side, SHORT, Path(folder)), counts(side, LONG, Path(folder))
            result[side] = {event: (long[event] - short[event]) / (LONG - SHORT) for event in EVENTS}
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description="Instructions per warm round, env vs domain.")
    parser.add_argument("--play", nargs=2, metavar=("SIDE", "ROUNDS"), help="play only (what valgrind runs)")
    args = parser.parse_args()
    if args.play:
        play(args.play[0], int(args.play[1]))
        return
    if shutil.which("valgrind") is None:
        print("valgrind is not on PATH: nothing counted")
        return
    result = per_round()
    env, domain = result["env"], result["domain"]
    print("| per warm round | through env() | Episode alone | env adds |\n|---|---:|---:|---:|")
    for event in EVENTS:
        print(
            f"| {event} | {env[event]:,.0f} | {domain[event]:,.0f} | {(env[event] - domain[event]) / domain[event]:.2f}× |"
        )


if __name__ == "__main__":
    main()
